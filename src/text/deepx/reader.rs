//! The deepx reader: lines of a `BufRead` into batches of `batch` rows under
//! deepx's tensor names (include/deepx_core/graph/instance_reader.h:14-26):
//! CSR features as ragged columns (row offsets from 0, u64 ids, the f32
//! feature values as the column's weights), Y and W `[batch, label_size]`
//! f32, X_HIST_SIZE `[batch]` f32 (deepx's tsr_t), UUID strings (empty for a
//! line without one).

use std::io::BufRead;

use super::config::{DeepxConfig, Format};
use super::line::Parsed;
use crate::columns::{Column, Dense, NamedColumn, Ragged, Splits, Strings, Values};
use crate::proto::fex_v1::DataType;
use crate::text::error::{OnError, TextError, TextErrorKind};
use crate::text::lines::{DEFAULT_MAX_LINE_BYTES, LineSource};

pub const X_NAME: &str = "__instX";
pub const X_USER_NAME: &str = "__instXuser";
pub const X_CAND_NAME: &str = "__instXcand";
pub const X_HIST_NAME: &str = "__instXhist";
pub const X_HIST_SIZE_NAME: &str = "__instXhist_size";
pub const Y_NAME: &str = "__instY";
pub const W_NAME: &str = "__instW";
pub const UUID_NAME: &str = "__instUUID";

/// What to do with the rows left at the end, fewer than `batch`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LastBatch {
    /// Return them as a shorter batch (the default; deepx's GetBatch leaves
    /// them in the Instance, instance_reader_impl.cc:79-91).
    #[default]
    Keep,
    /// Drop them, so every batch has exactly `batch` rows.
    Drop,
}

/// Reader options beyond deepx's config string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOptions {
    pub on_error: OnError,
    pub last_batch: LastBatch,
    pub max_line_bytes: usize,
    /// Row offsets of the CSR columns: `DataType::I64` (default) or `I32`.
    pub splits: DataType,
}

impl Default for ReadOptions {
    fn default() -> Self {
        Self {
            on_error: OnError::Fail,
            last_batch: LastBatch::Keep,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            splits: DataType::I64,
        }
    }
}

/// Streams batches from one input.
#[derive(Debug)]
pub struct DeepxReader<R> {
    lines: LineSource<R>,
    cfg: DeepxConfig,
    opts: ReadOptions,
    parsed: Parsed,
    batch: Batch,
    skipped: u64,
    rows: u64,
}

impl<R: BufRead> DeepxReader<R> {
    /// `file` names the input in errors.
    pub fn new(input: R, file: impl Into<String>, cfg: DeepxConfig, opts: ReadOptions) -> Self {
        let max = if opts.max_line_bytes == 0 { DEFAULT_MAX_LINE_BYTES } else { opts.max_line_bytes };
        let batch = Batch::new(&cfg, opts.splits);
        Self {
            lines: LineSource::new(input, file, max),
            cfg,
            opts,
            parsed: Parsed::default(),
            batch,
            skipped: 0,
            rows: 0,
        }
    }

    /// Lines skipped as bad (with `OnError::Skip`).
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Rows returned so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// The next batch's columns, `None` when the input is done.
    pub fn next_batch(&mut self) -> Result<Option<Vec<NamedColumn>>, TextError> {
        self.batch.clear(self.opts.splits);
        while self.batch.rows < self.cfg.batch {
            match self.lines.advance() {
                Ok(true) => {}
                Ok(false) => break,
                Err(e)
                    if self.opts.on_error == OnError::Skip && matches!(e.kind(), TextErrorKind::LineTooLong { .. }) =>
                {
                    self.skipped += 1;
                    continue;
                }
                Err(e) => return Err(e),
            }
            let line = self.lines.line();
            match self.parsed.parse(&self.cfg, line) {
                Ok(()) => {
                    self.batch.push(&self.cfg, &self.parsed, line).map_err(|k| self.lines.error_at(0..line.len(), k))?
                }
                Err(_) if self.opts.on_error == OnError::Skip => self.skipped += 1,
                Err((span, kind)) => return Err(self.lines.error_at(span, kind)),
            }
        }
        let n = self.batch.rows;
        if n == 0 || (n < self.cfg.batch && self.opts.last_batch == LastBatch::Drop) {
            return Ok(None);
        }
        self.rows += n as u64;
        Ok(Some(self.batch.columns(&self.cfg)))
    }
}

/// The columns of the batch being filled.
#[derive(Debug)]
struct Batch {
    rows: usize,
    x: Vec<Ragged>,
    hist_size: Vec<f32>,
    y: Vec<f32>,
    w: Vec<f32>,
    uuid: Strings,
}

impl Batch {
    fn new(cfg: &DeepxConfig, splits: DataType) -> Self {
        let n = match cfg.format {
            Format::Libsvm => 1,
            Format::LibsvmEx => cfg.groups,
            Format::Uch => 2 + cfg.groups,
        };
        let x = (0..n)
            .map(|_| Ragged { splits: Splits::new(splits), values: Values::new(DataType::U64), ..Ragged::default() })
            .collect();
        let mut b = Self { rows: 0, x, hist_size: Vec::new(), y: Vec::new(), w: Vec::new(), uuid: Strings::default() };
        b.clear(splits);
        b
    }

    fn clear(&mut self, splits: DataType) {
        self.rows = 0;
        for r in &mut self.x {
            r.splits.reset(splits);
            r.values.reset(DataType::U64);
            r.weights.clear();
            // Feature values are the weights, in every batch: a batch where
            // no line has a feature in this group still has the type.
            r.weighted = true;
            let _ = r.splits.push(0);
        }
        self.hist_size.clear();
        self.y.clear();
        self.w.clear();
        self.uuid = Strings::default();
        self.uuid.end_row();
    }

    /// Appends one parsed line; fails only when i32 row offsets overflow.
    fn push(&mut self, cfg: &DeepxConfig, p: &Parsed, line: &[u8]) -> Result<(), TextErrorKind> {
        let mut start = 0;
        for (g, x) in self.x.iter_mut().enumerate() {
            let end = p.group_ends.get(g).copied().unwrap_or(start);
            x.values.extend_ids(&p.ids[start..end]);
            x.weights.extend_from_slice(&p.values[start..end]);
            x.splits.push(x.values.len()).map_err(|e| TextErrorKind::Shape(e.to_string()))?;
            start = end;
        }
        if cfg.format == Format::Uch {
            self.hist_size.push((p.group_ends.len() - 2) as f32);
        }
        self.y.extend_from_slice(&p.labels);
        self.w.extend_from_slice(&p.weights);
        self.uuid.bytes.extend_from_slice(&line[p.uuid.clone()]);
        self.uuid.end_row();
        self.rows += 1;
        Ok(())
    }

    /// The batch's columns, moved out (the next batch grows its own).
    fn columns(&mut self, cfg: &DeepxConfig) -> Vec<NamedColumn> {
        let named = |name: String, column| NamedColumn { name, shared: false, column };
        let rows = self.rows;
        let mut out = Vec::with_capacity(self.x.len() + 4);
        let names: Vec<String> = match cfg.format {
            Format::Libsvm => vec![X_NAME.to_string()],
            Format::LibsvmEx => (0..cfg.groups).map(|i| format!("{X_NAME}{i}")).collect(),
            Format::Uch => [X_USER_NAME.to_string(), X_CAND_NAME.to_string()]
                .into_iter()
                .chain((0..cfg.groups).map(|i| format!("{X_HIST_NAME}{i}")))
                .collect(),
        };
        for (name, x) in names.into_iter().zip(&mut self.x) {
            out.push(named(name, Column::Ragged(std::mem::take(x))));
        }
        let dense =
            |values: Vec<f32>, dims: Vec<usize>| Column::Dense(Dense { rows, dims, values: Values::F32(values) });
        if cfg.format == Format::Uch {
            out.push(named(X_HIST_SIZE_NAME.into(), dense(std::mem::take(&mut self.hist_size), vec![])));
        }
        out.push(named(Y_NAME.into(), dense(std::mem::take(&mut self.y), vec![cfg.label_size])));
        if cfg.w {
            out.push(named(W_NAME.into(), dense(std::mem::take(&mut self.w), vec![cfg.label_size])));
        }
        if cfg.uuid {
            out.push(named(UUID_NAME.into(), Column::Strings(std::mem::take(&mut self.uuid))));
        }
        out
    }
}
