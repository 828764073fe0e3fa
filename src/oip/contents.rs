//! A v2 tensor's elements as bytes, whichever form it came in: Triton always
//! answers in `raw_output_contents`, other servers in typed contents unless
//! asked for raw. And a model server's output as a fex.v1 tensor, for the
//! callers of fex.v1 behind which fex forwards.

use bytes::{BufMut, Bytes, BytesMut};

use super::{dtype_of, element_count, element_size};
use crate::proto::fex_v1::{DataType, Layout, Tensor};
use crate::proto::inference::InferTensorContents;
use crate::proto::inference::model_infer_response::InferOutputTensor;

/// A tensor whose contents do not match its datatype and shape.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ContentsError {
    #[error(
        "tensor {name:?} has datatype {datatype:?}, which fex does not carry (FP32, FP64, INT32, INT64, UINT64, BYTES)"
    )]
    Datatype { name: String, datatype: String },
    #[error("tensor {name:?} has shape {shape:?} but {found} bytes of {datatype}")]
    Size { name: String, datatype: String, shape: Vec<i64>, found: usize },
    #[error("tensor {name:?} has no contents")]
    Missing { name: String },
    #[error("tensor {name:?}: BYTES element {index} at byte {offset} is cut short")]
    Cut { name: String, index: usize, offset: usize },
}

/// Typed contents as raw little-endian bytes (BYTES elements get their
/// 4-byte length prefixes).
pub fn raw_of_contents(datatype: &str, contents: &InferTensorContents) -> Bytes {
    let mut out = BytesMut::new();
    match datatype {
        "FP32" => contents.fp32_contents.iter().for_each(|v| out.put_f32_le(*v)),
        "FP64" => contents.fp64_contents.iter().for_each(|v| out.put_f64_le(*v)),
        "INT32" => contents.int_contents.iter().for_each(|v| out.put_i32_le(*v)),
        "INT64" => contents.int64_contents.iter().for_each(|v| out.put_i64_le(*v)),
        "UINT64" => contents.uint64_contents.iter().for_each(|v| out.put_u64_le(*v)),
        "BYTES" => contents.bytes_contents.iter().for_each(|b| {
            out.put_u32_le(b.len() as u32);
            out.put_slice(b);
        }),
        "BOOL" => contents.bool_contents.iter().for_each(|v| out.put_u8(*v as u8)),
        "INT8" => contents.int_contents.iter().for_each(|v| out.put_i8(*v as i8)),
        "INT16" => contents.int_contents.iter().for_each(|v| out.put_i16_le(*v as i16)),
        "UINT8" => contents.uint_contents.iter().for_each(|v| out.put_u8(*v as u8)),
        "UINT16" => contents.uint_contents.iter().for_each(|v| out.put_u16_le(*v as u16)),
        "UINT32" => contents.uint_contents.iter().for_each(|v| out.put_u32_le(*v)),
        _ => {}
    }
    out.freeze()
}

/// A model server's output as a fex.v1 tensor: dense `[shape]`, or strings
/// for BYTES. The size is checked against the shape.
pub fn tensor_of_output(out: &InferOutputTensor, raw: Bytes) -> Result<Tensor, ContentsError> {
    let name = out.name.clone();
    let Some(dtype) = dtype_of(&out.datatype) else {
        return Err(ContentsError::Datatype { name, datatype: out.datatype.clone() });
    };
    let size_error = |found| ContentsError::Size {
        name: out.name.clone(),
        datatype: out.datatype.clone(),
        shape: out.shape.clone(),
        found,
    };
    let count = element_count(&out.shape).ok_or_else(|| size_error(raw.len()))?;
    let mut t = Tensor { name, dtype: dtype as i32, shape: out.shape.clone(), ..Default::default() };
    if dtype == DataType::Bytes {
        let (values, splits) = strings_of(&out.name, &raw)?;
        // Counted in elements: the upstream's shape may be any size.
        if splits.len() / 8 - 1 != count {
            return Err(size_error(raw.len()));
        }
        t.layout = Layout::Strings as i32;
        t.splits_dtype = DataType::I64 as i32;
        (t.values, t.row_splits) = (values, splits);
        return Ok(t);
    }
    let size = element_size(&out.datatype).expect("a fex datatype has a size");
    if count.checked_mul(size) != Some(raw.len()) {
        return Err(size_error(raw.len()));
    }
    t.layout = Layout::Dense as i32;
    t.values = raw;
    Ok(t)
}

/// 4-byte-prefixed BYTES elements as a values buffer and i64 row splits.
fn strings_of(name: &str, raw: &[u8]) -> Result<(Bytes, Bytes), ContentsError> {
    let mut values = BytesMut::with_capacity(raw.len());
    let mut splits = BytesMut::new();
    splits.put_i64_le(0);
    let mut at = 0;
    while at < raw.len() {
        let cut = || ContentsError::Cut { name: name.to_string(), index: splits.len() / 8 - 1, offset: at };
        let prefix = raw.get(at..at + 4).ok_or_else(cut)?;
        let len = u32::from_le_bytes(prefix.try_into().expect("4 bytes")) as usize;
        let element = raw.get(at + 4..).and_then(|rest| rest.get(..len)).ok_or_else(cut)?;
        values.put_slice(element);
        splits.put_i64_le(values.len() as i64);
        at += 4 + len;
    }
    Ok((values.freeze(), splits.freeze()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(datatype: &str, shape: Vec<i64>) -> InferOutputTensor {
        InferOutputTensor { name: "score".into(), datatype: datatype.into(), shape, ..Default::default() }
    }

    #[test]
    fn typed_and_raw_outputs_read_alike() {
        let typed = InferTensorContents { fp32_contents: vec![0.5, -1.0], ..Default::default() };
        let raw = raw_of_contents("FP32", &typed);
        let t = tensor_of_output(&output("FP32", vec![2]), raw.clone()).unwrap();
        assert_eq!((t.layout(), t.dtype(), t.shape.clone()), (Layout::Dense, DataType::F32, vec![2]));
        assert_eq!(&t.values[..], &[0.5f32.to_le_bytes(), (-1.0f32).to_le_bytes()].concat()[..]);
        let err = tensor_of_output(&output("FP32", vec![3]), raw).unwrap_err();
        assert_eq!(err.to_string(), "tensor \"score\" has shape [3] but 8 bytes of FP32");
        let half = tensor_of_output(&output("FP16", vec![1]), Bytes::from_static(&[0, 0])).unwrap_err();
        assert!(half.to_string().contains("does not carry"));
    }

    #[test]
    fn bytes_outputs_become_strings() {
        let typed = InferTensorContents {
            bytes_contents: vec![Bytes::from_static(b"ab"), Bytes::from_static(b"c")],
            ..Default::default()
        };
        let t = tensor_of_output(&output("BYTES", vec![2]), raw_of_contents("BYTES", &typed)).unwrap();
        assert_eq!(t.layout(), Layout::Strings);
        assert_eq!(&t.values[..], b"abc");
        assert_eq!(&t.row_splits[..], &[0i64, 2, 3].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()[..]);
        // A shape whose byte count would overflow is refused, not trusted.
        let huge = tensor_of_output(&output("BYTES", vec![1 << 61]), raw_of_contents("BYTES", &typed)).unwrap_err();
        assert!(huge.to_string().starts_with("tensor \"score\" has shape [2305843009213693952]"), "{huge}");
        let cut = tensor_of_output(&output("BYTES", vec![1]), Bytes::from_static(&[9, 0, 0, 0, 1])).unwrap_err();
        assert_eq!(cut.to_string(), "tensor \"score\": BYTES element 0 at byte 0 is cut short");
    }
}
