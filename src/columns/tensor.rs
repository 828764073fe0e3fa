//! Columns to `fex.v1.Tensor`, the wire form. `into_tensor` moves each buffer
//! into a `Bytes` without copying it (prost then encodes it once);
//! `to_tensor` copies, for callers that keep their columns.

use bytes::Bytes;

use super::{Column, NamedColumn, Values};
use crate::proto::fex_v1::{DataType, Layout, Tensor};

/// A `Vec<T>` of plain numbers owned by a `Bytes`, seen as its bytes.
struct Le<T>(Vec<T>);

impl<T: bytemuck::Pod> AsRef<[u8]> for Le<T> {
    fn as_ref(&self) -> &[u8] {
        bytemuck::cast_slice(&self.0)
    }
}

fn owned<T: bytemuck::Pod + Send + 'static>(v: Vec<T>) -> Bytes {
    if v.is_empty() { Bytes::new() } else { Bytes::from_owner(Le(v)) }
}

fn values_bytes(v: Values) -> Bytes {
    match v {
        Values::U64(v) => owned(v),
        Values::I64(v) => owned(v),
        Values::I32(v) => owned(v),
        Values::F32(v) => owned(v),
        Values::F64(v) => owned(v),
    }
}

impl NamedColumn {
    /// The wire tensor, sharing this column's buffers (no value is copied).
    pub fn into_tensor(self) -> Tensor {
        let mut t = header(&self);
        match self.column {
            Column::Ragged(r) => {
                t.splits_dtype = r.splits.dtype() as i32;
                t.row_splits = match r.splits {
                    super::Splits::I32(v) => owned(v),
                    super::Splits::I64(v) => owned(v),
                };
                t.values = values_bytes(r.values);
                t.weights = owned(r.weights);
            }
            Column::Dense(d) => t.values = values_bytes(d.values),
            Column::Strings(s) => {
                t.row_splits = owned(s.offsets);
                t.values = if s.bytes.is_empty() { Bytes::new() } else { Bytes::from(s.bytes) };
            }
            Column::KeyedJagged(k) => {
                t.keys = k.keys;
                t.lengths = owned(k.lengths);
                t.row_splits = owned(k.offsets);
                t.values = values_bytes(k.values);
                t.weights = owned(k.weights);
            }
        }
        t
    }

    /// The wire tensor, with copies of this column's buffers.
    pub fn to_tensor(&self) -> Tensor {
        let mut t = header(self);
        let copy = |b: &[u8]| Bytes::copy_from_slice(b);
        match &self.column {
            Column::Ragged(r) => {
                t.splits_dtype = r.splits.dtype() as i32;
                t.row_splits = copy(r.splits.as_bytes());
                t.values = copy(r.values.as_bytes());
                t.weights = copy(bytemuck::cast_slice(&r.weights));
            }
            Column::Dense(d) => t.values = copy(d.values.as_bytes()),
            Column::Strings(s) => {
                t.row_splits = copy(bytemuck::cast_slice(&s.offsets));
                t.values = copy(&s.bytes);
            }
            Column::KeyedJagged(k) => {
                t.keys = k.keys.clone();
                t.lengths = copy(bytemuck::cast_slice(&k.lengths));
                t.row_splits = copy(bytemuck::cast_slice(&k.offsets));
                t.values = copy(k.values.as_bytes());
                t.weights = copy(bytemuck::cast_slice(&k.weights));
            }
        }
        t
    }
}

/// Name, layout, types and shape: everything but the buffers.
fn header(c: &NamedColumn) -> Tensor {
    let layout = c.column.layout();
    let splits = match layout {
        Layout::Strings | Layout::KeyedJagged => DataType::I64,
        _ => DataType::Unspecified,
    };
    Tensor {
        name: c.name.clone(),
        layout: layout as i32,
        dtype: c.column.dtype() as i32,
        shape: c.column.shape(),
        splits_dtype: splits as i32,
        shared: c.shared,
        ..Tensor::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::columns::{Ragged, Splits, Strings};

    fn named(column: Column) -> NamedColumn {
        NamedColumn { name: "x".into(), shared: false, column }
    }

    #[test]
    fn moved_and_copied_tensors_agree_byte_for_byte() {
        let ragged = Column::Ragged(Ragged {
            splits: Splits::I32(vec![0, 2, 3]),
            values: Values::U64(vec![7, 8, 1 << 63]),
            ..Ragged::default()
        });
        let strings = Column::Strings(Strings { offsets: vec![0, 2], bytes: b"ab".to_vec(), dims: vec![] });
        for c in [ragged, strings] {
            let c = named(c);
            assert_eq!(c.to_tensor(), c.clone().into_tensor());
        }
    }

    #[test]
    fn moving_a_buffer_into_the_tensor_does_not_copy_it() {
        let values = vec![1u64, 2, 3];
        let at = values.as_ptr() as usize;
        let c = named(Column::Ragged(Ragged {
            splits: Splits::I64(vec![0, 3]),
            values: Values::U64(values),
            ..Ragged::default()
        }));
        let t = c.into_tensor();
        assert_eq!(t.values.as_ptr() as usize, at);
        assert_eq!(t.u64s(), [1, 2, 3]);
        assert_eq!((t.shape, t.splits_dtype), (vec![1, -1], DataType::I64 as i32));
    }
}
