//! The Open Inference Protocol (KServe v2) side of the client: a ModelInfer
//! request carrying a fex model's samples, and a response's outputs read
//! whichever form they came in (`raw_output_contents`, as fex and Triton
//! answer, or typed contents).

use bytes::{BufMut, Bytes, BytesMut};
use fex::oip::{self, Samples};
use fex::proto::inference::model_infer_request::{InferInputTensor, InferRequestedOutputTensor};
use fex::proto::inference::model_infer_response::InferOutputTensor;
use fex::proto::inference::{ModelInferRequest, ModelInferResponse};

use crate::views::{self, TensorView};

/// A ModelInfer request for fex model `model`: one BYTES input,
/// `example_batch` `[1]` or `examples` `[N]`, its elements in
/// `raw_input_contents` (each a 4-byte little-endian length, then the bytes).
pub fn infer_request(model: &str, samples: &Samples, outputs: &[String]) -> ModelInferRequest {
    let (name, elements): (&str, &[Bytes]) = match samples {
        Samples::Batch(batch) => (oip::EXAMPLE_BATCH, std::slice::from_ref(batch)),
        Samples::Examples(examples) => (oip::EXAMPLES, examples),
    };
    let input = InferInputTensor {
        name: name.into(),
        datatype: "BYTES".into(),
        shape: vec![elements.len() as i64],
        ..Default::default()
    };
    ModelInferRequest {
        model_name: model.into(),
        inputs: vec![input],
        outputs: requested(outputs),
        raw_input_contents: vec![prefixed(elements)],
        ..Default::default()
    }
}

/// Outputs asked for by name (none: every output).
pub fn requested(names: &[String]) -> Vec<InferRequestedOutputTensor> {
    names.iter().map(|name| InferRequestedOutputTensor { name: name.clone(), ..Default::default() }).collect()
}

/// BYTES elements as raw contents: each a u32 little-endian length, then its bytes.
pub fn prefixed(elements: &[Bytes]) -> Bytes {
    let mut out = BytesMut::with_capacity(elements.iter().map(|e| e.len() + 4).sum());
    for e in elements {
        out.put_u32_le(e.len() as u32);
        out.put_slice(e);
    }
    out.freeze()
}

/// Each output of a response with its elements as raw bytes: from
/// `raw_output_contents` when the server used it, else from typed contents.
pub fn outputs(response: &ModelInferResponse) -> Vec<(&InferOutputTensor, Bytes)> {
    let raw = &response.raw_output_contents;
    response
        .outputs
        .iter()
        .enumerate()
        .map(|(i, out)| {
            let bytes = match (raw.get(i), &out.contents) {
                (Some(bytes), _) => bytes.clone(),
                (None, Some(contents)) => oip::raw_of_contents(&out.datatype, contents),
                (None, None) => Bytes::new(),
            };
            (out, bytes)
        })
        .collect()
}

/// A response for people: a header line, then one line per output.
pub fn describe_response(response: &ModelInferResponse, first: usize) -> String {
    let mut out = format!(
        "model {} version {} · {} outputs",
        response.model_name,
        response.model_version,
        response.outputs.len()
    );
    for (tensor, raw) in outputs(response) {
        out.push('\n');
        out.push_str(&describe(tensor, raw, first));
    }
    out
}

/// One line per output: name, datatype, shape, the first values (when the
/// datatype is one fex reads; others show their size in bytes).
pub fn describe(out: &InferOutputTensor, raw: Bytes, first: usize) -> String {
    let head = format!("{:<24} {:<7} {:?}", out.name, out.datatype, out.shape);
    let size = raw.len();
    let body = match oip::tensor_of_output(out, raw) {
        Ok(t) => match TensorView::of(&t) {
            TensorView::Strings(rows) => {
                let shown: Vec<String> =
                    rows.iter().take(first).map(|r| format!("{:?}", String::from_utf8_lossy(r))).collect();
                format!("[{}]", shown.join(", "))
            }
            TensorView::Dense { values, .. } => values.preview(first),
            _ => views::describe(&t, first),
        },
        Err(e) => format!("({size} bytes: {e})"),
    };
    format!("{head}  {body}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use fex::proto::inference::InferTensorContents;

    #[test]
    fn samples_travel_as_length_prefixed_bytes_elements() {
        let batch = infer_request("default", &Samples::Batch(Bytes::from_static(b"abc")), &[]);
        assert_eq!(batch.model_name, "default");
        let input = &batch.inputs[0];
        assert_eq!(
            (input.name.as_str(), input.datatype.as_str(), input.shape.as_slice()),
            ("example_batch", "BYTES", &[1][..])
        );
        assert!(input.contents.is_none(), "raw contents only");
        assert_eq!(batch.raw_input_contents, [Bytes::from_static(b"\x03\x00\x00\x00abc")]);

        let examples = Samples::Examples(vec![Bytes::from_static(b"xy"), Bytes::new(), Bytes::from(vec![7u8; 300])]);
        let request = infer_request("m", &examples, &["item_id__offsets".to_string()]);
        assert_eq!((request.inputs[0].name.as_str(), request.inputs[0].shape.as_slice()), ("examples", &[3][..]));
        let mut expected = b"\x02\x00\x00\x00xy\x00\x00\x00\x00\x2c\x01\x00\x00".to_vec();
        expected.extend([7u8; 300]);
        assert_eq!(request.raw_input_contents, [Bytes::from(expected)]);
        assert_eq!(request.outputs[0].name, "item_id__offsets");
        // What fex-server reads back is what was sent.
        assert_eq!(oip::samples(&mut request.clone()), Ok(examples));
    }

    #[test]
    fn raw_and_typed_outputs_read_alike() {
        let out = |contents| InferOutputTensor {
            name: "score".into(),
            datatype: "FP32".into(),
            shape: vec![2],
            contents,
            ..Default::default()
        };
        let typed = ModelInferResponse {
            outputs: vec![out(Some(InferTensorContents { fp32_contents: vec![0.5, 2.0], ..Default::default() }))],
            ..Default::default()
        };
        let bytes: Vec<u8> = [0.5f32, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let raw = ModelInferResponse {
            outputs: vec![out(None)],
            raw_output_contents: vec![bytes.into()],
            ..Default::default()
        };
        let (t, r) = (outputs(&typed), outputs(&raw));
        assert_eq!(t[0].1, r[0].1);
        assert_eq!(describe(t[0].0, t[0].1.clone(), 8), "score                    FP32    [2]  [0.5, 2.0]");
        let half =
            InferOutputTensor { name: "h".into(), datatype: "FP16".into(), shape: vec![1], ..Default::default() };
        assert!(describe(&half, Bytes::from_static(&[0, 0]), 8).contains("(2 bytes: tensor \"h\" has datatype"));
    }
}
