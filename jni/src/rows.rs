//! An emitted request's samples as rows of the sample table (fex-iceberg's
//! layout: `request_id`, `row`, `request_time`, then one column per model
//! output), in a plain column-major encoding the JVM side turns into Flink
//! `RowData` for Iceberg's Flink sink (`fex.nearline.TableRows`).
//!
//! The identity is the join's: the request id and time the label join read
//! (its `label_join:` keys, the log's own by default), on every row of the
//! request. `fex extract --format iceberg` over joined records has no
//! request to ask and reads them from each row's LineId (fex-iceberg's
//! `identity`); the two agree when the keys are those LineId fields.
//!
//! The encoding, little-endian throughout: the row count (i32), then each
//! column in table order. A column (and, inside it, a list's elements or a
//! struct's fields) is one byte, 1 when a validity byte per value follows
//! (1 valid, 0 null) and 0 when every value is valid, then its values:
//! int32 and float32 as 4 bytes each, int64 (u64 too, as the table stores
//! it), timestamps (microseconds) and float64 as 8, booleans as 1; strings
//! and binaries as `n + 1` i32 offsets from 0 and then the bytes; lists
//! (variable or fixed size) as `n + 1` i32 offsets from 0 and then their
//! elements, encoded as a column; structs as each field, encoded as a
//! column. The reader knows the types from the table's schema, which
//! `fex table create` made from the same model.

use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type, TimestampMicrosecondType, UInt64Type};
use arrow_array::{Array, ArrayRef, Int32Array, OffsetSizeTrait, RecordBatch, StringArray, TimestampMicrosecondArray};
use arrow_schema::{DataType, TimeUnit};
use fex::Plan;
use fex::nearline::{ComputeError, Payload, compute_batches};

use crate::Failure;

/// The identity columns, first in every sample table.
pub const IDENTITY_COLUMNS: [&str; 3] = ["request_id", "row", "request_time"];

/// A model compiled for sample-table rows.
pub struct TablePlan {
    pub plan: Plan,
    /// The written table's columns (outputs the transforms consume are not
    /// among them), in its order: the table's columns after the identity.
    outputs: Vec<String>,
    /// What each snapshot's summary says of the model (`fex.model`, its
    /// version and digest), as `fex extract --format iceberg` writes it.
    pub summary: Vec<(String, String)>,
    /// The model's table with no row: the columns of a request that has none.
    empty: RecordBatch,
}

/// An emitted request's output as table rows.
pub struct TableRows {
    pub payload: Payload,
    pub joined: bytes::Bytes,
    /// The rows, encoded as the module says.
    pub rows: Vec<u8>,
    pub rows_written: u64,
}

impl TablePlan {
    pub fn open(yaml: &str, base_dir: &str) -> Result<Self, Failure> {
        let plan = Plan::from_yaml_in(yaml, Path::new(base_dir)).map_err(|e| Failure::new(e.to_string()))?;
        let empty =
            fex::offline::table::empty_batch(&plan).map_err(|e| Failure::new(format!("the model's table: {e}")))?;
        let outputs = empty.schema().fields().iter().map(|f| f.name().clone()).collect();
        let mut summary: Vec<_> = fex::offline::table::metadata(&plan).into_iter().collect();
        summary.sort();
        Ok(Self { plan, outputs, summary, empty })
    }

    /// The table's column names, in order.
    pub fn columns(&self) -> Vec<String> {
        IDENTITY_COLUMNS.iter().map(|c| c.to_string()).chain(self.outputs.iter().cloned()).collect()
    }

    /// An emitted request's joined records, and its samples as table rows
    /// identified by the request as the join emitted it: `request_id` and
    /// `request_time` (milliseconds) on every row, and `row` counting the
    /// request's rows after the transforms from 0.
    pub fn compute(
        &self,
        logged: &[u8],
        actions: &[Vec<i32>],
        request_id: &str,
        time_ms: i64,
    ) -> Result<TableRows, Failure> {
        let computed = compute_batches(&self.plan, logged, actions).map_err(|e: ComputeError| Failure::from(e))?;
        let n: usize = computed.batches.iter().map(RecordBatch::num_rows).sum();
        let mut out = Vec::with_capacity(64 + n * 256);
        let rows = count(n)?;
        put_i32(&mut out, rows);
        encode(&mut out, &StringArray::from_iter_values(std::iter::repeat_n(request_id, n)))?;
        encode(&mut out, &Int32Array::from_iter_values(0..rows))?;
        let micros = time_ms.saturating_mul(1_000);
        encode(&mut out, &TimestampMicrosecondArray::from_iter_values(std::iter::repeat_n(micros, n)))?;
        // No batch at all (the transforms kept no row): the empty table's columns.
        let batches =
            if computed.batches.is_empty() { std::slice::from_ref(&self.empty) } else { &computed.batches[..] };
        for name in &self.outputs {
            encode_column(&mut out, batches, |b| {
                b.column_by_name(name)
                    .cloned()
                    .ok_or_else(|| Failure::new(format!("the samples have no column {name:?}")))
            })?;
        }
        Ok(TableRows {
            payload: computed.payload,
            joined: computed.joined,
            rows: out,
            rows_written: computed.rows_written,
        })
    }
}

/// One table column over all of a request's batches: the arrays are
/// concatenated first, so the column is encoded once.
fn encode_column(
    out: &mut Vec<u8>,
    batches: &[RecordBatch],
    mut pick: impl FnMut(&RecordBatch) -> Result<ArrayRef, Failure>,
) -> Result<(), Failure> {
    let arrays = batches.iter().map(&mut pick).collect::<Result<Vec<_>, _>>()?;
    match arrays.as_slice() {
        [] => Err(Failure::new("no batch to encode a column of")),
        [one] => encode(out, one.as_ref()),
        many => {
            let refs: Vec<&dyn Array> = many.iter().map(|a| a.as_ref()).collect();
            let whole = arrow_select::concat::concat(&refs).map_err(|e| Failure::new(e.to_string()))?;
            encode(out, whole.as_ref())
        }
    }
}

fn count(n: usize) -> Result<i32, Failure> {
    i32::try_from(n).map_err(|_| Failure::new(format!("{n} values are more than one request's rows may hold")))
}

fn put_i32(out: &mut Vec<u8>, v: i32) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Encodes `array` (its validity, then its values) as the module says.
pub fn encode(out: &mut Vec<u8>, array: &dyn Array) -> Result<(), Failure> {
    match array.logical_nulls().filter(|n| n.null_count() > 0) {
        Some(nulls) => {
            out.push(1);
            out.extend(nulls.iter().map(u8::from));
        }
        None => out.push(0),
    }
    macro_rules! values {
        ($t:ty) => {
            for v in array.as_primitive::<$t>().values().iter() {
                out.extend_from_slice(&v.to_le_bytes());
            }
        };
    }
    match array.data_type() {
        DataType::Int32 => values!(Int32Type),
        DataType::Int64 => values!(Int64Type),
        DataType::UInt64 => values!(UInt64Type),
        DataType::Float32 => values!(Float32Type),
        DataType::Float64 => values!(Float64Type),
        DataType::Timestamp(TimeUnit::Microsecond, _) => values!(TimestampMicrosecondType),
        DataType::Boolean => out.extend(array.as_boolean().values().iter().map(u8::from)),
        DataType::Binary => bytes(out, array.as_binary::<i32>().offsets(), array.as_binary::<i32>().values())?,
        DataType::LargeBinary => bytes(out, array.as_binary::<i64>().offsets(), array.as_binary::<i64>().values())?,
        DataType::Utf8 => bytes(out, array.as_string::<i32>().offsets(), array.as_string::<i32>().values())?,
        DataType::LargeUtf8 => bytes(out, array.as_string::<i64>().offsets(), array.as_string::<i64>().values())?,
        DataType::List(_) => list(out, array.as_list::<i32>().offsets(), array.as_list::<i32>().values())?,
        DataType::LargeList(_) => list(out, array.as_list::<i64>().offsets(), array.as_list::<i64>().values())?,
        DataType::FixedSizeList(_, size) => {
            let a = array.as_fixed_size_list();
            let size = *size as usize;
            let n = a.len();
            count(n * size)?;
            for r in 0..=n {
                put_i32(out, (r * size) as i32);
            }
            encode(out, a.values().slice(a.offset() * size, n * size).as_ref())?;
        }
        DataType::Struct(_) => {
            for c in array.as_struct().columns() {
                encode(out, c.as_ref())?;
            }
        }
        other => return Err(Failure::new(format!("a sample column of {other} has no table encoding"))),
    }
    Ok(())
}

/// Offsets rebased to 0, then the bytes they span.
fn bytes<O: OffsetSizeTrait>(
    out: &mut Vec<u8>,
    offsets: &arrow_buffer::OffsetBuffer<O>,
    data: &[u8],
) -> Result<(), Failure> {
    let (first, last) = span(offsets)?;
    for o in offsets.iter() {
        put_i32(out, count(o.as_usize() - first)?);
    }
    out.extend_from_slice(&data[first..last]);
    Ok(())
}

/// Offsets rebased to 0, then the elements they span.
fn list<O: OffsetSizeTrait>(
    out: &mut Vec<u8>,
    offsets: &arrow_buffer::OffsetBuffer<O>,
    values: &ArrayRef,
) -> Result<(), Failure> {
    let (first, last) = span(offsets)?;
    for o in offsets.iter() {
        put_i32(out, count(o.as_usize() - first)?);
    }
    encode(out, values.slice(first, last - first).as_ref())
}

fn span<O: OffsetSizeTrait>(offsets: &arrow_buffer::OffsetBuffer<O>) -> Result<(usize, usize), Failure> {
    // An offset buffer holds at least one offset.
    let first = offsets[0].as_usize();
    let last = offsets[offsets.len() - 1].as_usize();
    count(last - first)?;
    Ok((first, last))
}

#[cfg(test)]
mod tests {
    use arrow_array::builder::{FixedSizeListBuilder, Int64Builder, ListBuilder};
    use arrow_array::{Float32Array, Int32Array, LargeBinaryArray, StringArray};

    use super::*;

    fn encoded(array: &dyn Array) -> Vec<u8> {
        let mut out = Vec::new();
        encode(&mut out, array).unwrap();
        out
    }

    fn le(values: &[i32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn primitives_are_their_bytes_after_a_validity_flag() {
        let mut want = vec![0];
        want.extend(le(&[7, -1]));
        assert_eq!(encoded(&Int32Array::from(vec![7, -1])), want);
        let mut want = vec![0];
        want.extend(1.5f32.to_le_bytes());
        assert_eq!(encoded(&Float32Array::from(vec![1.5])), want);
    }

    #[test]
    fn nulls_come_as_a_byte_per_value() {
        let a = StringArray::from(vec![Some("ab"), None, Some("c")]);
        let mut want = vec![1, 1, 0, 1];
        want.extend(le(&[0, 2, 2, 3]));
        want.extend(b"abc");
        assert_eq!(encoded(&a), want);
    }

    #[test]
    fn sliced_lists_and_binaries_are_rebased_to_zero() {
        let mut b = ListBuilder::new(Int64Builder::new());
        for row in [&[1i64, 2][..], &[3], &[], &[4, 5, 6]] {
            b.values().append_slice(row);
            b.append(true);
        }
        let list = b.finish();
        let sliced = list.slice(1, 3);
        let mut want = vec![0];
        want.extend(le(&[0, 1, 1, 4]));
        want.push(0);
        for v in [3i64, 4, 5, 6] {
            want.extend(v.to_le_bytes());
        }
        assert_eq!(encoded(&sliced), want);

        let bin = LargeBinaryArray::from(vec![&b"xy"[..], b"z", b"uvw"]).slice(1, 2);
        let mut want = vec![0];
        want.extend(le(&[0, 1, 4]));
        want.extend(b"zuvw");
        assert_eq!(encoded(&bin), want);
    }

    #[test]
    fn an_empty_list_column_is_its_one_offset() {
        // What a request whose transforms kept no row gives for each list
        // output (the empty table's column): the reader finds n + 1 offsets.
        let empty = ListBuilder::new(Int64Builder::new()).finish();
        assert_eq!(encoded(&empty), [vec![0], le(&[0]), vec![0]].concat());
    }

    #[test]
    fn fixed_size_lists_carry_offsets_like_any_list() {
        let mut b = FixedSizeListBuilder::new(Int64Builder::new(), 2);
        for row in [[1i64, 2], [3, 4], [5, 6]] {
            b.values().append_slice(&row);
            b.append(true);
        }
        let a = b.finish().slice(1, 2);
        let mut want = vec![0];
        want.extend(le(&[0, 2, 4]));
        want.push(0);
        for v in [3i64, 4, 5, 6] {
            want.extend(v.to_le_bytes());
        }
        assert_eq!(encoded(&a), want);
    }
}
