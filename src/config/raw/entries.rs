//! One struct per feature kind and per operator, each naming exactly the keys
//! that kind or op takes: reading a feature into its struct is what rejects a
//! key of another kind (`shape` on a sparse feature) with the allowed list.

use serde::Deserialize;
use serde_norway::Mapping;

/// What every entry struct tells the stages after it.
pub(in crate::config) trait Entry: serde::de::DeserializeOwned + Default {
    /// `output: false` keeps a feature internal: computed for others only.
    fn output(&self) -> Option<bool>;
    /// The features this entry reads, and the key that named them.
    fn inputs(&self) -> (Vec<String>, &'static str);
}

/// `input: a` or `inputs: [a, b]`, collected alike.
trait Names {
    fn add_to(&self, names: &mut Vec<String>);
}

impl Names for Option<String> {
    fn add_to(&self, names: &mut Vec<String>) {
        names.extend(self.iter().cloned());
    }
}

impl Names for Option<Vec<String>> {
    fn add_to(&self, names: &mut Vec<String>) {
        names.extend(self.iter().flatten().cloned());
    }
}

/// Declares an entry struct: `name`, the tag (`kind` or `op`), the input keys,
/// the entry's own keys, then `output`. Every field defaults, so a struct can
/// be read one key at a time (see `keys::read`).
macro_rules! entry {
    ($(#[$m:meta])* $ty:ident, $tag:ident, [$($input:ident: $ity:ty),*], { $($(#[$fm:meta])* $field:ident: $fty:ty),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Default, Deserialize)]
        #[serde(deny_unknown_fields, default)]
        pub(in crate::config) struct $ty {
            pub name: String,
            pub $tag: String,
            $(pub $input: Option<$ity>,)*
            $($(#[$fm])* pub $field: Option<$fty>,)*
            pub output: Option<bool>,
        }

        impl Entry for $ty {
            fn output(&self) -> Option<bool> {
                self.output
            }

            #[allow(unused_mut)]
            fn inputs(&self) -> (Vec<String>, &'static str) {
                let mut names = Vec::new();
                $(self.$input.add_to(&mut names);)*
                // The key given (`input` first), else the first one allowed.
                let keys: &[(&'static str, bool)] = &[$((stringify!($input), self.$input.is_some())),*];
                let key = keys.iter().find(|k| k.1).or(keys.first()).map_or("inputs", |k| k.0);
                (names, key)
            }
        }
    };
}

entry!(Sparse, kind, [], { source: String, dtype: String, splits: String, shared: String });
entry!(Dense, kind, [], { source: String, dtype: String, shape: Vec<i64>, default: f64, shared: String });
entry!(Strings, kind, [], { source: String, shared: String, join: String });
entry!(Sequence, kind, [], {
    source: String, dtype: String, max_len: i64, width: i64, splits: String, shared: String, per_position: bool,
});
entry!(List, kind, [], { source: String, dtype: String, splits: String, shared: String });
entry!(LineId, kind, [], { field: FieldRef, r#type: String, shape: Vec<i64> });
entry!(Label, kind, [], { shape: Vec<i64>, default: f64 });
entry!(Weight, kind, [], {});
entry!(
    /// Each task is read on its own (`keys::read` into [`RawTask`]).
    ActionLabel, kind, [], { tasks: Vec<Mapping> }
);

entry!(V1ToV2, op, [input: String], { splits: String });
entry!(Slot, op, [input: String], { method: String, splits: String });
entry!(Reslot, op, [input: String], { slot: u64, splits: String });
entry!(Hash, op, [input: String], {
    buckets: u64, num_buckets: u64, need_prefix: bool, value_dim: u64, splits: String, separator: String,
    weighted: bool,
});
entry!(FilterSlots, op, [input: String], { slots: Vec<u64>, splits: String });
entry!(Cross, op, [inputs: Vec<String>], { buckets: u64, slot: u64, max_per_row: u64, splits: String });
entry!(Vocab, op, [input: String], { file: String, splits: String });
entry!(Ln, op, [input: String], { c: f64, floor: f64 });
entry!(Clip, op, [input: String], { min: f64, max: f64 });
entry!(Normalize, op, [input: String], { method: String, mean: f64, std: f64, min: f64, max: f64 });
entry!(Bucketize, op, [input: String], { boundaries: Vec<f64> });
entry!(Cast, op, [input: String], { dtype: String });
entry!(Scale, op, [input: String], { factor: f64 });
entry!(Pow, op, [input: String], { exponent: f64 });
entry!(Group, op, [input: String, inputs: Vec<String>], { splits: String });
entry!(Kjt, op, [input: String, inputs: Vec<String>], {});
entry!(Concat, op, [input: String, inputs: Vec<String>], {});
entry!(
    /// `inputs: [map, keys]`, or `inputs: [keys]` with the map as two
    /// parallel lists, `map_keys` and `map_values`.
    Lookup, op, [inputs: Vec<String>, map_keys: String, map_values: String], {
    combiner: String, default: f64, need_discrete: bool, need_key: bool, value_dim: u64, buckets: u64,
    separator: String, splits: String,
});
/// An input of `match`: a feature's name, or FG's `ALL` wildcard for the
/// primary or secondary key (no feature: every key of the map).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(transparent)]
pub(in crate::config) struct MatchInput(pub String);

impl MatchInput {
    pub fn is_all(&self) -> bool {
        self.0 == "ALL"
    }
}

impl Names for Option<Vec<MatchInput>> {
    fn add_to(&self, names: &mut Vec<String>) {
        names.extend(self.iter().flatten().filter(|i| !i.is_all()).map(|i| i.0.clone()));
    }
}

entry!(Match, op, [inputs: Vec<MatchInput>], {
    combiner: String, default: f64, need_discrete: bool, show_pkey: bool, show_skey: bool, value_dim: u64,
    buckets: u64, separator: String, splits: String,
});
entry!(BoolMask, op, [inputs: Vec<String>], { separator: String, buckets: u64, splits: String });
entry!(Tokenize, op, [input: String], { file: String, tokenizer_type: String, splits: String });
entry!(KvDot, op, [inputs: Vec<String>], { separator: String, kv_delimiter: String });
entry!(Overlap, op, [inputs: Vec<String>], { method: String, separator: String, default: f64 });
entry!(Bm25, op, [inputs: Vec<String>], {
    file: String, documents: u64, avg_len: f64, k1: f64, b: f64, separator: String, default: f64,
});
entry!(RegexReplace, op, [input: String], { pattern: String, replacement: String });
entry!(NormalizeText, op, [input: String], { options: Vec<String>, stop_chars: String, max_length: u64 });
entry!(Slice, op, [input: String], { start: i64, end: i64 });
entry!(Split, op, [input: String], { separator: String, index: i64 });
entry!(Expr, op, [input: String, inputs: Vec<String>], { expression: String, dtype: String });
entry!(MultiHot, op, [inputs: Vec<String>], { num_embeddings: Vec<u64>, min_table_size: u64, multi_hot_size: u64 });

/// One task of an `action_label` feature: Monolith AddLabel's pos/neg actions.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(in crate::config) struct RawTask {
    pub pos: Vec<i64>,
    pub neg: Vec<i64>,
    /// Keep this share of negatives (deterministically by LineId); 1 keeps all.
    pub sample_rate: Option<f64>,
}

/// A LineId field named by its name or its number.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(in crate::config) enum FieldRef {
    Number(i64),
    Name(String),
}
