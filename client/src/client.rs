//! `FexClient`: connect (plain or TLS), send ExampleBatches or Examples, get
//! typed tensors back.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use bytes::Bytes;
use fex::proto::fex_v1::extract_request::Payload;
use fex::proto::fex_v1::feature_extractor_client::FeatureExtractorClient;
use fex::proto::fex_v1::{
    DescribeModelRequest, DescribeModelResponse, ExampleList, ExtractRequest, ExtractResponse, ListModelsRequest,
    ModelInfo,
};
use fex::proto::monolith_pb::ExampleBatch;
use prost::Message;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

use crate::views::TensorView;

/// Largest HTTP/2 frame the client accepts (SETTINGS_MAX_FRAME_SIZE).
const MAX_FRAME_SIZE: u32 = 1 << 20;

/// How to reach a server.
#[derive(Debug, Clone, Default)]
pub struct ConnectOptions {
    /// `host:port`, or a full `http://` / `https://` URI.
    pub address: String,
    /// PEM CA to verify the server with; turns TLS on.
    pub tls_ca: Option<PathBuf>,
    /// Name to verify in the server certificate (default: the host).
    pub tls_domain: Option<String>,
    /// Client certificate and key (PEM), for mutual TLS.
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    pub connect_timeout: Option<Duration>,
}

impl ConnectOptions {
    pub fn plain(address: impl Into<String>) -> Self {
        Self { address: address.into(), ..Self::default() }
    }

    /// Whether the client speaks TLS to the server.
    pub fn tls(&self) -> bool {
        self.tls_ca.is_some() || self.tls_cert.is_some() || self.address.starts_with("https://")
    }

    /// An endpoint for these options; each `connect` of it is one HTTP/2 connection.
    pub fn endpoint(&self) -> anyhow::Result<Endpoint> {
        let tls = self.tls_ca.is_some() || self.tls_cert.is_some();
        let uri = if self.address.contains("://") {
            self.address.clone()
        } else {
            format!("{}://{}", if tls { "https" } else { "http" }, self.address)
        };
        // Responses of 100 KB to 2 MB arrive in frames of up to 1 MiB rather
        // than HTTP/2's default 16 KiB (benches/README.md, "Tuning").
        let mut endpoint = Endpoint::from_shared(uri.clone())
            .with_context(|| format!("bad address {uri:?}"))?
            .tcp_nodelay(true)
            .max_frame_size(MAX_FRAME_SIZE);
        if let Some(t) = self.connect_timeout {
            endpoint = endpoint.connect_timeout(t);
        }
        if tls {
            endpoint = endpoint.tls_config(self.tls_config()?)?;
        }
        Ok(endpoint)
    }

    fn tls_config(&self) -> anyhow::Result<ClientTlsConfig> {
        let read = |p: &PathBuf| std::fs::read(p).with_context(|| format!("reading {}", p.display()));
        let mut tls = ClientTlsConfig::new();
        if let Some(ca) = &self.tls_ca {
            tls = tls.ca_certificate(Certificate::from_pem(read(ca)?));
        }
        if let Some(domain) = &self.tls_domain {
            tls = tls.domain_name(domain.clone());
        }
        if let (Some(cert), Some(key)) = (&self.tls_cert, &self.tls_key) {
            tls = tls.identity(Identity::from_pem(read(cert)?, read(key)?));
        }
        Ok(tls)
    }
}

/// A connected client.
#[derive(Clone)]
pub struct FexClient {
    channel: Channel,
    extractor: FeatureExtractorClient<Channel>,
}

/// The tensors of one Extract call, by name.
#[derive(Debug, Clone)]
pub struct Extraction {
    pub response: ExtractResponse,
}

impl Extraction {
    pub fn batch_size(&self) -> usize {
        self.response.batch_size.max(0) as usize
    }

    pub fn names(&self) -> Vec<&str> {
        self.response.tensors.iter().map(|t| t.name.as_str()).collect()
    }

    /// The named tensor as a typed view.
    pub fn get(&self, name: &str) -> Option<TensorView> {
        self.response.tensors.iter().find(|t| t.name == name).map(TensorView::of)
    }

    /// Every tensor as a typed view.
    pub fn views(&self) -> HashMap<String, TensorView> {
        self.response.tensors.iter().map(|t| (t.name.clone(), TensorView::of(t))).collect()
    }
}

impl FexClient {
    pub async fn connect(options: &ConnectOptions) -> anyhow::Result<Self> {
        Ok(Self::from_channel(connect(options).await?))
    }

    pub fn from_channel(channel: Channel) -> Self {
        let extractor = FeatureExtractorClient::new(channel.clone()).max_decoding_message_size(usize::MAX);
        Self { channel, extractor }
    }

    /// Extracts a serialized ExampleBatch. The bytes are shared, not copied.
    pub async fn extract_bytes(&mut self, model: &str, batch: Bytes) -> Result<Extraction, tonic::Status> {
        self.extract(request(model, Payload::ExampleBatch(batch))).await
    }

    /// Extracts an ExampleBatch message.
    pub async fn extract_batch(&mut self, model: &str, batch: &ExampleBatch) -> Result<Extraction, tonic::Status> {
        self.extract_bytes(model, Bytes::from(batch.encode_to_vec())).await
    }

    /// Extracts serialized Examples, one per row.
    pub async fn extract_examples(&mut self, model: &str, examples: Vec<Bytes>) -> Result<Extraction, tonic::Status> {
        self.extract(request(model, Payload::Examples(ExampleList { example: examples }))).await
    }

    /// Sends a prepared request (an output subset, a deadline via `tonic::Request`).
    pub async fn extract(
        &mut self,
        request: impl tonic::IntoRequest<ExtractRequest>,
    ) -> Result<Extraction, tonic::Status> {
        let response = self.extractor.extract(request).await?.into_inner();
        Ok(Extraction { response })
    }

    pub async fn list_models(&mut self) -> Result<Vec<ModelInfo>, tonic::Status> {
        Ok(self.extractor.list_models(ListModelsRequest {}).await?.into_inner().models)
    }

    pub async fn describe(&mut self, model: &str) -> Result<DescribeModelResponse, tonic::Status> {
        Ok(self.extractor.describe_model(DescribeModelRequest { model: model.into() }).await?.into_inner())
    }

    /// grpc.health.v1 status of `service` ("" for the whole server), as its name.
    pub async fn health(&mut self, service: &str) -> Result<&'static str, tonic::Status> {
        let reply =
            HealthClient::new(self.channel.clone()).check(HealthCheckRequest { service: service.into() }).await?;
        Ok(match reply.into_inner().status {
            1 => "SERVING",
            2 => "NOT_SERVING",
            3 => "SERVICE_UNKNOWN",
            _ => "UNKNOWN",
        })
    }

    /// The raw generated client, for calls this wrapper does not cover.
    pub fn raw(&mut self) -> &mut FeatureExtractorClient<Channel> {
        &mut self.extractor
    }
}

/// One HTTP/2 connection; a failure says its cause in words (see `errors`),
/// with tonic's error chain beneath.
pub async fn connect(options: &ConnectOptions) -> anyhow::Result<Channel> {
    match options.endpoint()?.connect().await {
        Ok(channel) => Ok(channel),
        Err(e) => {
            let why = crate::errors::explain_connect(&e, options);
            Err(anyhow::Error::new(e).context(why))
        }
    }
}

/// An ExtractRequest for `model` with all outputs.
pub fn request(model: &str, payload: Payload) -> ExtractRequest {
    ExtractRequest { model: model.into(), payload: Some(payload), outputs: Vec::new() }
}
