//! Phase one of extraction: find, for every source the plan reads and every
//! row, the bytes of its Feature. Lists the plan does not read are skipped by
//! their length prefix; nothing inside a Feature is decoded here.

use super::{ExtractError, Extractor};
use crate::config::{Compat, Plan};
use crate::view::{ExampleBatchView, ExampleView, ListType};
use crate::wire::{DecodeError, Within};

/// Where one Feature's bytes sit: buffer, range, and its index for error paths
/// (feature index in its list, or named_feature index in its Example).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Cell {
    pub buf: u32,
    pub start: u32,
    pub end: u32,
    pub index: u32,
}

impl Cell {
    /// A missing feature.
    pub const NONE: Cell = Cell { buf: u32::MAX, start: 0, end: 0, index: 0 };

    pub fn is_none(&self) -> bool {
        self.buf == u32::MAX
    }
}

/// One source's cells: SHARED lists have one cell for every row.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Column {
    pub present: bool,
    pub shared: bool,
    pub first: usize,
    pub len: usize,
    /// named_feature_list index (batch input), for error paths.
    pub list_index: usize,
}

/// Which input shape the cells came from; decides error paths and defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InputKind {
    Batch,
    Examples,
}

/// Per-row data an Example carries outside its named features.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ExampleRow {
    /// Field 100 (a LineId message), or `Cell::NONE`.
    pub line_id: Cell,
    /// Field 102.
    pub weight: f32,
}

impl Extractor {
    pub(crate) fn gather_batch(&mut self, plan: &Plan, buf: &[u8]) -> Result<usize, ExtractError> {
        check_size(buf)?;
        let batch = ExampleBatchView::parse(buf)?;
        let rows = i64::from(batch.batch_size());
        if rows < 0 || rows as usize > plan.limits.max_batch_size {
            return Err(ExtractError::BatchSize { found: rows, limit: plan.limits.max_batch_size });
        }
        let rows = rows as usize;
        self.reset(plan, InputKind::Batch, rows);
        for entry in batch.lists() {
            let entry = entry?;
            let name = entry.name()?;
            self.lists_seen += 1;
            let Some(source) = plan.source_of(name) else { continue };
            self.lists_decoded += 1;
            let first = self.cells.len();
            let cells = &mut self.cells;
            let list_type = entry.decode(|i, body, at| push_cell(cells, 0, i, body, at))?;
            let len = self.cells.len() - first;
            let shared = list_type == ListType::Shared && !self.row_by_row(plan, source);
            self.columns[source] = Column { present: true, shared, first, len, list_index: entry.index };
            self.check_list_length(plan, source, name, rows)?;
        }
        Ok(rows)
    }

    /// Monolith reads `__LABEL__`, `__LINE_ID__` and `instance_weight` row by
    /// row whatever their list type; native mode broadcasts SHARED ones.
    pub(crate) fn row_by_row(&self, plan: &Plan, source: usize) -> bool {
        plan.compat == Compat::Monolith
            && [plan.line_id_source, plan.label_source, plan.weight_source].contains(&Some(source))
    }

    fn check_list_length(&self, plan: &Plan, source: usize, name: &[u8], rows: usize) -> Result<(), ExtractError> {
        let col = self.columns[source];
        let ok = if col.shared {
            col.len >= 1 || plan.compat == Compat::Native
        } else if self.row_by_row(plan, source) {
            col.len <= rows
        } else {
            col.len == rows
        };
        if ok {
            return Ok(());
        }
        let name = String::from_utf8_lossy(name).into_owned();
        Err(ExtractError::ListLength { index: col.list_index, name, found: col.len, batch: rows })
    }

    pub(crate) fn gather_examples(&mut self, plan: &Plan, bufs: &[&[u8]]) -> Result<usize, ExtractError> {
        let rows = bufs.len();
        if rows > plan.limits.max_batch_size {
            return Err(ExtractError::TooManyRows { found: rows, limit: plan.limits.max_batch_size });
        }
        self.reset(plan, InputKind::Examples, rows);
        let sources = plan.source_names.len();
        self.cells.resize(sources * rows, Cell::NONE);
        for (s, col) in self.columns.iter_mut().enumerate() {
            *col = Column { present: true, shared: false, first: s * rows, len: rows, list_index: 0 };
        }
        for (row, buf) in bufs.iter().enumerate() {
            check_size(buf)?;
            self.gather_example(plan, row, buf).within("example", Some(row))?;
        }
        Ok(rows)
    }

    fn gather_example(&mut self, plan: &Plan, row: usize, buf: &[u8]) -> Result<(), DecodeError> {
        let rows = self.rows;
        let view = ExampleView::parse(buf, 0)?;
        let line_id = view.line_id().map_or(Cell::NONE, |(b, at)| cell(row, 0, b, at));
        self.example_rows.push(ExampleRow { line_id, weight: view.instance_weight() });
        for entry in view.features() {
            let entry = entry?;
            self.lists_seen += 1;
            let Some(source) = plan.source_of(entry.name) else { continue };
            self.lists_decoded += 1;
            // A NamedFeature without a Feature reads as an empty Feature.
            let (body, at) = entry.feature.unwrap_or((&[], 0));
            self.cells[source * rows + row] = cell(row, entry.index, body, at);
        }
        Ok(())
    }

    fn reset(&mut self, plan: &Plan, kind: InputKind, rows: usize) {
        self.kind = kind;
        self.rows = rows;
        self.lists_seen = 0;
        self.lists_decoded = 0;
        self.cells.clear();
        self.example_rows.clear();
        self.columns.clear();
        self.columns.resize(plan.source_names.len(), Column::default());
    }
}

fn push_cell(cells: &mut Vec<Cell>, buf: usize, index: usize, body: &[u8], at: usize) -> Result<(), DecodeError> {
    cells.push(cell(buf, index, body, at));
    Ok(())
}

/// Offsets fit in u32: `check_size` rejected larger buffers up front.
fn cell(buf: usize, index: usize, body: &[u8], at: usize) -> Cell {
    Cell { buf: buf as u32, start: at as u32, end: (at + body.len()) as u32, index: index as u32 }
}

fn check_size(buf: &[u8]) -> Result<(), ExtractError> {
    if buf.len() > u32::MAX as usize - 1 {
        return Err(ExtractError::InputTooLarge { found: buf.len() });
    }
    Ok(())
}
