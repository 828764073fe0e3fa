//! `lookup` and `match`: FG's lookup_feature and match_feature. Each row's
//! keys are looked up in that row's map: for `lookup` a string of
//! `key:value` entries separated by 0x1D, for `match` a two-level
//! `pk^sk:v,sk:v|pk^...` (FG's fixed separators; a bytes_list of separate
//! entries reads the same through the string kind's `join: "\x1d"`).
//!
//! fex's definitions where FG says nothing: an entry's key ends at its first
//! `:`; an entry without `:`, or empty, is skipped; the first entry of a key
//! wins; keys are a string's parts between `separator`s (empty parts
//! skipped), or ids in decimal; a value that is not a number does not count
//! as found in a continuous lookup, nor one of more numbers than
//! `value_dim` (FG's vectors, `1,2`). FG's need_key, show_pkey and
//! show_skey hash the keys and the value joined by `_`. A `lookup` map may
//! also be two parallel lists, a list of keys and one of values
//! (`map_lists`); each function here reads either through [`Map`].

use super::hash::{hash_bytes, hash_joined};
use super::ids::{for_each_part, row_ids, row_range, string_at};
use super::map_lists::{ListIndex, Lists, RowLists, Value};
use crate::columns::Column;
use crate::error::ExtractError;
use crate::proto::fex_v1::DataType;

/// FG's separator between a map's entries.
pub const ENTRIES: u8 = 0x1d;

/// How a continuous lookup combines the values of a row's keys.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Combiner {
    Sum,
    Mean,
    Min,
    Max,
}

/// The value of `key` in a `lookup` map: the first entry whose key it is.
pub fn find<'m>(map: &'m [u8], key: &[u8]) -> Option<&'m [u8]> {
    find_in(map, ENTRIES, b':', key)
}

/// The (key, value) entries of `map`: its parts between `sep`s, each a key
/// up to its first `kv` and the value after it; parts without `kv` skipped.
fn entries(map: &[u8], sep: u8, kv: u8) -> impl Iterator<Item = (&[u8], &[u8])> {
    map.split(move |&b| b == sep).filter_map(move |e| {
        let at = e.iter().position(|&b| b == kv)?;
        Some((&e[..at], &e[at + 1..]))
    })
}

/// The value of the first entry of `key` in `map` (see [`entries`]).
fn find_in<'m>(map: &'m [u8], sep: u8, kv: u8, key: &[u8]) -> Option<&'m [u8]> {
    entries(map, sep, kv).find_map(|(k, v)| (k == key).then_some(v))
}

/// Calls `f` with the key and value of each key's first entry in `map`, in
/// the map's order (FG's ALL).
fn first_entries(map: &[u8], sep: u8, kv: u8, mut f: impl FnMut(&[u8], &[u8])) {
    for (i, (k, v)) in entries(map, sep, kv).enumerate() {
        if !entries(map, sep, kv).take(i).any(|(earlier, _)| earlier == k) {
            f(k, v);
        }
    }
}

/// Calls `f` with each key of row `r` of `keys`: a string's non-empty
/// parts between `separator`s, or each id's decimal text.
pub(super) fn each_key(keys: &Column, r: usize, separator: &[u8], mut f: impl FnMut(&[u8])) {
    if let Column::Strings(_) = keys {
        return for_each_part(string_at(keys, r), separator, f);
    }
    let signed = keys.values().is_some_and(|v| v.dtype() != DataType::U64);
    let mut text = [0u8; 20];
    for &id in row_ids(keys, r) {
        let n = decimal(id, signed, &mut text);
        f(&text[text.len() - n..]);
    }
}

/// Where the keys of one value are in a key column: a row's (see
/// [`each_key`]), or one position of an id sequence (the position's
/// `width` ids, padding included).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum At {
    Row(usize),
    Position(usize),
}

/// Calls `f` with each key `at` in `keys`: a row's keys, or the decimal
/// text of each id of a sequence's position.
pub(super) fn each_key_at(keys: &Column, at: At, separator: &[u8], mut f: impl FnMut(&[u8])) {
    let p = match at {
        At::Row(r) => return each_key(keys, r, separator, f),
        At::Position(p) => p,
    };
    let Column::Ragged(k) = keys else { return };
    let width = k.width.unwrap_or(1).max(1);
    let signed = k.values.dtype() != DataType::U64;
    let mut text = [0u8; 20];
    for &id in k.values.ids(p * width..(p + 1) * width) {
        let n = decimal(id, signed, &mut text);
        f(&text[text.len() - n..]);
    }
}

/// An id's decimal text (as i64 when `signed`) at the end of `buf`;
/// returns its length.
pub(super) fn decimal(id: u64, signed: bool, buf: &mut [u8; 20]) -> usize {
    if signed { decimal_i64(id as i64, buf) } else { decimal_u64(id, buf) }
}

/// The two-digit numbers 00..99 in decimal, back to back.
const DIGIT_PAIRS: &[u8; 200] = b"\
    0001020304050607080910111213141516171819\
    2021222324252627282930313233343536373839\
    4041424344454647484950515253545556575859\
    6061626364656667686970717273747576777879\
    8081828384858687888990919293949596979899";

/// `x` in decimal at the end of `buf`; returns its length. Two digits a
/// step (one division by 100 and a table read): 119 instructions for a
/// 16-digit fid, where a digit a step took 252.
fn decimal_u64(mut x: u64, buf: &mut [u8; 20]) -> usize {
    let mut at = buf.len();
    while x >= 100 {
        let pair = (x % 100) as usize * 2;
        x /= 100;
        at -= 2;
        buf[at..at + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
    }
    if x >= 10 {
        let pair = x as usize * 2;
        at -= 2;
        buf[at..at + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
    } else {
        at -= 1;
        buf[at] = b'0' + x as u8;
    }
    buf.len() - at
}

fn decimal_i64(x: i64, buf: &mut [u8; 20]) -> usize {
    if x >= 0 {
        return decimal_u64(x as u64, buf);
    }
    // |i64::MIN| needs 19 digits and the sign 1: 20 bytes.
    let n = decimal_u64(x.unsigned_abs(), buf);
    let at = buf.len() - n - 1;
    buf[at] = b'-';
    n + 1
}

/// A value's number, or None when it is not one (Rust's f64 syntax:
/// `1.5`, `-2`, `1e3`, `nan`, `inf`; no spaces).
pub(super) fn number(v: &[u8]) -> Option<f64> {
    std::str::from_utf8(v).ok()?.parse().ok()
}

/// A value of several numbers (`value_dim`, FG's `1,2`): its numbers
/// between commas into `out`, returning how many. None (not found) when
/// it holds more numbers than `out` takes or a part is not a number (so
/// `""` and `1,,2` are none); fewer is fine, the rest are not found. With
/// one number this is [`number`]: `1,2` is none there too.
pub(super) fn numbers(v: &[u8], out: &mut [f64]) -> Option<usize> {
    let mut n = 0;
    for part in v.split(|&b| b == b',') {
        *out.get_mut(n)? = number(part)?;
        n += 1;
    }
    Some(n)
}

/// A map's entries in a hash table, for maps that stand for many rows (a
/// SHARED map): each key is then one probe instead of a scan of the whole
/// string, and each value's number is read once.
#[derive(Default)]
struct Index {
    /// (key start, key end, value start, value end) in the map's bytes, in
    /// map order, the first entry of each key only.
    entries: Vec<(u32, u32, u32, u32)>,
    /// Each entry's value as a number (None: not one).
    numbers: Vec<Option<f64>>,
    /// Open addressing over `entries`; `u32::MAX` is an empty slot.
    slots: Vec<u32>,
}

fn key_hash(key: &[u8]) -> u64 {
    xxhash_rust::xxh64::xxh64(key, 0)
}

impl Index {
    /// A `lookup` map: `key:value` entries between 0x1D, numbers read.
    #[cfg(test)]
    fn build(&mut self, map: &[u8]) {
        self.build_with(map, ENTRIES, b':', true);
    }

    /// Entries between `sep`, each a key up to the first `kv` and a value.
    fn build_with(&mut self, map: &[u8], sep: u8, kv: u8, numbers: bool) {
        self.entries.clear();
        self.numbers.clear();
        let count = map.iter().filter(|&&b| b == sep).count() + 1;
        let size = (count * 2).next_power_of_two();
        self.slots.clear();
        self.slots.resize(size, u32::MAX);
        let mut at = 0usize;
        for entry in map.split(|&b| b == sep) {
            if let Some(colon) = entry.iter().position(|&b| b == kv) {
                let (k, c, e) = (at, at + colon, at + entry.len());
                if let Err(slot) = self.probe(map, &map[k..c]) {
                    self.slots[slot] = self.entries.len() as u32;
                    self.entries.push((k as u32, c as u32, c as u32 + 1, e as u32));
                    self.numbers.push(if numbers { number(&map[c + 1..e]) } else { None });
                }
            }
            at += entry.len() + 1;
        }
    }

    /// The key of entry `i`.
    fn key<'m>(&self, map: &'m [u8], i: usize) -> &'m [u8] {
        let e = self.entries[i];
        &map[e.0 as usize..e.1 as usize]
    }

    /// The value of entry `i`.
    fn value<'m>(&self, map: &'m [u8], i: usize) -> &'m [u8] {
        let e = self.entries[i];
        &map[e.2 as usize..e.3 as usize]
    }

    /// Ok(entry) where `key` is, or Err(the empty slot where it would go).
    fn probe(&self, map: &[u8], key: &[u8]) -> Result<usize, usize> {
        let mask = self.slots.len() - 1;
        let mut slot = key_hash(key) as usize & mask;
        loop {
            match self.slots[slot] {
                u32::MAX => return Err(slot),
                i => {
                    let e = self.entries[i as usize];
                    if &map[e.0 as usize..e.1 as usize] == key {
                        return Ok(i as usize);
                    }
                }
            }
            slot = (slot + 1) & mask;
        }
    }
}

/// Where a lookup's maps are.
#[derive(Clone, Copy)]
pub(super) enum Map<'a> {
    /// A string of `key:value` entries per row.
    Entries(&'a Column),
    /// A list of keys and a list of values per row.
    Lists(Lists<'a>),
}

/// A lookup's map and keys from its inputs: `[map, keys]`, or with `lists`
/// `[keys, map keys, map values]` (the config's `inputs: [keys]`,
/// `map_keys`, `map_values`), the lists checked as long in every row.
pub(super) fn map_and_keys<'a>(
    inputs: super::Inputs<'a>,
    lists: bool,
    separator: &'a [u8],
    rows: usize,
    name: &str,
) -> Result<(Map<'a>, &'a Column), ExtractError> {
    if !lists {
        return Ok((Map::Entries(&inputs.get(0).column), &inputs.get(1).column));
    }
    let lists = Lists { keys: inputs.get(1), values: inputs.get(2), separator };
    super::map_lists::check(&lists, rows, name)?;
    Ok((Map::Lists(lists), &inputs.get(0).column))
}

/// How a lookup reads a row's map.
enum Finder<'m> {
    Indexed(&'m [u8], &'m Index),
    Scan(&'m [u8]),
    ListsIndexed(RowLists<'m>, &'m ListIndex),
    Lists(RowLists<'m>),
}

impl<'m> Finder<'m> {
    #[inline]
    fn value(&self, key: &[u8]) -> Option<Value<'m>> {
        match self {
            Finder::Indexed(map, index) => Some(Value::Text(index.value(map, index.probe(map, key).ok()?))),
            Finder::Scan(map) => find(map, key).map(Value::Text),
            Finder::ListsIndexed(row, index) => index.find(row, key),
            Finder::Lists(row) => row.find(key),
        }
    }

    #[inline]
    fn number(&self, key: &[u8]) -> Option<f64> {
        match self {
            Finder::Indexed(map, index) => index.numbers[index.probe(map, key).ok()?],
            Finder::Scan(map) => find(map, key).and_then(number),
            Finder::ListsIndexed(row, index) => index.number(row, key),
            Finder::Lists(row) => row.find(key)?.number(),
        }
    }
}

/// Calls `each(row, finder)` for every row: through an index when one map
/// stands for every row, by a scan otherwise (a few keys against a map of
/// their own row). `numbers`: the index reads each value's number (for
/// [`Finder::number`]; the other callers read values).
fn rows_of(map: Map<'_>, rows: usize, numbers: bool, mut each: impl FnMut(usize, &Finder<'_>)) {
    let map = match map {
        Map::Entries(map) => map,
        Map::Lists(lists) if lists.shared() && rows > 1 => {
            let row = RowLists::of(&lists, 0);
            return super::rows::with_scratch(|index: &mut ListIndex| {
                index.build(&row, numbers);
                let finder = Finder::ListsIndexed(row, index);
                (0..rows).for_each(|r| each(r, &finder));
            });
        }
        Map::Lists(lists) => return (0..rows).for_each(|r| each(r, &Finder::Lists(RowLists::of(&lists, r)))),
    };
    if map.rows() == 1 && rows > 1 {
        let m = string_at(map, 0);
        super::rows::try_scratch(|index: Option<&mut Index>| match index {
            Some(index) => {
                index.build_with(m, ENTRIES, b':', numbers);
                let finder = Finder::Indexed(m, index);
                (0..rows).for_each(|r| each(r, &finder));
            }
            None => (0..rows).for_each(|r| each(r, &Finder::Scan(m))),
        });
    } else {
        (0..rows).for_each(|r| each(r, &Finder::Scan(string_at(map, r))));
    }
}

/// Continuous: the combined numbers of each row's keys, `default` where none
/// is found; dense `[rows, 1]`.
pub(super) fn values(
    map: Map<'_>,
    keys: &Column,
    out: &mut Column,
    rows: usize,
    (separator, combiner, default): (&[u8], Combiner, f64),
) -> Result<(), ExtractError> {
    let values = &mut out.dense_mut().values;
    rows_of(map, rows, true, |r, find| {
        let (mut n, mut acc) = (0usize, 0.0f64);
        each_key(keys, r, separator, |k| {
            if let Some(x) = find.number(k) {
                acc = combine(combiner, n, acc, x);
                n += 1;
            }
        });
        values.push_f64(finish(combiner, n, acc, default));
    });
    Ok(())
}

/// Continuous with `value_dim` (FG's lookup_feature value_dim): each value
/// is up to `dim` numbers (see [`numbers`]), combined element by element
/// over the row's keys, each element with its own count; an element no
/// value gives is `default`. Dense `[rows, dim]`.
pub(super) fn vectors(
    map: Map<'_>,
    keys: &Column,
    out: &mut Column,
    rows: usize,
    (separator, combiner, default, dim): (&[u8], Combiner, f64, usize),
) -> Result<(), ExtractError> {
    let values = &mut out.dense_mut().values;
    // Each element's (count, combination) and a value's numbers: on the
    // stack up to 32 elements (no allocation per call), else on the heap.
    let (mut acc_stack, mut parsed_stack) = ([(0usize, 0.0f64); 32], [0.0f64; 32]);
    let (mut acc_heap, mut parsed_heap) = (Vec::new(), Vec::new());
    let (acc, parsed) = if dim <= 32 {
        (&mut acc_stack[..dim], &mut parsed_stack[..dim])
    } else {
        acc_heap.resize(dim, (0usize, 0.0f64));
        parsed_heap.resize(dim, 0.0f64);
        (&mut acc_heap[..], &mut parsed_heap[..])
    };
    rows_of(map, rows, false, |r, find| {
        acc.fill((0, 0.0));
        each_key(keys, r, separator, |k| {
            let Some(n) = find.value(k).and_then(|v| v.numbers(parsed)) else { return };
            for (a, &x) in acc.iter_mut().zip(&parsed[..n]) {
                *a = (a.0 + 1, combine(combiner, a.0, a.1, x));
            }
        });
        acc.iter().for_each(|&(n, a)| values.push_f64(finish(combiner, n, a, default)));
    });
    Ok(())
}

/// Continuous, per position of an id sequence of keys (FG's lookup as a
/// sub-feature of a sequence_feature): each position's ids (its `width`
/// values, padding included) looked up as their decimal text and combined;
/// a sequence of one value per position (`[rows, -1, 1]`), `default` where
/// a position finds nothing.
pub(super) fn values_positions(
    map: Map<'_>,
    keys: &Column,
    out: &mut Column,
    rows: usize,
    (combiner, default): (Combiner, f64),
) -> Result<(), ExtractError> {
    let o = out.ragged_mut();
    o.width = Some(1);
    o.splits.push(0)?;
    let mut result = Ok(());
    rows_of(map, rows, true, |r, find| {
        for p in row_range(keys, r) {
            let (mut n, mut acc) = (0usize, 0.0f64);
            each_key_at(keys, At::Position(p), &[], |k| {
                if let Some(x) = find.number(k) {
                    acc = combine(combiner, n, acc, x);
                    n += 1;
                }
            });
            o.values.push_f64(finish(combiner, n, acc, default));
        }
        if result.is_ok() {
            result = o.splits.push(o.values.len());
        }
    });
    result.map_err(Into::into)
}

/// Discrete: each found value's bytes hashed into `buckets`, in key order
/// (with `need_key`, FG's, the key, `_` and the value: `k2_v2`); ragged ids.
pub(super) fn ids(
    map: Map<'_>,
    keys: &Column,
    out: &mut Column,
    rows: usize,
    (separator, buckets, need_key): (&[u8], u64, bool),
) -> Result<(), ExtractError> {
    let o = out.ragged_mut();
    o.splits.push(0)?;
    let mut result = Ok(());
    let mut text = [0u8; 20];
    rows_of(map, rows, false, |r, find| {
        each_key(keys, r, separator, |k| {
            if let Some(v) = find.value(k).and_then(|v| v.text(&mut text)) {
                let h = if need_key { hash_joined(&[k, v]) } else { hash_bytes(v) };
                o.values.push_u64(h % buckets);
            }
        });
        if result.is_ok() {
            result = o.splits.push(o.values.len());
        }
    });
    result.map_err(Into::into)
}

/// Which key of `match` is FG's ALL wildcard.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MatchAll {
    Primary,
    Secondary,
}

/// The key columns of a `match` (None where a key is ALL), their names,
/// and the keys' separator.
pub(super) struct MatchKeys<'a> {
    pub(super) primary: Option<&'a Column>,
    pub(super) secondary: Option<&'a Column>,
    pub(super) names: [&'a str; 2],
    pub(super) separator: &'a [u8],
}

impl<'a> MatchKeys<'a> {
    /// From the op's inputs: the map, then the keys that are not ALL.
    pub(super) fn new(inputs: super::Inputs<'a>, all: Option<MatchAll>, separator: &'a [u8]) -> Self {
        let key = |i: usize| Some(inputs.get(i));
        let (primary, secondary) = match all {
            None => (key(1), key(2)),
            Some(MatchAll::Primary) => (None, key(1)),
            Some(MatchAll::Secondary) => (key(1), None),
        };
        let name = |k: Option<&'a crate::columns::NamedColumn>| k.map_or("ALL", |k| k.name.as_str());
        MatchKeys {
            primary: primary.map(|k| &k.column),
            secondary: secondary.map(|k| &k.column),
            names: [name(primary), name(secondary)],
            separator,
        }
    }
}

/// What `match` finds: the primary key and the secondary key it was found
/// under (the map's own, which the row's equal unless they are ALL), and
/// the value.
pub(super) type Found<'f> = dyn FnMut(&[u8], &[u8], &[u8]) + 'f;

/// Where one value's primary and secondary keys are: both a row's, or a
/// position of whichever is a sequence (see [`At`]).
pub(super) type Places = (At, At);

/// FG's two-level map: `pk^sk:v,sk:v|pk^sk:v`. Calls `f` with each
/// (primary key, secondary key, value) the keys `at` find, primary keys
/// outermost, in key order (ALL: each primary or secondary key of the map
/// once, in the map's order). The first entry of a primary key, and the
/// first of a secondary key within it, win; entries without `^` or `:` are
/// skipped.
fn each_match(map: &[u8], keys: &MatchKeys<'_>, at: Places, f: &mut Found<'_>) {
    each_match_in(map, None, keys, at, f)
}

/// [`each_match`], the primary keys found through `index` (the map's
/// `pk^...` entries between `|`) when given.
fn each_match_in(map: &[u8], index: Option<&Index>, keys: &MatchKeys<'_>, at: Places, f: &mut Found<'_>) {
    // Within a primary key: `sk:v` entries between commas.
    let inner = |pk: &[u8], within: &[u8], f: &mut Found<'_>| match keys.secondary {
        Some(sk) => each_key_at(sk, at.1, keys.separator, |k| {
            if let Some(v) = find_in(within, b',', b':', k) {
                f(pk, k, v);
            }
        }),
        None => first_entries(within, b',', b':', |k, v| f(pk, k, v)),
    };
    // The primary keys: `pk^...` entries between bars.
    match (keys.primary, index) {
        (Some(pk), Some(index)) => each_key_at(pk, at.0, keys.separator, |k| {
            if let Ok(i) = index.probe(map, k) {
                inner(k, index.value(map, i), f);
            }
        }),
        (Some(pk), None) => each_key_at(pk, at.0, keys.separator, |k| {
            if let Some(within) = find_in(map, b'|', b'^', k) {
                inner(k, within, f);
            }
        }),
        // The index holds each primary key's first entry, in map order.
        (None, Some(index)) => (0..index.entries.len()).for_each(|i| inner(index.key(map, i), index.value(map, i), f)),
        (None, None) => first_entries(map, b'|', b'^', |pk, within| inner(pk, within, f)),
    }
}

/// Calls `row(r, each)` for every row, where `each(r, at, f)` calls `f`
/// with each (primary key, secondary key, value) the keys `at` find in row
/// `r`'s map: a SHARED map's primary keys through an index built once, a
/// map per row scanned.
pub(super) type EachValue<'e> = dyn FnMut(usize, Places, &mut Found<'_>) + 'e;

pub(super) fn match_rows(
    map: &Column,
    keys: &MatchKeys<'_>,
    rows: usize,
    mut row: impl FnMut(usize, &mut EachValue<'_>),
) {
    if map.rows() == 1 && rows > 1 {
        let m = string_at(map, 0);
        super::rows::try_scratch(|index: Option<&mut Index>| match index {
            Some(index) => {
                index.build_with(m, b'|', b'^', false);
                let mut each = |_, at, f: &mut Found<'_>| each_match_in(m, Some(&*index), keys, at, f);
                (0..rows).for_each(|r| row(r, &mut each));
            }
            None => {
                let mut each = |_, at, f: &mut Found<'_>| each_match(m, keys, at, f);
                (0..rows).for_each(|r| row(r, &mut each));
            }
        });
    } else {
        let mut each = |r, at, f: &mut Found<'_>| each_match(string_at(map, r), keys, at, f);
        (0..rows).for_each(|r| row(r, &mut each));
    }
}

/// The numbers the keys `at` find in row `r`'s map, combined; `default`
/// where none is found.
pub(super) fn match_number(
    each: &mut EachValue<'_>,
    r: usize,
    at: Places,
    (combiner, default): (Combiner, f64),
) -> f64 {
    let (mut n, mut acc) = (0usize, 0.0f64);
    each(r, at, &mut |_, _, v| {
        if let Some(x) = number(v) {
            acc = combine(combiner, n, acc, x);
            n += 1;
        }
    });
    finish(combiner, n, acc, default)
}

/// `match`, continuous: the numbers found combined, `default` where none.
pub(super) fn match_values(
    map: &Column,
    keys: MatchKeys<'_>,
    out: &mut Column,
    rows: usize,
    settings: (Combiner, f64),
) -> Result<(), ExtractError> {
    let values = &mut out.dense_mut().values;
    match_rows(map, &keys, rows, |r, each| {
        values.push_f64(match_number(each, r, (At::Row(r), At::Row(r)), settings));
    });
    Ok(())
}

/// Which keys a discrete `match` hashes before its value (FG's show_pkey
/// and show_skey): `pk_sk_v`, `pk_v`, `sk_v` or `v`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ShowKeys {
    pub primary: bool,
    pub secondary: bool,
}

/// `match`, discrete: each value found hashed into `buckets`, after the
/// keys `show` names.
pub(super) fn match_ids(
    map: &Column,
    keys: MatchKeys<'_>,
    out: &mut Column,
    rows: usize,
    (buckets, show): (u64, ShowKeys),
) -> Result<(), ExtractError> {
    let o = out.ragged_mut();
    o.splits.push(0)?;
    let mut result = Ok(());
    match_rows(map, &keys, rows, |r, each| {
        each(r, (At::Row(r), At::Row(r)), &mut |pk, sk, v| {
            let h = match (show.primary, show.secondary) {
                (false, false) => hash_bytes(v),
                (true, false) => hash_joined(&[pk, v]),
                (false, true) => hash_joined(&[sk, v]),
                (true, true) => hash_joined(&[pk, sk, v]),
            };
            o.values.push_u64(h % buckets);
        });
        if result.is_ok() {
            result = o.splits.push(o.values.len());
        }
    });
    result.map_err(Into::into)
}

/// The running combination after `n` values, with `x` the next.
fn combine(combiner: Combiner, n: usize, acc: f64, x: f64) -> f64 {
    match (n, combiner) {
        (0, _) => x,
        (_, Combiner::Sum | Combiner::Mean) => acc + x,
        (_, Combiner::Min) => acc.min(x),
        (_, Combiner::Max) => acc.max(x),
    }
}

/// The combination of `n` values, `default` for none.
fn finish(combiner: Combiner, n: usize, acc: f64, default: f64) -> f64 {
    match (n, combiner) {
        (0, _) => default,
        (_, Combiner::Mean) => acc / n as f64,
        _ => acc,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_keys_and_numbers() {
        let map = b"a:1\x1db:2.5\x1d\x1dnocolon\x1da:9\x1dc:x:y\x1d:7";
        assert_eq!(find(map, b"a"), Some(&b"1"[..]), "the first entry wins");
        assert_eq!(find(map, b"b"), Some(&b"2.5"[..]));
        assert_eq!(find(map, b"c"), Some(&b"x:y"[..]), "the key ends at the first colon");
        assert_eq!(find(map, b""), Some(&b"7"[..]));
        assert_eq!(find(map, b"nocolon"), None);
        assert_eq!(find(b"", b"a"), None);
        assert_eq!(number(b"1e3"), Some(1000.0));
        assert!(number(b"nan").unwrap().is_nan());
        assert_eq!(number(b" 1"), None);
        let mut buf = [0u8; 20];
        for x in [0i64, 7, -7, 10, 99, 100, 101, -100, 1234567890123, i64::MIN, i64::MAX] {
            let n = decimal_i64(x, &mut buf);
            assert_eq!(&buf[20 - n..], x.to_string().as_bytes());
        }
        let mut index = Index::default();
        index.build(map);
        let indexed = Finder::Indexed(map, &index);
        for key in [&b"a"[..], b"b", b"c", b"", b"nocolon", b"zz", b"c:x"] {
            assert_eq!(indexed.value(key), find(map, key).map(Value::Text), "{key:?}");
            assert_eq!(indexed.number(key), Finder::Scan(map).number(key), "{key:?}");
        }
        let n = decimal_u64(u64::MAX, &mut buf);
        assert_eq!(&buf[20 - n..], u64::MAX.to_string().as_bytes());
    }

    proptest::proptest! {
        /// The hash index (a SHARED map) and the scan (a map per row) find
        /// the same value and number for every key, whatever the map holds:
        /// repeated keys, entries without a colon, empty entries, colons in
        /// values, numbers and not.
        #[test]
        fn the_index_finds_what_the_scan_finds(
            entries in proptest::collection::vec("[ab:]{0,3}(:[0-9.a-z:]{0,4})?", 0..12),
            keys in proptest::collection::vec("[ab:]{0,3}", 1..8),
        ) {
            let map = entries.join("\u{1d}");
            let map = map.as_bytes();
            let mut index = Index::default();
            index.build(map);
            let (indexed, scan) = (Finder::Indexed(map, &index), Finder::Scan(map));
            for key in &keys {
                let key = key.as_bytes();
                proptest::prop_assert_eq!(indexed.value(key), scan.value(key));
                let (a, b) = (indexed.number(key), scan.number(key));
                proptest::prop_assert!(a.map(f64::to_bits) == b.map(f64::to_bits), "{:?} {:?}", a, b);
            }
        }
    }

    proptest::proptest! {
        /// An id's decimal text, two digits a step, is Rust's own.
        #[test]
        fn decimal_is_rusts(x in proptest::prop_oneof![0u64..1000, 0u64..10_000_000_000, proptest::num::u64::ANY]) {
            let mut buf = [0u8; 20];
            let n = decimal(x, false, &mut buf);
            let (unsigned, signed) = (x.to_string(), (x as i64).to_string());
            proptest::prop_assert_eq!(&buf[20 - n..], unsigned.as_bytes());
            let n = decimal(x, true, &mut buf);
            proptest::prop_assert_eq!(&buf[20 - n..], signed.as_bytes());
        }
    }

    /// `match` by the plainest reading of its rules, for the proptest:
    /// parse the whole map, then walk the keys; each (primary key,
    /// secondary key, value) found, joined by `_` as show_pkey and
    /// show_skey hash them.
    fn match_reference(map: &str, pks: Option<&[&str]>, sks: Option<&[&str]>) -> Vec<String> {
        let mut parsed: Vec<(String, Vec<(String, String)>)> = Vec::new();
        for outer in map.split('|') {
            let Some((pk, inner)) = outer.split_once('^') else { continue };
            if parsed.iter().any(|(p, _)| p == pk) {
                continue;
            }
            let mut entries: Vec<(String, String)> = Vec::new();
            for e in inner.split(',') {
                if let Some((sk, v)) = e.split_once(':')
                    && !entries.iter().any(|(k, _)| k == sk)
                {
                    entries.push((sk.into(), v.into()));
                }
            }
            parsed.push((pk.into(), entries));
        }
        let primaries: Vec<&(String, Vec<(String, String)>)> = match pks {
            Some(pks) => pks.iter().filter_map(|k| parsed.iter().find(|(p, _)| p == k)).collect(),
            None => parsed.iter().collect(),
        };
        let mut out = Vec::new();
        for (pk, entries) in primaries {
            let found: Vec<&(String, String)> = match sks {
                Some(sks) => sks.iter().filter_map(|k| entries.iter().find(|(s, _)| s == k)).collect(),
                None => entries.iter().collect(),
            };
            out.extend(found.into_iter().map(|(sk, v)| format!("{pk}_{sk}_{v}")));
        }
        out
    }

    fn strings(parts: &[&str]) -> Column {
        let mut s = crate::columns::Strings::default();
        s.end_row();
        s.bytes.extend_from_slice(parts.join("\u{1d}").as_bytes());
        s.end_row();
        Column::Strings(s)
    }

    proptest::proptest! {
        /// `each_match` against the reference: repeated primary and
        /// secondary keys, malformed entries, either key ALL.
        #[test]
        fn match_finds_what_the_reference_finds(
            outer in proptest::collection::vec("[ab]{0,2}(\\^([ab]{0,2}(:[0-9x]{0,2})?,){0,3}[ab]{0,2}(:[0-9x]{0,2})?)?", 0..6),
            pks in proptest::collection::vec("[ab]{1,2}", 1..3),
            sks in proptest::collection::vec("[ab]{1,2}", 1..3),
            all in 0..3u8,
        ) {
            let map = outer.join("|");
            let pk: Vec<&str> = pks.iter().map(String::as_str).collect();
            let sk: Vec<&str> = sks.iter().map(String::as_str).collect();
            let (pcol, scol) = (strings(&pk), strings(&sk));
            let keys = MatchKeys {
                primary: (all != 1).then_some(&pcol),
                secondary: (all != 2).then_some(&scol),
                names: ["p", "s"],
                separator: &[ENTRIES],
            };
            let joined = |p: &[u8], s: &[u8], v: &[u8]| String::from_utf8([p, b"_", s, b"_", v].concat()).unwrap();
            let mut got = Vec::new();
            each_match(map.as_bytes(), &keys, (At::Row(0), At::Row(0)), &mut |p, s, v| got.push(joined(p, s, v)));
            let want = match_reference(&map, (all != 1).then_some(&pk[..]), (all != 2).then_some(&sk[..]));
            proptest::prop_assert_eq!(&got, &want, "map {:?}", map);
            let mut index = Index::default();
            index.build_with(map.as_bytes(), b'|', b'^', false);
            let mut indexed = Vec::new();
            each_match_in(map.as_bytes(), Some(&index), &keys, (At::Row(0), At::Row(0)), &mut |p, s, v| indexed.push(joined(p, s, v)));
            proptest::prop_assert_eq!(indexed, want, "indexed, map {:?}", map);
        }
    }
}
