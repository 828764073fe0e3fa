//! Criteo TSV lines into DLRM's batches (seed 004, step 5): `label` `[B]`
//! f32, `dense` `[B, 13]` f32 (`dense_ln`), and `sparse`, a KeyedJaggedTensor
//! of keys `cat_0..cat_25` with one i64 id per key and row, key-major
//! (`cat_0` of every row, then `cat_1`, ...), lengths all 1 and offsets
//! `0..=B*26`. Ids come from one `Vocab` per column (the files the fit pass
//! wrote, loaded by the same code as the model's `vocab` operator), or are
//! the raw values when no vocabularies are given.

use std::io::BufRead;
use std::sync::Arc;

use super::line::{CAT_FEATURES, INT_FEATURES, RawRow, dense_ln, parse};
use crate::columns::{Column, Dense, KeyedJagged, NamedColumn, Values};
use crate::ops::Vocab;
use crate::text::deepx::{LastBatch, ReadOptions};
use crate::text::error::{OnError, TextError, TextErrorKind};
use crate::text::lines::{DEFAULT_MAX_LINE_BYTES, LineSource};

pub const LABEL_NAME: &str = "label";
pub const DENSE_NAME: &str = "dense";
pub const SPARSE_NAME: &str = "sparse";

/// The KeyedJaggedTensor's keys, `cat_0..cat_25` (criteo.py:36).
pub fn cat_keys() -> Vec<String> {
    (0..CAT_FEATURES).map(|i| format!("cat_{i}")).collect()
}

/// Streams batches of `batch` rows from one Criteo TSV input.
#[derive(Debug)]
pub struct CriteoReader<R> {
    lines: LineSource<R>,
    vocabs: Option<Arc<[Vocab]>>,
    batch: usize,
    opts: ReadOptions,
    row: RawRow,
    skipped: u64,
    keys: Vec<String>,
}

impl<R: BufRead> CriteoReader<R> {
    /// `vocabs`: 26, in column order (`None`: raw values as ids). The
    /// options' `splits` is unused (KJT offsets are i64).
    ///
    /// # Panics
    ///
    /// When `vocabs` does not hold 26 vocabularies (`load_vocabs` gives 26).
    pub fn new(
        input: R,
        file: impl Into<String>,
        vocabs: Option<Arc<[Vocab]>>,
        batch: usize,
        opts: ReadOptions,
    ) -> Self {
        let max = if opts.max_line_bytes == 0 { DEFAULT_MAX_LINE_BYTES } else { opts.max_line_bytes };
        assert!(vocabs.as_ref().is_none_or(|v| v.len() == CAT_FEATURES), "one vocabulary per categorical column");
        Self {
            lines: LineSource::new(input, file, max),
            vocabs,
            batch: batch.max(1),
            opts,
            row: RawRow::default(),
            skipped: 0,
            keys: cat_keys(),
        }
    }

    /// Lines skipped as bad (with `OnError::Skip`).
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// The next line's raw numbers, `None` at the end (bad lines skipped or
    /// returned as errors, by the options).
    pub fn next_raw(&mut self) -> Result<Option<&RawRow>, TextError> {
        loop {
            match self.lines.advance() {
                Ok(true) => {}
                Ok(false) => return Ok(None),
                Err(e)
                    if self.opts.on_error == OnError::Skip && matches!(e.kind(), TextErrorKind::LineTooLong { .. }) =>
                {
                    self.skipped += 1;
                    continue;
                }
                Err(e) => return Err(e),
            }
            match parse(self.lines.line(), &mut self.row) {
                Ok(()) => return Ok(Some(&self.row)),
                Err(_) if self.opts.on_error == OnError::Skip => self.skipped += 1,
                Err((span, kind)) => return Err(self.lines.error_at(span, kind)),
            }
        }
    }

    /// The next batch: `label`, `dense`, `sparse`; `None` when done.
    pub fn next_batch(&mut self) -> Result<Option<Vec<NamedColumn>>, TextError> {
        let mut labels = Vec::with_capacity(self.batch);
        let mut dense = Vec::with_capacity(self.batch * INT_FEATURES);
        let mut cats: Vec<i64> = Vec::with_capacity(self.batch * CAT_FEATURES);
        while labels.len() < self.batch {
            let Some(&row) = self.next_raw()? else { break };
            labels.push(row.label as f32);
            dense.extend(row.dense.iter().map(|&x| dense_ln(x)));
            match &self.vocabs {
                Some(v) => cats.extend(row.cats.iter().zip(v.iter()).map(|(&x, v)| v.id(x))),
                None => cats.extend(row.cats.iter().map(|&x| x as i64)),
            }
        }
        let rows = labels.len();
        if rows == 0 || (rows < self.batch && self.opts.last_batch == LastBatch::Drop) {
            return Ok(None);
        }
        let sparse = key_major(&self.keys, rows, &cats);
        let named = |name: &str, column| NamedColumn { name: name.to_string(), shared: false, column };
        Ok(Some(vec![
            named(LABEL_NAME, Column::Dense(Dense { rows, dims: vec![], values: Values::F32(labels) })),
            named(DENSE_NAME, Column::Dense(Dense { rows, dims: vec![INT_FEATURES], values: Values::F32(dense) })),
            named(SPARSE_NAME, Column::KeyedJagged(sparse)),
        ]))
    }
}

/// Row-major `[rows, keys]` ids as a one-id-per-slot KeyedJaggedTensor.
pub fn key_major(keys: &[String], rows: usize, ids: &[i64]) -> KeyedJagged {
    let n = keys.len();
    let mut values = Vec::with_capacity(rows * n);
    for k in 0..n {
        values.extend((0..rows).map(|r| ids[r * n + k]));
    }
    KeyedJagged {
        keys: keys.to_vec(),
        rows,
        lengths: vec![1; rows * n],
        offsets: (0..=(rows * n) as i64).collect(),
        values: Values::I64(values),
        weights: Vec::new(),
        weighted: false,
    }
}

/// TorchRec's `length_per_key()`: the sum of each key's lengths.
pub fn length_per_key(k: &KeyedJagged) -> Vec<i64> {
    (0..k.keys.len()).map(|i| k.lengths[i * k.rows..(i + 1) * k.rows].iter().map(|&l| i64::from(l)).sum()).collect()
}

/// TorchRec's `offset_per_key()`: where each key's values start, and the end.
pub fn offset_per_key(k: &KeyedJagged) -> Vec<i64> {
    std::iter::once(0)
        .chain(length_per_key(k).into_iter().scan(0, |s, l| {
            *s += l;
            Some(*s)
        }))
        .collect()
}
