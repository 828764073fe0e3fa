//! The offline half of the library: what building training data adds to
//! extraction. `transforms` holds Monolith's sample transforms, run on the
//! entry point's `Rows` between `Extractor::index` and `Extractor::write`.

pub mod transforms;

pub use transforms::{Reorder, TransformCount, TransformError, Transforms};
