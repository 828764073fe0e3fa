//! Phase one of extraction: find, for every source the plan reads and every
//! row, the bytes of its Feature. Lists the plan does not read are skipped by
//! their length prefix; nothing inside a Feature is decoded here.

use super::{ExtractError, Stats};
use crate::config::{Compat, Plan};
use crate::error::ErrorKind;
use crate::view::{ExampleBatchView, ExampleView, ListEntry, ListType};
use crate::wire::{DecodeError, Reader, WireType, Within};

/// Where one Feature's bytes sit: buffer, range, and its index for error paths
/// (feature index in its list, or named_feature index in its Example).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Cell {
    pub buf: u32,
    pub start: u32,
    pub end: u32,
    pub index: u32,
    /// named_feature_list index (batch input), for error paths.
    pub list: u32,
}

impl Cell {
    /// A missing feature.
    pub const NONE: Cell = Cell { buf: u32::MAX, start: 0, end: 0, index: 0, list: 0 };

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
    /// A list left for its writer to walk (absolute byte range of its body):
    /// its Features are decoded straight into the column, without cells.
    pub body: Option<(u32, u32)>,
}

/// Which input shape the cells came from; decides error paths and defaults.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum InputKind {
    #[default]
    Batch,
    Examples,
}

/// Per-row data an Example carries outside its named features.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ExampleRow {
    /// The buffer holding this row's Example.
    pub buf: u32,
    /// The buffer whose field 101 holds this row's labels: `buf` unless
    /// `Rows::set_labels` replaced them (an Example of field 101 alone).
    /// Everything else of the row (its weight among it) stays in `buf`.
    pub labels: u32,
    /// Field 100 (a LineId message), or `Cell::NONE`.
    pub line_id: Cell,
    /// Field 102.
    pub weight: f32,
}

/// Where every needed Feature of one input is: phase one's result, read by
/// the writers. Kept between calls as scratch.
#[derive(Debug, Default)]
pub(crate) struct Index {
    /// The bounds of the current call (the plan's, or the caller's policy).
    pub limits: crate::config::Limits,
    /// Sources whose readers all walk a list themselves (`direct_sources`).
    pub direct: Vec<bool>,
    /// Gathers every list into cells (tests compare the two paths).
    pub cells_only: bool,
    pub cells: Vec<Cell>,
    pub columns: Vec<Column>,
    /// `compat: monolith`, checked path: the earlier copies of a repeated
    /// list, in wire order (`columns` holds the last), which Monolith applies
    /// in turn over the same rows.
    pub earlier: Vec<(usize, Column)>,
    /// The same for Examples: (source, row, cell) of the earlier features of
    /// one name in one Example, in order.
    pub example_earlier: Vec<(usize, usize, Cell)>,
    pub example_rows: Vec<ExampleRow>,
    pub kind: InputKind,
    pub rows: usize,
    pub stats: Stats,
    /// The last batch was gathered in one pass (`gather_batch_fast`): its
    /// top level decoded and no needed list came twice.
    pub fast: bool,
    route: Route,
}

/// The plan's answers for the lists of the last batch, by their first
/// names in wire order. A client sends its lists in the same order call
/// after call, so a list's name is compared with the name at its place last
/// time, read in order, instead of looked up in the plan's map (a slot and
/// the name's bytes, random reads: most of the 2.2 first-level cache misses
/// per output that finding sources cost a thousand-list snapshot). The first name that
/// differs drops the rest of the memo, which this call then writes anew.
#[derive(Debug, Default)]
struct Route {
    /// The compiled plan the answers are of (`Plan::uid`).
    plan: Option<u64>,
    names: Vec<u8>,
    /// Where each name ends in `names`, and the plan's source for it
    /// (`u32::MAX`: not read).
    entries: Vec<(u32, u32)>,
    /// The next place in wire order, and where its name starts in `names`.
    at: usize,
    cursor: usize,
}

impl Route {
    fn begin(&mut self, plan: &Plan) {
        if self.plan != Some(plan.uid) {
            self.plan = Some(plan.uid);
            self.names.clear();
            self.entries.clear();
        }
        self.at = 0;
        self.cursor = 0;
    }

    /// `plan.source_of(name)` for a list named first. A name the plan's
    /// filter turns away (most, in a model that reads a few of many lists)
    /// takes no place in the memo: one bit costs less than a comparison.
    #[inline]
    fn source_of(&mut self, plan: &Plan, name: &[u8]) -> Option<usize> {
        if !plan.may_read(name) {
            return None;
        }
        let at = self.at;
        self.at += 1;
        if let Some(&(end, source)) = self.entries.get(at)
            && let Some(known) = self.names.get(self.cursor..end as usize)
            && crate::wire::same_bytes(known, name)
        {
            self.cursor = end as usize;
            return (source != u32::MAX).then_some(source as usize);
        }
        self.learn(plan, at, name)
    }

    #[inline(never)]
    fn learn(&mut self, plan: &Plan, at: usize, name: &[u8]) -> Option<usize> {
        let source = plan.source_of(name);
        // A memo in step with this call (every earlier place matched or was
        // learnt) drops what follows and learns this name; one that fell
        // behind (a name too long to keep) stays as it is.
        if at <= self.entries.len() {
            self.entries.truncate(at);
            self.names.truncate(self.cursor);
            let answer = match source {
                None => Some(u32::MAX),
                Some(s) => u32::try_from(s).ok().filter(|&a| a != u32::MAX),
            };
            if let Some(answer) = answer
                && let Ok(end) = u32::try_from(self.names.len() + name.len())
            {
                self.names.extend_from_slice(name);
                self.entries.push((end, answer));
                self.cursor = self.names.len();
            }
        }
        source
    }
}

impl Index {
    /// A well-formed batch is gathered in one pass (`gather_batch_fast`); when
    /// that pass meets anything irregular, the checked two-pass path runs from
    /// the start and reports exactly the error it always has.
    /// `needed`: the outputs this call computes (see `mark_needed`).
    /// `everything`: `needed` is the plan's call for every visible output,
    /// whose direct sources the plan holds.
    pub(crate) fn gather_batch(
        &mut self,
        plan: &Plan,
        buf: &[u8],
        needed: &[bool],
        everything: bool,
    ) -> Result<usize, ExtractError> {
        check_size(buf)?;
        match everything {
            true => self.direct.clone_from(&super::everything(plan).direct),
            false => direct_sources(plan, needed, &mut self.direct),
        }
        if let Some(rows) = self.gather_batch_fast(plan, buf, !self.cells_only) {
            self.fast = true;
            return Ok(rows);
        }
        self.fast = false;
        self.gather_batch_checked(plan, buf)
    }

    /// Whether some list is left for its writers to walk.
    pub(crate) fn has_direct(&self) -> bool {
        self.columns.iter().any(|c| c.body.is_some())
    }

    /// One pass over the top level, gathering lists as they come: a separate
    /// validating pass first would walk every list header twice, and on a
    /// 250 KB batch that walk is a chain of cache misses. Gives up (None) on a
    /// decode error, a repeated list, a batch size over the limit or a list of
    /// the wrong length; the checked path then reports the error, or gathers
    /// the repeated list with its last copy winning.
    fn gather_batch_fast(&mut self, plan: &Plan, buf: &[u8], direct: bool) -> Option<usize> {
        self.reset(plan, InputKind::Batch, 0);
        self.route.begin(plan);
        let mut batch_size = 0i32;
        let mut index = 0;
        let mut r = Reader::new(buf, 0);
        while !r.is_empty() {
            // A list (field 1) with a length of one or two bytes, read without
            // the general key and varint decoding: nearly every field here.
            let (body, base) = match r.short_field(0x0a) {
                Some(list) => list,
                None => match r.key().ok()? {
                    (1, WireType::Len) => r.len_delimited().ok()?,
                    (3, WireType::Varint) => {
                        batch_size = r.varint().ok()? as i32;
                        continue;
                    }
                    (100, WireType::Varint) => {
                        r.varint().ok()?;
                        continue;
                    }
                    (1 | 3 | 100, _) => return None,
                    (field, wire) => {
                        r.skip(field, wire).ok()?;
                        continue;
                    }
                },
            };
            let entry = ListEntry { body, base, index };
            index += 1;
            self.stats.lists_seen += 1;
            // Every encoder writes the name first: a needed list is
            // then gathered in the same walk that confirms its name.
            let named = first_name(body);
            let first = named.and_then(|n| Some((n, self.route.source_of(plan, n)?)));
            let source = match first {
                // Its writers walk it: nothing to do here but note where.
                Some((_, source)) if direct && self.direct[source] && !self.columns[source].present => {
                    self.stats.lists_decoded += 1;
                    let (start, end) = (base as u32, (base + body.len()) as u32);
                    let col = Column {
                        present: true,
                        list_index: entry.index,
                        body: Some((start, end)),
                        ..Column::default()
                    };
                    self.columns[source] = col;
                    continue;
                }
                Some((name, source)) if !self.columns[source].present => {
                    self.gather_named_list(plan, source, name, entry)?;
                    continue;
                }
                Some(_) => return None,
                // Named first by a name the plan does not read: only
                // a later, different name field (the last one wins)
                // could make it needed, so look for one past the first.
                None => match named {
                    Some(name) => {
                        let after = 2 + name.len();
                        let last = match later_name(body, after) {
                            Some(last) => last,
                            None => Reader::new(&body[after..], base + after).last_len_field(1).ok()?,
                        };
                        if last.is_empty() || last == name {
                            continue;
                        }
                        plan.source_of(last)
                    }
                    None => plan.source_of(entry.name().ok()?),
                },
            };
            let Some(source) = source else { continue };
            if self.columns[source].present {
                return None;
            }
            self.gather_list(plan, source, entry).ok()?;
        }
        let rows = usize::try_from(batch_size).ok().filter(|&n| n <= self.limits.max_batch_size)?;
        self.rows = rows;
        // A walked list's length is checked by the walk.
        let ok = self
            .columns
            .iter()
            .enumerate()
            .all(|(s, c)| !c.present || c.body.is_some() || self.list_length_ok(plan, s, rows));
        ok.then_some(rows)
    }

    pub(crate) fn gather_batch_checked(&mut self, plan: &Plan, buf: &[u8]) -> Result<usize, ExtractError> {
        let batch = ExampleBatchView::parse(buf)?;
        let rows = i64::from(batch.batch_size());
        if rows < 0 || rows as usize > self.limits.max_batch_size {
            return Err(ErrorKind::BatchSize { found: rows, limit: self.limits.max_batch_size }.into());
        }
        let rows = rows as usize;
        self.reset(plan, InputKind::Batch, rows);
        for entry in batch.lists() {
            let entry = entry?;
            let name = entry.name()?;
            self.stats.lists_seen += 1;
            let Some(source) = plan.source_of(name) else { continue };
            self.gather_list(plan, source, entry)?;
        }
        // A repeated list is decoded each time, but only the last copy (the
        // one that wins) must have the right length; in compat: monolith
        // every copy is applied, so every copy must. Report in wire order.
        let last = (0..self.columns.len()).filter(|&s| self.columns[s].present).map(|s| (s, self.columns[s]));
        let mut present: Vec<(usize, Column)> = last.chain(self.earlier.iter().copied()).collect();
        present.sort_by_key(|(_, col)| col.list_index);
        for (source, col) in present {
            self.check_copy_length(plan, source, col, rows)?;
        }
        Ok(rows)
    }

    /// Records the cells of one needed list as the column of `source`.
    fn gather_list(&mut self, plan: &Plan, source: usize, entry: ListEntry<'_>) -> Result<(), DecodeError> {
        self.stats.lists_decoded += 1;
        let first = self.cells.len();
        let cells = &mut self.cells;
        let list = entry.index;
        let list_type = entry.decode(|i, body, at| {
            cells.push(Cell { list: list as u32, ..cell(0, i, body, at) });
            Ok(())
        })?;
        let len = self.cells.len() - first;
        let shared = list_type == ListType::Shared && !self.row_by_row(plan, source);
        if self.columns[source].present && plan.compat == Compat::Monolith {
            self.earlier.push((source, self.columns[source]));
        }
        self.columns[source] = Column { present: true, shared, first, len, list_index: entry.index, body: None };
        Ok(())
    }

    /// Gathers a list whose first field named it `name`, in one walk; gives up
    /// (None) on anything irregular, including a later, different name.
    fn gather_named_list(&mut self, plan: &Plan, source: usize, name: &[u8], entry: ListEntry<'_>) -> Option<()> {
        self.stats.lists_decoded += 1;
        let first = self.cells.len();
        let list_type = walk_list(&mut self.cells, name, entry)?;
        let len = self.cells.len() - first;
        let shared = list_type == ListType::Shared && !self.row_by_row(plan, source);
        self.columns[source] = Column { present: true, shared, first, len, list_index: entry.index, body: None };
        Some(())
    }

    /// Whether `source`'s list came more than once (compat: monolith).
    pub(crate) fn repeated(&self, source: usize) -> bool {
        self.earlier.iter().any(|(s, _)| *s == source) || self.example_earlier.iter().any(|(s, ..)| *s == source)
    }

    /// Whether some list or feature came more than once (compat: monolith).
    pub(crate) fn any_repeated(&self) -> bool {
        !self.earlier.is_empty() || !self.example_earlier.is_empty()
    }

    /// The cell of `source` at `row`, if that row has the feature.
    #[inline]
    pub(crate) fn cell(&self, source: usize, row: usize) -> Option<Cell> {
        let col = self.columns[source];
        let i = match (col.present, col.shared) {
            (false, _) => return None,
            (true, true) if col.len > 0 => col.first,
            (true, false) if row < col.len => col.first + row,
            _ => return None,
        };
        Some(self.cells[i]).filter(|c| !c.is_none())
    }

    /// Monolith reads `__LABEL__`, `__LINE_ID__` and `instance_weight` row by
    /// row whatever their list type; native mode broadcasts SHARED ones.
    pub(crate) fn row_by_row(&self, plan: &Plan, source: usize) -> bool {
        plan.compat == Compat::Monolith
            && [plan.line_id_source, plan.label_source, plan.weight_source].contains(&Some(source))
    }

    /// A SHARED list holds the one Feature of every row. Native mode allows
    /// no Feature (the feature is missing) but refuses more than one, which
    /// would be ignored without a word; Monolith needs `feature(0)` and
    /// ignores the rest.
    fn list_length_ok(&self, plan: &Plan, source: usize, rows: usize) -> bool {
        self.copy_length_ok(plan, source, self.columns[source], rows)
    }

    /// `list_length_ok` for one copy of a list.
    #[inline]
    fn copy_length_ok(&self, plan: &Plan, source: usize, col: Column, rows: usize) -> bool {
        if col.shared {
            match plan.compat {
                Compat::Native => col.len <= 1,
                Compat::Monolith => col.len >= 1,
            }
        } else if self.row_by_row(plan, source) {
            col.len <= rows
        } else {
            col.len == rows
        }
    }

    fn check_copy_length(&self, plan: &Plan, source: usize, col: Column, rows: usize) -> Result<(), ExtractError> {
        if self.copy_length_ok(plan, source, col, rows) {
            return Ok(());
        }
        let name = plan.source_names[source].clone();
        if col.shared && plan.compat == Compat::Native {
            return Err(ErrorKind::SharedListLength { index: col.list_index, name, found: col.len }.into());
        }
        if col.shared {
            // parse_example_lib.cc:603 CHECK_GT(feature_size(), 0) aborts Monolith.
            let message = "SHARED list holds no feature (Monolith aborts: it reads feature(0) for every row)";
            return Err(
                ErrorKind::Invalid { path: format!("named_feature_list[{}]", col.list_index), name, message }.into()
            );
        }
        Err(ErrorKind::ListLength { index: col.list_index, name, found: col.len, batch: rows }.into())
    }

    pub(crate) fn gather_examples(&mut self, plan: &Plan, bufs: &[&[u8]]) -> Result<usize, ExtractError> {
        let rows = bufs.len();
        if rows > self.limits.max_batch_size {
            return Err(ErrorKind::TooManyRows { found: rows, limit: self.limits.max_batch_size }.into());
        }
        self.reset(plan, InputKind::Examples, rows);
        let sources = plan.source_names.len();
        self.cells.resize(sources * rows, Cell::NONE);
        for (s, col) in self.columns.iter_mut().enumerate() {
            *col = Column { present: true, shared: false, first: s * rows, len: rows, list_index: 0, body: None };
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
        self.example_rows.push(ExampleRow {
            buf: row as u32,
            labels: row as u32,
            line_id,
            weight: view.instance_weight(),
        });
        let monolith = plan.compat == Compat::Monolith;
        let mut extension = Extension::default();
        for entry in view.features() {
            let entry = entry?;
            self.stats.lists_seen += 1;
            // Monolith's ExtendExample stops reading `__LINE_ID__` once it has
            // seen all three reserved names (data_reader.cc:191-193).
            let extended = monolith && extension.done();
            if monolith {
                extension.see(entry.name);
            }
            let Some(source) = plan.source_of(entry.name) else { continue };
            if extended && Some(source) == plan.line_id_source {
                continue;
            }
            self.stats.lists_decoded += 1;
            // A NamedFeature without a Feature reads as an empty Feature.
            let (body, at) = entry.feature.unwrap_or((&[], 0));
            let slot = &mut self.cells[source * rows + row];
            // Monolith's ExampleParser fills an output from every feature of
            // its name in turn (parse_example_lib.cc:409-416): keep the
            // earlier ones. (The reserved names have rules of their own.)
            if monolith && !slot.is_none() && !plan.is_reserved(source) {
                self.example_earlier.push((source, row, *slot));
            }
            *slot = cell(row, entry.index, body, at);
        }
        Ok(())
    }

    fn reset(&mut self, plan: &Plan, kind: InputKind, rows: usize) {
        self.kind = kind;
        self.rows = rows;
        self.stats = Default::default();
        self.cells.clear();
        self.earlier.clear();
        self.example_earlier.clear();
        self.example_rows.clear();
        self.columns.clear();
        self.columns.resize(plan.source_names.len(), Column::default());
    }
}

/// Which reserved names Monolith's ExtendExample has seen in an Example.
#[derive(Debug, Default)]
pub(crate) struct Extension {
    line_id: bool,
    label: bool,
    weight: bool,
}

impl Extension {
    pub(crate) fn see(&mut self, name: &[u8]) {
        match name {
            b"__LINE_ID__" => self.line_id = true,
            b"__LABEL__" => self.label = true,
            b"instance_weight" => self.weight = true,
            _ => {}
        }
    }

    /// All three seen: ExtendExample reads no further.
    pub(crate) fn done(&self) -> bool {
        self.line_id && self.label && self.weight
    }
}

/// The list's name when it is the first field (key 0x0a, a one-byte length).
#[inline]
pub(crate) fn first_name(body: &[u8]) -> Option<&[u8]> {
    match body {
        [0x0a, len, rest @ ..] if *len < 0x80 => rest.get(..usize::from(*len)),
        _ => None,
    }
}

/// The last name field of a list body from `pos` on (empty when there is
/// none), stepping over Features with one- or two-byte lengths and a `type`
/// and `id` of one or two bytes: the layout of every list an encoder writes.
/// `None` for anything else, for `Reader::last_len_field` to judge. (A
/// branch-free version of this loop was 50% slower: it makes each field's
/// position wait on the previous field's length, where the branches let the
/// processor run ahead.)
#[inline]
fn later_name(body: &[u8], mut pos: usize) -> Option<&[u8]> {
    let mut last: &[u8] = &[];
    while pos < body.len() {
        let key = body[pos];
        let l0 = usize::from(*body.get(pos + 1)?);
        let (len, start) = if l0 < 0x80 {
            (l0, pos + 2)
        } else {
            let l1 = usize::from(*body.get(pos + 2)?);
            if l1 >= 0x80 {
                return None;
            }
            (l0 & 0x7f | l1 << 7, pos + 3)
        };
        match key {
            0x12 => pos = start + len,
            0x0a => {
                last = body.get(start..start + len)?;
                pos = start + len;
            }
            // `type` and `id`, varints of one or two bytes.
            0x18 | 0x20 => pos = start,
            _ => return None,
        }
    }
    (pos == body.len()).then_some(last)
}

/// One walk over a NamedFeatureList: a cell per Feature, the list type, and
/// a check that no later name differs from `name`.
fn walk_list(cells: &mut Vec<Cell>, name: &[u8], entry: ListEntry<'_>) -> Option<ListType> {
    let mut n = 0u32;
    let list = entry.index as u32;
    let end = walk_features(name, entry.body, |feature, start| {
        let at = entry.base + start;
        cells.push(Cell { buf: 0, start: at as u32, end: (at + feature.len()) as u32, index: n, list });
        n += 1;
        Some(())
    })?;
    Some(end.list_type)
}

/// What a list walk learnt besides its Features.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ListEnd {
    pub count: usize,
    pub list_type: ListType,
}

/// Walks the fields of a NamedFeatureList body, handing each Feature and its
/// offset in `body` to `feature`, and checking that every name equals `name`.
/// Features with one- or two-byte lengths (nearly all) take the tight path;
/// anything unusual gives up (None), as does `feature`, for the checked path
/// to decode and report.
#[inline]
pub(crate) fn walk_features(
    name: &[u8],
    body: &[u8],
    mut feature: impl FnMut(&[u8], usize) -> Option<()>,
) -> Option<ListEnd> {
    walk_runs(name, body, None, |f, start, _| feature(f, start))
}

/// `walk_features`, where a Feature written as one short packed run of
/// `variant` (its key byte, e.g. 0x12 for fid_v2_list) is recognised by one
/// comparison of six header bytes and handed over with its values (the
/// third argument), so the caller need not parse it again.
#[inline]
pub(crate) fn walk_runs(
    name: &[u8],
    body: &[u8],
    variant: Option<u8>,
    mut feature: impl FnMut(&[u8], usize, Option<&[u8]>) -> Option<()>,
) -> Option<ListEnd> {
    let mut list_type = ListType::Individual;
    let mut pos = 0;
    let mut count = 0;
    while pos < body.len() {
        if let Some((values, end)) = variant.and_then(|v| short_run(body, pos, v)) {
            feature(&body[pos + 2..end], pos + 2, Some(values))?;
            count += 1;
            pos = end;
            continue;
        }
        let key = body[pos];
        match key {
            0x12 | 0x0a => {
                let (len, start) = short_len(body, pos + 1)?;
                let end = start.checked_add(len).filter(|&e| e <= body.len())?;
                if key == 0x12 {
                    feature(&body[start..end], start, None)?;
                    count += 1;
                } else if !is_name(&body[start..end], name) {
                    return None;
                }
                pos = end;
            }
            0x18 => {
                let v = *body.get(pos + 1)?;
                if v >= 0x80 {
                    return None;
                }
                list_type = if v == 1 { ListType::Shared } else { ListType::Individual };
                pos += 2;
            }
            // `id` (field 4, a varint): read past it.
            0x20 => {
                let len = body.get(pos + 1..)?.iter().take(10).position(|&b| b < 0x80)? + 1;
                pos += 1 + len;
            }
            _ => return None,
        }
    }
    Some(ListEnd { count, list_type })
}

/// `field == name`, without reading bytes when `field` is `name` itself:
/// the walks are handed the list's first name field as `name`.
#[inline]
fn is_name(field: &[u8], name: &[u8]) -> bool {
    std::ptr::eq(field, name) || field == name
}

/// A Feature field at `pos` that is exactly `12 L <variant> L-2 0a L-4`
/// followed by L-4 bytes of packed values (lengths under 128): its values
/// and where the field ends.
#[inline(always)]
fn short_run(body: &[u8], pos: usize, variant: u8) -> Option<(&[u8], usize)> {
    // The six header bytes as one word: one load and one comparison.
    let header = match body.get(pos..).and_then(|b| b.first_chunk::<8>()) {
        Some(word) => u64::from_le_bytes(*word) & 0xffff_ffff_ffff,
        None => {
            let h: &[u8; 6] = body.get(pos..)?.first_chunk::<6>()?;
            h.iter().rev().fold(0, |w, &b| w << 8 | u64::from(b))
        }
    };
    // `l`, `l - 2` and `l - 4` put in their bytes by one multiplication; for
    // `l < 4` the subtraction borrows into the top bytes, which the header
    // never has, so those fail the comparison as they should.
    let l = (header >> 8) as u8;
    let fixed = 0x0a_0000_0012 | u64::from(variant) << 16;
    let canonical = (fixed + u64::from(l) * 0x0100_0100_0100).wrapping_sub(0x0400_0200_0000);
    if header != canonical || l >= 0x80 {
        return None;
    }
    let end = pos + 2 + usize::from(l);
    Some((body.get(pos + 6..end)?, end))
}

/// Marks the sources a needed sparse or dense output reads and no needed
/// output of another kind does: their writers walk the list themselves. The
/// reserved lists, strings, sequences and LineIds are read through cells, and
/// so is a list no needed output reads (gathering it still checks its names
/// and its length, as the checked path would).
pub(crate) fn direct_sources(plan: &Plan, needed: &[bool], direct: &mut Vec<bool>) {
    direct.clear();
    direct.resize(plan.source_names.len(), false);
    for (out, _) in plan.outputs.iter().zip(needed).filter(|(_, n)| **n) {
        if let crate::config::Source::Feature(s) = out.source()
            && walks(&out.op)
        {
            direct[s] = true;
        }
    }
    let reserved = [plan.line_id_source, plan.label_source, plan.weight_source];
    for s in reserved.into_iter().flatten() {
        direct[s] = false;
    }
    for (out, _) in plan.outputs.iter().zip(needed).filter(|(_, n)| **n) {
        if let crate::config::Source::Feature(s) = out.source()
            && !walks(&out.op)
        {
            direct[s] = false;
        }
    }
}

/// The outputs whose writers walk their list (`Ctx::write_walked`).
fn walks(op: &crate::config::Op) -> bool {
    use crate::config::Op;
    matches!(op, Op::Sparse { .. } | Op::Dense { .. } | Op::String { join: None, .. })
}

/// A length of one to three varint bytes at `at`: (length, where its bytes
/// start).
#[inline(always)]
fn short_len(b: &[u8], at: usize) -> Option<(usize, usize)> {
    match b.get(at..)? {
        [l0, ..] if *l0 < 0x80 => Some((usize::from(*l0), at + 1)),
        [l0, l1, ..] if *l1 < 0x80 => Some((usize::from(l0 & 0x7f) | usize::from(*l1) << 7, at + 2)),
        _ => crate::view::short_len(b, at).map(|(len, n)| (len, at + n)),
    }
}

/// Offsets fit in u32: `check_size` rejected larger buffers up front.
fn cell(buf: usize, index: usize, body: &[u8], at: usize) -> Cell {
    Cell { buf: buf as u32, start: at as u32, end: (at + body.len()) as u32, index: index as u32, list: 0 }
}

fn check_size(buf: &[u8]) -> Result<(), ExtractError> {
    if buf.len() > u32::MAX as usize - 1 {
        return Err(ErrorKind::InputTooLarge { found: buf.len() }.into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! The one-pass gather must agree with the checked path whenever it
    //! succeeds, on well-formed and damaged batches alike.

    use super::*;
    use crate::proto::monolith_pb as pb;
    use proptest::prelude::*;

    const MODEL: &str = "name: m\ncompat: COMPAT\nfeatures:\n  - {name: a, kind: sparse}\n  - {name: b, kind: sparse}\n  - {name: label, kind: label}\n";

    fn batch() -> impl Strategy<Value = Vec<u8>> {
        let names = || prop::sample::select(vec!["a", "b", "z", "__LABEL__"]);
        let renamed = prop::option::weighted(0.2, names());
        let list = (names(), 0..4usize, any::<bool>(), 0..300i32, renamed);
        (prop::collection::vec(list, 0..6), 0..4i32, any::<usize>(), any::<u8>(), 0..3u8).prop_map(
            |(lists, rows, at, byte, damage)| {
                let fid =
                    |v: u64| pb::Feature { r#type: Some(pb::feature::Type::FidV2List(pb::FidList { value: vec![v] })) };
                let lists = lists
                    .into_iter()
                    .map(|(name, n, shared, id, renamed)| {
                        let feature = (0..n as u64).map(fid).collect();
                        (pb::NamedFeatureList { name: name.into(), feature, r#type: i32::from(shared), id }, renamed)
                    })
                    .collect();
                let mut buf = super::super::test_batches::encode(rows, lists);
                match damage {
                    1 if !buf.is_empty() => buf.truncate(at % buf.len()),
                    2 if !buf.is_empty() => {
                        let i = at % buf.len();
                        buf[i] = byte;
                    }
                    _ => {}
                }
                buf
            },
        )
    }

    proptest! {
        #[test]
        fn one_pass_agrees_with_the_checked_path(buf in batch(), monolith in any::<bool>()) {
            let plan = Plan::from_yaml(&MODEL.replace("COMPAT", if monolith { "monolith" } else { "native" })).unwrap();
            let (mut fast, mut checked) = (Index::default(), Index::default());
            let checked_rows = checked.gather_batch_checked(&plan, &buf);
            if let Some(rows) = fast.gather_batch_fast(&plan, &buf, false) {
                prop_assert_eq!(checked_rows.ok(), Some(rows));
                prop_assert_eq!(&fast.cells, &checked.cells);
                prop_assert_eq!(format!("{:?}", fast.columns), format!("{:?}", checked.columns));
                prop_assert_eq!((fast.rows, fast.stats), (checked.rows, checked.stats));
            }
        }

        /// An index reused across calls (its memo of the last batch's names,
        /// `Route`) gathers what a fresh one does, whatever the batches and
        /// the plans in turn: two compilations of one model, and a model
        /// that reads other names at other sources.
        #[test]
        fn a_reused_index_gathers_what_a_fresh_one_does(
            calls in prop::collection::vec((batch(), 0..3usize), 1..8),
        ) {
            let other = "name: o\ncompat: native\nfeatures:\n  - {name: z, kind: sparse}\n  - {name: b, kind: sparse}\n  - {name: a, kind: string}\n";
            let model = MODEL.replace("COMPAT", "native");
            let plans = [Plan::from_yaml(&model).unwrap(), Plan::from_yaml(&model).unwrap(), Plan::from_yaml(other).unwrap()];
            let mut reused = Index::default();
            for (buf, p) in &calls {
                let (plan, mut fresh) = (&plans[*p], Index::default());
                let needed = &super::super::everything(plan).needed;
                let expected = format!("{:?}", fresh.gather_batch(plan, buf, needed, true));
                prop_assert_eq!(format!("{:?}", reused.gather_batch(plan, buf, needed, true)), expected);
                prop_assert_eq!(reused.fast, fresh.fast);
                if fresh.fast {
                    prop_assert_eq!(&reused.cells, &fresh.cells);
                    prop_assert_eq!(format!("{:?}", reused.columns), format!("{:?}", fresh.columns));
                    prop_assert_eq!(reused.stats, fresh.stats);
                }
            }
        }
    }
}
