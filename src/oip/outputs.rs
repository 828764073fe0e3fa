//! fex's outputs as v2 tensors: their metadata from the model's signature,
//! the selection a request's `outputs` makes, and the tensors themselves
//! with their buffers moved into `raw_output_contents`.

use bytes::{BufMut, Bytes, BytesMut};

use super::{LENGTHS, OFFSETS, VALUES, WEIGHTS, datatype};
use crate::proto::fex_v1::{DataType, Layout, Tensor, TensorSpec};
use crate::proto::inference::model_infer_response::InferOutputTensor;
use crate::proto::inference::model_metadata_response::TensorMetadata;

fn meta(name: String, dtype: DataType, shape: Vec<i64>) -> TensorMetadata {
    TensorMetadata { name, datatype: datatype(dtype).to_string(), shape }
}

/// The v2 tensors one output is returned as, in the order they are sent.
/// Weights are not listed: the samples a server reads (ExampleBatch,
/// Examples) carry none, so no served output has `__weights`.
pub fn output_metadata(spec: &TensorSpec) -> Vec<TensorMetadata> {
    let (name, dtype) = (&spec.name, spec.dtype());
    match spec.layout() {
        Layout::Ragged => {
            let mut values = vec![-1];
            values.extend(spec.shape.iter().skip(2));
            vec![
                meta(format!("{name}{VALUES}"), dtype, values),
                meta(format!("{name}{OFFSETS}"), spec.splits_dtype(), vec![-1]),
            ]
        }
        Layout::KeyedJagged => vec![
            meta(format!("{name}{VALUES}"), dtype, vec![-1]),
            meta(format!("{name}{LENGTHS}"), DataType::I32, spec.shape.clone()),
        ],
        Layout::Strings => vec![meta(name.clone(), DataType::Bytes, spec.shape.clone())],
        Layout::Dense | Layout::Unspecified => vec![meta(name.clone(), dtype, spec.shape.clone())],
    }
}

/// What a request's `outputs` asks for: fex outputs to compute, and which
/// of their v2 tensors to return.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selection {
    /// fex output names for the extraction; empty: every output.
    pub outputs: Vec<String>,
    /// Single v2 tensors asked for by name (`x__offsets`); `None` with
    /// `outputs` empty means everything.
    tensors: Option<Vec<String>>,
    /// Outputs asked for by their own name: all their tensors.
    whole: Vec<String>,
}

impl Selection {
    /// Whether tensor `tensor` of output `output` is returned.
    pub fn wants(&self, output: &str, tensor: &str) -> bool {
        match &self.tensors {
            None => true,
            Some(tensors) => self.whole.iter().any(|w| w == output) || tensors.iter().any(|t| t == tensor),
        }
    }
}

/// A requested output that the model does not have, or one asked twice.
/// Names are echoed clipped (`super::clipped`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SelectionError {
    #[error("model has no output {name}; its v2 outputs are {known}")]
    Unknown { name: String, known: String },
    #[error("output {name} is asked for twice")]
    Repeated { name: String },
}

/// Resolves requested names, each a fex output (all its tensors) or one v2
/// tensor of an output (`item_id__offsets`), against the model's signature.
/// Linear in the names: a repeated name is refused (as fex.v1 refuses one),
/// and the tensor names are listed once per call.
pub fn select(requested: &[&str], signature: &[TensorSpec]) -> Result<Selection, SelectionError> {
    if requested.is_empty() {
        return Ok(Selection::default());
    }
    let mut seen = rustc_hash::FxHashSet::default();
    if let Some(name) = requested.iter().find(|&&n| !seen.insert(n)) {
        return Err(SelectionError::Repeated { name: super::clipped(name) });
    }
    let owners: rustc_hash::FxHashMap<String, usize> = signature
        .iter()
        .enumerate()
        .flat_map(|(i, s)| {
            output_metadata(s).into_iter().map(|m| m.name).chain([weights_name(&s.name)]).map(move |n| (n, i))
        })
        .collect();
    let mut selection = Selection { tensors: Some(Vec::new()), ..Default::default() };
    for &name in requested {
        let output = if signature.iter().any(|s| s.name == name) {
            selection.whole.push(name.to_string());
            name
        } else {
            let Some(&owner) = owners.get(name) else {
                let known: Vec<String> = signature.iter().flat_map(output_metadata).map(|m| m.name).collect();
                return Err(SelectionError::Unknown { name: super::clipped(name), known: known.join(", ") });
            };
            selection.tensors.get_or_insert_default().push(name.to_string());
            &signature[owner].name
        };
        if !selection.outputs.iter().any(|o| o == output) {
            selection.outputs.push(output.to_string());
        }
    }
    Ok(selection)
}

fn weights_name(output: &str) -> String {
    suffixed(output, WEIGHTS)
}

/// Appends output `t` as the v2 tensors `selection` wants, moving its
/// buffers into `raw` (strings are re-laid with their 4-byte length
/// prefixes, the one copy the protocol requires). Called once per output of
/// every ModelInfer: names are built without formatting, and a dense or
/// strings output keeps its own name's allocation.
pub fn push_outputs(mut t: Tensor, selection: &Selection, outputs: &mut Vec<InferOutputTensor>, raw: &mut Vec<Bytes>) {
    let name = std::mem::take(&mut t.name);
    let dtype = t.dtype();
    let layout = t.layout();
    if matches!(layout, Layout::Strings | Layout::Dense | Layout::Unspecified) {
        if selection.wants(&name, &name) {
            let (dtype, bytes) = match layout {
                Layout::Strings => (DataType::Bytes, prefixed(&t.values, &t.row_splits)),
                _ => (dtype, t.values),
            };
            let datatype = datatype(dtype).to_string();
            outputs.push(InferOutputTensor {
                name,
                datatype,
                shape: t.shape,
                parameters: Default::default(),
                contents: None,
            });
            raw.push(bytes);
        }
        return;
    }
    let mut out = Out { output: &name, selection, outputs, raw };
    let elements = (t.values.len() / dtype_size(dtype)) as i64;
    if layout == Layout::KeyedJagged {
        out.push(suffixed(&name, VALUES), dtype, vec![elements], t.values);
        out.push(suffixed(&name, LENGTHS), DataType::I32, t.shape, t.lengths);
    } else {
        let values_shape = match t.shape.get(2) {
            Some(&width) if width > 0 => vec![elements / width, width],
            _ => vec![elements],
        };
        let (rows, splits) = (t.shape.first().copied().unwrap_or(0), t.splits_dtype());
        out.push(suffixed(&name, VALUES), dtype, values_shape, t.values);
        out.push(suffixed(&name, OFFSETS), splits, vec![rows + 1], t.row_splits);
    }
    out.weights(t.weights);
}

/// Where one output's v2 tensors go.
struct Out<'a> {
    output: &'a str,
    selection: &'a Selection,
    outputs: &'a mut Vec<InferOutputTensor>,
    raw: &'a mut Vec<Bytes>,
}

impl Out<'_> {
    fn push(&mut self, name: String, dtype: DataType, shape: Vec<i64>, bytes: Bytes) {
        if self.selection.wants(self.output, &name) {
            let datatype = datatype(dtype).to_string();
            self.outputs.push(InferOutputTensor {
                name,
                datatype,
                shape,
                parameters: Default::default(),
                contents: None,
            });
            self.raw.push(bytes);
        }
    }

    fn weights(&mut self, weights: Bytes) {
        if !weights.is_empty() {
            let n = (weights.len() / 4) as i64;
            self.push(weights_name(self.output), DataType::F32, vec![n], weights);
        }
    }
}

fn suffixed(name: &str, suffix: &str) -> String {
    let mut s = String::with_capacity(name.len() + suffix.len());
    s.push_str(name);
    s.push_str(suffix);
    s
}

fn dtype_size(dtype: DataType) -> usize {
    crate::columns::elem_size(dtype).max(1)
}

/// Strings cut by i64 row splits, as v2 BYTES elements: each a 4-byte
/// little-endian length, then the bytes.
fn prefixed(values: &[u8], splits: &[u8]) -> Bytes {
    let offsets: Vec<usize> =
        splits.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")) as usize).collect();
    let rows = offsets.len().saturating_sub(1);
    let mut out = BytesMut::with_capacity(values.len() + 4 * rows);
    for w in offsets.windows(2) {
        let row = values.get(w[0]..w[1]).unwrap_or_default();
        out.put_u32_le(row.len() as u32);
        out.put_slice(row);
    }
    out.freeze()
}
