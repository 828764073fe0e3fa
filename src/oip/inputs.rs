//! The samples of a v2 ModelInfer request: one BYTES input, `example_batch`
//! (shape `[1]`: a serialized ExampleBatch) or `examples` (shape `[N]`, any
//! shape of N elements: serialized Examples, one per row), in
//! `raw_input_contents` or in typed `bytes_contents`. Every length is
//! checked against the bytes that remain before it is used; raw elements
//! are slices of the request's buffer, never copies.

use bytes::Bytes;

use super::element_count;
use crate::proto::inference::ModelInferRequest;
use crate::proto::inference::model_metadata_response::TensorMetadata;

/// The input holding one serialized ExampleBatch.
pub const EXAMPLE_BATCH: &str = "example_batch";
/// The input holding serialized Examples, one per row.
pub const EXAMPLES: &str = "examples";

/// What a fex model takes, as ModelMetadata states it: either input (a
/// request carries exactly one).
pub fn input_metadata() -> Vec<TensorMetadata> {
    let bytes = |name: &str, shape| TensorMetadata { name: name.to_string(), datatype: "BYTES".into(), shape };
    vec![bytes(EXAMPLE_BATCH, vec![1]), bytes(EXAMPLES, vec![-1])]
}

/// The samples a request carries.
#[derive(Debug, Clone, PartialEq)]
pub enum Samples {
    Batch(Bytes),
    Examples(Vec<Bytes>),
}

impl Samples {
    /// Bytes of samples, for metrics and logs.
    pub fn len(&self) -> usize {
        match self {
            Self::Batch(b) => b.len(),
            Self::Examples(list) => list.iter().map(Bytes::len).sum(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Why a request's inputs hold no samples fex can read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InputError {
    #[error(
        "a fex model takes exactly one input, BYTES \"example_batch\" (shape [1]) or \"examples\" (shape [N]); the request has {0}"
    )]
    Count(usize),
    #[error("input {0} is not one a fex model takes: \"example_batch\" (BYTES [1]) or \"examples\" (BYTES [N])")]
    Name(String),
    #[error("input {name:?} has datatype {found}; fex takes serialized samples as BYTES")]
    Datatype { name: String, found: String },
    #[error("input {name:?} has shape {shape:?}, which is not a shape of {expected}")]
    Shape { name: String, shape: Vec<i64>, expected: &'static str },
    #[error("raw_input_contents has {found} entries for {inputs} inputs; it must have one per input, in order")]
    RawCount { found: usize, inputs: usize },
    #[error("input {0:?} has typed contents while the request uses raw_input_contents; use one form for every input")]
    Mixed(String),
    #[error("input {0:?} has no contents: set raw_input_contents or contents.bytes_contents")]
    NoContents(String),
    #[error("input {name:?}: element {index} at byte {offset} of raw_input_contents {problem}")]
    Raw { name: String, index: usize, offset: usize, problem: String },
    #[error("input {name:?} has shape {shape:?} ({expected} elements) but its contents hold {found}")]
    Elements { name: String, shape: Vec<i64>, expected: usize, found: usize },
}

/// The samples of `request`, taking its input buffers (no copy).
pub fn samples(request: &mut ModelInferRequest) -> Result<Samples, InputError> {
    if request.inputs.len() != 1 {
        return Err(InputError::Count(request.inputs.len()));
    }
    let input = &mut request.inputs[0];
    let name = input.name.clone();
    let batch = match name.as_str() {
        EXAMPLE_BATCH => true,
        EXAMPLES => false,
        _ => return Err(InputError::Name(super::clipped(&name))),
    };
    if input.datatype != "BYTES" {
        return Err(InputError::Datatype { name, found: super::clipped(&input.datatype) });
    }
    let shape_error = |expected| InputError::Shape { name: name.clone(), shape: input.shape.clone(), expected };
    let expected = match (batch, element_count(&input.shape)) {
        (true, Some(1)) => 1,
        (true, _) => return Err(shape_error("one element ([1])")),
        (false, Some(n)) => n,
        (false, None) => return Err(shape_error("N elements ([N])")),
    };
    let elements = if request.raw_input_contents.is_empty() {
        let contents = input.contents.take().ok_or_else(|| InputError::NoContents(name.clone()))?;
        contents.bytes_contents
    } else {
        if request.raw_input_contents.len() != 1 {
            return Err(InputError::RawCount { found: request.raw_input_contents.len(), inputs: 1 });
        }
        if input.contents.is_some() {
            return Err(InputError::Mixed(name));
        }
        split_raw(&name, std::mem::take(&mut request.raw_input_contents[0]), expected)?
    };
    if elements.len() != expected {
        let shape = input.shape.clone();
        return Err(InputError::Elements { name, shape, expected, found: elements.len() });
    }
    Ok(if batch {
        Samples::Batch(elements.into_iter().next().unwrap_or_default())
    } else {
        Samples::Examples(elements)
    })
}

/// Raw BYTES contents cut into their elements: each a 4-byte little-endian
/// length and that many bytes, to the end of the buffer.
fn split_raw(name: &str, raw: Bytes, expected: usize) -> Result<Vec<Bytes>, InputError> {
    let error = |index, offset, problem: String| InputError::Raw { name: name.to_string(), index, offset, problem };
    // Each element takes at least its 4-byte prefix: the capacity is bounded
    // by what the buffer can hold, not by the caller's shape.
    let mut elements = Vec::with_capacity(expected.min(raw.len() / 4));
    let mut at = 0;
    while at < raw.len() {
        let index = elements.len();
        let Some(prefix) = raw.get(at..at + 4) else {
            return Err(error(index, at, format!("has {} bytes left, too few for a 4-byte length", raw.len() - at)));
        };
        let len = u32::from_le_bytes(prefix.try_into().expect("4 bytes")) as usize;
        let start = at + 4;
        if len > raw.len() - start {
            let left = raw.len() - start;
            return Err(error(index, at, format!("says {len} bytes, but {left} remain")));
        }
        elements.push(raw.slice(start..start + len));
        at = start + len;
    }
    Ok(elements)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::inference::InferTensorContents;
    use crate::proto::inference::model_infer_request::InferInputTensor;

    fn input(name: &str, shape: Vec<i64>) -> InferInputTensor {
        InferInputTensor { name: name.into(), datatype: "BYTES".into(), shape, ..Default::default() }
    }

    fn raw(elements: &[&[u8]]) -> Bytes {
        let mut out = Vec::new();
        for e in elements {
            out.extend_from_slice(&(e.len() as u32).to_le_bytes());
            out.extend_from_slice(e);
        }
        out.into()
    }

    fn request(input: InferInputTensor, raw: Option<Bytes>) -> ModelInferRequest {
        ModelInferRequest { inputs: vec![input], raw_input_contents: raw.into_iter().collect(), ..Default::default() }
    }

    #[test]
    fn raw_and_typed_contents_give_the_same_samples() {
        let mut r = request(input(EXAMPLES, vec![1, 2]), Some(raw(&[b"ab", b""])));
        assert_eq!(samples(&mut r), Ok(Samples::Examples(vec![Bytes::from_static(b"ab"), Bytes::new()])));
        let mut typed = input(EXAMPLES, vec![2]);
        typed.contents = Some(InferTensorContents {
            bytes_contents: vec![Bytes::from_static(b"ab"), Bytes::new()],
            ..Default::default()
        });
        assert_eq!(
            samples(&mut request(typed, None)),
            Ok(Samples::Examples(vec![Bytes::from_static(b"ab"), Bytes::new()]))
        );
        let mut r = request(input(EXAMPLE_BATCH, vec![1]), Some(raw(&[b"batch"])));
        assert_eq!(samples(&mut r), Ok(Samples::Batch(Bytes::from_static(b"batch"))));
    }

    #[test]
    fn each_malformed_request_is_named() {
        let err = |mut r: ModelInferRequest| samples(&mut r).unwrap_err().to_string();
        assert!(err(ModelInferRequest::default()).contains("the request has 0"));
        assert!(err(request(input("x", vec![1]), Some(raw(&[b"a"])))).contains("input \"x\" is not one"));
        let mut wrong = input(EXAMPLE_BATCH, vec![1]);
        wrong.datatype = "INT64".into();
        assert!(err(request(wrong, Some(raw(&[b"a"])))).contains("datatype \"INT64\""));
        assert!(err(request(input(EXAMPLE_BATCH, vec![2]), Some(raw(&[b"a", b"b"])))).contains("shape [2]"));
        assert!(err(request(input(EXAMPLES, vec![-1]), Some(raw(&[b"a"])))).contains("shape [-1]"));
        assert_eq!(
            err(request(input(EXAMPLES, vec![3]), Some(raw(&[b"a", b"b"])))),
            "input \"examples\" has shape [3] (3 elements) but its contents hold 2"
        );
        // A prefix longer than the buffer, and a cut prefix.
        let mut bad = raw(&[b"abc"]).to_vec();
        bad[0] = 200;
        assert_eq!(
            err(request(input(EXAMPLES, vec![1]), Some(bad.into()))),
            "input \"examples\": element 0 at byte 0 of raw_input_contents says 200 bytes, but 3 remain"
        );
        let mut cut = raw(&[b"abc"]).to_vec();
        cut.extend_from_slice(&[1, 0]);
        assert!(err(request(input(EXAMPLES, vec![2]), Some(cut.into()))).contains("element 1 at byte 7"));
        assert!(err(request(input(EXAMPLES, vec![1]), None)).contains("has no contents"));
        let mut mixed = input(EXAMPLES, vec![1]);
        mixed.contents = Some(InferTensorContents::default());
        assert!(err(request(mixed, Some(raw(&[b"a"])))).contains("typed contents"));
        let mut two = request(input(EXAMPLES, vec![1]), Some(raw(&[b"a"])));
        two.raw_input_contents.push(Bytes::new());
        assert!(err(two).contains("2 entries for 1 inputs"));
    }

    #[test]
    fn a_huge_shape_allocates_nothing_before_the_contents_are_read() {
        let mut r = request(input(EXAMPLES, vec![i64::MAX / 2]), Some(raw(&[b"a"])));
        assert!(samples(&mut r).unwrap_err().to_string().contains("its contents hold 1"));
        let mut r = request(input(EXAMPLES, vec![i64::MAX, 4]), Some(raw(&[b"a"])));
        assert!(samples(&mut r).unwrap_err().to_string().contains("not a shape of N elements"));
    }
}
