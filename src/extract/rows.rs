//! `Rows`: the index of one or more inputs, row by row, for callers that edit
//! it between `Extractor::index` and `Extractor::write` (the offline
//! transforms). Rows are dropped (`retain`), appended from other rows
//! (`push_row`, `push_with`), and given new labels, LineIds or weights
//! (`set_labels`, `set_line_id`, `set_weight`): an override is a small owned
//! buffer the writers read like any sample's bytes, so the writers do not
//! know overrides exist.

use crate::wire::len_field;
use bytes::Bytes;

use super::Stats;
use super::gather::{Cell, ExampleRow, Index, InputKind};
use crate::config::{Limits, Plan};

/// A buffer rows point into: the caller's input, or bytes the rows own
/// (overrides, pooled items, rows kept past their input).
#[derive(Debug, Clone)]
pub enum RowBuf<'a> {
    Borrowed(&'a [u8]),
    Owned(Bytes),
}

impl RowBuf<'_> {
    pub fn as_slice(&self) -> &[u8] {
        match self {
            Self::Borrowed(b) => b,
            Self::Owned(b) => b,
        }
    }
}

/// Where a row's sample is, for callers that read more of it than the plan
/// does (the offline transforms' predicates).
#[derive(Debug, Clone, Copy)]
pub enum Sample<'r> {
    /// Row `row` of a serialized `ExampleBatch`.
    BatchRow { batch: &'r [u8], row: usize },
    /// A serialized `Example`.
    Example(&'r [u8]),
}

/// What a row carries besides its cells.
#[derive(Debug, Clone, Default)]
struct RowMeta {
    /// The buffer of its sample.
    sample: u32,
    /// Its row in that batch (0 for Examples).
    batch_row: u32,
    /// A LineId that replaces the sample's (an owned buffer).
    line_id: Option<u32>,
    /// Labels that replace the sample's.
    labels: Option<std::sync::Arc<[f32]>>,
    /// An owned Example of named features that replace the sample's
    /// same-named ones (a pooled item of negative generation).
    features: Option<u32>,
    /// A cell or the weight of the row was replaced (`set_*`, `push_with`):
    /// the row is no longer its sample's row as the sample reads.
    edited: bool,
}

/// Rows of one or more inputs, editable: every row holds, for each source
/// the plan reads, where its Feature is (or that it has none).
#[derive(Debug, Clone)]
pub struct Rows<'a> {
    /// The digest of the plan that indexed them.
    pub(super) plan: u64,
    kind: InputKind,
    pub(super) sources: usize,
    /// The plan's reserved sources, which overrides replace.
    reserved: Reserved,
    /// Row-major: `cells[row * sources + source]`.
    cells: Vec<Cell>,
    example_rows: Vec<ExampleRow>,
    meta: Vec<RowMeta>,
    /// Sources any sample had (a list present in the batch).
    present: Vec<bool>,
    pub(super) bufs: Vec<RowBuf<'a>>,
    stats: Stats,
    /// The last weight `set_weight` wrote and its buffer: rows given the
    /// same weight share it.
    weight_buf: Option<(u32, u32)>,
    /// `present` is no longer the index's (a row made a source present).
    present_changed: bool,
    /// Rows of the input when it was indexed.
    indexed_rows: usize,
    /// By source (empty when none is known): every row's cell holds the
    /// Feature splitting the sample finds under the source's name (see
    /// `split_exact`), for the sources transforms read by name: `__LABEL__`,
    /// `__LINE_ID__` and negative_gen's item features. Rows of the one input
    /// indexed, none adopted from other rows (`push_row`).
    split_cells: Vec<bool>,
}

#[derive(Debug, Clone, Copy)]
struct Reserved {
    line_id: Option<usize>,
    label: Option<usize>,
    weight: Option<usize>,
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
    pub(super) fn from_index(plan: &Plan, ix: &Index, bufs: Vec<&'a [u8]>) -> Self {
        let bufs_first = bufs.first().copied().unwrap_or_default();
        let (rows, sources) = (ix.rows, ix.columns.len());
        // Row-major, filled a source at a time: what `ix.cell(s, row)` gives
        // (or NONE) for every row and source.
        // negative_gen appends its negatives to the rows: room for one a
        // row up front, so that appending does not move every row's cells.
        let headroom = if adds_rows(plan) { rows } else { 0 };
        let mut cells = Vec::with_capacity((rows + headroom) * sources);
        cells.resize(rows * sources, Cell::NONE);
        let own = |c: Cell| if c.is_none() { Cell::NONE } else { c };
        for (s, col) in ix.columns.iter().enumerate() {
            let targets = cells.get_mut(s..).unwrap_or_default().iter_mut().step_by(sources);
            match (col.present, col.shared) {
                (false, _) => {}
                (true, true) => {
                    if let Some(&c) = ix.cells.get(col.first).filter(|_| col.len > 0) {
                        targets.for_each(|t| *t = own(c));
                    }
                }
                (true, false) => {
                    let column = ix.cells.get(col.first..col.first + col.len.min(rows)).unwrap_or_default();
                    targets.zip(column).for_each(|(t, &c)| *t = own(c));
                }
            }
        }
        let batch = ix.kind == InputKind::Batch;
        let mut example_rows = Vec::with_capacity(rows + headroom);
        match batch {
            true => example_rows.resize(rows, ExampleRow::default()),
            false => example_rows.extend_from_slice(&ix.example_rows),
        }
        let mut meta = Vec::with_capacity(rows + headroom);
        meta.extend((0..rows as u32).map(|r| {
            if batch {
                RowMeta { batch_row: r, ..RowMeta::default() }
            } else {
                RowMeta { sample: r, ..RowMeta::default() }
            }
        }));
        Rows {
            plan: plan.identity().digest,
            kind: ix.kind,
            sources,
            reserved: Reserved { line_id: plan.line_id_source, label: plan.label_source, weight: plan.weight_source },
            cells,
            meta,
            example_rows,
            present: ix.columns.iter().map(|c| c.present).collect(),
            bufs: bufs.into_iter().map(RowBuf::Borrowed).collect(),
            stats: ix.stats,
            weight_buf: None,
            present_changed: false,
            indexed_rows: rows,
            split_cells: if batch { split_cells(plan, ix, bufs_first) } else { Vec::new() },
        }
    }

    pub fn len(&self) -> usize {
        self.meta.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The buffers the rows point into, as `write` hands them to the writers.
    pub(super) fn slices(&self) -> Vec<&[u8]> {
        self.bufs.iter().map(RowBuf::as_slice).collect()
    }

    /// Room for `additional` more rows without reallocating.
    pub fn reserve(&mut self, additional: usize) {
        self.cells.reserve(additional * self.sources);
        self.example_rows.reserve(additional);
        self.meta.reserve(additional);
    }

    /// Keeps the rows for which `keep(row)` is true, in order.
    pub fn retain(&mut self, mut keep: impl FnMut(usize) -> bool) {
        let mut at = 0;
        for row in 0..self.len() {
            if keep(row) {
                self.cells.copy_within(row * self.sources..(row + 1) * self.sources, at * self.sources);
                self.example_rows[at] = self.example_rows[row];
                self.meta.swap(at, row);
                at += 1;
            }
        }
        self.cells.truncate(at * self.sources);
        self.example_rows.truncate(at);
        self.meta.truncate(at);
    }

    /// Keeps the rows `order` names, in that order (a row may come more than
    /// once): what negative generation does after appending its negatives.
    /// Buffers stay where they are.
    pub fn select(&mut self, order: &[usize]) -> Result<(), RowsMismatch> {
        if let Some(&row) = order.iter().find(|&&r| r >= self.len()) {
            return Err(RowsMismatch::NoRow { row, rows: self.len() });
        }
        let s = self.sources;
        let mut cells = Vec::with_capacity(order.len() * s);
        for &row in order {
            cells.extend_from_slice(&self.cells[row * s..(row + 1) * s]);
        }
        self.cells = cells;
        self.example_rows = order.iter().map(|&row| self.example_rows[row]).collect();
        self.meta = order.iter().map(|&row| self.meta[row].clone()).collect();
        self.compact_if_sparse();
        Ok(())
    }

    /// Keeps the first `at` rows and returns the rest, which point into the
    /// same buffers.
    pub fn split_off(&mut self, at: usize) -> Rows<'a> {
        let at = at.min(self.len());
        let mut rest = self.empty_like();
        rest.cells = self.cells.split_off(at * self.sources);
        rest.example_rows = self.example_rows.split_off(at);
        rest.meta = self.meta.split_off(at);
        rest.present.clone_from(&self.present);
        rest.bufs.clone_from(&self.bufs);
        rest.compact_if_sparse();
        self.compact_if_sparse();
        rest
    }

    /// Removes row `row`, moving the last row into its place: O(sources).
    pub fn swap_remove(&mut self, row: usize) {
        let last = self.len() - 1;
        if row != last {
            let s = self.sources;
            self.cells.copy_within(last * s..(last + 1) * s, row * s);
            self.example_rows[row] = self.example_rows[last];
            self.meta.swap(row, last);
        }
        self.cells.truncate(last * self.sources);
        self.example_rows.truncate(last);
        self.meta.truncate(last);
        self.compact_if_sparse();
    }

    /// Drops buffers no row points into any more, once they outnumber the
    /// rows: rows that live long (a shuffle buffer) stay bounded.
    fn compact_if_sparse(&mut self) {
        if self.bufs.len() <= 4 * self.len() + 64 {
            return;
        }
        let old = std::mem::take(&mut self.bufs);
        self.weight_buf = None;
        let mut map = vec![u32::MAX; old.len()];
        let mut bufs = Vec::new();
        let mut remap = |b: u32| -> u32 {
            if b == u32::MAX {
                return b;
            }
            if map[b as usize] == u32::MAX {
                map[b as usize] = bufs.len() as u32;
                bufs.push(old[b as usize].clone());
            }
            map[b as usize]
        };
        for c in self.cells.iter_mut().filter(|c| !c.is_none()) {
            c.buf = remap(c.buf);
        }
        for e in &mut self.example_rows {
            e.buf = remap(e.buf);
            e.labels = remap(e.labels);
            if !e.line_id.is_none() {
                e.line_id.buf = remap(e.line_id.buf);
            }
        }
        for m in &mut self.meta {
            m.sample = remap(m.sample);
            m.line_id = m.line_id.map(&mut remap);
            m.features = m.features.map(&mut remap);
        }
        self.bufs = bufs;
    }

    /// Appends row `row` of `other` (indexed from the same kind of input by
    /// the same plan) after the last row.
    pub fn push_row(&mut self, other: &Rows<'a>, row: usize) -> Result<(), RowsMismatch> {
        self.check_join(other, row, true)?;
        self.push_copy(other, row, &mut Vec::new());
        self.compact_if_sparse();
        Ok(())
    }

    /// Appends a copy of this rows' `base` row in which the sources in
    /// `cleared` have no Feature, then the Features of the sources in
    /// `features` (an Example of named features this row now owns, and the
    /// byte range of each source's Feature in it) replace its own: how
    /// negative generation pairs a user's features with a pooled item's,
    /// clearing every item feature first so none of the base row's survives.
    pub fn push_with(&mut self, base: usize, example: Bytes, features: &[(usize, u32, u32)], cleared: &[usize]) {
        let at = self.len();
        let (cells, meta, example_row) =
            (self.row_cells(base).to_vec(), self.meta[base].clone(), self.example_rows[base]);
        self.cells.extend(cells);
        self.meta.push(meta);
        self.example_rows.push(example_row);
        for &source in cleared {
            if source < self.sources {
                self.cells[at * self.sources + source] = Cell::NONE;
            }
        }
        let buf = self.own(example);
        self.meta[at].features = Some(buf);
        self.meta[at].edited = true;
        for &(source, start, end) in features {
            if source < self.sources {
                self.cells[at * self.sources + source] = Cell { buf, start, end, index: 0, list: 0 };
                self.present_changed |= !self.present[source];
                self.present[source] = true;
            }
        }
    }

    /// Gives row `row` the named features of `example` in place of its own
    /// (an Example this row now owns, which must also hold any features an
    /// earlier override gave it), with the byte range of each source's
    /// Feature in it: how switch_slot_batch rewrites a feature.
    pub fn set_features(&mut self, row: usize, example: Bytes, features: &[(usize, u32, u32)]) {
        let buf = self.own(example);
        self.meta[row].features = Some(buf);
        for &(source, start, end) in features {
            if source < self.sources {
                self.set_cell(row, Some(source), Some(Cell { buf, start, end, index: 0, list: 0 }));
            }
        }
    }

    /// Makes `rows` hold no borrowed bytes: each borrowed buffer becomes a
    /// slice of the owner in `owners` that holds it (no copy), or a copy.
    /// Rows kept past their input (shuffling, batching) need this.
    pub fn into_owned(self, owners: &[Bytes]) -> Rows<'static> {
        let owned = |b: RowBuf<'a>| match b {
            RowBuf::Owned(b) => RowBuf::Owned(b),
            RowBuf::Borrowed(s) => {
                let range = s.as_ptr_range();
                let within = |o: &&Bytes| {
                    let r = o.as_ptr_range();
                    r.start <= range.start && range.end <= r.end
                };
                RowBuf::Owned(owners.iter().find(within).map_or_else(|| Bytes::copy_from_slice(s), |o| o.slice_ref(s)))
            }
        };
        Rows {
            plan: self.plan,
            kind: self.kind,
            sources: self.sources,
            reserved: self.reserved,
            cells: self.cells,
            example_rows: self.example_rows,
            meta: self.meta,
            present: self.present,
            bufs: self.bufs.into_iter().map(owned).collect(),
            stats: self.stats,
            weight_buf: self.weight_buf,
            present_changed: self.present_changed,
            indexed_rows: self.indexed_rows,
            split_cells: self.split_cells,
        }
    }

    /// Empty rows of the same plan and kind, to collect rows into.
    pub fn empty_like(&self) -> Self {
        Rows {
            plan: self.plan,
            kind: self.kind,
            sources: self.sources,
            reserved: self.reserved,
            cells: Vec::new(),
            example_rows: Vec::new(),
            meta: Vec::new(),
            present: vec![false; self.sources],
            bufs: Vec::new(),
            stats: Stats::default(),
            weight_buf: None,
            present_changed: true,
            indexed_rows: 0,
            // Rows collected here may come from other inputs, whose lists
            // nobody checked.
            split_cells: Vec::new(),
        }
    }

    /// Where row `row`'s sample is.
    pub fn sample(&self, row: usize) -> Sample<'_> {
        let m = &self.meta[row];
        let bytes = self.bufs[m.sample as usize].as_slice();
        match self.kind {
            InputKind::Batch => Sample::BatchRow { batch: bytes, row: m.batch_row as usize },
            InputKind::Examples => Sample::Example(bytes),
        }
    }

    /// The LineId that replaced the sample's (`set_line_id`), if any.
    pub fn line_id_override(&self, row: usize) -> Option<&[u8]> {
        self.meta[row].line_id.map(|b| self.bufs[b as usize].as_slice())
    }

    /// The labels that replaced the sample's (`set_labels`), if any.
    pub fn labels_override(&self, row: usize) -> Option<&[f32]> {
        self.meta[row].labels.as_deref()
    }

    /// The Example of named features that replace the sample's (`push_with`).
    pub fn features_override(&self, row: usize) -> Option<&[u8]> {
        self.meta[row].features.map(|b| self.bufs[b as usize].as_slice())
    }

    /// The `__LABEL__` Feature of a row of an ExampleBatch with its byte
    /// offset in the batch, when the index holds it as splitting the batch
    /// finds it (the plan reads labels, the batch was gathered in one pass,
    /// the row's labels, LineId and features are its sample's): `Some(None)`
    /// when the row has none. `None` when the index does not know, and the
    /// sample must be read.
    pub(crate) fn label_feature(&self, row: usize) -> Option<Option<(&[u8], usize)>> {
        self.source_feature(row, self.reserved.label?)
    }

    /// `label_feature` for `__LINE_ID__`.
    pub(crate) fn line_id_feature(&self, row: usize) -> Option<Option<(&[u8], usize)>> {
        self.source_feature(row, self.reserved.line_id?)
    }

    /// `label_feature` for the Feature named by the plan's `source`: known
    /// for negative_gen's item features.
    #[inline]
    pub(crate) fn source_feature(&self, row: usize, source: usize) -> Option<Option<(&[u8], usize)>> {
        let m = self.meta.get(row)?;
        let known = self.split_cells.get(source).copied().unwrap_or(false);
        // Overrides replace cells splitting does not see; so does
        // `set_weight`, the one edit without an override, in its source.
        let reweighted = m.edited && Some(source) == self.reserved.weight;
        if !known || reweighted || m.labels.is_some() || m.line_id.is_some() || m.features.is_some() {
            return None;
        }
        let c = self.cells[row * self.sources + source];
        if c.is_none() {
            return Some(None);
        }
        let bytes = self.bufs[c.buf as usize].as_slice().get(c.start as usize..c.end as usize)?;
        Some(Some((bytes, c.start as usize)))
    }

    /// Replaces the row's labels: what the plan's label outputs write.
    pub fn set_labels(&mut self, row: usize, labels: &[f32]) {
        self.meta[row].labels = Some(labels.into());
        if self.kind == InputKind::Batch {
            // A float_list Feature (field 3) of one packed run, built in
            // one buffer of its exact size.
            let run = labels.len() * 4;
            let list = crate::wire::len_field_len(1, run);
            let mut feature = Vec::with_capacity(crate::wire::len_field_len(3, list));
            crate::wire::push_len_header(&mut feature, 3, list);
            crate::wire::push_len_header(&mut feature, 1, run);
            feature.extend(labels.iter().flat_map(|v| v.to_le_bytes()));
            self.set_feature(row, self.reserved.label, feature);
            return;
        }
        let floats: Vec<u8> = labels.iter().flat_map(|v| v.to_le_bytes()).collect();
        if self.kind == InputKind::Examples {
            // Example field 101, packed, in a buffer of its own that the
            // label writers read in place of the sample's labels; the
            // sample's Example stays the row's (its weight, its `label`
            // and `instance_weight` features, as Monolith's relabelling
            // kernels copy the whole Example and rewrite only field 101).
            let buf = self.own(len_field(101, &floats).into());
            self.example_rows[row].labels = buf;
            self.set_cell(row, self.reserved.label, None);
        } else {
            let feature = len_field(3, &len_field(1, &floats));
            self.set_feature(row, self.reserved.label, feature);
        }
    }

    /// Replaces the row's instance weight.
    pub fn set_weight(&mut self, row: usize, weight: f32) {
        self.meta[row].edited = true;
        self.example_rows[row].weight = weight;
        let Some(source) = self.reserved.weight else { return };
        // A float_list of one value: 6 bytes, the same for every row of
        // this weight.
        let buf = match self.weight_buf {
            Some((bits, buf)) if bits == weight.to_bits() => buf,
            _ => {
                let buf = self.own(len_field(3, &len_field(1, &weight.to_le_bytes())).into());
                self.weight_buf = Some((weight.to_bits(), buf));
                buf
            }
        };
        let len = self.bufs[buf as usize].as_slice().len() as u32;
        self.set_cell(row, Some(source), Some(Cell { buf, start: 0, end: len, index: 0, list: 0 }));
    }

    /// Replaces the row's LineId with a serialized one.
    pub fn set_line_id(&mut self, row: usize, line_id: Bytes) {
        let len = line_id.len() as u32;
        let buf = self.own(line_id.clone());
        self.meta[row].line_id = Some(buf);
        if self.kind == InputKind::Examples {
            self.example_rows[row].line_id = Cell { buf, start: 0, end: len, index: 0, list: 0 };
        }
        // As `__LINE_ID__` holds it: a bytes_list (field 6) of one value,
        // built in one buffer of its exact size.
        if self.reserved.line_id.is_some() {
            let value = crate::wire::len_field_len(1, line_id.len());
            let mut feature = Vec::with_capacity(crate::wire::len_field_len(6, value));
            crate::wire::push_len_header(&mut feature, 6, value);
            crate::wire::push_len_header(&mut feature, 1, line_id.len());
            feature.extend_from_slice(&line_id);
            self.set_feature(row, self.reserved.line_id, feature);
        }
    }

    fn set_feature(&mut self, row: usize, source: Option<usize>, feature: Vec<u8>) {
        if let Some(s) = source {
            let len = feature.len() as u32;
            let buf = self.own(feature.into());
            self.set_cell(row, Some(s), Some(Cell { buf, start: 0, end: len, index: 0, list: 0 }));
        }
    }

    fn set_cell(&mut self, row: usize, source: Option<usize>, cell: Option<Cell>) {
        self.meta[row].edited = true;
        if let Some(s) = source {
            self.cells[row * self.sources + s] = cell.unwrap_or(Cell::NONE);
            self.present_changed |= cell.is_some() && !self.present[s];
            self.present[s] |= cell.is_some();
        }
    }

    fn own(&mut self, bytes: Bytes) -> u32 {
        self.bufs.push(RowBuf::Owned(bytes));
        (self.bufs.len() - 1) as u32
    }

    fn row_cells(&self, row: usize) -> &[Cell] {
        &self.cells[row * self.sources..(row + 1) * self.sources]
    }

    fn check_join(&self, other: &Rows<'_>, row: usize, same_kind: bool) -> Result<(), RowsMismatch> {
        if row >= other.len() {
            return Err(RowsMismatch::NoRow { row, rows: other.len() });
        }
        if (same_kind && other.kind != self.kind) || other.sources != self.sources || other.plan != self.plan {
            let describe =
                |r: &Rows<'_>| format!("{:?} input reading {} features (model {:016x})", r.kind, r.sources, r.plan);
            return Err(RowsMismatch::Source { found: describe(other), expected: describe(self) });
        }
        Ok(())
    }

    /// Copies row `row` of `other`, adopting each buffer it points into once.
    fn push_copy(&mut self, other: &Rows<'a>, row: usize, map: &mut Vec<(u32, u32)>) {
        map.clear();
        // The row's cells are of another input's index: `label_feature`
        // and `source_feature` no longer vouch for them.
        self.split_cells.clear();
        let mut adopt = |this: &mut Self, old: u32| -> u32 {
            if old == u32::MAX {
                return old;
            }
            if let Some(&(_, new)) = map.iter().find(|(o, _)| *o == old) {
                return new;
            }
            this.bufs.push(other.bufs[old as usize].clone());
            let new = (this.bufs.len() - 1) as u32;
            map.push((old, new));
            new
        };
        for &c in other.row_cells(row) {
            let moved = if c.is_none() { c } else { Cell { buf: adopt(self, c.buf), ..c } };
            self.cells.push(moved);
        }
        let e = other.example_rows[row];
        let line_id =
            if e.line_id.is_none() { e.line_id } else { Cell { buf: adopt(self, e.line_id.buf), ..e.line_id } };
        let (buf, labels) = (adopt(self, e.buf), adopt(self, e.labels));
        self.example_rows.push(ExampleRow { buf, labels, line_id, ..e });
        let m = &other.meta[row];
        let meta = RowMeta {
            sample: adopt(self, m.sample),
            batch_row: m.batch_row,
            line_id: m.line_id.map(|b| adopt(self, b)),
            labels: m.labels.clone(),
            features: m.features.map(|b| adopt(self, b)),
            edited: m.edited,
        };
        self.meta.push(meta);
        for (mine, theirs) in self.present.iter_mut().zip(&other.present) {
            self.present_changed |= *theirs && !*mine;
            *mine |= *theirs;
        }
    }

    /// The ExampleBatch every row is a row of, when the rows are nothing
    /// else: rows of that one batch (dropped, reordered or repeated), none
    /// given another label, LineId, weight or Feature, the sources present
    /// as the batch has them. `write` then extracts the batch whole and
    /// copies the rows out ([`Self::batch_rows`]), which gives what writing
    /// these rows gives.
    pub(super) fn whole_batch(&self) -> Option<&[u8]> {
        // Extracting the whole batch costs about what writing two thirds of
        // its rows one by one does (benches/README, "Rows from a selection").
        if self.kind != InputKind::Batch || self.present_changed || 3 * self.len() < 2 * self.indexed_rows {
            return None;
        }
        let sample = self.meta.first()?.sample;
        let plain = |m: &RowMeta| {
            m.sample == sample && !m.edited && m.line_id.is_none() && m.labels.is_none() && m.features.is_none()
        };
        self.meta.iter().all(plain).then(|| self.bufs[sample as usize].as_slice())
    }

    /// Each row's row in its batch, in order.
    pub(super) fn batch_rows(&self) -> impl Iterator<Item = usize> + '_ {
        self.meta.iter().map(|m| m.batch_row as usize)
    }

    /// What indexing the rows' inputs read.
    pub(super) fn stats(&self) -> Stats {
        self.stats
    }

    /// Lays the rows out column by column, as extraction reads them.
    pub(super) fn lay_out(&self, ix: &mut Index, limits: Limits) {
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

/// Whether the plan's transforms append rows (negative_gen).
fn adds_rows(plan: &Plan) -> bool {
    plan.offline
        .transforms
        .iter()
        .any(|t| matches!(t, crate::config::offline::SampleTransform::NegativeGen(n) if n.neg_num > 0))
}

/// `split_exact` of each source transforms read by name (`split_cells`);
/// false for the others.
fn split_cells(plan: &Plan, ix: &Index, batch: &[u8]) -> Vec<bool> {
    let mut known = vec![false; ix.columns.len()];
    // The batch was gathered in one pass (its top level decodes, no needed
    // list came twice, every list has the batch's length), and the plan
    // reads SHARED lists as SHARED (not `compat: monolith`, whose writers
    // read reserved lists row by row).
    if !ix.fast || plan.compat == crate::config::Compat::Monolith {
        return known;
    }
    let items = plan.offline.transforms.iter().flat_map(|t| match t {
        crate::config::offline::SampleTransform::NegativeGen(n) => n.item_features.as_slice(),
        _ => &[],
    });
    let sources =
        [plan.label_source, plan.line_id_source].into_iter().chain(items.map(|n| plan.source_of(n.as_bytes())));
    for s in sources.flatten() {
        if s < known.len() && !known[s] {
            known[s] = split_exact(ix, batch, s);
        }
    }
    known
}

/// Whether the index of an ExampleBatch gathered in one pass holds each
/// row's Feature of `source` as splitting the batch finds it
/// (`transforms::row::Split`): every Feature of its list parses
/// (splitting parses the whole list, and fails on any of them).
fn split_exact(ix: &Index, batch: &[u8], source: usize) -> bool {
    let col = ix.columns[source];
    if !col.present {
        return true;
    }
    let cells = ix.cells.get(col.first..col.first + col.len).unwrap_or_default();
    cells.iter().all(|c| {
        let bytes = batch.get(c.start as usize..c.end as usize);
        // A Feature of one list variant parses; anything else is asked of
        // the parser.
        bytes.is_some_and(|b| crate::view::one_field(b) || crate::view::FeatureView::parse(b, c.start as usize).is_ok())
    })
}
