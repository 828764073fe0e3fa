//! The one entry point, online and offline: index the input into rows, let
//! the caller edit the rows (drop some, append rows of other samples), write
//! the plan's outputs for them. `Extractor::extract` is index + write in one
//! call, on the extractor's own scratch: what the server runs. What is
//! serving policy rather than model (which outputs, how SHARED features come
//! back, the bounds) is an argument of the call, a [`Policy`].

use super::gather::{Cell, ExampleRow, Index, InputKind};
use super::{ExtractError, Extracted, Extractor, Stats};
use crate::config::{Limits, Plan};
use crate::error::ErrorKind;

/// Serialized samples: one call's input.
#[derive(Debug, Clone, Copy)]
pub enum Input<'a> {
    /// One `ExampleBatch`; its rows are its `batch_size`.
    Batch(&'a [u8]),
    /// `Example`s, one per row.
    Examples(&'a [&'a [u8]]),
    /// Legacy `parser.proto.Instance`s, one per row (see `instance`).
    Instances(&'a [&'a [u8]]),
}

/// How SHARED features come back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SharedRows {
    /// As each output declares (`shared: once` or broadcast).
    #[default]
    AsDeclared,
    /// Broadcast to every row: one row per sample, as a training table wants.
    Broadcast,
    /// Every SHARED feature returned once, with rows = 1.
    Once,
}

/// Serving policy for one call.
#[derive(Debug, Clone, Copy, Default)]
pub struct Policy<'p> {
    /// The outputs to produce (indices from `Plan::select`), in that order;
    /// `None` produces every visible output.
    pub outputs: Option<&'p [usize]>,
    pub shared: SharedRows,
    /// Bounds for this call; `None` takes the plan's.
    pub limits: Option<Limits>,
}

impl Extractor {
    /// Extracts `input` into `out`, reusing this extractor's scratch and
    /// `out`'s buffers: in steady state it allocates nothing.
    pub fn extract(
        &mut self,
        plan: &Plan,
        input: Input<'_>,
        policy: Policy<'_>,
        out: &mut Extracted,
    ) -> Result<(), ExtractError> {
        self.begin(plan, &policy)?;
        match input {
            Input::Batch(buf) => {
                self.index.gather_batch(plan, buf, &self.needed)?;
                self.run(plan, None, &[buf], &policy, out)
            }
            Input::Examples(bufs) => {
                self.index.gather_examples(plan, bufs)?;
                self.run(plan, None, bufs, &policy, out)
            }
            Input::Instances(bufs) => {
                let limit = self.index.limits.max_batch_size;
                if bufs.len() > limit {
                    return Err(ErrorKind::TooManyRows { found: bufs.len(), limit }.into());
                }
                // Instances are read through the Examples they stand for:
                // this path allocates per call, as the Examples path does not.
                let examples = super::instance::to_examples(bufs)?;
                let slices: Vec<&[u8]> = examples.iter().map(Vec::as_slice).collect();
                self.index.gather_examples(plan, &slices)?;
                self.run(plan, None, &slices, &policy, out)
            }
        }
    }

    /// Indexes `input` into rows the caller may edit before `write`. Every
    /// row stands alone: a SHARED feature is copied to each row it reaches.
    /// `limits` bound the input's rows (`None`: the plan's).
    pub fn index<'a>(
        &mut self,
        plan: &Plan,
        input: Input<'a>,
        limits: Option<Limits>,
    ) -> Result<Rows<'a>, ExtractError> {
        self.index.limits = limits.unwrap_or(plan.limits);
        self.index.cells_only = true;
        let result = match input {
            Input::Batch(buf) => {
                self.index.gather_batch(plan, buf, &[]).map(|_| Rows::from_index(plan, &self.index, vec![buf]))
            }
            Input::Examples(bufs) => {
                self.index.gather_examples(plan, bufs).map(|_| Rows::from_index(plan, &self.index, bufs.to_vec()))
            }
            Input::Instances(_) => Err(ErrorKind::Operator {
                name: "index".into(),
                message: "legacy Instances are extracted whole (Extractor::extract); index Examples instead".into(),
            }
            .into()),
        };
        self.index.cells_only = false;
        result
    }

    /// Writes the plan's outputs for `rows` into `out`. Every row stands
    /// alone, so SHARED features are written per row whatever
    /// `policy.shared` says. `rows` must come from `index` with this plan.
    pub fn write(
        &mut self,
        plan: &Plan,
        rows: &Rows<'_>,
        policy: Policy<'_>,
        out: &mut Extracted,
    ) -> Result<(), ExtractError> {
        let policy = Policy { shared: SharedRows::Broadcast, ..policy };
        self.begin(plan, &policy)?;
        if rows.plan != plan.identity().digest || rows.sources != plan.source_names.len() {
            let message = format!("rows were indexed with another model than {:?}", plan.name);
            return Err(ErrorKind::Operator { name: "write".into(), message }.into());
        }
        let limits = self.index.limits;
        if rows.len() > limits.max_batch_size {
            return Err(ErrorKind::TooManyRows { found: rows.len(), limit: limits.max_batch_size }.into());
        }
        let mut index = std::mem::take(&mut self.rows_index);
        rows.lay_out(&mut index, limits);
        let result = self.run(plan, Some(&index), &rows.bufs, &policy, out);
        self.rows_index = index;
        result
    }

    /// Sets the call's bounds and marks the outputs it computes; refuses a
    /// selection that is not one of `Plan::select`'s.
    fn begin(&mut self, plan: &Plan, policy: &Policy<'_>) -> Result<(), ExtractError> {
        self.index.limits = policy.limits.unwrap_or(plan.limits);
        if let Some(outputs) = policy.outputs {
            check_selection(plan, outputs)?;
        }
        super::mark_needed(plan, policy.outputs, &mut self.needed);
        Ok(())
    }
}

/// Output indices must name visible outputs, each once (as `Plan::select`
/// gives them).
fn check_selection(plan: &Plan, outputs: &[usize]) -> Result<(), ExtractError> {
    let mut seen = vec![false; plan.outputs.len()];
    for &i in outputs {
        let fine = plan.outputs.get(i).is_some_and(|o| o.visible) && !std::mem::replace(&mut seen[i], true);
        if !fine {
            let message = format!("output index {i} is not a visible output of {:?} asked for once", plan.name);
            return Err(ErrorKind::Operator { name: "policy".into(), message }.into());
        }
    }
    Ok(())
}

/// Rows of one or more inputs, editable: every row holds, for each source
/// the plan reads, where its Feature is (or that it has none).
#[derive(Debug, Clone)]
pub struct Rows<'a> {
    /// The digest of the plan that indexed them.
    plan: u64,
    kind: InputKind,
    sources: usize,
    /// Row-major: `cells[row * sources + source]`.
    cells: Vec<Cell>,
    example_rows: Vec<ExampleRow>,
    /// The buffer of each row's sample.
    row_buf: Vec<u32>,
    /// Sources any sample had (a list present in the batch).
    present: Vec<bool>,
    bufs: Vec<&'a [u8]>,
    stats: Stats,
}

/// A row that cannot join: from another kind of input or another plan, or
/// not there at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RowsMismatch {
    #[error("rows indexed from {found} cannot join rows indexed from {expected}")]
    Source { found: String, expected: String },
    #[error("row {row} asked for, the rows hold {rows}")]
    NoRow { row: usize, rows: usize },
}

impl<'a> Rows<'a> {
    fn from_index(plan: &Plan, ix: &Index, bufs: Vec<&'a [u8]>) -> Self {
        let (rows, sources) = (ix.rows, ix.columns.len());
        let mut cells = Vec::with_capacity(rows * sources);
        for row in 0..rows {
            cells.extend((0..sources).map(|s| ix.cell(s, row).unwrap_or(Cell::NONE)));
        }
        let batch = ix.kind == InputKind::Batch;
        let example_rows = if batch { vec![ExampleRow::default(); rows] } else { ix.example_rows.clone() };
        Rows {
            plan: plan.identity().digest,
            kind: ix.kind,
            sources,
            cells,
            row_buf: (0..rows).map(|r| if batch { 0 } else { r as u32 }).collect(),
            example_rows,
            present: ix.columns.iter().map(|c| c.present).collect(),
            bufs,
            stats: ix.stats,
        }
    }

    pub fn len(&self) -> usize {
        self.row_buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keeps the rows for which `keep(row)` is true, in order.
    pub fn retain(&mut self, mut keep: impl FnMut(usize) -> bool) {
        let mut at = 0;
        for row in 0..self.len() {
            if keep(row) {
                self.cells.copy_within(row * self.sources..(row + 1) * self.sources, at * self.sources);
                self.example_rows[at] = self.example_rows[row];
                self.row_buf[at] = self.row_buf[row];
                at += 1;
            }
        }
        self.cells.truncate(at * self.sources);
        self.example_rows.truncate(at);
        self.row_buf.truncate(at);
    }

    /// Appends row `row` of `other` (indexed from the same kind of input by
    /// the same plan) after the last row.
    pub fn push_row(&mut self, other: &Rows<'a>, row: usize) -> Result<(), RowsMismatch> {
        if row >= other.len() {
            return Err(RowsMismatch::NoRow { row, rows: other.len() });
        }
        if other.kind != self.kind || other.sources != self.sources || other.plan != self.plan {
            let describe =
                |r: &Rows<'_>| format!("{:?} input reading {} features (model {:016x})", r.kind, r.sources, r.plan);
            return Err(RowsMismatch::Source { found: describe(other), expected: describe(self) });
        }
        let old = other.row_buf[row];
        let new = self.bufs.len() as u32;
        self.bufs.push(other.bufs[old as usize]);
        let moved = |c: Cell| if c.is_none() { c } else { Cell { buf: new, ..c } };
        let cells = &other.cells[row * other.sources..(row + 1) * other.sources];
        self.cells.extend(cells.iter().map(|&c| moved(c)));
        let e = other.example_rows[row];
        self.example_rows.push(ExampleRow { buf: new, line_id: moved(e.line_id), ..e });
        self.row_buf.push(new);
        for (mine, theirs) in self.present.iter_mut().zip(&other.present) {
            *mine |= *theirs;
        }
        Ok(())
    }

    /// Lays the rows out column by column, as extraction reads them.
    fn lay_out(&self, ix: &mut Index, limits: Limits) {
        let (rows, sources) = (self.len(), self.sources);
        ix.limits = limits;
        ix.kind = self.kind;
        ix.rows = rows;
        ix.stats = self.stats;
        ix.cells.clear();
        ix.cells.resize(rows * sources, Cell::NONE);
        for row in 0..rows {
            for s in 0..sources {
                ix.cells[s * rows + row] = self.cells[row * sources + s];
            }
        }
        ix.columns.clear();
        ix.columns.extend((0..sources).map(|s| super::gather::Column {
            present: self.present[s],
            shared: false,
            first: s * rows,
            len: rows,
            list_index: 0,
            body: None,
        }));
        ix.example_rows.clear();
        ix.example_rows.extend_from_slice(&self.example_rows);
    }
}
