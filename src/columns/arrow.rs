//! Columns to Arrow arrays (arrow-rs), moving buffers instead of copying them:
//! ragged → `List` (i32 splits) or `LargeList` (i64), a sequence's positions
//! as `FixedSizeList` items; dense `[rows, d...]` → `FixedSizeList` of the
//! flattened width (a plain array when there is no inner dimension); strings
//! → `LargeBinary`; keyed-jagged → a `LargeList` of `keys * rows` entries,
//! key-major, whose list lengths are the KJT's lengths and whose offsets are
//! its offsets. Values that carry weights become a struct of `value` and
//! `weight`, in every batch, even one where no row has a value: a column's
//! type is what it declares (`weighted`), never what its batch happens to
//! hold, so every batch of a stream or file has the same schema.

use std::sync::Arc;

use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type, UInt64Type};
use arrow_array::{
    Array, ArrayRef, FixedSizeListArray, GenericListArray, LargeBinaryArray, OffsetSizeTrait, PrimitiveArray,
    StructArray,
};
use arrow_buffer::{Buffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{ArrowError, Field, Fields};

use super::{Column, Splits, Values};

impl Column {
    /// This column as one Arrow array with a row per row (per key and row
    /// for keyed-jagged), sharing the column's buffers.
    pub fn into_arrow(self) -> Result<ArrayRef, ArrowError> {
        match self {
            Column::Ragged(r) => {
                let items = with_weights(values_array(r.values), r.weights, r.weighted)?;
                let items = match r.width {
                    Some(w) => fixed(items, w)?,
                    None => items,
                };
                match r.splits {
                    Splits::I32(s) => list(s, items),
                    Splits::I64(s) => list(s, items),
                }
            }
            Column::Dense(d) => {
                let width: usize = d.dims.iter().product();
                let values = values_array(d.values);
                if d.dims.is_empty() { Ok(values) } else { fixed(values, width) }
            }
            Column::Strings(s) => {
                let offsets = offsets(s.offsets)?;
                Ok(Arc::new(LargeBinaryArray::try_new(offsets, Buffer::from_vec(s.bytes), None)?))
            }
            Column::KeyedJagged(k) => list(k.offsets, with_weights(values_array(k.values), k.weights, k.weighted)?),
        }
    }
}

fn values_array(v: Values) -> ArrayRef {
    match v {
        Values::U64(v) => Arc::new(PrimitiveArray::<UInt64Type>::new(ScalarBuffer::from(v), None)),
        Values::I64(v) => Arc::new(PrimitiveArray::<Int64Type>::new(ScalarBuffer::from(v), None)),
        Values::I32(v) => Arc::new(PrimitiveArray::<Int32Type>::new(ScalarBuffer::from(v), None)),
        Values::F32(v) => Arc::new(PrimitiveArray::<Float32Type>::new(ScalarBuffer::from(v), None)),
        Values::F64(v) => Arc::new(PrimitiveArray::<Float64Type>::new(ScalarBuffer::from(v), None)),
    }
}

/// The values, or a struct of values and weights when the column is
/// weighted (or holds weights); the two must be as long.
fn with_weights(values: ArrayRef, weights: Vec<f32>, weighted: bool) -> Result<ArrayRef, ArrowError> {
    if weights.is_empty() && !weighted {
        return Ok(values);
    }
    let weights: ArrayRef = Arc::new(PrimitiveArray::<Float32Type>::new(ScalarBuffer::from(weights), None));
    let fields = Fields::from(vec![
        Field::new("value", values.data_type().clone(), false),
        Field::new("weight", weights.data_type().clone(), false),
    ]);
    Ok(Arc::new(StructArray::try_new(fields, vec![values, weights], None)?))
}

fn fixed(values: ArrayRef, width: usize) -> Result<ArrayRef, ArrowError> {
    let size = i32::try_from(width).map_err(|_| ArrowError::InvalidArgumentError(format!("width {width}")))?;
    let field = Arc::new(Field::new("item", values.data_type().clone(), false));
    Ok(Arc::new(FixedSizeListArray::try_new(field, size, values, None)?))
}

fn list<O: OffsetSizeTrait>(splits: Vec<O>, items: ArrayRef) -> Result<ArrayRef, ArrowError> {
    let field = Arc::new(Field::new("item", items.data_type().clone(), false));
    Ok(Arc::new(GenericListArray::<O>::try_new(field, offsets(splits)?, items, None)?))
}

/// Checks what `OffsetBuffer::new` would panic on, so a bad column is an error.
fn offsets<O: OffsetSizeTrait>(v: Vec<O>) -> Result<OffsetBuffer<O>, ArrowError> {
    let ok = v.first().is_some_and(|&f| f >= O::zero()) && v.windows(2).all(|w| w[0] <= w[1]);
    if !ok {
        return Err(ArrowError::InvalidArgumentError("row splits must start at 0 or more and not decrease".into()));
    }
    Ok(OffsetBuffer::new(ScalarBuffer::from(v)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::columns::{Dense, KeyedJagged, Ragged, Strings};
    use arrow_array::cast::AsArray;

    #[test]
    fn ragged_ids_become_a_list_sharing_the_values() {
        let values = vec![7u64, 8, 9];
        let at = values.as_ptr() as usize;
        let c = Column::Ragged(Ragged {
            splits: Splits::I32(vec![0, 2, 2, 3]),
            values: Values::U64(values),
            ..Ragged::default()
        });
        let a = c.into_arrow().unwrap();
        let l = a.as_list::<i32>();
        assert_eq!(l.len(), 3);
        assert_eq!(l.value_offsets(), [0, 2, 2, 3]);
        let items = l.values().as_primitive::<UInt64Type>();
        assert_eq!(items.values().as_ptr() as usize, at, "values are moved, not copied");
        assert_eq!(items.values().as_ref(), [7, 8, 9]);
    }

    #[test]
    fn dense_strings_and_kjt_keep_their_shape() {
        let d = Column::Dense(Dense { rows: 2, dims: vec![2], values: Values::F32(vec![1.0, 2.0, 3.0, 4.0]) });
        let d = d.into_arrow().unwrap();
        assert_eq!((d.len(), d.as_fixed_size_list().value_length()), (2, 2));

        let s = Column::Strings(Strings { offsets: vec![0, 1, 3], bytes: b"abc".to_vec(), dims: vec![] });
        let s = s.into_arrow().unwrap();
        assert_eq!(s.as_binary::<i64>().value(1), b"bc");

        let k = Column::KeyedJagged(KeyedJagged {
            keys: vec!["a".into(), "b".into()],
            rows: 2,
            lengths: vec![1, 0, 2, 1],
            offsets: vec![0, 1, 1, 3, 4],
            values: Values::I64(vec![5, 6, 7, 8]),
            weights: vec![0.5, 1.0, 1.5, 2.0],
            weighted: true,
        });
        let k = k.into_arrow().unwrap();
        let l = k.as_list::<i64>();
        assert_eq!(l.len(), 4, "one entry per key and row");
        assert_eq!(l.value_length(2), 2);
        let items = l.values().as_struct();
        assert_eq!(items.column(1).as_primitive::<Float32Type>().value(3), 2.0);
    }

    #[test]
    fn a_weighted_column_without_values_keeps_its_struct_type() {
        let full = Column::Ragged(Ragged {
            splits: Splits::I64(vec![0, 1]),
            values: Values::U64(vec![3]),
            weights: vec![0.5],
            weighted: true,
            ..Ragged::default()
        });
        let empty = Column::Ragged(Ragged {
            splits: Splits::I64(vec![0, 0]),
            values: Values::U64(vec![]),
            weighted: true,
            ..Ragged::default()
        });
        let (full, empty) = (full.into_arrow().unwrap(), empty.into_arrow().unwrap());
        assert_eq!(empty.data_type(), full.data_type());
        assert!(matches!(empty.as_list::<i64>().values().data_type(), arrow_schema::DataType::Struct(_)));
        let short = Column::Ragged(Ragged {
            splits: Splits::I64(vec![0, 2]),
            values: Values::U64(vec![3, 4]),
            weights: vec![0.5],
            weighted: true,
            ..Ragged::default()
        });
        assert!(short.into_arrow().is_err(), "a weight per value");
    }

    #[test]
    fn bad_offsets_are_an_error_not_a_panic() {
        let c = Column::Strings(Strings { offsets: vec![0, 3, 1], bytes: b"abc".to_vec(), dims: vec![] });
        assert!(c.into_arrow().is_err());
    }
}
