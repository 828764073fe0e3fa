//! Zero-copy views over serialized Monolith samples. A view borrows the input
//! bytes, checks structure as it goes, and decodes only what it is asked for.

mod batch;
mod canonical;
mod example;
mod feature;
mod instance;
mod line_id;

pub use batch::{ExampleBatchView, ListEntry, ListIter, ListType};
pub use canonical::{one_field, packed_run, short_len};
pub use example::{ExampleView, NamedFeatureEntry, labels_of};
pub use feature::{FeatureKind, FeatureView, le_f32, le_f64, le_u64};
pub use instance::{InstanceView, MatrixFeature};
pub use line_id::{FieldType, KNOWN_FIELDS, KnownField, LineIdView, Value, ValueClass, known_field};
