//! The vocabulary fit pass (seed 004, step 3; TorchRec's
//! `sparse_to_contiguous`, criteo.py:420-527): per categorical column, the
//! distinct values of the training days in order of first appearance; a
//! value seen fewer than `threshold` times (when `threshold > 1`) is left
//! out, so it maps to 1 (out of vocabulary), like TorchRec's remap to 1. The
//! files are `Vocab` files (one entry per line, id = 2 + position), so the
//! model's `vocab` operator and `CriteoReader` give the same ids online and
//! offline. Entries are the value in decimal, as a signed i64 above 2^63
//! (the `Vocab` loader reads decimal entries as i64 and compares bits).
//!
//! Memory: per column, a hash map value → position (16-byte slots plus one
//! control byte, 50-100 % full) and two vectors (8-byte value, 4-byte
//! count; up to 2x spare capacity) — 29 to 60 bytes per distinct value,
//! measured in benches/README.md. For Criteo Terabyte (about 880 M distinct
//! values, 293 M in the largest column), fit a subset of columns per pass
//! (`FitOptions::columns`): each pass streams the days once and holds only
//! its columns.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;

use super::line::{CAT_FEATURES, RawRow};
use super::reader::CriteoReader;
use crate::text::deepx::ReadOptions;
use crate::text::error::TextError;

/// What to fit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FitOptions {
    /// Values seen fewer times are left out (TorchRec's
    /// `frequency_threshold`; 0 or 1 keeps every value).
    pub threshold: u32,
    /// The categorical columns to fit (0..26); the others are not held.
    pub columns: Vec<usize>,
}

impl Default for FitOptions {
    fn default() -> Self {
        Self { threshold: 0, columns: (0..CAT_FEATURES).collect() }
    }
}

/// One column's distinct values so far.
#[derive(Debug, Default)]
struct ColumnFit {
    position: FxHashMap<u64, u32>,
    order: Vec<u64>,
    counts: Vec<u32>,
}

impl ColumnFit {
    #[inline]
    fn add(&mut self, x: u64) {
        let next = self.order.len() as u32;
        let p = *self.position.entry(x).or_insert(next);
        if p == next {
            self.order.push(x);
            self.counts.push(1);
        } else {
            let c = &mut self.counts[p as usize];
            *c = c.saturating_add(1);
        }
    }

    fn bytes(&self) -> usize {
        // hashbrown: one (u64, u32) slot of 16 bytes and one control byte
        // per bucket; buckets are the capacity rounded up to 8/7, a power of 2.
        let buckets =
            if self.position.capacity() == 0 { 0 } else { (self.position.capacity() * 8 / 7).next_power_of_two() };
        buckets * 17 + self.order.capacity() * 8 + self.counts.capacity() * 4
    }
}

/// The fit in progress: feed it rows, then write the vocabulary files.
#[derive(Debug)]
pub struct Fit {
    opts: FitOptions,
    columns: Vec<Option<ColumnFit>>,
    rows: u64,
}

/// Counts of a fit over one input.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FitStats {
    pub rows: u64,
    pub skipped: u64,
}

impl Fit {
    /// Columns outside 0..26 are ignored.
    pub fn new(opts: FitOptions) -> Self {
        let columns = (0..CAT_FEATURES).map(|c| opts.columns.contains(&c).then(ColumnFit::default)).collect::<Vec<_>>();
        Self { opts, columns, rows: 0 }
    }

    #[inline]
    pub fn add(&mut self, row: &RawRow) {
        self.rows += 1;
        for (fit, &x) in self.columns.iter_mut().zip(&row.cats) {
            if let Some(fit) = fit {
                fit.add(x);
            }
        }
    }

    /// Streams one input (a training day) into the fit, in line order.
    pub fn add_input<R: BufRead>(&mut self, input: R, file: &str, opts: ReadOptions) -> Result<FitStats, TextError> {
        let mut reader = CriteoReader::new(input, file, None, 1, opts);
        let mut rows = 0;
        while let Some(row) = reader.next_raw()? {
            let row = *row;
            self.add(&row);
            rows += 1;
        }
        Ok(FitStats { rows, skipped: reader.skipped() })
    }

    /// Rows fitted.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Distinct values seen in column `c` (0 for a column not fitted).
    pub fn distinct(&self, c: usize) -> usize {
        self.columns.get(c).and_then(Option::as_ref).map_or(0, |f| f.order.len())
    }

    /// Bytes the fit holds (tables and vectors, by capacity).
    pub fn bytes(&self) -> usize {
        self.columns.iter().flatten().map(ColumnFit::bytes).sum()
    }

    /// The kept values of column `c` in id order (id = 2 + index).
    pub fn vocabulary(&self, c: usize) -> Vec<u64> {
        let Some(Some(f)) = self.columns.get(c) else { return Vec::new() };
        let t = self.opts.threshold;
        f.order.iter().zip(&f.counts).filter(|&(_, &n)| t <= 1 || n >= t).map(|(&x, _)| x).collect()
    }

    /// Writes `cat_<c>.txt` for every fitted column into `dir`; returns the
    /// paths written.
    pub fn write(&self, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
        std::fs::create_dir_all(dir)?;
        let mut written = Vec::new();
        for c in (0..CAT_FEATURES).filter(|&c| self.columns[c].is_some()) {
            let path = dir.join(vocab_file_name(c));
            let mut out = std::io::BufWriter::new(std::fs::File::create(&path)?);
            for x in self.vocabulary(c) {
                writeln!(out, "{}", x as i64)?;
            }
            out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
            written.push(path);
        }
        Ok(written)
    }
}

/// The vocabulary file of categorical column `c`.
pub fn vocab_file_name(c: usize) -> String {
    format!("cat_{c}.txt")
}
