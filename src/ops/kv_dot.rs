//! `kv_dot`: FG's kv_dot_product. Each side of a row is a sparse vector of
//! `key:weight` entries (a string's parts between `separator`s, the weight
//! after the part's last `kv` character; a part without one weighs 1), or
//! ragged ids (each id's decimal text a key, its weight the column's weight,
//! 1 where the column has none). The row's value is the dot product of the
//! two vectors: the sum over the keys they share of the products of their
//! weights; with no weights given, the size of the intersection.
//!
//! fex's rules where FG says nothing: a key repeated in one side adds its
//! weights up (a bag of keys); a part whose weight is not a number, or whose
//! key is empty, is skipped; an empty or missing side gives 0.

use super::ids::{for_each_part, string_at};
use super::rows::row_of;
use crate::columns::Column;
use crate::error::ExtractError;
use crate::proto::fex_v1::DataType;

/// One row's vector: keys copied into one buffer, sorted, repeats merged.
#[derive(Default)]
struct Vector {
    bytes: Vec<u8>,
    /// (key start, key end, weight), sorted by key once `seal` ran.
    entries: Vec<(u32, u32, f64)>,
}

impl Vector {
    fn clear(&mut self) {
        self.bytes.clear();
        self.entries.clear();
    }

    fn push(&mut self, key: &[u8], weight: f64) {
        let start = self.bytes.len() as u32;
        self.bytes.extend_from_slice(key);
        self.entries.push((start, self.bytes.len() as u32, weight));
    }

    fn key(&self, e: (u32, u32, f64)) -> &[u8] {
        &self.bytes[e.0 as usize..e.1 as usize]
    }

    /// Sorts the entries by key and adds up the weights of a repeated key.
    fn seal(&mut self) {
        let mut entries = std::mem::take(&mut self.entries);
        entries.sort_by(|a, b| self.key(*a).cmp(self.key(*b)));
        let mut merged = 0;
        for i in 0..entries.len() {
            if merged > 0 && self.key(entries[merged - 1]) == self.key(entries[i]) {
                entries[merged - 1].2 += entries[i].2;
            } else {
                entries[merged] = entries[i];
                merged += 1;
            }
        }
        entries.truncate(merged);
        self.entries = entries;
    }

    fn weight(&self, key: &[u8]) -> Option<f64> {
        let at = self.entries.binary_search_by(|e| self.key(*e).cmp(key)).ok()?;
        Some(self.entries[at].2)
    }

    /// Row `r` of `c` as a vector.
    fn fill(&mut self, c: &Column, r: usize, separator: &[u8], kv: u8) {
        self.clear();
        match c {
            Column::Strings(_) => {
                for_each_part(string_at(c, r), separator, |part| match part.iter().rposition(|&b| b == kv) {
                    None => self.push(part, 1.0),
                    Some(at) => {
                        let weight = std::str::from_utf8(&part[at + 1..]).ok().and_then(|w| w.parse().ok());
                        if let (Some(w), false) = (weight, at == 0) {
                            self.push(&part[..at], w);
                        }
                    }
                })
            }
            Column::Ragged(x) => {
                let rr = row_of(c, r);
                let range = x.splits.get(rr)..x.splits.get(rr + 1);
                let signed = x.values.dtype() != DataType::U64;
                let mut text = [0u8; 20];
                for (k, &id) in x.values.ids(range.clone()).iter().enumerate() {
                    let n = super::lookup::decimal(id, signed, &mut text);
                    let weight = x.weights.get(range.start + k).map_or(1.0, |&w| f64::from(w));
                    self.push(&text[text.len() - n..], weight);
                }
            }
            _ => {}
        }
        self.seal();
    }
}

#[derive(Default)]
struct Scratch {
    query: Vector,
    document: Vector,
}

/// The dot product of each row's two vectors; dense `[rows, 1]`. A side of
/// one row (SHARED) is read once for the call.
pub(super) fn apply(
    query: &Column,
    document: &Column,
    out: &mut Column,
    rows: usize,
    (separator, kv): (&[u8], u8),
) -> Result<(), ExtractError> {
    let values = &mut out.dense_mut().values;
    super::rows::with_scratch(|s: &mut Scratch| {
        for r in 0..rows {
            if r == 0 || query.rows() != 1 {
                s.query.fill(query, r, separator, kv);
            }
            if r == 0 || document.rows() != 1 {
                s.document.fill(document, r, separator, kv);
            }
            let (small, large) = match s.query.entries.len() <= s.document.entries.len() {
                true => (&s.query, &s.document),
                false => (&s.document, &s.query),
            };
            // Summed from +0 (`Iterator::sum` starts at -0, which an empty
            // intersection would give).
            let products = small.entries.iter().filter_map(|&e| Some(e.2 * large.weight(small.key(e))?));
            let dot = products.fold(0.0, |acc, x| acc + x);
            values.push_f64(dot);
        }
    });
    Ok(())
}
