//! `overlap`: FG's overlap_feature. A row's query and title are each a
//! sequence of terms (a string's non-empty parts between `separator`s, or
//! ids in decimal, as `lookup` reads keys), compared six ways:
//!
//! - `query_common_ratio`: the query terms found in the title (each
//!   occurrence counts, as FG's code counts them) over the query's terms;
//! - `title_common_ratio`: the same count over the title's terms;
//! - `is_contain`: 1 when the query's terms appear in the title in order
//!   and next to each other, else 0;
//! - `is_equal`: 1 when the two sequences are the same, else 0;
//! - `index_of`: where `is_contain`'s run first starts, counted in title
//!   terms from 0, or -1;
//! - `proximity_min_cover`: the fewest consecutive title terms that hold
//!   every distinct query term, or 0 when a query term is not in the title;
//! - `proximity_min_dist`, `proximity_max_dist`, `proximity_avg_dist`: Tao
//!   and Zhai's MinDist, MaxDist and AvgDist (see `proximity`) over the
//!   distinct query terms the title holds; the title's length when one
//!   does, the length plus 1 (FG's "no matched term") when none does.
//!
//! A row whose query or title has no terms gives `default` (FG gives 0 for
//! an empty or missing field, every method it tests; fex's `default` is -1
//! for `index_of`, where 0 would read as found), except for the three
//! distances, which give the title's length plus 1 there as well: no term
//! matched. Terms are compared as bytes.
//! Short rows (q × t up to `PLAIN`) are compared term by term; longer ones
//! cost O((q + t) log t), never q × t: the title's terms are sorted once and
//! each query term found by binary search, `is_contain` and `index_of` run
//! Knuth-Morris-Pratt over the terms' ranks; `proximity_min_cover` slides a
//! window over the title's terms labelled with the query term each equals.
//! The distances label the title's terms the same way, then merge the
//! positions of each pair of matched terms: O(m · t) more, for m distinct
//! matched terms (m ≤ min(q, t)).

use super::lookup::each_key;
use super::proximity;
use crate::columns::Column;
use crate::error::ExtractError;

/// What `overlap` computes for a row (see the module comment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverlapMethod {
    QueryRatio,
    TitleRatio,
    Contains,
    Equals,
    IndexOf,
    MinCover,
    MinDist,
    MaxDist,
    AvgDist,
}

impl OverlapMethod {
    /// FG's method names.
    pub const NAMES: &'static str = "query_common_ratio, title_common_ratio, is_contain, is_equal, index_of, \
         proximity_min_cover, proximity_min_dist, proximity_max_dist, proximity_avg_dist";

    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "query_common_ratio" => Self::QueryRatio,
            "title_common_ratio" => Self::TitleRatio,
            "is_contain" => Self::Contains,
            "is_equal" => Self::Equals,
            "index_of" => Self::IndexOf,
            "proximity_min_cover" => Self::MinCover,
            "proximity_min_dist" => Self::MinDist,
            "proximity_max_dist" => Self::MaxDist,
            "proximity_avg_dist" => Self::AvgDist,
            _ => return None,
        })
    }

    /// Whether the method is one of Tao and Zhai's pairwise distances,
    /// which answer a row without terms themselves (no `default`).
    pub fn is_distance(self) -> bool {
        matches!(self, Self::MinDist | Self::MaxDist | Self::AvgDist)
    }
}

/// Not in the title.
pub(super) const ABSENT: u32 = u32::MAX;

/// Up to this many term comparisons (q × t) a row is compared term by
/// term: a 4-word query against a 12-word title costs a tenth of sorting.
const PLAIN: usize = 256;

/// One row's terms, copied into one buffer (ids as their decimal text),
/// each with a key: its length and first 7 bytes in one word, so that two
/// terms of up to 7 bytes are equal exactly when their keys are.
/// `bm25` splits its rows the same way.
#[derive(Default)]
pub(super) struct Terms {
    bytes: Vec<u8>,
    ends: Vec<usize>,
    keys: Vec<u64>,
}

impl Terms {
    pub(super) fn fill(&mut self, c: &Column, r: usize, separator: &[u8]) {
        self.bytes.clear();
        self.ends.clear();
        self.keys.clear();
        each_key(c, r, separator, |t| self.push(t));
    }

    pub(super) fn push(&mut self, term: &[u8]) {
        self.bytes.extend_from_slice(term);
        self.ends.push(self.bytes.len());
        self.keys.push(key(term));
    }

    pub(super) fn len(&self) -> usize {
        self.ends.len()
    }

    pub(super) fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }
}

/// A term's length (up to 255) and its first 7 bytes.
fn key(term: &[u8]) -> u64 {
    let head = term.iter().take(7).enumerate().fold(0u64, |k, (i, &b)| k | u64::from(b) << (8 * i));
    (term.len().min(255) as u64) << 56 | head
}

/// Whether term `i` of `a` equals term `j` of `b`: the keys decide for
/// terms of up to 7 bytes, the bytes for longer ones.
#[inline(always)]
pub(super) fn same(a: &Terms, i: usize, b: &Terms, j: usize) -> bool {
    a.keys[i] == b.keys[j] && (a.keys[i] >> 56 <= 7 || a.get(i) == b.get(j))
}

/// Buffers a thread reuses from row to row and call to call.
#[derive(Default)]
struct Scratch {
    query: Terms,
    title: Terms,
    /// Title positions sorted by their terms' bytes.
    sorted: Vec<u32>,
    /// Each title position's rank: the index of its term among the
    /// title's distinct terms in sorted order.
    title_ranks: Vec<u32>,
    /// Each query term's rank, or `ABSENT`.
    query_ranks: Vec<u32>,
    /// Knuth-Morris-Pratt's failure function over `query_ranks`.
    failure: Vec<usize>,
    /// By rank: the first query term of that rank, or `ABSENT`.
    first: Vec<u32>,
    /// Each title position's query term (its first index in the query),
    /// or `ABSENT` (`proximity_min_cover`).
    labels: Vec<u32>,
    /// By query term: its occurrences in the window.
    counts: Vec<u32>,
    /// The matched terms' title positions, grouped by term (distances).
    positions: proximity::Positions,
}

/// `method` over each row of `query` and `title` (strings or ids; a column of
/// one row stands for every row); dense `[rows, 1]`.
pub(super) fn apply(
    method: OverlapMethod,
    query: &Column,
    title: &Column,
    out: &mut Column,
    rows: usize,
    (separator, default): (&[u8], f64),
) -> Result<(), ExtractError> {
    let values = &mut out.dense_mut().values;
    super::rows::with_scratch(|s: &mut Scratch| {
        // A side of one row (a SHARED query, most often) is split once.
        for r in 0..rows {
            if r == 0 || query.rows() != 1 {
                s.query.fill(query, r, separator);
            }
            if r == 0 || title.rows() != 1 {
                s.title.fill(title, r, separator);
            }
            values.push_f64(s.row(method, PLAIN).unwrap_or(default));
        }
    });
    Ok(())
}

impl Scratch {
    /// The row's value; None when the query or the title has no terms
    /// (but for the distances). Rows of up to `plain` comparisons are
    /// compared term by term.
    fn row(&mut self, method: OverlapMethod, plain: usize) -> Option<f64> {
        let (q, t) = (self.query.len(), self.title.len());
        if method.is_distance() {
            return Some(self.distance(method, plain));
        }
        if q == 0 || t == 0 {
            return None;
        }
        let yes = |b: bool| if b { 1.0 } else { 0.0 };
        let (query, title) = (&self.query, &self.title);
        match method {
            OverlapMethod::Equals => return Some(yes(q == t && (0..q).all(|i| same(query, i, title, i)))),
            OverlapMethod::MinCover => return Some(self.min_cover(plain) as f64),
            _ => {}
        }
        let run = matches!(method, OverlapMethod::Contains | OverlapMethod::IndexOf);
        let (found, start) = if q.saturating_mul(t) <= plain {
            let found = (0..q).filter(|&i| (0..t).any(|j| same(query, i, title, j))).count();
            let at = |start: usize| (0..q).all(|i| same(query, i, title, start + i));
            (found, if run && q <= t { (0..=t - q).find(|&s| at(s)) } else { None })
        } else {
            self.rank();
            let found = self.query_ranks.iter().filter(|&&r| r != ABSENT).count();
            (found, if run && found == q { self.first_run() } else { None })
        };
        Some(match method {
            OverlapMethod::QueryRatio => found as f64 / q as f64,
            OverlapMethod::TitleRatio => found as f64 / t as f64,
            OverlapMethod::Contains => yes(start.is_some()),
            OverlapMethod::IndexOf => start.map_or(-1.0, |s| s as f64),
            OverlapMethod::Equals
            | OverlapMethod::MinCover
            | OverlapMethod::MinDist
            | OverlapMethod::MaxDist
            | OverlapMethod::AvgDist => unreachable!("answered above"),
        })
    }

    /// Ranks the title's terms and finds each query term's rank.
    fn rank(&mut self) {
        let title = &self.title;
        self.sorted.clear();
        self.sorted.extend(0..title.len() as u32);
        self.sorted.sort_unstable_by(|&a, &b| title.get(a as usize).cmp(title.get(b as usize)));
        self.title_ranks.clear();
        self.title_ranks.resize(title.len(), 0);
        let mut rank = 0;
        for k in 0..self.sorted.len() {
            let at = self.sorted[k] as usize;
            if k > 0 && title.get(self.sorted[k - 1] as usize) != title.get(at) {
                rank += 1;
            }
            self.title_ranks[at] = rank;
        }
        self.query_ranks.clear();
        for i in 0..self.query.len() {
            let term = self.query.get(i);
            let hit = self.sorted.binary_search_by(|&p| title.get(p as usize).cmp(term));
            self.query_ranks.push(hit.map_or(ABSENT, |k| self.title_ranks[self.sorted[k] as usize]));
        }
    }

    /// Where `query_ranks` first occurs in `title_ranks` as a contiguous run.
    fn first_run(&mut self) -> Option<usize> {
        let (pattern, text) = (&self.query_ranks, &self.title_ranks);
        if pattern.len() > text.len() {
            return None;
        }
        let failure = &mut self.failure;
        failure.clear();
        failure.resize(pattern.len(), 0);
        let mut k = 0;
        for i in 1..pattern.len() {
            while k > 0 && pattern[i] != pattern[k] {
                k = failure[k - 1];
            }
            if pattern[i] == pattern[k] {
                k += 1;
            }
            failure[i] = k;
        }
        let mut k = 0;
        for (at, &x) in text.iter().enumerate() {
            while k > 0 && x != pattern[k] {
                k = failure[k - 1];
            }
            if x == pattern[k] {
                k += 1;
                if k == pattern.len() {
                    return Some(at + 1 - k);
                }
            }
        }
        None
    }

    /// The fewest consecutive title terms holding every distinct query
    /// term, or 0.
    fn min_cover(&mut self, plain: usize) -> usize {
        let (q, t) = (self.query.len(), self.title.len());
        let want = if self.label(plain) {
            let (query, title) = (&self.query, &self.title);
            let all = (0..q).all(|i| (0..t).any(|j| same(query, i, title, j)));
            all.then(|| (0..q).filter(|&i| !(0..i).any(|k| same(query, k, query, i))).count())
        } else {
            // Each distinct query term found is the first of one rank.
            let found = || self.first.iter().filter(|&&f| f != ABSENT).count();
            (!self.query_ranks.contains(&ABSENT)).then(found)
        };
        want.map_or(0, |want| shortest_cover(&self.labels, want, q, &mut self.counts))
    }

    /// Tao and Zhai's MinDist, MaxDist or AvgDist over the distinct query
    /// terms the title holds; the title's length when it holds one, the
    /// length plus 1 when it holds none (or a side has no terms).
    fn distance(&mut self, method: OverlapMethod, plain: usize) -> f64 {
        let (q, t) = (self.query.len(), self.title.len());
        if q == 0 || t == 0 {
            return (t + 1) as f64;
        }
        self.label(plain);
        let p = &mut self.positions;
        match p.group(&self.labels, q) {
            0 => (t + 1) as f64,
            1 => t as f64,
            _ => {
                let d = p.pair_distances();
                match method {
                    OverlapMethod::MinDist => d.min as f64,
                    OverlapMethod::MaxDist => d.max as f64,
                    _ => d.sum as f64 / d.pairs as f64,
                }
            }
        }
    }

    /// Labels each title term with the query term it equals (that term's
    /// first index in the query) or `ABSENT`: term by term on short rows
    /// (then returns true), through the ranks on long ones (`first` then
    /// holds, by rank, the query term labelling it).
    fn label(&mut self, plain: usize) -> bool {
        let (q, t) = (self.query.len(), self.title.len());
        let (query, title) = (&self.query, &self.title);
        self.labels.clear();
        if q.saturating_mul(t) <= plain {
            let label = |j: usize| (0..q).find(|&i| same(query, i, title, j)).map_or(ABSENT, |i| i as u32);
            self.labels.extend((0..t).map(label));
            return true;
        }
        self.rank();
        let ranks = self.title_ranks.iter().max().map_or(0, |&r| r as usize + 1);
        self.first.clear();
        self.first.resize(ranks, ABSENT);
        for (i, &r) in self.query_ranks.iter().enumerate() {
            if r != ABSENT && self.first[r as usize] == ABSENT {
                self.first[r as usize] = i as u32;
            }
        }
        self.labels.extend(self.title_ranks.iter().map(|&r| self.first[r as usize]));
        false
    }
}

/// The fewest consecutive `labels` holding `want` distinct labels (each
/// below `n`; `ABSENT` is none), or 0 when they never all appear: a window
/// slides right, its left end following as far as it can.
fn shortest_cover(labels: &[u32], want: usize, n: usize, counts: &mut Vec<u32>) -> usize {
    counts.clear();
    counts.resize(n, 0);
    let (mut have, mut left, mut best) = (0, 0, 0);
    for (right, &x) in labels.iter().enumerate() {
        if x != ABSENT {
            counts[x as usize] += 1;
            have += usize::from(counts[x as usize] == 1);
        }
        while have == want {
            let width = right + 1 - left;
            if best == 0 || width < best {
                best = width;
            }
            let l = labels[left];
            if l != ABSENT {
                counts[l as usize] -= 1;
                have -= usize::from(counts[l as usize] == 0);
            }
            left += 1;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// FG lite's loops (OverLapFeatureEvaluator.h: `intersect`, `isContain`,
    /// `isEqual`), with fex's answer for an empty side; `index_of` and
    /// `proximity_min_cover` (which FG lite lacks) as brute force.
    fn reference(method: OverlapMethod, q: &[&str], t: &[&str]) -> Option<f64> {
        if method.is_distance() {
            return Some(brute_distance(method, q, t));
        }
        if q.is_empty() || t.is_empty() {
            return None;
        }
        let found = q.iter().filter(|x| t.contains(x)).count();
        let start = (0..=t.len().saturating_sub(q.len())).find(|&i| t.len() >= q.len() && t[i..i + q.len()] == *q);
        // Every window, shortest first, for the one holding every query term.
        let cover = (1..=t.len())
            .find(|&n| t.windows(n).any(|w| q.iter().all(|x| w.contains(x))))
            .filter(|_| q.iter().all(|x| t.contains(x)));
        let yes = |b: bool| if b { 1.0 } else { 0.0 };
        Some(match method {
            OverlapMethod::QueryRatio => found as f64 / q.len() as f64,
            OverlapMethod::TitleRatio => found as f64 / t.len() as f64,
            OverlapMethod::Contains => yes(start.is_some()),
            OverlapMethod::Equals => yes(q == t),
            OverlapMethod::IndexOf => start.map_or(-1.0, |s| s as f64),
            OverlapMethod::MinCover => cover.map_or(0.0, |n| n as f64),
            OverlapMethod::MinDist | OverlapMethod::MaxDist | OverlapMethod::AvgDist => unreachable!("above"),
        })
    }

    /// Tao and Zhai's definitions as written, every occurrence against
    /// every other: O(q² t²).
    fn brute_distance(method: OverlapMethod, q: &[&str], t: &[&str]) -> f64 {
        let mut terms: Vec<&str> = q.iter().copied().filter(|x| t.contains(x)).collect();
        terms.sort_unstable();
        terms.dedup();
        let mut pairs = vec![];
        for (k, a) in terms.iter().enumerate() {
            for b in &terms[k + 1..] {
                let at = |w| (0..t.len()).filter(|&i| t[i] == w).collect::<Vec<_>>();
                let (xs, ys) = (at(*a), at(*b));
                pairs.push(xs.iter().flat_map(|i| ys.iter().map(move |j| i.abs_diff(*j))).min().unwrap() as f64);
            }
        }
        match (terms.len(), method) {
            (0, _) => t.len() as f64 + 1.0,
            (1, _) => t.len() as f64,
            (_, OverlapMethod::MinDist) => pairs.iter().copied().fold(f64::MAX, f64::min),
            (_, OverlapMethod::MaxDist) => pairs.iter().copied().fold(0.0, f64::max),
            _ => pairs.iter().sum::<f64>() / pairs.len() as f64,
        }
    }

    /// Hand-worked rows of the three distances (min, max, avg).
    #[test]
    fn distances_worked_by_hand() {
        let all = [OverlapMethod::MinDist, OverlapMethod::MaxDist, OverlapMethod::AvgDist];
        let cases: [(&[&str], &[&str], [f64; 3]); 8] = [
            // a at 0 and 3, b at 2, c at 4: d(a,b) 1, d(a,c) 1, d(b,c) 2.
            (&["a", "b", "c"], &["a", "x", "b", "a", "c"], [1.0, 2.0, 4.0 / 3.0]),
            // A repeated query term counts once; z is not in the title.
            (&["c", "a", "c", "z"], &["a", "x", "x", "c"], [3.0, 3.0, 3.0]),
            // One distinct term matched: the title's length.
            (&["a", "a", "z"], &["x", "a", "a"], [3.0; 3]),
            // None matched: the length plus 1.
            (&["z"], &["x", "y"], [3.0; 3]),
            // An empty query or title: no term matched.
            (&[], &["x", "y"], [3.0; 3]),
            (&["a"], &[], [1.0; 3]),
            // Repeated title terms: the closest occurrences count.
            (&["a", "b"], &["a", "x", "x", "b", "x", "a"], [2.0; 3]),
            // d(a,b) 1, d(a,c) 5, d(b,c) 4.
            (&["a", "b", "c"], &["a", "b", "x", "x", "x", "c"], [1.0, 5.0, 10.0 / 3.0]),
        ];
        for (q, t, want) in cases {
            for (m, w) in all.into_iter().zip(want) {
                for plain in [PLAIN, 0] {
                    assert_eq!(run(m, q, t, plain), Some(w), "{m:?} {q:?} {t:?} {plain}");
                }
            }
        }
    }

    fn run(method: OverlapMethod, q: &[&str], t: &[&str], plain: usize) -> Option<f64> {
        let mut s = Scratch::default();
        for (terms, words) in [(&mut s.query, q), (&mut s.title, t)] {
            for w in words {
                terms.push(w.as_bytes());
            }
        }
        s.row(method, plain)
    }

    proptest! {
        #[test]
        fn agrees_with_fg_lites_loops(
            q in prop::collection::vec(prop::sample::select(vec!["a", "b", "ab", "abcdefgh", "abcdefgi"]), 0..6),
            t in prop::collection::vec(prop::sample::select(vec!["a", "b", "ab", "abcdefgh", "abcdefgi", "d"]), 0..9),
        ) {
            // Both ways of comparing: term by term, and sorted with ranks.
            for method in [
                OverlapMethod::QueryRatio,
                OverlapMethod::TitleRatio,
                OverlapMethod::Contains,
                OverlapMethod::Equals,
                OverlapMethod::IndexOf,
                OverlapMethod::MinCover,
                OverlapMethod::MinDist,
                OverlapMethod::MaxDist,
                OverlapMethod::AvgDist,
            ] {
                for plain in [PLAIN, 0] {
                    prop_assert_eq!(run(method, &q, &t, plain), reference(method, &q, &t), "{:?} {}", method, plain);
                }
            }
        }
    }
}
