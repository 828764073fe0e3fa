//! A `lookup` map given as two parallel lists per row (FG's lookup_feature
//! over a list of keys and a list of values): the keys a string's parts
//! between `separator`s or ids (each as its decimal text), the values a
//! string's parts or numbers. Read in place, as the `key:value` string is:
//! nothing is copied per row.
//!
//! fex's rules where FG says nothing: place `i` of the keys pairs with
//! place `i` of the values, and a row whose lists differ in length is a
//! malformed sample (an error, see [`check`]); a string's parts keep the
//! empty ones (they hold places), and an empty string is an empty list; the
//! first place of a key wins; a number of a float list is the value as
//! written (NaN read as the text `nan` reads).

use super::ids::{row_range, string_at};
use super::lookup::{decimal, number, numbers};
use super::rows::row_of;
use super::unequal_lengths;
use crate::columns::{Column, NamedColumn, Values};
use crate::error::ExtractError;
use crate::proto::fex_v1::DataType;

/// The two lists of a map and the separator between a string's parts.
#[derive(Clone, Copy)]
pub(super) struct Lists<'a> {
    pub keys: &'a NamedColumn,
    pub values: &'a NamedColumn,
    pub separator: &'a [u8],
}

impl Lists<'_> {
    /// One map stands for every row (both lists returned once).
    pub fn shared(&self) -> bool {
        self.keys.column.rows() == 1 && self.values.column.rows() == 1
    }
}

/// A value found: a string's part, a float list's number, or an integer
/// list's (kept as an id for its decimal text).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Value<'m> {
    Text(&'m [u8]),
    Float(f64),
    Int(u64, bool),
}

impl<'m> Value<'m> {
    /// The value's number: a text's as [`number`] reads it.
    #[inline]
    pub fn number(self) -> Option<f64> {
        match self {
            Value::Text(t) => number(t),
            Value::Float(x) => Some(x),
            Value::Int(x, true) => Some(x as i64 as f64),
            Value::Int(x, false) => Some(x as f64),
        }
    }

    /// The value's numbers into `out` (`value_dim`, see [`numbers`]): a
    /// number of a list is one.
    #[inline]
    pub fn numbers(self, out: &mut [f64]) -> Option<usize> {
        match self {
            Value::Text(t) => numbers(t, out),
            other => {
                *out.first_mut()? = other.number()?;
                Some(1)
            }
        }
    }

    /// The value's text: a string's part, or an integer's decimal text
    /// (written into `buf`). None for a float: the config refuses to hash
    /// one (its text is not the sample's).
    #[inline]
    pub fn text<'b>(self, buf: &'b mut [u8; 20]) -> Option<&'b [u8]>
    where
        'm: 'b,
    {
        match self {
            Value::Text(t) => Some(t),
            Value::Int(x, signed) => {
                let n = decimal(x, signed, buf);
                Some(&buf[buf.len() - n..])
            }
            Value::Float(_) => None,
        }
    }
}

/// A list given as one string: its parts between `sep`s, the empty ones
/// kept; the empty string is the empty list. Each part with its offset.
#[derive(Clone)]
struct Parts<'s> {
    rest: Option<&'s [u8]>,
    sep: &'s [u8],
    at: usize,
}

fn parts<'s>(s: &'s [u8], sep: &'s [u8]) -> Parts<'s> {
    Parts { rest: (!s.is_empty()).then_some(s), sep, at: 0 }
}

impl<'s> Iterator for Parts<'s> {
    type Item = (usize, &'s [u8]);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let rest = self.rest?;
        let found = match self.sep {
            [b] => rest.iter().position(|x| x == b),
            sep => rest.windows(sep.len().max(1)).position(|w| w == sep),
        };
        let start = self.at;
        Some(match found {
            Some(i) => {
                self.rest = Some(&rest[i + self.sep.len()..]);
                self.at += i + self.sep.len();
                (start, &rest[..i])
            }
            None => {
                self.rest = None;
                (start, rest)
            }
        })
    }
}

/// One row's keys: a string's parts, or ids (signed: as i64).
#[derive(Clone, Copy)]
enum Keys<'m> {
    Parts(&'m [u8]),
    Ids(&'m [u64], bool),
}

/// One row's values: a string's parts, or the numbers `start..end` of a
/// numeric column.
#[derive(Clone, Copy)]
enum Vals<'m> {
    Parts(&'m [u8]),
    Numbers(&'m Values, usize, usize),
}

/// One row's map: its keys and values lists.
#[derive(Clone, Copy)]
pub(super) struct RowLists<'m> {
    keys: Keys<'m>,
    values: Vals<'m>,
    sep: &'m [u8],
}

/// Whether a ragged column's values are read as signed (as `each_key`
/// reads id keys).
fn signed(values: &Values) -> bool {
    values.dtype() != DataType::U64
}

impl<'m> RowLists<'m> {
    /// Row `r` of `lists` (a list returned once stands for every row).
    pub fn of(lists: &Lists<'m>, r: usize) -> Self {
        let (k, v) = (&lists.keys.column, &lists.values.column);
        let keys = match k {
            Column::Ragged(x) => Keys::Ids(k.row_ids(row_of(k, r)), signed(&x.values)),
            _ => Keys::Parts(string_at(k, r)),
        };
        let values = match v {
            Column::Ragged(x) => {
                // Splits past the values (never written so) read as empty.
                let range = row_range(v, r);
                let end = range.end.min(x.values.len());
                Vals::Numbers(&x.values, range.start.min(end), end)
            }
            _ => Vals::Parts(string_at(v, r)),
        };
        RowLists { keys, values, sep: lists.separator }
    }

    /// How many keys and how many values the row holds.
    fn lens(&self) -> (usize, usize) {
        let keys = match self.keys {
            Keys::Parts(s) => parts(s, self.sep).count(),
            Keys::Ids(ids, _) => ids.len(),
        };
        let values = match self.values {
            Vals::Parts(s) => parts(s, self.sep).count(),
            Vals::Numbers(_, start, end) => end - start,
        };
        (keys, values)
    }

    /// The value of the first place of `key`.
    #[inline]
    pub fn find(&self, key: &[u8]) -> Option<Value<'m>> {
        let place = match self.keys {
            Keys::Parts(s) => parts(s, self.sep).position(|(_, k)| k == key)?,
            Keys::Ids(ids, signed) => {
                let id = id_of(key, signed)?;
                ids.iter().position(|&x| x == id)?
            }
        };
        self.value_at(place)
    }

    /// The value at place `i` (None past the end).
    #[inline]
    fn value_at(&self, i: usize) -> Option<Value<'m>> {
        match self.values {
            Vals::Parts(s) => parts(s, self.sep).nth(i).map(|(_, v)| Value::Text(v)),
            Vals::Numbers(values, start, end) => (start + i < end).then(|| number_at(values, start + i)),
        }
    }
}

/// Element `i` of a numeric column as a value: ids for integers; a float's
/// NaN made the one the text `nan` gives.
#[inline]
fn number_at(values: &Values, i: usize) -> Value<'_> {
    match values {
        Values::U64(v) => Value::Int(v[i], false),
        Values::I64(v) => Value::Int(v[i] as u64, true),
        Values::I32(v) => Value::Int(i64::from(v[i]) as u64, true),
        other => match other.f64_at(i) {
            x if x.is_nan() => Value::Float(f64::NAN),
            x => Value::Float(x),
        },
    }
}

/// The id whose decimal text `key` is (as i64 when `signed`); None when
/// no id's is (`+5`, `05`, a number too large).
#[inline]
fn id_of(key: &[u8], signed: bool) -> Option<u64> {
    let text = std::str::from_utf8(key).ok()?;
    let id = if signed { text.parse::<i64>().ok()? as u64 } else { text.parse::<u64>().ok()? };
    let mut buf = [0u8; 20];
    let n = decimal(id, signed, &mut buf);
    (buf[buf.len() - n..] == *key).then_some(id)
}

/// Refuses a map whose two lists differ in length in some row: the sample
/// is malformed, and pairing its places would pair the wrong keys and
/// values. A list returned once is counted once.
pub(super) fn check(lists: &Lists<'_>, rows: usize, name: &str) -> Result<(), ExtractError> {
    let (k, v) = (&lists.keys.column, &lists.values.column);
    let rows = if lists.shared() { rows.min(1) } else { rows };
    if rows == 0 {
        return Ok(());
    }
    // A list returned once: its length counted in row 0, not in each row.
    let (a, b) = RowLists::of(lists, 0).lens();
    let (fixed_keys, fixed_values) = ((k.rows() == 1).then_some(a), (v.rows() == 1).then_some(b));
    for r in 0..rows {
        let row = RowLists::of(lists, r);
        let keys = fixed_keys.unwrap_or_else(|| row.lens().0);
        let values = fixed_values.unwrap_or_else(|| row.lens().1);
        if keys != values {
            let (kn, vn) = (lists.keys.name.as_str(), lists.values.name.as_str());
            return Err(unequal_lengths(
                name,
                r,
                ("key list", kn, keys),
                ("value list", vn, values),
                "a map's two lists",
            ));
        }
    }
    Ok(())
}

/// A map that stands for many rows (both lists SHARED) in a hash table:
/// each key one probe instead of a scan of the lists, each value's number
/// read once.
#[derive(Default)]
pub(super) struct ListIndex {
    /// Each place's (start, end) in the keys string (string keys).
    keys: Vec<(u32, u32)>,
    /// Each place's (start, end) in the values string (string values).
    values: Vec<(u32, u32)>,
    /// Each place's number, when asked for (None: not one).
    numbers: Vec<Option<f64>>,
    /// Open addressing over the places; `u32::MAX` is an empty slot. Only
    /// a key's first place is in.
    slots: Vec<u32>,
}

fn text_hash(key: &[u8]) -> u64 {
    xxhash_rust::xxh64::xxh64(key, 0)
}

fn id_hash(id: u64) -> u64 {
    xxhash_rust::xxh64::xxh64(&id.to_le_bytes(), 0)
}

impl ListIndex {
    /// Indexes `row` (its lists as long, see [`check`]); with `numbers`,
    /// each value's number is read.
    pub fn build(&mut self, row: &RowLists<'_>, numbers: bool) {
        self.keys.clear();
        self.values.clear();
        self.numbers.clear();
        if let Keys::Parts(s) = row.keys {
            self.keys.extend(parts(s, row.sep).map(|(at, p)| (at as u32, (at + p.len()) as u32)));
        }
        if let Vals::Parts(s) = row.values {
            self.values.extend(parts(s, row.sep).map(|(at, p)| (at as u32, (at + p.len()) as u32)));
        }
        let places = match row.keys {
            Keys::Parts(_) => self.keys.len(),
            Keys::Ids(ids, _) => ids.len(),
        };
        self.slots.clear();
        self.slots.resize((places * 2).next_power_of_two(), u32::MAX);
        for i in 0..places {
            let hash = match row.keys {
                Keys::Parts(s) => text_hash(self.key(s, i)),
                Keys::Ids(ids, _) => id_hash(ids[i]),
            };
            if let Err(slot) = self.probe(hash, |j| self.same_key(row, i, j)) {
                self.slots[slot] = i as u32;
            }
        }
        if numbers {
            for i in 0..places {
                let x = self.value(row, i).and_then(Value::number);
                self.numbers.push(x);
            }
        }
    }

    /// Key `i` of string keys `s`.
    fn key<'s>(&self, s: &'s [u8], i: usize) -> &'s [u8] {
        let (a, b) = self.keys[i];
        &s[a as usize..b as usize]
    }

    /// Whether places `i` and `j` hold the same key.
    fn same_key(&self, row: &RowLists<'_>, i: usize, j: usize) -> bool {
        match row.keys {
            Keys::Parts(s) => self.key(s, i) == self.key(s, j),
            Keys::Ids(ids, _) => ids[i] == ids[j],
        }
    }

    /// Ok(the place `is_it` accepts), or Err(the empty slot where a key of
    /// `hash` would go).
    fn probe(&self, hash: u64, is_it: impl Fn(usize) -> bool) -> Result<usize, usize> {
        let mask = self.slots.len() - 1;
        let mut slot = hash as usize & mask;
        loop {
            match self.slots[slot] {
                u32::MAX => return Err(slot),
                i if is_it(i as usize) => return Ok(i as usize),
                _ => slot = (slot + 1) & mask,
            }
        }
    }

    /// The first place of `key` in `row` (the row indexed).
    #[inline]
    fn place(&self, row: &RowLists<'_>, key: &[u8]) -> Option<usize> {
        match row.keys {
            Keys::Parts(s) => self.probe(text_hash(key), |i| self.key(s, i) == key).ok(),
            Keys::Ids(ids, signed) => {
                let id = id_of(key, signed)?;
                self.probe(id_hash(id), |i| ids[i] == id).ok()
            }
        }
    }

    /// The value at place `i` of `row` (the row indexed).
    #[inline]
    fn value<'m>(&self, row: &RowLists<'m>, i: usize) -> Option<Value<'m>> {
        match row.values {
            Vals::Parts(s) => self.values.get(i).map(|&(a, b)| Value::Text(&s[a as usize..b as usize])),
            Vals::Numbers(values, start, end) => (start + i < end).then(|| number_at(values, start + i)),
        }
    }

    /// The value of `key` in `row` (the row indexed).
    #[inline]
    pub fn find<'m>(&self, row: &RowLists<'m>, key: &[u8]) -> Option<Value<'m>> {
        self.value(row, self.place(row, key)?)
    }

    /// The number of `key` in `row` (the row indexed with `numbers`).
    #[inline]
    pub fn number(&self, row: &RowLists<'_>, key: &[u8]) -> Option<f64> {
        let i = self.place(row, key)?;
        match self.numbers.get(i) {
            Some(&x) => x,
            None => self.value(row, i)?.number(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(rows: &[&str]) -> Column {
        let mut s = crate::columns::Strings::default();
        s.end_row();
        for r in rows {
            s.bytes.extend_from_slice(r.as_bytes());
            s.end_row();
        }
        Column::Strings(s)
    }

    #[test]
    fn parts_keep_empty_places() {
        let all = |s: &str, sep: &str| -> Vec<(usize, String)> {
            parts(s.as_bytes(), sep.as_bytes()).map(|(at, p)| (at, String::from_utf8(p.to_vec()).unwrap())).collect()
        };
        assert_eq!(all("", ","), vec![]);
        assert_eq!(all(",", ","), vec![(0, "".into()), (1, "".into())]);
        assert_eq!(all("a,,bc", ","), vec![(0, "a".into()), (2, "".into()), (3, "bc".into())]);
        assert_eq!(all("a::b", "::"), vec![(0, "a".into()), (3, "b".into())]);
    }

    #[test]
    fn ids_are_keys_by_their_canonical_decimal_text() {
        assert_eq!(id_of(b"5", false), Some(5));
        assert_eq!(id_of(b"-5", true), Some(-5i64 as u64));
        for bad in [&b"+5"[..], b"05", b"-0", b"", b"5 ", b"18446744073709551616"] {
            assert_eq!(id_of(bad, false), None, "{bad:?}");
        }
        assert_eq!(id_of(b"-5", false), None);
    }

    /// Unequal lists are refused in the first row that has them, a list
    /// returned once counted against every row of the other; a missing
    /// list (an empty string or row) is an empty one.
    #[test]
    fn lists_of_unequal_length_are_refused() {
        let named = |name: &str, column| NamedColumn { name: name.into(), column, shared: false };
        let ids = |rows: &[&[u64]]| {
            let mut r = crate::columns::Ragged { values: Values::U64(rows.concat()), ..Default::default() };
            r.splits.push(0).unwrap();
            rows.iter().fold(0, |n, row| {
                r.splits.push(n + row.len()).unwrap();
                n + row.len()
            });
            Column::Ragged(r)
        };
        let error = |keys: &NamedColumn, values: &NamedColumn, rows| {
            let lists = Lists { keys, values, separator: b"\x1d" };
            check(&lists, rows, "out").err().map(|e| e.to_string())
        };
        let (shared_keys, values) = (named("k", strings(&["a\x1db"])), named("v", ids(&[&[1, 2], &[3], &[]])));
        let message = error(&shared_keys, &values, 3).unwrap();
        assert!(message.contains("row 1: the key list \"k\" is 2 long, the value list \"v\" 1"), "{message}");
        let (keys, no_values) = (named("k", strings(&["", "a"])), named("v", strings(&["", ""])));
        let message = error(&keys, &no_values, 2).unwrap();
        assert!(message.contains("row 1: the key list \"k\" is 1 long, the value list \"v\" 0"), "{message}");
        assert_eq!(error(&keys, &named("v", strings(&["", "7"])), 2), None);
        assert_eq!(error(&keys, &no_values, 0), None, "no rows, nothing to refuse");
    }

    #[test]
    fn the_index_finds_what_the_scan_finds() {
        let named = |name: &str, column| NamedColumn { name: name.into(), column, shared: true };
        let keys = named("k", strings(&["a\x1db\x1da\x1d\x1dc"]));
        let values = named("v", strings(&["1\x1d2\x1d3\x1d4\x1dx"]));
        let lists = Lists { keys: &keys, values: &values, separator: b"\x1d" };
        let row = RowLists::of(&lists, 0);
        let mut index = ListIndex::default();
        index.build(&row, true);
        for key in [&b"a"[..], b"b", b"", b"c", b"zz"] {
            let (a, b) = (index.find(&row, key).and_then(Value::number), row.find(key).and_then(Value::number));
            assert_eq!(a, b, "{key:?}");
            assert_eq!(index.number(&row, key), b, "{key:?}");
        }
        assert_eq!(row.find(b"a").and_then(Value::number), Some(1.0), "the first place wins");
        assert_eq!(row.find(b"").and_then(Value::number), Some(4.0), "an empty part is a key");
        assert!(check(&lists, 3, "out").is_ok());
    }
}
