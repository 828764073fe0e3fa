//! Extraction: serialized samples plus a [`Plan`] in, typed columns out.
//! Phase one (`gather`) indexes the input: where each needed list or Feature
//! is; phase two runs one writer per output (`sparse`, `dense`, `strings`,
//! `sequence`, `line_id`, `label`), then the operators. `entry` holds the one
//! entry point.
//! An [`Extractor`] keeps its scratch between calls and an [`Extracted`] keeps
//! its buffers, so steady-state extraction allocates nothing new.

mod dense;
mod entry;
mod gather;
mod instance;
mod label;
mod line_id;
mod monolith;
mod monolith_label;
mod rows;
mod sequence;
mod sparse;
mod strings;
#[cfg(test)]
mod test_batches;
#[cfg(test)]
mod walk_tests;
mod write;

pub use crate::error::ExtractError;
pub use entry::{Input, Policy, SharedRows};
pub(crate) use line_id::first_bytes;
pub use rows::{RowBuf, Rows, RowsMismatch, Sample};

use gather::{Cell, ExampleRow, Index, InputKind};

use crate::columns::{Column, NamedColumn};
use crate::config::{Op, Output, Plan, Source};
use crate::error::ErrorKind;
use crate::proto::fex_v1::Tensor;
use crate::view::{FeatureKind, FeatureView};
use crate::wire::DecodeError;

/// The columns of one extraction. Reuse one across calls to keep its buffers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extracted {
    /// Rows in the request (ExampleBatch.batch_size, or the number of Examples).
    pub batch_size: usize,
    /// One column per selected plan output, in plan order.
    pub columns: Vec<NamedColumn>,
    pub stats: Stats,
}

/// What an extraction read: feature lists (or named features) seen in the
/// input, and how many of them the plan needed and decoded; the rest were
/// skipped by their length.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    pub lists_seen: usize,
    pub lists_decoded: usize,
}

impl Extracted {
    /// The output named `name`, if the plan produced one.
    pub fn get(&self, name: &str) -> Option<&NamedColumn> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// The column named `name`.
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.get(name).map(|c| &c.column)
    }

    /// A copy of output `name` as a wire tensor (for tools and tests).
    pub fn tensor(&self, name: &str) -> Option<Tensor> {
        self.get(name).map(NamedColumn::to_tensor)
    }

    /// Copies of every output as wire tensors (for tools and tests).
    pub fn tensors(&self) -> Vec<Tensor> {
        self.columns.iter().map(NamedColumn::to_tensor).collect()
    }

    /// Every output as a wire tensor, moving the buffers (no value copied).
    pub fn into_tensors(self) -> Vec<Tensor> {
        self.columns.into_iter().map(NamedColumn::into_tensor).collect()
    }
}

/// Reusable scratch for extraction; one per thread.
#[derive(Debug, Default)]
pub struct Extractor {
    index: Index,
    /// Scratch for laying out a caller's `Rows`.
    rows_index: Index,
    memo: std::cell::RefCell<line_id::Memo>,
    /// Every output's column, computed in plan order, then swapped into the
    /// caller's `Extracted`.
    work: Vec<NamedColumn>,
    needed: Vec<bool>,
    /// Scratch of `write` for rows of one batch: the batch's columns, and
    /// the rows to copy out of them.
    whole: Extracted,
    picks: Vec<u32>,
}

impl Extractor {
    pub fn new() -> Self {
        Self::default()
    }

    /// Extracts a serialized `ExampleBatch` into `out` with the plan's own
    /// policy: `extract` with `Input::Batch`.
    pub fn extract_batch(&mut self, plan: &Plan, buf: &[u8], out: &mut Extracted) -> Result<(), ExtractError> {
        self.extract(plan, Input::Batch(buf), Policy::default(), out)
    }

    /// Computes the outputs for the rows of `rows` (the caller's) or of the
    /// extractor's own index.
    fn run(
        &mut self,
        plan: &Plan,
        rows: Option<&Index>,
        bufs: &[&[u8]],
        policy: &Policy<'_>,
        out: &mut Extracted,
    ) -> Result<(), ExtractError> {
        let selected = policy.outputs;
        // Marked by `begin`, before the input was indexed.
        let needed = std::mem::take(&mut self.needed);
        // A call for every output of an all-visible model computes straight
        // into the caller's columns (the buffers its last call left there),
        // so a caller that reuses its `Extracted` keeps one set of buffers
        // warm instead of alternating between two.
        let into_out = selected.is_none() && everything(plan).visible == plan.outputs.len();
        let mut work = match into_out {
            true => std::mem::take(&mut out.columns),
            false => std::mem::take(&mut self.work),
        };
        work.truncate(plan.outputs.len());
        while work.len() < plan.outputs.len() {
            let name = plan.outputs[work.len()].name.clone();
            work.push(NamedColumn { name, shared: false, column: Column::default() });
        }
        let ix = rows.unwrap_or(&self.index);
        self.memo.get_mut().clear();
        let cx = Ctx { ix, memo: &self.memo, plan, bufs, shared: policy.shared };
        let mut result = compute(&cx, &needed, &mut work);
        if rows.is_none() && self.index.has_direct() && result.is_err() {
            // A walked list met something the checked path must judge (or
            // the call failed anyway): gather every list into cells, then
            // compute again, so errors are exactly those of the checked path.
            self.memo.get_mut().clear();
            result = match self.index.gather_batch_checked(plan, bufs[0]) {
                Ok(_) => {
                    let cx = Ctx { ix: &self.index, memo: &self.memo, plan, bufs, shared: policy.shared };
                    compute(&cx, &needed, &mut work)
                }
                Err(e) => Err(Stop::Error(e)),
            };
        }
        let result = result.map_err(Stop::into_error);
        if result.is_err() {
            // A failed call may have grown buffers up to the output limit; do
            // not keep that memory for every later call of this thread.
            work.clear();
        }
        if result.is_ok() {
            let ix = rows.unwrap_or(&self.index);
            deliver(ix, plan, selected, &mut work, out);
        } else {
            // Whatever the call reached is no result.
            out.columns.clear();
        }
        match into_out {
            // `deliver` handed the columns back (its whole-list swap).
            true if result.is_ok() => {}
            true => out.columns = work,
            false => self.work = work,
        }
        self.needed = needed;
        result
    }
}

/// Computes every needed output, in plan (dependency) order.
fn compute(cx: &Ctx<'_, '_>, needed: &[bool], work: &mut [NamedColumn]) -> Result<(), Stop> {
    let plan = cx.plan;
    let mut budget = 0usize;
    let limit = cx.ix.limits.max_output_bytes;
    for (i, output) in plan.outputs.iter().enumerate() {
        if !needed[i] {
            continue;
        }
        let (done, rest) = work.split_at_mut(i);
        let slot = &mut rest[0];
        if !crate::wire::same_bytes(slot.name.as_bytes(), plan.output_names.get(i)) {
            slot.name.clone_from(&output.name);
        }
        write::begin(&mut slot.column, output);
        if let Op::Derived(transform) = &output.op {
            let inputs = crate::ops::Inputs { done, indices: &output.inputs };
            // Dense results have a size known up front: charge it before
            // writing. Operators charge what they add as they go; the rest
            // (splits, lengths) is charged after, so nothing counts twice.
            let fixed = crate::ops::fixed_size(transform, inputs);
            write::charge(&mut budget, fixed, limit)?;
            let before = budget;
            let budget_ref = crate::ops::Budget { used: &mut budget, limit };
            slot.shared = crate::ops::apply(transform, inputs, &output.name, &mut slot.column, budget_ref)?;
            let charged = fixed + (budget - before);
            write::charge(&mut budget, slot.column.byte_len().saturating_sub(charged), limit)?;
        } else {
            slot.shared = cx.write(output, &mut slot.column, &mut budget)?;
        }
    }
    Ok(())
}

/// Moves the results the caller asked for into `out`. Buffers are swapped,
/// not copied: `out`'s previous buffers become next call's scratch.
fn deliver(ix: &Index, plan: &Plan, selected: Option<&[usize]>, work: &mut Vec<NamedColumn>, out: &mut Extracted) {
    out.batch_size = ix.rows;
    out.stats = ix.stats;
    let count = selected.map_or_else(|| everything(plan).visible, <[usize]>::len);
    if selected.is_none() && count == work.len() {
        // Every output, in plan order: the two lists change places whole
        // (a model of a thousand outputs moved each one, 6% of its call).
        // (`run` computed into the caller's own list: this hands it back.)
        std::mem::swap(&mut out.columns, work);
        return;
    }
    out.columns.truncate(count);
    while out.columns.len() < count {
        out.columns.push(NamedColumn { name: String::new(), shared: false, column: Column::default() });
    }
    let mut slots = out.columns.iter_mut();
    match selected {
        Some(s) => s.iter().zip(slots).for_each(|(&i, slot)| std::mem::swap(slot, &mut work[i])),
        None => {
            for (i, output) in plan.outputs.iter().enumerate() {
                if output.visible {
                    std::mem::swap(slots.next().expect("one slot per visible output"), &mut work[i]);
                }
            }
        }
    }
}

/// Marks the outputs to compute: the asked ones and everything they read.
pub(super) fn mark_needed(plan: &Plan, selected: Option<&[usize]>, needed: &mut Vec<bool>) {
    match selected {
        None => needed.clone_from(&everything(plan).needed),
        Some(_) => mark(plan, selected, needed),
    }
}

/// What a call for every visible output computes and reads: worked out on
/// the plan's first such call, and kept by the plan.
pub(crate) fn everything(plan: &Plan) -> &crate::config::Everything {
    plan.everything.get_or_init(|| work_out_everything(plan))
}

fn work_out_everything(plan: &Plan) -> crate::config::Everything {
    let mut needed = Vec::new();
    mark(plan, None, &mut needed);
    let mut direct = Vec::new();
    gather::direct_sources(plan, &needed, &mut direct);
    let visible = plan.outputs.iter().filter(|o| o.visible).count();
    crate::config::Everything { needed, direct, visible }
}

fn mark(plan: &Plan, selected: Option<&[usize]>, needed: &mut Vec<bool>) {
    needed.clear();
    needed.resize(plan.outputs.len(), false);
    match selected {
        Some(s) => s.iter().for_each(|&i| needed[i] = true),
        None => plan.outputs.iter().enumerate().for_each(|(i, o)| needed[i] = o.visible),
    }
    for i in (0..plan.outputs.len()).rev() {
        if needed[i] {
            for &j in &plan.outputs[i].inputs {
                needed[j] = true;
            }
        }
    }
}

/// Extracts a serialized `ExampleBatch` with fresh scratch (allocates).
pub fn extract_batch(plan: &Plan, buf: &[u8]) -> Result<Extracted, ExtractError> {
    let mut out = Extracted::default();
    Extractor::new().extract_batch(plan, buf, &mut out)?;
    Ok(out)
}

/// Extracts serialized `Example`s with fresh scratch (allocates).
pub fn extract_examples(plan: &Plan, bufs: &[&[u8]]) -> Result<Extracted, ExtractError> {
    let mut out = Extracted::default();
    Extractor::new().extract(plan, Input::Examples(bufs), Policy::default(), &mut out)?;
    Ok(out)
}

/// A written column's dimensions after its rows, from the output's shape
/// (and a dense column's count of rows written).
fn set_dims(c: &mut Column, out: &Output, rows: usize) {
    let dims = out.shape.iter().map(|&x| x.max(0) as usize);
    match c {
        Column::Dense(d) => {
            d.rows = rows;
            d.dims.extend(dims);
        }
        Column::Strings(s) => s.dims.extend(dims),
        _ => {}
    }
}

/// Bytes an output takes whatever the input holds (0 for variable outputs).
fn fixed_size(out: &Output, rows: usize) -> usize {
    let (layout, dtype, _) = out.layout();
    let per_row = match &out.op {
        _ if layout != crate::proto::fex_v1::Layout::Dense => 0,
        Op::Dense { dim, .. } | Op::LineId { dim, .. } | Op::Label { dim, .. } => *dim,
        Op::ActionLabel { tasks } => tasks.len(),
        Op::Weight => 1,
        _ => 0,
    };
    rows.saturating_mul(per_row).saturating_mul(crate::columns::elem_size(dtype))
}

/// What one writer sees: the gathered cells, the plan and the input buffers.
pub(crate) struct Ctx<'x, 'a> {
    ix: &'x Index,
    /// What the call learnt of its LineIds (see `line_id::Memo`).
    memo: &'x std::cell::RefCell<line_id::Memo>,
    /// The call's policy for SHARED features.
    shared: SharedRows,
    plan: &'x Plan,
    bufs: &'x [&'a [u8]],
}

/// Why a computation stopped: an error in the request, or a walked list that
/// needs the checked path (the caller retries).
pub(crate) enum Stop {
    Error(ExtractError),
    Retry,
}

impl From<ExtractError> for Stop {
    fn from(e: ExtractError) -> Self {
        Stop::Error(e)
    }
}

impl From<crate::columns::SplitsOverflow> for Stop {
    fn from(e: crate::columns::SplitsOverflow) -> Self {
        Stop::Error(e.into())
    }
}

impl Stop {
    /// The error a caller sees. A retry is only asked for where lists were
    /// walked, and the retry gathers them all into cells, so none is left.
    fn into_error(self) -> ExtractError {
        match self {
            Stop::Error(e) => e,
            Stop::Retry => ErrorKind::Operator {
                name: "extractor".into(),
                message: "internal error: a list walk asked for a retry on the checked path".into(),
            }
            .into(),
        }
    }
}

/// The cell of each row of one source (`None` where the row has no Feature).
pub(crate) struct RowCells<'x> {
    cells: &'x [Cell],
    shared: Option<Cell>,
    row: usize,
    rows: usize,
}

impl Iterator for RowCells<'_> {
    type Item = Option<Cell>;

    #[inline]
    fn next(&mut self) -> Option<Option<Cell>> {
        if self.row == self.rows {
            return None;
        }
        let cell = self.shared.or_else(|| self.cells.get(self.row).copied());
        self.row += 1;
        Some(cell.filter(|c| !c.is_none()))
    }
}

/// How many rows a writer computes, and what becomes of them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowPlan {
    /// Rows to compute: 1 for a SHARED source, else the batch size.
    pub compute: usize,
    /// Rows the tensor ends with (after broadcasting).
    pub total: usize,
    /// Returned once with rows = 1 (`shared: once` on a SHARED list).
    pub once: bool,
}

impl RowPlan {
    /// A SHARED source is computed once, then returned once or broadcast to
    /// `all` rows; any other source is computed for every row.
    fn new(shared: bool, once: bool, all: usize) -> Self {
        match (shared, once) {
            (true, true) => RowPlan { compute: 1, total: 1, once: true },
            (true, false) => RowPlan { compute: all.min(1), total: all, once: false },
            _ => RowPlan { compute: all, total: all, once: false },
        }
    }
}

impl<'x, 'a> Ctx<'x, 'a> {
    /// Writes one sample-reading output; returns whether it is returned once.
    fn write(&self, out: &Output, c: &mut Column, budget: &mut usize) -> Result<bool, Stop> {
        if let Source::Feature(s) = out.source()
            && let Some((start, end)) = self.ix.columns[s].body
        {
            return self.write_walked(out, (start as usize, end as usize), c, budget);
        }
        let rows = self.rows(out);
        let limit = self.ix.limits.max_output_bytes;
        // Fixed-size outputs are charged before anything is written, so a
        // large batch times a wide shape fails before it allocates.
        let fixed = fixed_size(out, rows.compute);
        write::charge(budget, fixed, limit)?;
        match &out.op {
            // compat: monolith applies each copy of a repeated list in turn
            // (labels and weights do so in their own writers; sequences,
            // which Monolith has not, keep the last copy as in native mode).
            _ if self.repeated(out) && !matches!(out.op, Op::Label { .. } | Op::Weight | Op::Sequence { .. }) => {
                monolith::write_repeated(self, out, c, rows.compute)?
            }
            Op::Sparse { source, .. } => sparse::write(self, *source, c, rows.compute)?,
            Op::Dense { source, dtype, dim, default, meta } => {
                dense::write(self, c, rows.compute, (*source, *dtype, *dim, *default, *meta))?
            }
            Op::String { source, join: None } => strings::write(self, *source, c, rows.compute)?,
            Op::String { source, join: Some(sep) } => strings::write_joined(self, *source, sep, c, rows.compute)?,
            Op::Sequence { source, dtype, max_len, width, .. } => {
                sequence::write(self, (*source, *dtype, *max_len, *width), c, rows.compute)?
            }
            Op::List { source, .. } => dense::write_list(self, *source, c, rows.compute)?,
            Op::LineId { field, dim } => line_id::write(self, c, rows.compute, *field, *dim)?,
            Op::Label { dim, default } => label::write_label(self, c, rows.compute, *dim, *default)?,
            Op::Weight => label::write_weight(self, c, rows.compute)?,
            Op::ActionLabel { tasks } => label::write_action_labels(self, c, rows.compute, tasks)?,
            Op::Derived(_) => unreachable!("derived outputs run in Extractor::compute"),
        }
        set_dims(c, out, rows.compute);
        write::charge(budget, c.byte_len().saturating_sub(fixed), limit)?;
        if rows.total > rows.compute {
            write::broadcast(c, rows.total, budget, limit)?;
        }
        Ok(rows.once)
    }

    /// Writes an output whose list its writer walks: every Feature becomes a
    /// row, then the list's type decides, as for a gathered list, whether
    /// the first row stands for all. Anything irregular asks for a retry on
    /// the checked path.
    fn write_walked(
        &self,
        out: &Output,
        (start, end): (usize, usize),
        c: &mut Column,
        budget: &mut usize,
    ) -> Result<bool, Stop> {
        let body = &self.bufs[0][start..end];
        let name = gather::first_name(body).ok_or(Stop::Retry)?;
        let (all, limit) = (self.ix.rows, self.ix.limits.max_output_bytes);
        // A dense walk writes at most `all` rows (one when `all` is 0): charge
        // their size before it allocates, and settle up once rows are known.
        // (A sparse walk is bounded by the list's bytes and charged after.)
        let bound = fixed_size(out, all.max(1));
        write::charge(budget, bound, limit)?;
        let walked = match &out.op {
            Op::Sparse { .. } => sparse::write_direct(self, name, body, c),
            Op::Dense { source, dtype, dim, default, meta } => {
                dense::write_direct(self, (*source, *dtype, *dim, *default, *meta), name, body, c)
            }
            Op::String { join: None, .. } => strings::write_direct(self, name, body, c),
            _ => None,
        };
        let walked = walked.ok_or(Stop::Retry)?;
        let shared = walked.list_type == crate::view::ListType::Shared;
        // The usual shapes only: a SHARED list of one Feature, an INDIVIDUAL
        // one of a Feature per row. The checked path judges the rest.
        if (shared && walked.count != 1) || (!shared && walked.count != all) {
            return Err(Stop::Retry);
        }
        let rows = RowPlan::new(shared, self.once(out), all);
        set_dims(c, out, walked.count);
        c.keep_rows(rows.compute);
        *budget -= bound;
        write::charge(budget, c.byte_len(), limit)?;
        if rows.total > rows.compute {
            write::broadcast(c, rows.total, budget, limit)?;
        }
        Ok(rows.once)
    }

    /// Whether a SHARED feature of `out` comes back once, under this call's
    /// policy.
    fn once(&self, out: &Output) -> bool {
        match self.shared {
            SharedRows::AsDeclared => out.shared_once,
            SharedRows::Broadcast => false,
            SharedRows::Once => true,
        }
    }

    /// The bounds of this call.
    pub(crate) fn limits(&self) -> crate::config::Limits {
        self.ix.limits
    }

    /// Rows of the batch being extracted.
    pub(crate) fn rows_in_batch(&self) -> usize {
        self.ix.rows
    }

    /// A SHARED source is computed once, then broadcast or returned once.
    fn rows(&self, out: &Output) -> RowPlan {
        let all = self.ix.rows;
        // A missing list of a `shared: once` output still answers with one
        // (empty) row, so the model sees the same shape on every request.
        let shared = self.source_index(out.source()).is_some_and(|s| {
            let col = self.ix.columns[s];
            col.shared || (!col.present && out.shared_once && self.once(out) && self.is_batch())
        });
        // Copies of a repeated list may differ row by row: every row is computed.
        RowPlan::new(shared && !self.repeated(out), self.once(out), all)
    }

    /// Whether the output's list came more than once (only ever in compat:
    /// monolith, which applies every copy).
    fn repeated(&self, out: &Output) -> bool {
        self.ix.any_repeated() && self.source_index(out.source()).is_some_and(|s| self.ix.repeated(s))
    }

    pub(crate) fn source_index(&self, source: Source) -> Option<usize> {
        match source {
            Source::Feature(i) => Some(i),
            Source::LineId => self.plan.line_id_source,
            Source::Label => self.plan.label_source,
            Source::Weight => self.plan.weight_source,
            Source::Derived => None,
        }
    }

    pub(crate) fn is_monolith(&self) -> bool {
        self.plan.compat == crate::config::Compat::Monolith
    }

    pub(crate) fn is_batch(&self) -> bool {
        self.ix.kind == InputKind::Batch
    }

    /// The cell of `source` at `row`, if that row has the feature.
    pub(crate) fn cell(&self, source: usize, row: usize) -> Option<Cell> {
        self.ix.cell(source, row)
    }

    pub(crate) fn bytes(&self, cell: Cell) -> &'a [u8] {
        &self.bufs[cell.buf as usize][cell.start as usize..cell.end as usize]
    }

    /// The Feature of `source` at `row`, parsed, with its cell for errors.
    #[inline]
    pub(crate) fn feature(&self, source: usize, row: usize) -> Result<Option<(FeatureView<'a>, Cell)>, ExtractError> {
        let Some(cell) = self.cell(source, row) else { return Ok(None) };
        self.parse(source, row, cell).map(Some)
    }

    /// The cells of `source` for the first `rows` rows, in order: what the
    /// writers walk, without a lookup per row.
    #[inline]
    pub(crate) fn row_cells(&self, source: usize, rows: usize) -> RowCells<'x> {
        let col = self.ix.columns[source];
        let (cells, shared) = match (col.present, col.shared) {
            (false, _) => (&[][..], None),
            (true, true) => (&[][..], self.ix.cells.get(col.first).copied().filter(|_| col.len > 0)),
            (true, false) => (&self.ix.cells[col.first..col.first + col.len], None),
        };
        RowCells { cells, shared, row: 0, rows }
    }

    /// Parses the Feature in `cell`.
    pub(crate) fn parse(&self, source: usize, row: usize, cell: Cell) -> Result<(FeatureView<'a>, Cell), ExtractError> {
        let view = FeatureView::parse(self.bytes(cell), cell.start as usize);
        Ok((view.map_err(|e| self.locate(e, source, row, cell))?, cell))
    }

    /// Adds the path of a cell to an error from inside its Feature.
    pub(crate) fn locate(&self, e: DecodeError, source: usize, row: usize, cell: Cell) -> ExtractError {
        let e = match self.ix.kind {
            InputKind::Batch => {
                e.within("feature", Some(cell.index as usize)).within("named_feature_list", Some(cell.list as usize))
            }
            InputKind::Examples => e
                .within("feature", None)
                .within("named_feature", Some(cell.index as usize))
                .within("example", Some(row)),
        };
        ExtractError::from(e).at_row(row).in_source(&self.plan.source_names[source])
    }

    /// The path of a cell, for type errors.
    pub(crate) fn path(&self, row: usize, cell: Cell) -> String {
        match self.ix.kind {
            InputKind::Batch => {
                format!("named_feature_list[{}].feature[{}]", cell.list, cell.index)
            }
            InputKind::Examples => format!("example[{row}].named_feature[{}].feature", cell.index),
        }
    }

    pub(crate) fn mismatch(
        &self,
        source: usize,
        row: usize,
        cell: Cell,
        found: Option<FeatureKind>,
        expected: &'static str,
    ) -> ExtractError {
        let name = self.plan.source_names[source].clone();
        let found = found.map_or("an empty feature", FeatureKind::name);
        ExtractError::from(ErrorKind::TypeMismatch { path: self.path(row, cell), name, found, expected }).at_row(row)
    }

    pub(crate) fn invalid(&self, source: usize, row: usize, cell: Cell, message: &'static str) -> ExtractError {
        let name = self.plan.source_names[source].clone();
        ExtractError::from(ErrorKind::Invalid { path: self.path(row, cell), name, message }).at_row(row)
    }

    pub(crate) fn example_row(&self, row: usize) -> ExampleRow {
        self.ix.example_rows[row]
    }
}
