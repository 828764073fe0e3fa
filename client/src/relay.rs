//! The caller's relay (case (a) of the forwarding benchmark): fex.v1
//! Extract, then the caller itself re-encodes the tensors as the upstream
//! model's inputs, exactly as the model config's `upstream:` section maps
//! them, and sends one ModelInfer to the model server. What fex-server does
//! when it forwards, done on the client's side of the wire.

use std::path::Path;

use fex::config::{MappingError, Upstream};
use fex::oip::{self, Selection};
use fex::proto::fex_v1::extract_request::Payload;
use fex::proto::fex_v1::{ExtractRequest, ExtractResponse};
use fex::proto::inference::ModelInferRequest;

use crate::client::{ConnectOptions, request};

/// A model's upstream mapping and where its model server is.
#[derive(Debug, Clone)]
pub struct Relay {
    pub upstream: Upstream,
    /// The fex outputs to extract and which of their v2 tensors the inputs use.
    selection: Selection,
    /// The upstream model server.
    pub connect: ConnectOptions,
}

/// Why an Extract response cannot be re-encoded for the model server.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RelayError {
    #[error("upstream input {input:?}: the Extract response has no v2 tensor {from:?}")]
    Missing { input: String, from: String },
    #[error("upstream input {input:?} from {from:?}: {source}")]
    Convert { input: String, from: String, source: oip::ConvertError },
}

impl Relay {
    /// The relay of the model config at `path`, which must have an
    /// `upstream:` section; `address` overrides the section's address.
    pub fn from_config(path: &Path, address: Option<&str>) -> anyhow::Result<Self> {
        let plan = fex::Plan::from_file(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        let Some(upstream) = plan.upstream.clone() else {
            anyhow::bail!("{} has no upstream: section; --protocol relay needs one", path.display());
        };
        Self::new(&plan, upstream, address)
    }

    pub fn new(plan: &fex::Plan, upstream: Upstream, address: Option<&str>) -> anyhow::Result<Self> {
        let selection = oip::select(&upstream.sources(), &plan.signature())?;
        let tls = upstream.tls.as_ref().filter(|_| address.is_none_or(|a| a.starts_with("https://")));
        let connect = ConnectOptions {
            address: address.unwrap_or(&upstream.address).to_string(),
            tls_ca: tls.map(|t| t.ca.clone()),
            tls_domain: tls.and_then(|t| t.domain.clone()),
            connect_timeout: Some(std::time::Duration::from_secs(5)),
            ..ConnectOptions::default()
        };
        Ok(Self { upstream, selection, connect })
    }

    /// The Extract request of the first hop: only the outputs the upstream
    /// inputs are made of.
    pub fn extract_request(&self, model: &str, payload: Payload) -> ExtractRequest {
        ExtractRequest { outputs: self.selection.outputs.clone(), ..request(model, payload) }
    }

    /// The ModelInfer request of the second hop: each upstream input is fex's
    /// v2 tensor `from`, converted to its `datatype` and named `name`.
    /// `outputs` asks the model server for these outputs (none: the
    /// config's `outputs`, and if that is empty, every output).
    pub fn reencode(&self, response: ExtractResponse, outputs: &[String]) -> Result<ModelInferRequest, RelayError> {
        let (mut tensors, mut raw) = (Vec::new(), Vec::new());
        for t in response.tensors {
            oip::push_outputs(t, &self.selection, &mut tensors, &mut raw);
        }
        self.upstream.request(&tensors, &raw, outputs).map_err(|e| match e {
            MappingError::Missing { input, from } => RelayError::Missing { input, from },
            MappingError::Convert { input, from, source } => RelayError::Convert { input, from, source },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use fex::proto::fex_v1::Tensor;

    const UPSTREAM: &str = "upstream:\n  address: https://triton:8001\n  model: ranker\n  version: \"3\"\n  \
        tls: {ca: ca.pem, domain: triton.internal}\n  outputs: [score]\n  inputs:\n    \
        - {name: ids, from: item_id__values, datatype: INT64}\n    \
        - {name: splits, from: item_id__offsets, datatype: INT32}\n    \
        - {name: emb, from: item_embedding}\n    \
        - {name: ids_again, from: item_id__values}\n";

    /// The default model with an upstream mapping, and its tensors for the
    /// bench data's 256-row request.
    fn with_upstream(address: Option<&str>) -> (Relay, Vec<Tensor>) {
        let yaml = format!("{}{UPSTREAM}", fex::config::DEFAULT_MODEL_YAML);
        let plan = fex::Plan::from_yaml(&yaml).unwrap();
        let request = include_bytes!("../../benches/data/default_b256.pb");
        let tensors = fex::extract_batch(&plan, request).unwrap().into_tensors();
        (Relay::new(&plan, plan.upstream.clone().unwrap(), address).unwrap(), tensors)
    }

    /// fex's own v2 tensor `name` of `tensors`, as the server would send it.
    fn v2_tensor(tensors: &[Tensor], name: &str) -> (String, Vec<i64>, Bytes) {
        let (mut outs, mut raw) = (Vec::new(), Vec::new());
        for t in tensors {
            oip::push_outputs(t.clone(), &Selection::default(), &mut outs, &mut raw);
        }
        let at = outs.iter().position(|o| o.name == name).unwrap();
        (outs[at].datatype.clone(), outs[at].shape.clone(), raw[at].clone())
    }

    #[test]
    fn the_first_hop_extracts_only_what_the_inputs_use() {
        let (relay, _) = with_upstream(None);
        let r = relay.extract_request("default", Payload::ExampleBatch(Bytes::new()));
        assert_eq!(r.outputs, ["item_id", "item_embedding"]);
        assert_eq!(relay.connect.address, "https://triton:8001");
        assert_eq!(relay.connect.tls_domain.as_deref(), Some("triton.internal"));
        assert!(relay.connect.tls_ca.as_ref().unwrap().ends_with("ca.pem"));
        // A plaintext address given on the command line drops the section's TLS.
        let (plain, _) = with_upstream(Some("127.0.0.1:9"));
        assert_eq!((plain.connect.address.as_str(), plain.connect.tls()), ("127.0.0.1:9", false));
    }

    #[test]
    fn inputs_are_fex_tensors_converted_and_renamed_as_the_config_maps_them() {
        let (relay, tensors) = with_upstream(None);
        let response = ExtractResponse { tensors: tensors.clone(), ..Default::default() };
        let request = relay.reencode(response, &[]).unwrap();
        assert_eq!((request.model_name.as_str(), request.model_version.as_str()), ("ranker", "3"));
        assert_eq!(request.outputs.iter().map(|o| o.name.as_str()).collect::<Vec<_>>(), ["score"]);
        let expected = [
            ("ids", "item_id__values", "INT64"),
            ("splits", "item_id__offsets", "INT32"),
            ("emb", "item_embedding", "FP32"),
            ("ids_again", "item_id__values", "INT64"),
        ];
        assert_eq!(request.inputs.len(), expected.len());
        assert_eq!(request.raw_input_contents.len(), expected.len());
        for (i, (name, from, datatype)) in expected.into_iter().enumerate() {
            let (from_datatype, shape, raw) = v2_tensor(&tensors, from);
            let input = &request.inputs[i];
            assert_eq!((input.name.as_str(), input.datatype.as_str()), (name, datatype));
            assert_eq!(input.shape, shape, "{name}");
            let bytes = oip::convert(raw, &from_datatype, datatype).unwrap();
            assert_eq!(request.raw_input_contents[i], bytes, "{name}");
        }
        // The splits really were narrowed: 257 offsets of 4 bytes.
        assert_eq!(request.raw_input_contents[1].len(), 257 * 4);
        let asked = relay.reencode(ExtractResponse { tensors, ..Default::default() }, &["p".into()]).unwrap();
        assert_eq!(asked.outputs[0].name, "p");
    }

    #[test]
    fn a_response_without_an_input_tensor_is_named() {
        let (relay, tensors) = with_upstream(None);
        let tensors = tensors.into_iter().filter(|t| t.name != "item_embedding").collect();
        let err = relay.reencode(ExtractResponse { tensors, ..Default::default() }, &[]).unwrap_err();
        assert_eq!(err.to_string(), "upstream input \"emb\": the Extract response has no v2 tensor \"item_embedding\"");
    }
}
