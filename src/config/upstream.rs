//! The model's `upstream:` section: the Open Inference Protocol (KServe v2)
//! model server that fex-server forwards this model's tensors to. Read and
//! checked here like the rest of the config (every problem with its path);
//! the mapping is checked against the model's own v2 outputs, so a config
//! that names a tensor the model does not produce, or a conversion fex
//! cannot make, never loads. Nothing here connects anywhere.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_norway::{Mapping, Value};

use bytes::Bytes;

use super::ConfigError;
use super::raw::{Scope, read};
use crate::oip;
use crate::proto::fex_v1::TensorSpec;
use crate::proto::inference::ModelInferRequest;
use crate::proto::inference::model_infer_request::{InferInputTensor, InferRequestedOutputTensor};
use crate::proto::inference::model_infer_response::InferOutputTensor;

/// Where a model's tensors go and how they are named there.
#[derive(Debug, Clone, PartialEq)]
pub struct Upstream {
    /// `http://host:port` (plaintext) or `https://host:port` (TLS).
    pub address: String,
    /// The CA that signs the server's certificate (https only), resolved
    /// against the config's directory, and the name to verify, if not the
    /// address's host.
    pub tls: Option<UpstreamTls>,
    pub model: String,
    /// Empty: the server's choice.
    pub version: String,
    /// Per-call bound; a caller's shorter remaining deadline wins.
    pub timeout: Duration,
    /// HTTP/2 connections to the server, reused by every call.
    pub max_connections: usize,
    /// The model's inputs, each one of fex's v2 tensors.
    pub inputs: Vec<UpstreamInput>,
    /// The model outputs returned to the caller; empty: all of them.
    pub outputs: Vec<String>,
}

/// Why fex's tensors could not be laid out as the upstream model's inputs.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MappingError {
    #[error("upstream input {input:?}: no v2 tensor {from:?} among fex's")]
    Missing { input: String, from: String },
    #[error("upstream input {input:?} from {from:?}: {source}")]
    Convert { input: String, from: String, source: oip::ConvertError },
}

impl Upstream {
    /// The upstream model's ModelInfer request: each input is fex's v2
    /// tensor `from` (among `outputs`, with contents `raw`), converted to
    /// its `datatype` (moved when it already fits) and named `name`; the
    /// model is asked for `requested`, or the section's `outputs`.
    pub fn request(
        &self,
        outputs: &[InferOutputTensor],
        raw: &[Bytes],
        requested: &[String],
    ) -> Result<ModelInferRequest, MappingError> {
        let names = if requested.is_empty() { &self.outputs } else { requested };
        let mut request = ModelInferRequest {
            model_name: self.model.clone(),
            model_version: self.version.clone(),
            outputs: names
                .iter()
                .map(|name| InferRequestedOutputTensor { name: name.clone(), ..Default::default() })
                .collect(),
            ..Default::default()
        };
        for input in &self.inputs {
            let (input_name, from) = (input.name.clone(), input.from.clone());
            let Some(at) = outputs.iter().position(|t| t.name == input.from) else {
                return Err(MappingError::Missing { input: input_name, from });
            };
            let tensor = &outputs[at];
            // A `Bytes` clone shares the buffer: a tensor feeding several
            // inputs is not copied.
            let converted = oip::convert(raw[at].clone(), &tensor.datatype, &input.datatype)
                .map_err(|source| MappingError::Convert { input: input_name.clone(), from, source })?;
            let shape = tensor.shape.clone();
            request.inputs.push(InferInputTensor {
                name: input_name,
                datatype: input.datatype.clone(),
                shape,
                ..Default::default()
            });
            request.raw_input_contents.push(converted);
        }
        Ok(request)
    }

    /// The fex v2 tensors the inputs read, each once, in first-use order
    /// (one tensor may feed several inputs): what to extract.
    pub fn sources(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for input in &self.inputs {
            if !out.contains(&input.from.as_str()) {
                out.push(&input.from);
            }
        }
        out
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamTls {
    pub ca: PathBuf,
    pub domain: Option<String>,
}

/// One input of the upstream model: fex's v2 tensor `from`, sent as
/// `name` with element type `datatype`.
#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamInput {
    pub name: String,
    pub from: String,
    /// fex's own datatype of `from`.
    pub from_datatype: String,
    pub datatype: String,
}

const DEFAULT_TIMEOUT_MS: u64 = 1000;
const DEFAULT_CONNECTIONS: u64 = 2;
const MAX_CONNECTIONS: u64 = 64;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct RawUpstream {
    address: Option<String>,
    tls: Option<Mapping>,
    model: Option<String>,
    version: Option<String>,
    timeout_ms: Option<u64>,
    max_connections: Option<u64>,
    inputs: Option<Vec<Value>>,
    outputs: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawTls {
    ca: Option<String>,
    domain: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawInput {
    name: Option<String>,
    from: Option<String>,
    datatype: Option<String>,
}

/// Reads the section as written; keys of the wrong type are reported.
pub(super) fn parse(section: &Mapping, errors: &mut Vec<ConfigError>) -> RawUpstream {
    read(section, Scope { path: "upstream", owner: None }, errors)
}

/// Checks the section against the model's visible outputs.
pub(super) fn check(
    raw: &RawUpstream,
    signature: &[TensorSpec],
    base_dir: &Path,
    errors: &mut Vec<ConfigError>,
) -> Option<Upstream> {
    let start = errors.len();
    let mut error = |path: &str, message: String| errors.push(ConfigError { path: path.into(), message });
    let address = raw.address.clone().unwrap_or_default();
    let https = address.starts_with("https://");
    match address.split_once("://") {
        None if address.is_empty() => error("upstream.address", "missing; e.g. http://triton:8001".into()),
        Some(("http" | "https", rest)) if has_port(rest) => {}
        _ => error("upstream.address", format!("{address:?} is not http://host:port or https://host:port")),
    }
    let model = raw.model.clone().unwrap_or_default();
    if model.is_empty() {
        error("upstream.model", "missing; the name of the model on the upstream server".into());
    }
    let tls = raw.tls.as_ref().and_then(|t| {
        let mut inner = Vec::new();
        let t: RawTls = read(t, Scope { path: "upstream.tls", owner: None }, &mut inner);
        inner.into_iter().for_each(|e| error(&e.path, e.message));
        if !https {
            error("upstream.tls", "is for https:// addresses; this address is plaintext".into());
        }
        let Some(ca) = t.ca else {
            error("upstream.tls.ca", "missing; the PEM file of the CA that signs the server's certificate".into());
            return None;
        };
        Some(UpstreamTls { ca: base_dir.join(ca), domain: t.domain })
    });
    if https && tls.is_none() && raw.tls.is_none() {
        error("upstream.tls", "missing; an https:// upstream needs tls.ca".into());
    }
    let timeout_ms = raw.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
    if timeout_ms == 0 {
        error("upstream.timeout_ms", "must be at least 1".into());
    }
    let connections = raw.max_connections.unwrap_or(DEFAULT_CONNECTIONS);
    if !(1..=MAX_CONNECTIONS).contains(&connections) {
        error("upstream.max_connections", format!("{connections} is not in 1..={MAX_CONNECTIONS}"));
    }
    let inputs = inputs(raw.inputs.as_deref().unwrap_or_default(), signature, &mut error);
    let outputs = raw.outputs.clone().unwrap_or_default();
    for (i, name) in outputs.iter().enumerate() {
        if outputs[..i].contains(name) {
            error(&format!("upstream.outputs[{i}]"), format!("{name:?} is listed twice"));
        }
    }
    if errors.len() > start {
        return None;
    }
    Some(Upstream {
        address,
        tls,
        model,
        version: raw.version.clone().unwrap_or_default(),
        timeout: Duration::from_millis(timeout_ms),
        max_connections: connections as usize,
        inputs,
        outputs,
    })
}

fn has_port(rest: &str) -> bool {
    let authority = rest.trim_end_matches('/');
    matches!(authority.rsplit_once(':'), Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok())
}

/// Each input's names and datatypes, checked against fex's v2 tensors.
fn inputs(values: &[Value], signature: &[TensorSpec], error: &mut impl FnMut(&str, String)) -> Vec<UpstreamInput> {
    if values.is_empty() {
        error("upstream.inputs", "missing; list the model's inputs as {name, from, datatype}".into());
    }
    let tensors: Vec<_> = signature.iter().flat_map(oip::output_metadata).collect();
    let mut out = Vec::new();
    for (i, value) in values.iter().enumerate() {
        let path = format!("upstream.inputs[{i}]");
        let Value::Mapping(map) = value else {
            error(&path, "is not a mapping {name, from, datatype}".into());
            continue;
        };
        let mut inner = Vec::new();
        let raw: RawInput = read(map, Scope { path: &path, owner: None }, &mut inner);
        inner.into_iter().for_each(|e| error(&e.path, e.message));
        let (Some(name), Some(from)) = (raw.name, raw.from) else {
            error(&path, "needs name (the model's input) and from (a fex v2 tensor)".into());
            continue;
        };
        let Some(tensor) = tensors.iter().find(|t| t.name == from) else {
            let known: Vec<&str> = tensors.iter().map(|t| t.name.as_str()).collect();
            error(
                &format!("{path}.from"),
                format!("{from:?} is no v2 tensor of this model; it has {}", known.join(", ")),
            );
            continue;
        };
        let datatype = raw.datatype.unwrap_or_else(|| tensor.datatype.clone());
        if !oip::convertible(&tensor.datatype, &datatype) {
            let message = format!("{from:?} is {}, which fex cannot send as {datatype:?}", tensor.datatype);
            error(&format!("{path}.datatype"), message);
            continue;
        }
        if out.iter().any(|o: &UpstreamInput| o.name == name) {
            error(&format!("{path}.name"), format!("{name:?} is listed twice"));
            continue;
        }
        out.push(UpstreamInput { name, from, from_datatype: tensor.datatype.clone(), datatype });
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::Plan;

    const MODEL: &str = "name: ranker\nfeatures:\n  - {name: item_id, kind: sparse}\n  - {name: ctr, kind: dense, dtype: f32, shape: [1]}\n";

    fn with(upstream: &str) -> Result<Plan, String> {
        Plan::from_yaml(&format!("{MODEL}upstream:\n{upstream}")).map_err(|e| e.to_string())
    }

    #[test]
    fn a_mapping_onto_the_models_v2_tensors_loads() {
        let plan = with(
            "  address: http://127.0.0.1:8001\n  model: ranker\n  timeout_ms: 50\n  inputs:\n    \
             - {name: ids, from: item_id__values, datatype: INT64}\n    \
             - {name: splits, from: item_id__offsets, datatype: INT32}\n    \
             - {name: ctr, from: ctr}\n  outputs: [score]\n",
        )
        .unwrap();
        let up = plan.upstream.unwrap();
        assert_eq!(
            (up.address.as_str(), up.model.as_str(), up.max_connections),
            ("http://127.0.0.1:8001", "ranker", 2)
        );
        assert_eq!(up.timeout, std::time::Duration::from_millis(50));
        let inputs: Vec<_> = up.inputs.iter().map(|i| (&*i.name, &*i.from_datatype, &*i.datatype)).collect();
        assert_eq!(inputs, [("ids", "INT64", "INT64"), ("splits", "INT64", "INT32"), ("ctr", "FP32", "FP32")]);
        assert_eq!(up.outputs, ["score"]);
    }

    #[test]
    fn every_problem_is_named_with_its_path() {
        let err = with(
            "  address: triton:8001\n  timeout_ms: 0\n  max_connections: 0\n  port: 1\n  inputs:\n    \
             - {name: ids, from: item_id__splits}\n    - {name: ctr, from: ctr, datatype: INT64}\n    - 3\n",
        )
        .unwrap_err();
        for expected in [
            "upstream.address: \"triton:8001\" is not http://host:port or https://host:port",
            "upstream.model: missing",
            "upstream.timeout_ms: must be at least 1",
            "upstream.max_connections: 0 is not in 1..=64",
            "upstream: unknown key \"port\"",
            "upstream.inputs[0].from: \"item_id__splits\" is no v2 tensor of this model; it has item_id__values, item_id__offsets, ctr",
            "upstream.inputs[1].datatype: \"ctr\" is FP32, which fex cannot send as \"INT64\"",
            "upstream.inputs[2]: is not a mapping",
        ] {
            assert!(err.contains(expected), "{expected}\nnot in\n{err}");
        }
        let tls = with("  address: https://t:1\n  model: m\n  inputs: [{name: a, from: ctr}]\n").unwrap_err();
        assert!(tls.contains("upstream.tls: missing; an https:// upstream needs tls.ca"), "{tls}");
        let plain = with("  address: http://t:1\n  model: m\n  tls: {ca: x.pem}\n  inputs: [{name: a, from: ctr}]\n");
        assert!(plain.unwrap_err().contains("upstream.tls: is for https:// addresses"));
    }
}
