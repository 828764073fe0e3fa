//! `bm25`: Okapi BM25 of a row's query against its title, each a sequence
//! of terms as `overlap` splits them, with document frequencies from a file
//! read when the config loads:
//!
//! ```text
//! score = Σ over the query's terms q:  idf(q) · tf(q) · (k1 + 1) / (tf(q) + k1 · (1 − b + b · |title| / avg_len))
//! idf(q) = ln(1 + (documents − df(q) + 0.5) / (df(q) + 0.5))
//! ```
//!
//! `tf(q)` is how often `q` occurs in the title, `|title|` the title's term
//! count, `df(q)` the file's count for `q` (0 for a term the file lacks).
//! Each occurrence of a query term adds its share, as `overlap` counts
//! query terms. A row whose query or title has no terms gives `default`.
//! The idf is Lucene's (never negative); the rest is Robertson's formula.
//! Short rows are compared term by term on `overlap`'s one-word keys; long
//! ones sort the title's terms and count each query term's run, so no row
//! costs q × t.

use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;

use super::overlap::{Terms, same};
use crate::columns::Column;
use crate::error::ExtractError;

/// Up to this many term comparisons (q × t) a row is compared term by term.
const PLAIN: usize = 256;

/// Why a file of document frequencies could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DocFreqError {
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{}:{line}: {message}", path.display())]
    Line { path: PathBuf, line: usize, message: String },
}

/// A term's document frequency, by term, turned into its idf once.
#[derive(Debug)]
pub struct DocFreqs {
    pub path: PathBuf,
    pub digest: u64,
    idf: FxHashMap<Box<[u8]>, f64>,
    /// The idf of a term the file lacks (df = 0).
    absent: f64,
}

impl PartialEq for DocFreqs {
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path && self.digest == other.digest && self.absent == other.absent
    }
}

/// Lucene's idf: `ln(1 + (n − df + 0.5) / (df + 0.5))`.
fn idf(documents: u64, df: u64) -> f64 {
    (1.0 + (documents as f64 - df as f64 + 0.5) / (df as f64 + 0.5)).ln()
}

impl DocFreqs {
    /// Reads `path` through `files`; the error names the path and line.
    pub fn load_from(files: &dyn crate::files::FileSource, path: &Path, documents: u64) -> Result<Self, DocFreqError> {
        let text = files.read(path).map_err(|source| DocFreqError::Read { path: path.to_path_buf(), source })?;
        Self::parse(path, &text, documents)
    }

    /// One `term<TAB>count` a line (the count after the line's last tab,
    /// decimal, at most `documents`); blank lines are skipped; a term
    /// given twice, an empty term or a bad count is an error.
    pub fn parse(path: &Path, text: &[u8], documents: u64) -> Result<Self, DocFreqError> {
        let mut idfs = FxHashMap::default();
        let mut lines: FxHashMap<Box<[u8]>, usize> = FxHashMap::default();
        for (n, line) in text.split(|&b| b == b'\n').enumerate() {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.is_empty() {
                continue;
            }
            let at = |message: String| DocFreqError::Line { path: path.to_path_buf(), line: n + 1, message };
            let (term, count) = split_line(line, documents).map_err(at)?;
            if let Some(first) = lines.insert(term.into(), n + 1) {
                let term = String::from_utf8_lossy(term);
                return Err(at(format!("the term {term:?} is given again (first on line {first})")));
            }
            idfs.insert(term.into(), idf(documents, count));
        }
        let digest = super::hash::digest(text);
        Ok(Self { path: path.to_path_buf(), digest, idf: idfs, absent: idf(documents, 0) })
    }

    pub fn len(&self) -> usize {
        self.idf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.idf.is_empty()
    }

    /// The idf of `term`.
    #[inline]
    pub fn idf(&self, term: &[u8]) -> f64 {
        self.idf.get(term).copied().unwrap_or(self.absent)
    }
}

/// A line's term and count.
fn split_line(line: &[u8], documents: u64) -> Result<(&[u8], u64), String> {
    let shown = || String::from_utf8_lossy(line).into_owned();
    let Some(tab) = line.iter().rposition(|&b| b == b'\t') else {
        return Err(format!("found {:?}, expected a term, a tab and its document count", shown()));
    };
    let (term, count) = (&line[..tab], &line[tab + 1..]);
    if term.is_empty() {
        return Err(format!("found {:?}, an empty term", shown()));
    }
    let count = std::str::from_utf8(count)
        .ok()
        .filter(|c| !c.is_empty() && c.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|c| c.parse::<u64>().ok())
        .ok_or_else(|| format!("found the count {:?}, expected a whole number", String::from_utf8_lossy(count)))?;
    if count > documents {
        return Err(format!("found the count {count}, more than documents ({documents})"));
    }
    Ok((term, count))
}

/// BM25's constants, checked when the config loads so that every share is
/// finite: `0 <= k1 <= 1000`, `0 <= b <= 1`, `avg_len >= 0.001`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bm25Params {
    pub k1: f64,
    pub b: f64,
    pub avg_len: f64,
}

/// Buffers a thread reuses from row to row and call to call.
#[derive(Default)]
struct Scratch {
    query: Terms,
    title: Terms,
    /// Each query term's idf, found when the query is split.
    idf: Vec<f64>,
    /// Title positions sorted by their terms' bytes (long rows).
    sorted: Vec<u32>,
}

/// BM25 of each row's `query` against its `title` (strings or ids; a
/// column of one row stands for every row); dense `[rows, 1]`.
pub(super) fn apply(
    table: &DocFreqs,
    params: Bm25Params,
    (query, title): (&Column, &Column),
    out: &mut Column,
    rows: usize,
    (separator, default): (&[u8], f64),
) -> Result<(), ExtractError> {
    let values = &mut out.dense_mut().values;
    super::rows::with_scratch(|s: &mut Scratch| {
        // A side of one row (a SHARED query, most often) is split, and
        // its terms looked up, once.
        for r in 0..rows {
            if r == 0 || query.rows() != 1 {
                s.query.fill(query, r, separator);
                s.idf.clear();
                s.idf.extend((0..s.query.len()).map(|i| table.idf(s.query.get(i))));
            }
            if r == 0 || title.rows() != 1 {
                s.title.fill(title, r, separator);
            }
            values.push_f64(s.score(params, PLAIN).unwrap_or(default));
        }
    });
    Ok(())
}

impl Scratch {
    /// The row's score; None when the query or the title has no terms.
    /// Rows of up to `plain` comparisons are compared term by term; both
    /// ways add the same terms in query order, so they agree to the bit.
    fn score(&mut self, p: Bm25Params, plain: usize) -> Option<f64> {
        let (q, t) = (self.query.len(), self.title.len());
        if q == 0 || t == 0 {
            return None;
        }
        let norm = p.k1 * (1.0 - p.b + p.b * t as f64 / p.avg_len);
        let share = |idf: f64, tf: usize| {
            // A term not in the title adds nothing (and with k1 = 0 would
            // divide zero by zero).
            if tf == 0 { 0.0 } else { idf * (tf as f64 * (p.k1 + 1.0)) / (tf as f64 + norm) }
        };
        let (query, title) = (&self.query, &self.title);
        if q.saturating_mul(t) <= plain {
            let tf = |i: usize| (0..t).filter(|&j| same(query, i, title, j)).count();
            return Some((0..q).fold(0.0, |sum, i| sum + share(self.idf[i], tf(i))));
        }
        self.sorted.clear();
        self.sorted.extend(0..t as u32);
        self.sorted.sort_unstable_by(|&a, &b| title.get(a as usize).cmp(title.get(b as usize)));
        let sorted = &self.sorted;
        let tf = |term: &[u8]| {
            let from = sorted.partition_point(|&at| title.get(at as usize) < term);
            sorted[from..].partition_point(|&at| title.get(at as usize) == term)
        };
        Some((0..q).fold(0.0, |sum, i| sum + share(self.idf[i], tf(query.get(i)))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const PARAMS: Bm25Params = Bm25Params { k1: 1.2, b: 0.75, avg_len: 3.0 };

    fn table(text: &str, documents: u64) -> Result<DocFreqs, String> {
        DocFreqs::parse(Path::new("df.tsv"), text.as_bytes(), documents).map_err(|e| e.to_string())
    }

    /// The formula as the module comment writes it, term by term.
    fn reference(t: &DocFreqs, p: Bm25Params, q: &[&str], d: &[&str]) -> Option<f64> {
        if q.is_empty() || d.is_empty() {
            return None;
        }
        let mut sum = 0.0;
        for w in q {
            let tf = d.iter().filter(|x| *x == w).count() as f64;
            if tf > 0.0 {
                let norm = p.k1 * (1.0 - p.b + p.b * d.len() as f64 / p.avg_len);
                sum += t.idf(w.as_bytes()) * (tf * (p.k1 + 1.0)) / (tf + norm);
            }
        }
        Some(sum)
    }

    fn run(t: &DocFreqs, p: Bm25Params, q: &[&str], d: &[&str], plain: usize) -> Option<f64> {
        let mut s = Scratch::default();
        for (terms, words) in [(&mut s.query, q), (&mut s.title, d)] {
            for w in words {
                terms.push(w.as_bytes());
            }
        }
        s.idf = q.iter().map(|w| t.idf(w.as_bytes())).collect();
        s.score(p, plain)
    }

    #[test]
    fn a_worked_example() {
        // 10 documents; "red" in 2 of them, "shoes" in 5, "blue" in none.
        let t = table("red\t2\nshoes\t5\n", 10).unwrap();
        let (idf_red, idf_shoes, idf_blue) =
            ((1.0f64 + 8.5 / 2.5).ln(), (1.0f64 + 5.5 / 5.5).ln(), (1.0f64 + 10.5 / 0.5).ln());
        assert_eq!(t.idf(b"red"), idf_red);
        assert_eq!(t.idf(b"blue"), idf_blue);
        // Title of 4 terms against avg_len 3: norm = 1.2 * (0.25 + 0.75 * 4 / 3) = 1.5.
        let got = run(&t, PARAMS, &["red", "shoes", "blue"], &["red", "running", "shoes", "red"], PLAIN).unwrap();
        let want = idf_red * 2.0 * 2.2 / (2.0 + 1.5) + idf_shoes * 2.2 / (1.0 + 1.5);
        assert!((got - want).abs() < 1e-12, "{got} {want}");
    }

    #[test]
    fn the_bounds_keep_every_share_finite() {
        let t = table("a\t0\n", u64::MAX).unwrap();
        let title: Vec<&str> = std::iter::repeat_n("a", 5000).collect();
        for (k1, b) in [(0.0, 1.0), (1000.0, 1.0), (1000.0, 0.0), (0.0, 0.0)] {
            let p = Bm25Params { k1, b, avg_len: 0.001 };
            for plain in [PLAIN, 0] {
                let got = run(&t, p, &["a", "a"], &title, plain).unwrap();
                assert!(got.is_finite() && got > 0.0, "k1 {k1}, b {b}: {got}");
            }
        }
    }

    #[test]
    fn files_are_checked_line_by_line() {
        assert_eq!(table("a\t1\r\n\nb c\t0\n", 3).unwrap().len(), 2);
        let cases = [
            ("a\t1\nb 2\n", "df.tsv:2: found \"b 2\", expected a term, a tab and its document count"),
            ("\t1\n", "df.tsv:1: found \"\\t1\", an empty term"),
            ("a\t-1\n", "df.tsv:1: found the count \"-1\", expected a whole number"),
            ("a\t\n", "df.tsv:1: found the count \"\", expected a whole number"),
            ("a\t4\n", "df.tsv:1: found the count 4, more than documents (3)"),
            ("a\t1\n\na\t2\n", "df.tsv:3: the term \"a\" is given again (first on line 1)"),
        ];
        for (text, want) in cases {
            assert_eq!(table(text, 3).unwrap_err(), want);
        }
    }

    proptest! {
        #[test]
        fn agrees_with_the_formula(
            q in prop::collection::vec(prop::sample::select(vec!["a", "b", "ab", "abcdefgh", "abcdefgi"]), 0..6),
            d in prop::collection::vec(prop::sample::select(vec!["a", "b", "ab", "abcdefgh", "abcdefgi", "d"]), 0..40),
            k1 in prop::sample::select(vec![0.0, 0.5, 1.2, 2.0]),
            b in prop::sample::select(vec![0.0, 0.75, 1.0]),
        ) {
            let t = table("a\t1\nab\t7\nabcdefgh\t3\n", 9).unwrap();
            let p = Bm25Params { k1, b, avg_len: 5.0 };
            let want = reference(&t, p, &q, &d);
            // Both ways of counting: term by term, and sorted runs.
            for plain in [PLAIN, 0] {
                prop_assert_eq!(run(&t, p, &q, &d, plain), want, "plain {}", plain);
            }
        }
    }
}
