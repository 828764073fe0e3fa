//! `fex.v1.FeatureExtractor`: looks the model up, hands the request's bytes
//! (shared with tonic's buffer, never copied) to the extraction pool, and
//! answers with the library's tensors as they are.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;

use fex::proto::fex_v1::extract_request::Payload;
use fex::proto::fex_v1::{
    DescribeModelRequest, DescribeModelResponse, ExtractRequest, ExtractResponse, ListModelsRequest,
    ListModelsResponse, ModelInfo,
};
use fex::{Extracted, Extractor};
use tonic::{Request, Response, Status};

use crate::codec::ExtractCall;
use crate::layers::{CallDeadline, CallModel, HeldRequest};
use crate::metrics::Metrics;
use crate::pool::{Pool, Refused};
use crate::registry::{Model, Registry};
use crate::request_log::{Pending, RequestLog};
use crate::status::{ECHO_LIMIT, ServeError, quoted};
use crate::stub::feature_extractor_server::FeatureExtractor;
use crate::upstream::Upstreams;

#[derive(Clone)]
pub struct ExtractorService {
    pub registry: Arc<Registry>,
    pub metrics: Arc<Metrics>,
    pub pool: Arc<Pool>,
    pub max_response_bytes: usize,
    /// --request-log, if on.
    pub request_log: Option<Arc<RequestLog>>,
    /// Connections to the model servers that models forward to.
    pub upstreams: Arc<Upstreams>,
}

#[tonic::async_trait]
impl FeatureExtractor for ExtractorService {
    async fn extract(&self, request: Request<ExtractCall>) -> Result<Response<ExtractResponse>, Status> {
        let call = request.extensions().get::<CallModel>().cloned();
        let deadline = request.extensions().get::<CallDeadline>().copied();
        let held = request.extensions().get::<HeldRequest>().cloned();
        let request_id = request.metadata().get("x-request-id").and_then(|v| v.to_str().ok()).map(str::to_string);
        let ExtractCall { mut request, bytes } = request.into_inner();
        let span = tracing::info_span!("extract", model = %quoted(&request.model), bytes = payload_len(&request));
        let result = async {
            let model = self.lookup(&request.model)?;
            // Label the call's metrics with a model the registry knows; the
            // metrics layer counts it (requests, latency) when it is answered.
            if let Some(call) = &call {
                call.set(&model.plan.name);
            }
            // A sampled call keeps its request's bytes as they arrived
            // (shared, not copied) for the log, queued once answered.
            let logged = self.request_log.as_ref().filter(|log| log.sampled()).map(|log| (log, bytes));
            let response = self.handle(Arc::clone(&model), &mut request, deadline, held).await?;
            if let Some((log, request)) = logged {
                let request_id = request_id.unwrap_or_else(|| log.next_id());
                log.offer(Pending { request, model: Arc::clone(&model), request_id });
            }
            Ok::<_, ServeError>(response)
        };
        let result = tracing::Instrument::instrument(result, span).await;
        match result {
            Ok(response) => Ok(Response::new(response)),
            Err(e) => {
                if e.code() == tonic::Code::Internal {
                    tracing::error!(model = %quoted(&request.model), error = %e, "extraction panicked");
                } else {
                    tracing::debug!(model = %quoted(&request.model), error = %e, "request rejected");
                }
                Err(e.into())
            }
        }
    }

    async fn list_models(&self, _: Request<ListModelsRequest>) -> Result<Response<ListModelsResponse>, Status> {
        let models = self
            .registry
            .all()
            .iter()
            .map(|m| ModelInfo {
                name: m.plan.name.clone(),
                version: m.version.clone(),
                outputs: m.plan.visible().count() as i32,
            })
            .collect();
        Ok(Response::new(ListModelsResponse { models }))
    }

    async fn describe_model(
        &self,
        request: Request<DescribeModelRequest>,
    ) -> Result<Response<DescribeModelResponse>, Status> {
        let call = request.extensions().get::<CallModel>().cloned();
        let name = request.into_inner().model;
        let model = self.lookup(&name)?;
        if let Some(call) = call {
            call.set(&model.plan.name);
        }
        Ok(Response::new(DescribeModelResponse {
            model: model.plan.name.clone(),
            version: model.version.clone(),
            compat: model.plan.compat.as_str().to_string(),
            outputs: model.plan.signature(),
        }))
    }
}

impl ExtractorService {
    pub(crate) fn lookup(&self, name: &str) -> Result<Arc<Model>, ServeError> {
        self.registry.get(name).ok_or_else(|| ServeError::UnknownModel {
            name: quoted(name).to_string(),
            known: self.registry.names().join(", "),
        })
    }

    /// Runs the extraction on `model`, which the call holds (a reload
    /// mid-call does not change its plan), on a pool thread.
    async fn handle(
        &self,
        model: Arc<Model>,
        request: &mut ExtractRequest,
        deadline: Option<CallDeadline>,
        held: Option<HeldRequest>,
    ) -> Result<ExtractResponse, ServeError> {
        let payload = request.payload.take().ok_or(ServeError::NoPayload)?;
        if let Some(upstream) = &model.plan.upstream {
            let forwarded = crate::upstream::forward(self, &model, upstream, payload, deadline, held).await?;
            let batch_size = forwarded.batch_size as i32;
            let tensors = forwarded.tensors(&request.outputs, upstream, self.max_response_bytes)?;
            return Ok(ExtractResponse {
                model: model.plan.name.clone(),
                model_version: model.version.clone(),
                batch_size,
                tensors,
            });
        }
        let selected = if request.outputs.is_empty() { None } else { Some(select(&model, &request.outputs)?) };
        let out = self.extract(&model, payload, selected, deadline, held).await?;
        let batch_size = out.batch_size;
        // The columns' buffers move into the tensors as `Bytes`: prost copies
        // them once, when tonic encodes the response.
        let tensors = self.tensors(&model, out)?;
        Ok(ExtractResponse {
            model: model.plan.name.clone(),
            model_version: model.version.clone(),
            batch_size: batch_size as i32,
            tensors,
        })
    }

    /// Extracts `payload` with `model`'s plan on a pool thread, within the
    /// call's deadline; counts the sample bytes read. The job keeps the
    /// request's `held` bytes in the budget while it keeps the payload.
    pub(crate) async fn extract(
        &self,
        model: &Arc<Model>,
        payload: Payload,
        selected: Option<Vec<usize>>,
        deadline: Option<CallDeadline>,
        held: Option<HeldRequest>,
    ) -> Result<Extracted, ServeError> {
        let bytes = payload_bytes(&payload);
        let job_model = Arc::clone(model);
        let job = self
            .pool
            .run(deadline.map(|d| d.at), move |ex| {
                let out = run_extraction(ex, &job_model, &payload, selected.as_deref());
                drop((payload, held));
                out
            })
            .map_err(|refused| self.refused(refused, deadline))?;
        let extracted = job.await.map_err(|refused| self.refused(refused, deadline))?;
        // Bytes the library read, whether or not they were good.
        let label = Metrics::model(&model.plan.name);
        self.metrics.request_bytes.get_or_create(&label).inc_by(bytes as u64);
        let out = extracted?;
        // A result that comes back after the deadline is not an answer.
        if let Some(d) = deadline
            && Instant::now() >= d.at
        {
            return Err(self.refused(Refused::Expired, deadline));
        }
        Ok(out)
    }

    /// The extraction's tensors (buffers moved), checked against
    /// --max-response-bytes and counted.
    pub(crate) fn tensors(&self, model: &Model, out: Extracted) -> Result<Vec<fex::Tensor>, ServeError> {
        let (batch_size, stats) = (out.batch_size, out.stats);
        let tensors = out.into_tensors();
        let size: usize = tensors.iter().map(tensor_bytes).sum();
        if size > self.max_response_bytes {
            return Err(ServeError::ResponseTooLarge { found: size, limit: self.max_response_bytes });
        }
        let label = Metrics::model(&model.plan.name);
        self.metrics.response_bytes.get_or_create(&label).inc_by(size as u64);
        self.metrics.rows.get_or_create(&label).inc_by(batch_size as u64);
        self.metrics.lists_decoded.get_or_create(&label).inc_by(stats.lists_decoded as u64);
        self.metrics.lists_skipped.get_or_create(&label).inc_by((stats.lists_seen - stats.lists_decoded) as u64);
        Ok(tensors)
    }

    /// The answer to a call the pool did not run, or ran too late.
    fn refused(&self, refused: Refused, deadline: Option<CallDeadline>) -> ServeError {
        match refused {
            Refused::Full { threads, max_queue } => {
                self.metrics.shed.inc();
                ServeError::QueueFull { threads, max_queue }
            }
            Refused::Expired => {
                self.metrics.deadline_exceeded.inc();
                ServeError::DeadlineExceeded { deadline: deadline.map(|d| d.budget).unwrap_or_default() }
            }
            Refused::Lost => ServeError::Internal,
        }
    }
}

/// The indices of the outputs a caller asked for. The library's message
/// echoes every name; a name that is no output and too long to echo whole is
/// refused here, clipped.
pub(crate) fn select(model: &Model, names: &[String]) -> Result<Vec<usize>, ServeError> {
    let plan = &model.plan;
    let unknown = |n: &String| plan.visible().all(|o| &o.name != n);
    if let Some(name) = names.iter().find(|n| n.len() > ECHO_LIMIT && unknown(n)) {
        let known: Vec<&str> = plan.visible().map(|o| o.name.as_str()).collect();
        let message = format!("model {:?} has no output {}; it has {}", plan.name, quoted(name), known.join(", "));
        return Err(ServeError::UnknownOutput(message));
    }
    plan.select(names).map_err(|e| ServeError::UnknownOutput(e.to_string()))
}

/// Runs the library with a pool thread's scratch; a panic (a bug) becomes
/// INTERNAL instead of a reset stream, and the scratch, which may be
/// half-written, is replaced.
fn run_extraction(
    ex: &mut Extractor,
    model: &Model,
    payload: &Payload,
    selected: Option<&[usize]>,
) -> Result<Extracted, ServeError> {
    let mut out = Extracted::default();
    let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
        let policy = fex::Policy { outputs: selected, ..Default::default() };
        match payload {
            Payload::ExampleBatch(bytes) => ex.extract(&model.plan, fex::Input::Batch(bytes), policy, &mut out),
            Payload::Examples(list) => {
                let rows: Vec<&[u8]> = list.example.iter().map(|b| b.as_ref()).collect();
                ex.extract(&model.plan, fex::Input::Examples(&rows), policy, &mut out)
            }
        }
    }));
    match result {
        Ok(r) => r.map(|()| out).map_err(ServeError::from),
        Err(_) => {
            *ex = Extractor::new();
            Err(ServeError::Internal)
        }
    }
}

fn payload_len(request: &ExtractRequest) -> usize {
    request.payload.as_ref().map_or(0, payload_bytes)
}

fn payload_bytes(payload: &Payload) -> usize {
    match payload {
        Payload::ExampleBatch(b) => b.len(),
        Payload::Examples(list) => list.example.iter().map(|b| b.len()).sum(),
    }
}

fn tensor_bytes(t: &fex::Tensor) -> usize {
    t.values.len() + t.row_splits.len() + t.weights.len() + t.lengths.len()
}
