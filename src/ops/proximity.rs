//! Tao and Zhai's pairwise proximity measures ("An Exploration of Proximity
//! Measures in Information Retrieval", SIGIR 2007), for `overlap`'s
//! `proximity_min_dist`, `proximity_max_dist` and `proximity_avg_dist`.
//! The title's terms come labelled with the distinct query term each
//! equals. The distance of two distinct matched terms is the smallest
//! |i - j| between an occurrence of one and an occurrence of the other,
//! counted in title terms; MinDist, MaxDist and AvgDist are the least, the
//! greatest and the mean of it over every pair of distinct matched terms.
//!
//! Each pair's distance is a merge of the two terms' sorted positions, so
//! m matched terms cost O(m · t) over a title of t terms (each term's
//! positions are merged with the m - 1 others'), never a comparison of
//! every occurrence with every other.

use super::overlap::ABSENT;

/// The title positions of each matched term, grouped by term in one
/// buffer; reused from row to row.
#[derive(Default)]
pub(super) struct Positions {
    /// By label: where its positions start in `at`; the last entry ends
    /// the last label's.
    starts: Vec<u32>,
    /// By label: where its next position goes (while grouping).
    cursor: Vec<u32>,
    /// Positions grouped by label, ascending within each label.
    at: Vec<u32>,
    /// The labels that occur, ascending.
    matched: Vec<u32>,
}

/// The pair distances of a row: least, greatest, sum and count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Distances {
    pub min: u32,
    pub max: u32,
    pub sum: u64,
    pub pairs: u64,
}

impl Positions {
    /// Groups the positions of `labels` (each below `n`, or `ABSENT`) by
    /// label, a counting sort; returns how many distinct labels occur.
    pub(super) fn group(&mut self, labels: &[u32], n: usize) -> usize {
        self.starts.clear();
        self.starts.resize(n + 1, 0);
        for &l in labels.iter().filter(|&&l| l != ABSENT) {
            self.starts[l as usize + 1] += 1;
        }
        self.matched.clear();
        for l in 0..n {
            if self.starts[l + 1] > 0 {
                self.matched.push(l as u32);
            }
            self.starts[l + 1] += self.starts[l];
        }
        self.cursor.clear();
        self.cursor.extend_from_slice(&self.starts[..n]);
        self.at.clear();
        self.at.resize(self.starts[n] as usize, 0);
        for (j, &l) in labels.iter().enumerate().filter(|&(_, &l)| l != ABSENT) {
            let c = &mut self.cursor[l as usize];
            self.at[*c as usize] = j as u32;
            *c += 1;
        }
        self.matched.len()
    }

    /// The distance of every pair of distinct grouped labels (at least two).
    pub(super) fn pair_distances(&self) -> Distances {
        let mut d = Distances { min: u32::MAX, max: 0, sum: 0, pairs: 0 };
        for (k, &a) in self.matched.iter().enumerate() {
            for &b in &self.matched[k + 1..] {
                let x = closest(self.of(a), self.of(b));
                d.min = d.min.min(x);
                d.max = d.max.max(x);
                d.sum += u64::from(x);
                d.pairs += 1;
            }
        }
        d
    }

    fn of(&self, label: u32) -> &[u32] {
        let l = label as usize;
        &self.at[self.starts[l] as usize..self.starts[l + 1] as usize]
    }
}

/// The smallest |x - y| for x in `a` and y in `b` (both ascending and
/// non-empty, no position in both): a merge, since the closest pair is
/// next to each other in the merged order. 1 is as close as two
/// positions get, so it ends the merge.
fn closest(a: &[u32], b: &[u32]) -> u32 {
    let (mut i, mut j, mut best) = (0, 0, u32::MAX);
    while i < a.len() && j < b.len() && best > 1 {
        let (x, y) = (a[i], b[j]);
        if x < y {
            best = best.min(y - x);
            i += 1;
        } else {
            best = best.min(x - y);
            j += 1;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    const N: u32 = ABSENT;

    fn distances(labels: &[u32], n: usize) -> (usize, Option<Distances>) {
        let mut p = Positions::default();
        let m = p.group(labels, n);
        (m, (m >= 2).then(|| p.pair_distances()))
    }

    #[test]
    fn merges_find_the_closest_occurrences() {
        assert_eq!(closest(&[0, 10], &[4, 7, 12]), 2);
        assert_eq!(closest(&[5], &[0, 1, 9]), 4);
        assert_eq!(closest(&[3, 4], &[0, 8]), 3);
        assert_eq!(closest(&[2], &[3]), 1);
    }

    /// Hand-worked: title "a x b a c" with query terms a (0), b (1), c (2).
    /// a is at 0 and 3, b at 2, c at 4: d(a, b) = 1 (3 - 2), d(a, c) = 1
    /// (4 - 3), d(b, c) = 2; min 1, max 2, mean 4 / 3.
    #[test]
    fn three_terms_of_a_title() {
        let d = Distances { min: 1, max: 2, sum: 4, pairs: 3 };
        assert_eq!(distances(&[0, N, 1, 0, 2], 3), (3, Some(d)));
    }

    /// Title "b x x x a x a": d(a, b) = 4 (b at 0, a at 4 and 6); one pair.
    /// Labels not in the title (2) and unlabelled terms count for nothing.
    #[test]
    fn one_pair_and_an_unmatched_label() {
        let d = Distances { min: 4, max: 4, sum: 4, pairs: 1 };
        assert_eq!(distances(&[1, N, N, N, 0, N, 0], 3), (2, Some(d)));
        assert_eq!(distances(&[N, 1, 1, N], 3), (1, None));
        assert_eq!(distances(&[N, N], 3), (0, None));
        assert_eq!(distances(&[], 0), (0, None));
    }
}
