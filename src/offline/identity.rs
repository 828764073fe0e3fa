//! Which request and row a sample is: the identity a training table keys
//! its rows by (`request_id`, `row`, `request_time`), whoever writes it.
//!
//! A row's request id and request time are read from its LineId, through
//! the library's own `line_id` outputs: the model is compiled once more with
//! two outputs added ([`REQUEST_ID_OUTPUT`], [`REQUEST_TIME_OUTPUT`]), so
//! the values are extracted with the row and follow it through filters,
//! negatives and shuffles. Which LineId fields: the model's `label_join:`
//! `request_id` and `request_time` when they name LineId fields (the unit
//! of the time with them), else Monolith's `req_id` and `req_time`
//! (seconds). `row` is the row's index in its record's output.
//!
//! The Iceberg sample table (fex-iceberg) and `fex.run(identity=True)` both
//! fill the three columns here, so they agree row for row.

use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, Int32Array, RecordBatch, TimestampMicrosecondArray};
use arrow_buffer::{NullBuffer, ScalarBuffer};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef, TimeUnit as ArrowTimeUnit};
use serde_norway::{Mapping, Value};

use super::{Format, Prepared, Sink, SinkError, SinkHelper};
use crate::Plan;
use crate::config::{KeySource, TimeUnit};
use crate::files::FileSource;

/// The added output that reads a row's request id.
pub const REQUEST_ID_OUTPUT: &str = "_fex_request_id";
/// The added output that reads a row's request time.
pub const REQUEST_TIME_OUTPUT: &str = "_fex_request_time";

/// The identity columns, first in every table that has them.
pub const REQUEST_ID: &str = "request_id";
pub const ROW: &str = "row";
pub const REQUEST_TIME: &str = "request_time";

/// Why the identity cannot be read for a model.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct IdentityError(pub String);

/// Where the identity is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentitySource {
    /// The LineId field of the request id (a string).
    pub request_id: String,
    /// The LineId field of the request time (an integer).
    pub request_time: String,
    pub unit: TimeUnit,
}

impl IdentitySource {
    /// The model's `label_join:` keys where they are LineId fields, else
    /// `req_id` and `req_time` in seconds.
    pub fn of(plan: &Plan) -> Self {
        let mut source = Self { request_id: "req_id".into(), request_time: "req_time".into(), unit: TimeUnit::Seconds };
        if let Some(join) = plan.label_join() {
            if let KeySource::LineId { name, .. } = &join.request_id {
                source.request_id = name.clone();
            }
            if let KeySource::LineId { name, .. } = &join.request_time.source {
                source.request_time = name.clone();
                source.unit = join.request_time.unit;
            }
        }
        source
    }

    /// The time in microseconds since the epoch, from a value in `unit`.
    pub fn micros(&self, value: i64) -> i64 {
        match self.unit {
            TimeUnit::Seconds => value.saturating_mul(1_000_000),
            TimeUnit::Millis => value.saturating_mul(1_000),
            TimeUnit::Micros => value,
        }
    }
}

/// The model of `text` (its files read through `files` against `dir`) with
/// the identity outputs added, and where they read. `plan` is the model
/// compiled as it is; an output of its own named like an identity output is
/// refused.
pub fn with_identity(
    text: &str,
    dir: &Path,
    files: &dyn FileSource,
    plan: &Plan,
) -> Result<(Plan, IdentitySource), IdentityError> {
    let (text, source) = identity_yaml(text, plan)?;
    let with = Plan::from_yaml_with(&text, dir, files).map_err(|e| {
        IdentityError(format!(
            "the model with its identity outputs ({}, {}): {e}",
            source.request_id, source.request_time
        ))
    })?;
    Ok((with, source))
}

/// The config text of [`with_identity`]'s model: `text` with the two
/// identity outputs appended to its features.
pub fn identity_yaml(text: &str, plan: &Plan) -> Result<(String, IdentitySource), IdentityError> {
    let source = IdentitySource::of(plan);
    for name in [REQUEST_ID_OUTPUT, REQUEST_TIME_OUTPUT] {
        if plan.outputs.iter().any(|o| o.name == name) {
            return Err(IdentityError(format!(
                "the model has an output named {name:?}, a name kept for the row's identity"
            )));
        }
    }
    let yaml_err = |e: serde_norway::Error| IdentityError(format!("the model's YAML: {e}"));
    let mut doc: Value = serde_norway::from_str(text).map_err(yaml_err)?;
    let features = doc
        .get_mut("features")
        .and_then(Value::as_sequence_mut)
        .ok_or_else(|| IdentityError("the model has no features: list".into()))?;
    for (name, field) in [(REQUEST_ID_OUTPUT, &source.request_id), (REQUEST_TIME_OUTPUT, &source.request_time)] {
        let mut m = Mapping::new();
        m.insert("name".into(), name.into());
        m.insert("kind".into(), "line_id".into());
        m.insert("field".into(), field.as_str().into());
        features.push(Value::Mapping(m));
    }
    Ok((serde_norway::to_string(&doc).map_err(yaml_err)?, source))
}

/// Fills the identity columns from a batch extracted with the identity
/// outputs.
#[derive(Debug, Clone)]
pub struct RowIdentity {
    pub source: IdentitySource,
    /// Each batch is one record's rows (ExampleBatch input): `row` counts
    /// from 0 in each batch. Otherwise every record is one row: `row` is 0.
    pub batch_per_record: bool,
}

impl RowIdentity {
    /// The request id column (UTF-8; a LineId without the field is null)
    /// from the `REQUEST_ID_OUTPUT` column.
    pub fn request_ids(&self, column: &ArrayRef) -> Result<ArrayRef, ArrowError> {
        let column = single_values(column);
        let mut out = StringBuilder::with_capacity(column.len(), 32 * column.len());
        let mut push = |b: Option<&[u8]>| match b {
            None | Some([]) => out.append_null(),
            Some(b) => match std::str::from_utf8(b) {
                Ok(s) => out.append_value(s),
                Err(_) => out.append_value(String::from_utf8_lossy(b)),
            },
        };
        match column.data_type() {
            DataType::LargeBinary => column.as_binary::<i64>().iter().for_each(&mut push),
            DataType::Binary => column.as_binary::<i32>().iter().for_each(&mut push),
            DataType::Utf8 => column.as_string::<i32>().iter().for_each(|v| push(v.map(str::as_bytes))),
            DataType::LargeUtf8 => column.as_string::<i64>().iter().for_each(|v| push(v.map(str::as_bytes))),
            other => return Err(invalid(format!("{REQUEST_ID_OUTPUT} is {other}, not strings"))),
        }
        Ok(Arc::new(out.finish()))
    }

    /// `row` for a batch of `rows` rows.
    pub fn rows(&self, rows: usize) -> ArrayRef {
        let row: Int32Array =
            if self.batch_per_record { (0..rows as i32).collect() } else { Int32Array::from(vec![0; rows]) };
        Arc::new(row)
    }

    /// The request time (microseconds, UTC; a LineId without the field, 0,
    /// is null) from the `REQUEST_TIME_OUTPUT` column.
    pub fn request_times(&self, column: &ArrayRef) -> Result<ArrayRef, ArrowError> {
        let values = single_values(column);
        let values = values
            .as_primitive_opt::<Int64Type>()
            .ok_or_else(|| invalid(format!("{REQUEST_TIME_OUTPUT} is {}, not Int64", values.data_type())))?;
        let micros: Vec<i64> = values.values().iter().map(|&v| self.source.micros(v)).collect();
        let valid = NullBuffer::from_iter(values.values().iter().map(|&v| v != 0));
        let array = TimestampMicrosecondArray::new(ScalarBuffer::from(micros), Some(valid)).with_timezone("UTC");
        Ok(Arc::new(array))
    }
}

/// The identity columns' fields, as [`IdentitySink`] writes them.
pub fn identity_fields() -> [Field; 3] {
    [
        Field::new(REQUEST_ID, DataType::Utf8, true),
        Field::new(ROW, DataType::Int32, false),
        Field::new(REQUEST_TIME, DataType::Timestamp(ArrowTimeUnit::Microsecond, Some("UTC".into())), true),
    ]
}

/// A sink that writes each batch (extracted with the identity outputs) with
/// the three identity columns first and the two added outputs left out:
/// the model's table as a training table keyed by row.
pub struct IdentitySink<S> {
    inner: S,
    identity: RowIdentity,
    schema: SchemaRef,
    /// The batch's columns of the request id and time outputs.
    id_column: usize,
    time_column: usize,
    /// The model's own columns, in order.
    keep: Vec<usize>,
}

impl<S: Sink> IdentitySink<S> {
    /// Over `inner`, for batches of `with_identity`'s table; the table's
    /// metadata names `plan`, the model as its config says.
    pub fn new(inner: S, plan: &Plan, with_identity: &Plan, identity: RowIdentity) -> Result<Self, ArrowError> {
        let outputs = super::table::empty_batch(with_identity)?.schema();
        let id_column = outputs.index_of(REQUEST_ID_OUTPUT)?;
        let time_column = outputs.index_of(REQUEST_TIME_OUTPUT)?;
        let keep: Vec<usize> = (0..outputs.fields().len()).filter(|&i| i != id_column && i != time_column).collect();
        let mut fields: Vec<Field> = identity_fields().into();
        fields.extend(keep.iter().map(|&i| outputs.field(i).clone()));
        let schema = Arc::new(Schema::new_with_metadata(fields, super::table::metadata(plan)));
        Ok(Self { inner, identity, schema, id_column, time_column, keep })
    }

    /// The table's schema: identity columns, then the model's.
    pub fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    pub fn into_inner(self) -> S {
        self.inner
    }

    fn shape(&self, batch: &RecordBatch) -> Result<RecordBatch, ArrowError> {
        let mut columns = Vec::with_capacity(self.schema.fields().len());
        columns.push(self.identity.request_ids(batch.column(self.id_column))?);
        columns.push(self.identity.rows(batch.num_rows()));
        columns.push(self.identity.request_times(batch.column(self.time_column))?);
        columns.extend(self.keep.iter().map(|&i| Arc::clone(batch.column(i))));
        RecordBatch::try_new(Arc::clone(&self.schema), columns)
    }
}

impl<S: Sink> Sink for IdentitySink<S> {
    fn format(&self) -> Format {
        self.inner.format()
    }

    fn write(&mut self, item: Prepared) -> Result<(), SinkError> {
        match item {
            Prepared::Batch(batch) => {
                let shaped = self.shape(&batch)?;
                self.inner.write(Prepared::Batch(shaped))
            }
            other => self.inner.write(other),
        }
    }

    fn helper(&self) -> Option<Arc<dyn SinkHelper>> {
        self.inner.helper()
    }

    fn finish(&mut self) -> Result<(), SinkError> {
        self.inner.finish()
    }
}

/// A line_id output of one value per row (`[rows, 1]` or flat) as its values.
fn single_values(column: &ArrayRef) -> ArrayRef {
    match column.data_type() {
        DataType::FixedSizeList(_, 1) => Arc::clone(column.as_fixed_size_list().values()),
        _ => Arc::clone(column),
    }
}

fn invalid(message: String) -> ArrowError {
    ArrowError::InvalidArgumentError(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::Filesystem;

    const MODEL: &str = "name: m\nfeatures:\n  - {name: uid, kind: sparse}\n";

    #[test]
    fn identity_outputs_are_added_and_reserved_names_refused() {
        let plan = Plan::from_yaml(MODEL).unwrap();
        let (with, source) = with_identity(MODEL, Path::new("."), &Filesystem, &plan).unwrap();
        assert_eq!(
            source,
            IdentitySource { request_id: "req_id".into(), request_time: "req_time".into(), unit: TimeUnit::Seconds }
        );
        let names: Vec<&str> = with.outputs.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["uid", REQUEST_ID_OUTPUT, REQUEST_TIME_OUTPUT]);
        // A model that already has them (here: compiled with them) is refused.
        let err = with_identity(MODEL, Path::new("."), &Filesystem, &with).unwrap_err();
        assert!(err.to_string().contains(REQUEST_ID_OUTPUT), "{err}");
    }

    #[test]
    fn times_scale_by_unit_and_zero_is_null() {
        let identity = RowIdentity {
            source: IdentitySource { request_id: "r".into(), request_time: "t".into(), unit: TimeUnit::Millis },
            batch_per_record: true,
        };
        let times = identity.request_times(&(Arc::new(arrow_array::Int64Array::from(vec![5, 0])) as ArrayRef)).unwrap();
        let times = times.as_primitive::<arrow_array::types::TimestampMicrosecondType>();
        assert_eq!(times.value(0), 5_000);
        assert!(times.is_null(1));
        let ids = identity
            .request_ids(&(Arc::new(arrow_array::BinaryArray::from(vec![&b"a"[..], b""])) as ArrayRef))
            .unwrap();
        assert_eq!(ids.as_string::<i32>().value(0), "a");
        assert!(ids.is_null(1));
        assert_eq!(identity.rows(3).as_primitive::<arrow_array::types::Int32Type>().values(), &[0, 1, 2]);
    }
}
