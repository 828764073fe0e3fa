//! Extracted columns as one Arrow record batch, a row per sample: each
//! output one column (ragged → List/LargeList, dense → FixedSizeList,
//! strings → LargeBinary; `Column::into_arrow` moves the buffers), except a
//! keyed-jagged output, which becomes one List column per key, named
//! `<output>.<key>` (slices of the KJT's one array, no copy).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{ArrowError, Field, Schema};

use crate::columns::Column;
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
    let rows = out.batch_size;
    let mut fields = Vec::with_capacity(out.columns.len());
    let mut arrays: Vec<ArrayRef> = Vec::with_capacity(out.columns.len());
    for named in out.columns {
        match named.column {
            Column::KeyedJagged(k) => {
                let keys = k.keys.clone();
                let all = Column::KeyedJagged(k).into_arrow()?;
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
    let schema = Schema::new(fields).with_metadata(metadata(plan));
    let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(rows));
    RecordBatch::try_new_with_options(Arc::new(schema), arrays, &options)
}
