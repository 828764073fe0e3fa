//! Operators: features derived from other features, declared in the model
//! config (`op:`) and compiled into the Plan. Each is a pure function of its
//! input tensors, run by the same code online and offline. `ids` (fid and id
//! arithmetic, crosses), `id_feature` (`hash`: FG's id_feature), `numeric` (ln, clip, normalize, bucketize,
//! cast, scale, pow), `vocab` (contiguous ids from a file), `layout` (group
//! CSR, keyed-jagged, concatenation, sequence positions), `multihot` (seed 004),
//! and FG's operators: `expr` (`expr_seq`, per position of float sequences), `lookup` (lookup and match; `map_lists`, a
//! lookup's map as parallel key and value lists), `overlap` (`proximity`, its pairwise distances), `bm25`, `text`
//! (regex_replace, slice, split, normalize_text; `t2s`, its traditional to
//! simplified Chinese table).

mod bm25;
mod expr;
mod expr_seq;
mod hash;
mod id_feature;
mod ids;
mod kv_dot;
mod layout;
mod lookup;
mod map_lists;
mod mask;
mod match_seq;
mod multihot;
mod numeric;
mod overlap;
mod proximity;
mod rows;
mod t2s;
mod text;
mod tokenize;
mod vocab;

use std::sync::Arc;

pub use bm25::{Bm25Params, DocFreqError, DocFreqs};
pub use expr::{Expr, ExprError};
pub use hash::{digest, hash_bytes, hash_joined, hash_tuple, hash_u64};
pub use id_feature::Bucketing;
pub use lookup::{Combiner, MatchAll, ShowKeys};
pub use multihot::weight as multihot_weight;
pub use overlap::OverlapMethod;
pub use text::{Pattern, TextNormalizer};
pub use tokenize::{TokenizerFile, TokenizerKind};
pub use vocab::{Vocab, VocabError};

/// Most inputs an operator takes; the config refuses more.
pub(crate) const MAX_INPUTS: usize = 64;

use crate::columns::{Column, NamedColumn};
use crate::error::{ErrorKind, ExtractError};
use crate::proto::fex_v1::{DataType, Layout};

/// A compiled operator with the layout of what it produces.
#[derive(Debug, Clone, PartialEq)]
pub struct Transform {
    pub kind: TransformKind,
    pub layout: Layout,
    pub dtype: DataType,
    pub splits: DataType,
    /// Signature shape (-1 for per-request dimensions).
    pub spec_shape: Vec<i64>,
    /// Dense outputs: the dimensions after the rows.
    pub dense_shape: Vec<i64>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum TransformKind {
    /// Converts v1 fids to v2.
    V1ToV2,
    /// The slot of each fid (v1: top 10 bits; v2: bits 48..63).
    Slot {
        v1: bool,
    },
    /// `slot << 48 | (x & (2^48 - 1))`.
    Reslot {
        slot: u64,
    },
    /// `xxh64(x) mod buckets` (ids hashed as 8 little-endian bytes, or
    /// with a prefix as `prefix_decimal`), or ids as they are below
    /// `num_buckets`; with `separator`, each non-empty part of a string
    /// (FG's multi-value id_feature).
    /// `value_dim` above 0 keeps each row's first ids (FG's).
    Hash {
        rule: Bucketing,
        separator: Option<Vec<u8>>,
        value_dim: usize,
    },
    /// Each `key:weight` part of a string: the key made an id by `rule`,
    /// the weight kept as the value's weight (FG's weighted id_feature).
    HashWeighted {
        rule: Bucketing,
        separator: Vec<u8>,
        value_dim: usize,
    },
    /// Keeps the fids whose v2 slot is listed (sorted).
    FilterSlots {
        slots: Vec<u64>,
    },
    /// Every combination of the inputs' values per row, hashed.
    Cross {
        buckets: Option<u64>,
        slot: Option<u64>,
        max_per_row: usize,
    },
    /// 0 = missing, 1 = out of vocabulary, 2.. = position in the file.
    Vocab(Arc<Vocab>),
    /// Each string's token ids by a Hugging Face tokenizer (FG's
    /// tokenize_feature).
    Tokenize(Arc<TokenizerFile>),
    /// `ln(x + c)`, or `floor` where `x + c <= 0` or x is NaN.
    Ln {
        c: f64,
        floor: f64,
    },
    Clip {
        min: f64,
        max: f64,
    },
    ZScore {
        mean: f64,
        std: f64,
    },
    MinMax {
        min: f64,
        max: f64,
    },
    /// Index of the first boundary greater than x (boundaries ascending).
    Bucketize {
        boundaries: Vec<f64>,
    },
    Cast,
    Scale {
        factor: f64,
    },
    Pow {
        exponent: f64,
    },
    /// Several ragged inputs → one CSR, row by row (deepx group input).
    Group,
    /// Several ragged inputs → a TorchRec KeyedJaggedTensor.
    KeyedJagged {
        keys: Vec<String>,
    },
    /// Several dense inputs → one `[rows, sum of widths]`.
    Concat,
    /// Position `index` of a sequence → `[rows, width]`, zero-padded.
    Position {
        index: usize,
        width: usize,
    },
    /// An arithmetic expression over dense inputs (FG's expr_feature), per
    /// position when an input is a float sequence.
    Expr(Arc<Expr>),
    /// Keys looked up in a `key:value` map, the numbers combined (FG's
    /// lookup_feature); with `value_dim` above 1 each value is that many
    /// numbers, combined element by element. `lists`: the map is a list
    /// of keys and a list of values (inputs `[keys, map keys, map
    /// values]`, not `[map, keys]`).
    Lookup {
        separator: Vec<u8>,
        combiner: Combiner,
        default: f64,
        value_dim: usize,
        lists: bool,
    },
    /// Keys looked up in a map, each value found hashed into `buckets`
    /// (FG's lookup_feature with need_discrete; `need_key`: `key_value`
    /// hashed); `lists` as for `Lookup`.
    LookupIds {
        separator: Vec<u8>,
        buckets: u64,
        need_key: bool,
        lists: bool,
    },
    /// Primary and secondary keys looked up in a two-level map, the
    /// numbers combined (FG's match_feature); `all` is FG's ALL wildcard.
    /// A key that is an id sequence gives a number per position.
    Match {
        separator: Vec<u8>,
        all: Option<MatchAll>,
        combiner: Combiner,
        default: f64,
    },
    /// Values kept where a mask is true (FG's bool_mask_feature); strings
    /// (and ids, with `buckets`) hashed.
    BoolMask {
        separator: Vec<u8>,
        buckets: Option<u64>,
    },
    /// The dot product of two `key:weight` vectors (FG's kv_dot_product).
    KvDot {
        separator: Vec<u8>,
        kv: u8,
    },
    /// A query's terms compared with a title's (FG's overlap_feature).
    Overlap {
        method: OverlapMethod,
        separator: Vec<u8>,
        default: f64,
    },
    /// Okapi BM25 of a query's terms against a title's, with document
    /// frequencies from a file (FG's bm25_feature).
    Bm25 {
        table: Arc<DocFreqs>,
        params: Bm25Params,
        separator: Vec<u8>,
        default: f64,
    },
    /// Every match of a pattern replaced, in each row's string.
    RegexReplace {
        pattern: Pattern,
        replacement: Vec<u8>,
    },
    /// FG's text_normalizer (`normalize_text`): case, width, traditional
    /// to simplified Chinese, stop characters, spaces, CJK split, length.
    NormalizeText(Arc<TextNormalizer>),
    /// Characters `start..end` of each row's string (Python's counting).
    Slice {
        start: i64,
        end: Option<i64>,
    },
    /// Part `index` of each row's string split at every `separator`
    /// (Python's `s.split(separator)[index]`, or the empty string).
    Split {
        separator: Vec<u8>,
        index: i64,
    },
    /// The same, each value found hashed into `buckets`, after the keys
    /// `show` names (FG's show_pkey, show_skey).
    MatchIds {
        separator: Vec<u8>,
        all: Option<MatchAll>,
        buckets: u64,
        show: ShowKeys,
    },
    /// Seed 004 multi-hot expansion into a KeyedJaggedTensor.
    MultiHot {
        keys: Vec<String>,
        num_embeddings: Vec<u64>,
        min_table_size: u64,
        size: usize,
    },
}

impl TransformKind {
    /// Element by element over numbers (`numeric::eval`).
    fn is_numeric(&self) -> bool {
        use TransformKind::*;
        matches!(
            self,
            Ln { .. }
                | Clip { .. }
                | ZScore { .. }
                | MinMax { .. }
                | Bucketize { .. }
                | Cast
                | Scale { .. }
                | Pow { .. }
        )
    }
}

/// Runs `t` on `inputs` into `out` (already reset by the caller), for the
/// output called `name`; returns whether the result is a SHARED row returned
/// once (all its inputs are).
pub(crate) fn apply(
    t: &Transform,
    inputs: Inputs<'_>,
    name: &str,
    out: &mut Column,
    budget: Budget<'_>,
) -> Result<bool, ExtractError> {
    use TransformKind::*;
    let rows = rows::common(inputs)?;
    let shared = inputs.iter().all(|i| i.shared);
    let input = |i: usize| &inputs.get(i).column;
    // A sequence through an id-to-id or a numeric operator: value by value,
    // the positions kept.
    if inputs.len() == 1 && ids::is_sequence(input(0)) {
        if t.kind.is_numeric() {
            numeric::apply_positions(&t.kind, input(0), out)?;
            return Ok(shared);
        }
        let mut positions = |f: &dyn Fn(u64) -> u64| ids::map_positions(input(0), out, f);
        let done = match &t.kind {
            V1ToV2 => Some(positions(&crate::fid::v1_to_v2)),
            Slot { v1: true } => Some(positions(&crate::fid::v1_slot)),
            Slot { v1: false } => Some(positions(&crate::fid::v2_slot)),
            Reslot { slot } => Some(positions(&|x| crate::fid::reslot(*slot, x))),
            Hash { rule, separator: None, value_dim: 0 } => {
                let signed = id_feature::signed(input(0));
                Some(positions(&|x| rule.hash_id(x, signed)))
            }
            Vocab(v) => Some(positions(&|x| v.id(x) as u64)),
            _ => None,
        };
        if let Some(result) = done {
            result?;
            return Ok(shared);
        }
    }
    match &t.kind {
        V1ToV2 => ids::map(input(0), out, rows, |x| Some(crate::fid::v1_to_v2(x))),
        Slot { v1: true } => ids::map(input(0), out, rows, |x| Some(crate::fid::v1_slot(x))),
        Slot { v1: false } => ids::map(input(0), out, rows, |x| Some(crate::fid::v2_slot(x))),
        Reslot { slot } => ids::map(input(0), out, rows, |x| Some(crate::fid::reslot(*slot, x))),
        Hash { rule, separator: None, .. } => id_feature::hash(input(0), out, rows, rule),
        Hash { rule, separator: Some(sep), .. } => id_feature::hash_parts(input(0), out, rows, rule, sep),
        HashWeighted { rule, separator, .. } => id_feature::hash_weighted(input(0), out, rows, rule, separator),
        FilterSlots { slots } => {
            ids::map(input(0), out, rows, |x| slots.binary_search(&crate::fid::v2_slot(x)).ok().map(|_| x))
        }
        Cross { buckets, slot, max_per_row } => {
            ids::cross(inputs, name, out, rows, (*buckets, *slot, *max_per_row), budget)
        }
        Vocab(v) => vocab::map(v, input(0), out, rows),
        Tokenize(t) => tokenize::apply(t, name, input(0), out, rows),
        Group => layout::group(inputs, out, rows),
        KeyedJagged { keys } => layout::keyed_jagged(keys, inputs, out, rows),
        Concat => layout::concat(inputs, out, rows),
        Position { index, width } => layout::position(input(0), out, rows, *index, *width),
        MultiHot { keys, num_embeddings, min_table_size, size } => {
            multihot::expand(keys, num_embeddings, *min_table_size, *size, inputs, out, rows, budget)
        }
        Expr(e) => expr::apply(e, inputs, name, out, rows, budget),
        Lookup { separator, combiner, default, value_dim, lists } => {
            let (map, keys) = lookup::map_and_keys(inputs, *lists, separator, rows, name)?;
            match value_dim {
                _ if ids::is_sequence(keys) => lookup::values_positions(map, keys, out, rows, (*combiner, *default)),
                1 => lookup::values(map, keys, out, rows, (separator, *combiner, *default)),
                d => lookup::vectors(map, keys, out, rows, (separator, *combiner, *default, *d)),
            }
        }
        LookupIds { separator, buckets, need_key, lists } => {
            let (map, keys) = lookup::map_and_keys(inputs, *lists, separator, rows, name)?;
            lookup::ids(map, keys, out, rows, (separator, *buckets, *need_key))
        }
        Match { separator, all, combiner, default } => {
            let keys = lookup::MatchKeys::new(inputs, *all, separator);
            if match_seq::any_sequence(&keys) {
                match_seq::check(&keys, rows, name)?;
                match_seq::values_positions(input(0), keys, out, rows, (*combiner, *default))
            } else {
                lookup::match_values(input(0), keys, out, rows, (*combiner, *default))
            }
        }
        BoolMask { separator, buckets } => mask::apply(input(0), input(1), out, rows, (separator, *buckets)),
        KvDot { separator, kv } => kv_dot::apply(input(0), input(1), out, rows, (separator, *kv)),
        Overlap { method, separator, default } => {
            overlap::apply(*method, input(0), input(1), out, rows, (separator, *default))
        }
        Bm25 { table, params, separator, default } => {
            bm25::apply(table, *params, (input(0), input(1)), out, rows, (separator, *default))
        }
        RegexReplace { pattern, replacement } => text::regex_replace(pattern, replacement, input(0), out, rows),
        Slice { start, end } => text::slice(*start, *end, input(0), out, rows),
        Split { separator, index } => text::split(separator, *index, input(0), out, rows),
        NormalizeText(n) => text::normalize(n, input(0), out, rows),
        MatchIds { separator, all, buckets, show } => {
            let keys = lookup::MatchKeys::new(inputs, *all, separator);
            lookup::match_ids(input(0), keys, out, rows, (*buckets, *show))
        }
        // The kinds `is_numeric` names, listed so that a new kind must be
        // placed here or above.
        Ln { .. }
        | Clip { .. }
        | ZScore { .. }
        | MinMax { .. }
        | Bucketize { .. }
        | Cast
        | Scale { .. }
        | Pow { .. } => numeric::apply(&t.kind, input(0), out, rows),
    }?;
    if let Hash { value_dim: n @ 1.., .. } | HashWeighted { value_dim: n @ 1.., .. } = &t.kind {
        id_feature::keep_first(out, *n);
    }
    if let Column::Dense(d) = out {
        d.rows = rows;
        d.dims.extend(t.dense_shape.iter().map(|&x| x.max(0) as usize));
    }
    Ok(shared)
}

/// An operator's inputs: outputs already computed, picked by index, borrowed
/// from the extractor's scratch rather than collected.
#[derive(Clone, Copy)]
pub(crate) struct Inputs<'a> {
    pub done: &'a [NamedColumn],
    pub indices: &'a [usize],
}

impl<'a> Inputs<'a> {
    pub fn len(&self) -> usize {
        self.indices.len()
    }

    pub fn get(&self, i: usize) -> &'a NamedColumn {
        &self.done[self.indices[i]]
    }

    pub fn iter(&self) -> impl Iterator<Item = &'a NamedColumn> + 'a {
        let done = self.done;
        self.indices.iter().map(move |&i| &done[i])
    }
}

/// Bytes a dense result takes whatever its inputs hold (0 for the others,
/// which charge as they write).
pub(crate) fn fixed_size(t: &Transform, inputs: Inputs<'_>) -> usize {
    if t.layout != Layout::Dense {
        return 0;
    }
    let rows = inputs.iter().map(|i| i.column.rows()).max().unwrap_or(0);
    let width: usize = t.dense_shape.iter().map(|&d| d.max(0) as usize).product();
    rows.saturating_mul(width).saturating_mul(crate::columns::elem_size(t.dtype))
}

/// The output-size budget shared by every output of one extraction.
pub(crate) struct Budget<'b> {
    pub used: &'b mut usize,
    pub limit: usize,
}

impl Budget<'_> {
    /// Fails when `bytes` more would pass the limit.
    pub fn charge(&mut self, bytes: usize) -> Result<(), ExtractError> {
        crate::error::charge(self.used, bytes, self.limit)
    }
}

/// The error of row `r` whose two paired inputs differ in length (a lookup
/// map's two lists, a match's two key sequences, an expression's
/// sequences): pairing their places would pair the wrong values. `a` and
/// `b` are (what, name, length); `whose` names the pair in the rule.
pub(super) fn unequal_lengths(
    op: &str,
    r: usize,
    a: (&str, &str, usize),
    b: (&str, &str, usize),
    whose: &str,
) -> ExtractError {
    let message = format!(
        "row {r}: the {} {:?} is {} long, the {} {:?} {}; {whose} must be as long",
        a.0, a.1, a.2, b.0, b.1, b.2
    );
    ErrorKind::Operator { name: op.to_string(), message }.into()
}
