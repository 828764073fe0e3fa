//! Extracted columns as one Arrow record batch, a row per sample: each
//! output one column (ragged → List/LargeList, dense → FixedSizeList,
//! strings → LargeBinary; `Column::into_arrow` moves the buffers), except a
//! keyed-jagged output, which becomes one List column per key, named
//! `<output>.<key>` (slices of the KJT's one array, no copy).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{ArrowError, Field, Schema};

use crate::columns::{Column, NamedColumn};
use crate::config::Plan;
use crate::extract::Extracted;

/// The table's file metadata: which model and version made it, by which fex.
pub fn metadata(plan: &Plan) -> HashMap<String, String> {
    HashMap::from([
        ("fex.model".to_string(), plan.name.clone()),
        ("fex.model_version".to_string(), plan.identity().version.clone()),
        ("fex.model_digest".to_string(), format!("{:016x}", plan.identity().digest)),
        ("fex.version".to_string(), env!("CARGO_PKG_VERSION").to_string()),
    ])
}

/// `out`'s columns as a record batch with `rows` rows (one per sample: the
/// extraction must have broadcast SHARED features).
pub fn to_batch(out: Extracted, plan: &Plan) -> Result<RecordBatch, ArrowError> {
    columns_to_batch(out.columns, out.batch_size, metadata(plan))
}

/// The plan's table with no rows (what a sink writes when no record was):
/// an extraction of no samples, so its columns are exactly those a run's
/// batches have.
pub fn empty_batch(plan: &Plan) -> Result<RecordBatch, ArrowError> {
    let mut out = Extracted::default();
    let policy = crate::Policy { shared: crate::SharedRows::Broadcast, ..Default::default() };
    crate::Extractor::new()
        .extract(plan, crate::Input::Examples(&[]), policy, &mut out)
        .map_err(|e| ArrowError::InvalidArgumentError(format!("the model's empty table: {e}")))?;
    to_batch(out, plan)
}

/// Columns of `rows` rows each (a text reader's batch, an extraction's
/// output) as a record batch; a KeyedJagged column becomes one List column
/// per key, named `<column>.<key>`.
pub fn columns_to_batch(
    columns: Vec<NamedColumn>,
    rows: usize,
    metadata: HashMap<String, String>,
) -> Result<RecordBatch, ArrowError> {
    let mut fields = Vec::with_capacity(columns.len());
    let mut arrays: Vec<ArrayRef> = Vec::with_capacity(columns.len());
    for named in columns {
        match named.column {
            Column::KeyedJagged(k) => {
                let keys = k.keys.clone();
                let all = Column::KeyedJagged(k).into_arrow()?;
                if all.len() != keys.len() * rows {
                    let message = format!(
                        "output {:?} has {} values for {} keys, the batch {rows} rows",
                        named.name,
                        all.len(),
                        keys.len()
                    );
                    return Err(ArrowError::InvalidArgumentError(message));
                }
                for (i, key) in keys.iter().enumerate() {
                    let part = all.slice(i * rows, rows);
                    fields.push(Field::new(format!("{}.{key}", named.name), part.data_type().clone(), false));
                    arrays.push(part);
                }
            }
            column => {
                let array = column.into_arrow()?;
                if array.len() != rows {
                    let message = format!("output {:?} has {} rows, the batch {rows}", named.name, array.len());
                    return Err(ArrowError::InvalidArgumentError(message));
                }
                fields.push(Field::new(named.name, array.data_type().clone(), false));
                arrays.push(array);
            }
        }
    }
    let schema = Schema::new(fields).with_metadata(metadata);
    let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(rows));
    RecordBatch::try_new_with_options(Arc::new(schema), arrays, &options)
}
