//! Sample transforms for building training data: Monolith's filters,
//! labels, negative generation, shuffle and batch (`transforms`), run on
//! the entry point's `Rows` between `Extractor::index` and
//! `Extractor::write`. In the default build: the offline pipeline and the
//! Python binding both use it.

pub mod transforms;

pub use transforms::{Counted, ItemPoolError, Prepared, Reorder, TransformCount, TransformError, Transforms};
