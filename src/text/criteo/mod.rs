//! Criteo TSV with DLRM's preprocessing (seed 004): `line` parses a line and
//! holds the dense transform, `reader` batches lines into label, dense and a
//! KeyedJaggedTensor, `fit` writes the per-column vocabularies, `multihot`
//! expands a batch, `split` holds out the last day and shuffles the rest.

mod fit;
mod line;
mod multihot;
mod reader;
mod split;

pub use fit::{Fit, FitOptions, FitStats, vocab_file_name};
pub use line::{CAT_FEATURES, FIELDS, INT_FEATURES, RawRow, dense_ln, parse};
pub use multihot::{MultiHotError, multi_hot};
pub use reader::{
    CriteoReader, DENSE_NAME, LABEL_NAME, SPARSE_NAME, cat_keys, key_major, length_per_key, offset_per_key,
};
pub use split::{DAYS, shuffle_lines, split_days};

/// Loads the 26 vocabularies `Fit::write` wrote into `dir`.
pub fn load_vocabs(dir: &std::path::Path) -> Result<std::sync::Arc<[crate::ops::Vocab]>, crate::ops::VocabError> {
    (0..CAT_FEATURES).map(|c| crate::ops::Vocab::load(&dir.join(vocab_file_name(c)))).collect()
}
