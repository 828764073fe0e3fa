//! One bench call in the protocol the run speaks: fex.v1 Extract, a v2
//! ModelInfer to fex, or the caller's relay (Extract, then ModelInfer to the
//! model server, both inside the one measured call). Requests are prepared
//! once per payload; each connection holds the clients its protocol needs.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use fex::oip::Samples;
use fex::proto::fex_v1::ExtractRequest;
use fex::proto::fex_v1::extract_request::Payload;
use fex::proto::fex_v1::feature_extractor_client::FeatureExtractorClient;
use fex::proto::inference::ModelInferRequest;
use fex::proto::inference::grpc_inference_service_client::GrpcInferenceServiceClient;
use prost::Message;
use tokio::time::Instant;
use tonic::transport::Channel;

use crate::client::request;
use crate::relay::{Relay, RelayError};

/// What a call sends, and to whom.
#[derive(Debug, Clone, Default)]
pub enum Protocol {
    /// fex.v1 Extract.
    #[default]
    V1,
    /// Open Inference Protocol ModelInfer to fex-server.
    V2,
    /// fex.v1 Extract, re-encoded by the caller, ModelInfer to the model server.
    Relay(Arc<Relay>),
}

impl Protocol {
    pub fn name(&self) -> &'static str {
        match self {
            Self::V1 => "v1",
            Self::V2 => "v2",
            Self::Relay(_) => "relay",
        }
    }
}

/// A request built once and sent many times.
#[derive(Debug, Clone)]
pub enum Prepared {
    Extract(ExtractRequest),
    Infer(ModelInferRequest),
}

impl Prepared {
    /// The request for one serialized ExampleBatch to `model`.
    pub fn new(protocol: &Protocol, model: &str, batch: Bytes) -> Self {
        match protocol {
            Protocol::V1 => Self::Extract(request(model, Payload::ExampleBatch(batch))),
            Protocol::V2 => Self::Infer(crate::v2::infer_request(model, &Samples::Batch(batch), &[])),
            Protocol::Relay(relay) => Self::Extract(relay.extract_request(model, Payload::ExampleBatch(batch))),
        }
    }

    pub fn encoded_len(&self) -> u64 {
        match self {
            Self::Extract(r) => r.encoded_len() as u64,
            Self::Infer(r) => r.encoded_len() as u64,
        }
    }
}

/// Bytes a call moved besides its prepared request: the relay's second
/// request, and every response.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sizes {
    pub sent: u64,
    pub received: u64,
}

/// Which part of a call failed.
#[derive(Debug)]
pub enum Failure {
    /// fex-server's answer (or its transport).
    Fex(tonic::Status),
    /// The model server's answer (or its transport), in a relay.
    Upstream(tonic::Status),
    /// The caller could not re-encode fex's tensors for the model server.
    Relay(RelayError),
}

/// One connection's clients (cheap to clone: they share the channel).
#[derive(Clone)]
pub struct Caller {
    v1: FeatureExtractorClient<Channel>,
    v2: GrpcInferenceServiceClient<Channel>,
    upstream: Option<GrpcInferenceServiceClient<Channel>>,
}

impl Caller {
    /// Clients on a connection to fex-server and, for a relay, one to the model server.
    pub fn new(fex: Channel, upstream: Option<Channel>) -> Self {
        Self {
            v1: FeatureExtractorClient::new(fex.clone()).max_decoding_message_size(usize::MAX),
            v2: GrpcInferenceServiceClient::new(fex).max_decoding_message_size(usize::MAX),
            upstream: upstream.map(|c| GrpcInferenceServiceClient::new(c).max_decoding_message_size(usize::MAX)),
        }
    }

    /// Sends `prepared`; each hop's grpc-timeout is what remains of `timeout`.
    pub async fn call(
        &mut self,
        prepared: &Prepared,
        protocol: &Protocol,
        timeout: Duration,
    ) -> Result<Sizes, Failure> {
        let deadline = Instant::now() + timeout;
        match (prepared, protocol) {
            (Prepared::Infer(r), _) => {
                let response = self.v2.model_infer(bounded(r.clone(), deadline)).await.map_err(Failure::Fex)?;
                Ok(Sizes { sent: 0, received: response.get_ref().encoded_len() as u64 })
            }
            (Prepared::Extract(r), Protocol::Relay(relay)) => {
                let extracted = self.v1.extract(bounded(r.clone(), deadline)).await.map_err(Failure::Fex)?.into_inner();
                let first = extracted.encoded_len() as u64;
                let infer = relay.reencode(extracted, &[]).map_err(Failure::Relay)?;
                let sent = infer.encoded_len() as u64;
                let upstream = self.upstream.as_mut().expect("a relay connects to the model server");
                let response = upstream.model_infer(bounded(infer, deadline)).await.map_err(Failure::Upstream)?;
                Ok(Sizes { sent, received: first + response.get_ref().encoded_len() as u64 })
            }
            (Prepared::Extract(r), _) => {
                let response = self.v1.extract(bounded(r.clone(), deadline)).await.map_err(Failure::Fex)?;
                Ok(Sizes { sent: 0, received: response.get_ref().encoded_len() as u64 })
            }
        }
    }
}

/// A request whose grpc-timeout is the time left until `deadline`.
fn bounded<T>(message: T, deadline: Instant) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.set_timeout(deadline.saturating_duration_since(Instant::now()));
    request
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_protocol_prepares_its_request_once() {
        let batch = Bytes::from_static(b"batch");
        let Prepared::Extract(v1) = Prepared::new(&Protocol::V1, "m", batch.clone()) else { panic!("v1 extracts") };
        assert_eq!((v1.model.as_str(), v1.payload), ("m", Some(Payload::ExampleBatch(batch.clone()))));
        let v2 = Prepared::new(&Protocol::V2, "m", batch.clone());
        let Prepared::Infer(infer) = &v2 else { panic!("v2 infers") };
        assert_eq!((infer.model_name.as_str(), infer.inputs[0].name.as_str()), ("m", "example_batch"));
        assert_eq!(v2.encoded_len(), infer.encoded_len() as u64);
        assert_eq!(Protocol::default().name(), "v1");
    }
}
