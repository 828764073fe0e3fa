//! `inference.GRPCInferenceService`: the Open Inference Protocol (KServe v2)
//! on fex-server's own port, beside fex.v1. A model's input is one BYTES
//! tensor of serialized samples; its outputs are fex's tensors under the v2
//! names of `fex::oip`, in `raw_output_contents` (buffers moved, as fex.v1
//! moves them). A model with an `upstream:` answers with its model server's
//! outputs instead. Errors carry fex.v1's codes and messages.

use std::sync::Arc;

use fex::oip;
use fex::proto::fex_v1::extract_request::Payload;
use fex::proto::fex_v1::{ExampleList, ExtractRequest};
use fex::proto::inference::*;
use prost::Message;
use tonic::{Request, Response, Status};

use crate::inference_stub::grpc_inference_service_server::GrpcInferenceService;
use crate::layers::{CallDeadline, CallModel, HeldRequest};
use crate::registry::Model;
use crate::request_log::Pending;
use crate::service::ExtractorService;
use crate::status::{ServeError, quoted};

/// What ServerMetadata names this server.
pub const SERVER_NAME: &str = "fex";
/// The platform ModelMetadata reports for fex's models.
pub const PLATFORM: &str = "fex";

pub struct InferenceService {
    pub extractor: ExtractorService,
}

#[tonic::async_trait]
impl GrpcInferenceService for InferenceService {
    async fn server_live(&self, _: Request<ServerLiveRequest>) -> Result<Response<ServerLiveResponse>, Status> {
        Ok(Response::new(ServerLiveResponse { live: true }))
    }

    async fn server_ready(&self, _: Request<ServerReadyRequest>) -> Result<Response<ServerReadyResponse>, Status> {
        let ready = !self.extractor.registry.all().is_empty();
        Ok(Response::new(ServerReadyResponse { ready }))
    }

    /// Ready when the model (and version, if given) is loaded and, for a
    /// model that forwards, its upstream model says it is ready. An unknown
    /// model is not ready (Triton answers the same), not an error.
    async fn model_ready(&self, request: Request<ModelReadyRequest>) -> Result<Response<ModelReadyResponse>, Status> {
        let call = request.extensions().get::<CallModel>().cloned();
        let ModelReadyRequest { name, version } = request.into_inner();
        let Some(model) = self.extractor.registry.get(&name) else {
            return Ok(Response::new(ModelReadyResponse { ready: false }));
        };
        if let Some(call) = call {
            call.set(&model.plan.name);
        }
        let mut ready = version.is_empty() || version == model.version;
        if let (true, Some(up)) = (ready, &model.plan.upstream) {
            ready = crate::upstream::ready(&self.extractor, up).await;
        }
        Ok(Response::new(ModelReadyResponse { ready }))
    }

    async fn server_metadata(
        &self,
        _: Request<ServerMetadataRequest>,
    ) -> Result<Response<ServerMetadataResponse>, Status> {
        Ok(Response::new(ServerMetadataResponse {
            name: SERVER_NAME.to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            extensions: Vec::new(),
        }))
    }

    /// Inputs: `example_batch` and `examples`. Outputs: every v2 tensor of
    /// the model's outputs, or, for a model that forwards, the upstream
    /// model's outputs the config returns (asked of the upstream).
    async fn model_metadata(
        &self,
        request: Request<ModelMetadataRequest>,
    ) -> Result<Response<ModelMetadataResponse>, Status> {
        let call = request.extensions().get::<CallModel>().cloned();
        let ModelMetadataRequest { name, version } = request.into_inner();
        let model = self.model(&name, &version, call.as_ref())?;
        let outputs = match &model.plan.upstream {
            Some(up) => {
                let meta = crate::upstream::metadata(&self.extractor.upstreams, up, up.timeout).await?;
                meta.outputs.into_iter().filter(|o| up.outputs.is_empty() || up.outputs.contains(&o.name)).collect()
            }
            None => model.plan.signature().iter().flat_map(oip::output_metadata).collect(),
        };
        Ok(Response::new(ModelMetadataResponse {
            name: model.plan.name.clone(),
            versions: vec![model.version.clone()],
            platform: PLATFORM.to_string(),
            inputs: oip::input_metadata(),
            outputs,
        }))
    }

    async fn model_infer(&self, request: Request<ModelInferRequest>) -> Result<Response<ModelInferResponse>, Status> {
        let call = request.extensions().get::<CallModel>().cloned();
        let deadline = request.extensions().get::<CallDeadline>().copied();
        let held = request.extensions().get::<HeldRequest>().cloned();
        let request_id = request.metadata().get("x-request-id").and_then(|v| v.to_str().ok()).map(str::to_string);
        let request = request.into_inner();
        let name = request.model_name.clone();
        let span = tracing::info_span!("model_infer", model = %quoted(&name));
        let result = tracing::Instrument::instrument(self.infer(request, call, deadline, held, request_id), span).await;
        result.map(Response::new).map_err(|e| {
            if e.code() == tonic::Code::Internal {
                tracing::error!(model = %quoted(&name), error = %e, "extraction panicked");
            } else {
                tracing::debug!(model = %quoted(&name), error = %e, "request rejected");
            }
            e.into()
        })
    }
}

impl InferenceService {
    /// The model a call names, labelled on the call's metrics; a version,
    /// if given, must be the loaded one.
    fn model(&self, name: &str, version: &str, call: Option<&CallModel>) -> Result<Arc<Model>, ServeError> {
        let model = self.extractor.lookup(name)?;
        if let Some(call) = call {
            call.set(&model.plan.name);
        }
        if !version.is_empty() && version != model.version {
            let (name, asked, loaded) = (quoted(name).to_string(), quoted(version).to_string(), model.version.clone());
            return Err(ServeError::VersionNotFound { name, asked, loaded });
        }
        Ok(model)
    }

    async fn infer(
        &self,
        mut request: ModelInferRequest,
        call: Option<CallModel>,
        deadline: Option<CallDeadline>,
        held: Option<HeldRequest>,
        request_id: Option<String>,
    ) -> Result<ModelInferResponse, ServeError> {
        let model = self.model(&request.model_name, &request.model_version, call.as_ref())?;
        let samples = oip::samples(&mut request).map_err(|e| ServeError::BadInput(e.to_string()))?;
        let payload = match samples {
            oip::Samples::Batch(b) => Payload::ExampleBatch(b),
            oip::Samples::Examples(example) => Payload::Examples(ExampleList { example }),
        };
        let asked: Vec<String> = request.outputs.iter().map(|o| o.name.clone()).collect();
        let mut response = ModelInferResponse {
            model_name: model.plan.name.clone(),
            model_version: model.version.clone(),
            id: request.id.clone(),
            ..Default::default()
        };
        if let Some(up) = &model.plan.upstream {
            self.log(&model, &payload, &[], request_id);
            let forwarded = crate::upstream::forward(&self.extractor, &model, up, payload, deadline, held).await?;
            let limit = self.extractor.max_response_bytes;
            (response.outputs, response.raw_output_contents) = forwarded.outputs(&asked, up, limit)?;
            return Ok(response);
        }
        // Most calls ask for everything: no signature is built for them.
        let selection = match asked.is_empty() {
            true => oip::Selection::default(),
            false => {
                let names: Vec<&str> = asked.iter().map(String::as_str).collect();
                oip::select(&names, &model.plan.signature()).map_err(|e| ServeError::UnknownOutput(e.to_string()))?
            }
        };
        let selected = match selection.outputs.is_empty() {
            true => None,
            false => Some(crate::service::select(&model, &selection.outputs)?),
        };
        self.log(&model, &payload, &selection.outputs, request_id);
        let out = self.extractor.extract(&model, payload, selected, deadline, held).await?;
        for t in self.extractor.tensors(&model, out)? {
            oip::push_outputs(t, &selection, &mut response.outputs, &mut response.raw_output_contents);
        }
        Ok(response)
    }

    /// Offers a sampled call to the request log as the fex.v1 request that
    /// asks the same (the log's records are fex.v1 requests, whichever
    /// protocol the call came in).
    fn log(&self, model: &Arc<Model>, payload: &Payload, outputs: &[String], request_id: Option<String>) {
        let Some(log) = self.extractor.request_log.as_ref().filter(|log| log.sampled()) else { return };
        let request = ExtractRequest {
            model: model.plan.name.clone(),
            payload: Some(payload.clone()),
            outputs: outputs.to_vec(),
        };
        log.offer(Pending {
            request: request.encode_to_vec().into(),
            model: Arc::clone(model),
            request_id: request_id.unwrap_or_else(|| log.next_id()),
        });
    }
}
