//! Forwarding to a v2 model server (a model config's `upstream:`): the
//! model's tensors are extracted as for any call, sent as one ModelInfer
//! with the extraction's buffers (moved, never copied beyond gRPC's own
//! encoding), and the model's outputs come back to the caller. Connections
//! are made lazily, kept per upstream, bounded by `max_connections`, and
//! shared by every call; a call's remaining deadline bounds the upstream
//! call, and dropping the call (the caller cancelled, or fex cut it at that
//! deadline) resets the upstream stream. fex always cuts first: the
//! upstream is told a deadline `UPSTREAM_SLACK` later (see there why).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use dashmap::DashMap;
use fex::config::Upstream;
use fex::oip;
use fex::proto::fex_v1::extract_request::Payload;
use fex::proto::inference::model_infer_response::InferOutputTensor;
use fex::proto::inference::{
    ModelInferRequest, ModelInferResponse, ModelMetadataRequest, ModelMetadataResponse, ModelReadyRequest,
    ModelReadyResponse,
};
use tonic::Code;
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};

use crate::codec::{RequestMessage, ResponseEncoder};
use crate::layers::{CallDeadline, HeldRequest};
use crate::metrics::{Metrics, UpstreamLabels};
use crate::registry::Model;
use crate::service::ExtractorService;
use crate::status::ServeError;

/// The connections to every upstream in use, by address and TLS settings.
#[derive(Default)]
pub struct Upstreams {
    clients: DashMap<String, Arc<Connections>>,
}

/// Up to `max_connections` HTTP/2 connections to one upstream, each made
/// on first use (and again after a failure), taken in turn by calls.
struct Connections {
    channels: Vec<Channel>,
    next: AtomicUsize,
}

impl Upstreams {
    fn connections(&self, up: &Upstream) -> Result<Arc<Connections>, ServeError> {
        let key = format!("{}|{:?}|{}", up.address, up.tls, up.max_connections);
        if let Some(c) = self.clients.get(&key) {
            return Ok(Arc::clone(&c));
        }
        let endpoint = endpoint(up)?;
        let channels = (0..up.max_connections).map(|_| endpoint.connect_lazy()).collect();
        let made = Arc::new(Connections { channels, next: AtomicUsize::new(0) });
        Ok(Arc::clone(&self.clients.entry(key).or_insert(made)))
    }

    fn channel(&self, up: &Upstream) -> Result<Channel, ServeError> {
        let c = self.connections(up)?;
        let i = c.next.fetch_add(1, Ordering::Relaxed) % c.channels.len();
        Ok(c.channels[i].clone())
    }
}

/// The endpoint of `up`, with its TLS settings read and checked.
pub fn endpoint(up: &Upstream) -> Result<Endpoint, ServeError> {
    let unusable = |message: String| upstream_error(up, Code::Unavailable, message);
    let mut endpoint = Endpoint::from_shared(up.address.clone())
        .map_err(|e| unusable(format!("bad address: {e}")))?
        .connect_timeout(up.timeout.max(Duration::from_millis(100)))
        .tcp_nodelay(true)
        .initial_stream_window_size(Some(4 << 20))
        .initial_connection_window_size(Some(16 << 20));
    if let Some(tls) = &up.tls {
        let pem = std::fs::read(&tls.ca).map_err(|e| unusable(format!("reading tls.ca {}: {e}", tls.ca.display())))?;
        let mut config = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(pem));
        if let Some(domain) = &tls.domain {
            config = config.domain_name(domain.clone());
        }
        endpoint = endpoint.tls_config(config).map_err(|e| unusable(format!("TLS settings: {e}")))?;
    }
    Ok(endpoint)
}

/// An error of the upstream, named, with the code the caller gets.
fn upstream_error(up: &Upstream, code: Code, message: String) -> ServeError {
    ServeError::Upstream { code, message: format!("upstream {} model {:?}: {message}", up.address, up.model) }
}

/// What the upstream model answered, and the rows it was given.
pub struct Forwarded {
    pub batch_size: usize,
    pub response: ModelInferResponse,
}

impl Forwarded {
    /// The model's outputs, as fex.v1 tensors (dense, or strings for BYTES):
    /// the ones asked for, else the config's `outputs`, else all.
    /// An output fex.v1 cannot carry (FP16, BOOL, ...) is the config's
    /// doing, not a passing failure: FAILED_PRECONDITION.
    pub fn tensors(self, asked: &[String], up: &Upstream, limit: usize) -> Result<Vec<fex::Tensor>, ServeError> {
        let (outputs, raw) = self.outputs(asked, up, limit)?;
        let tensors: Vec<fex::Tensor> = outputs
            .iter()
            .zip(raw)
            .map(|(o, r)| {
                oip::tensor_of_output(o, r).map_err(|e| {
                    let code = match e {
                        oip::ContentsError::Datatype { .. } => Code::FailedPrecondition,
                        _ => Code::Unavailable,
                    };
                    upstream_error(up, code, e.to_string())
                })
            })
            .collect::<Result<_, _>>()?;
        // Strings grow by their splits: the answer is checked as sent.
        let size: usize = tensors.iter().map(|t| t.values.len() + t.row_splits.len()).sum();
        if size > limit {
            return Err(ServeError::ResponseTooLarge { found: size, limit });
        }
        Ok(tensors)
    }

    /// The model's outputs as v2 tensors with raw contents (typed contents,
    /// which servers other than Triton may send, are laid out raw).
    pub fn outputs(
        self,
        asked: &[String],
        up: &Upstream,
        limit: usize,
    ) -> Result<(Vec<InferOutputTensor>, Vec<Bytes>), ServeError> {
        let ModelInferResponse { outputs, raw_output_contents: mut raw, .. } = self.response;
        if !raw.is_empty() && raw.len() != outputs.len() {
            let message = format!("answered {} outputs with {} raw contents", outputs.len(), raw.len());
            return Err(upstream_error(up, Code::Unavailable, message));
        }
        if raw.is_empty() {
            raw = outputs
                .iter()
                .map(|o| o.contents.as_ref().map(|c| oip::raw_of_contents(&o.datatype, c)).unwrap_or_default())
                .collect();
        }
        let wanted: &[String] = if asked.is_empty() { &up.outputs } else { asked };
        if let Some(missing) = wanted.iter().find(|w| outputs.iter().all(|o| &o.name != *w)) {
            let known: Vec<&str> = outputs.iter().map(|o| o.name.as_str()).collect();
            let missing = oip::clipped(missing);
            let message = format!("model {:?} gave no output {missing}; it gave {}", up.model, known.join(", "));
            return Err(ServeError::UnknownOutput(message));
        }
        let keep = |o: &InferOutputTensor| wanted.is_empty() || wanted.contains(&o.name);
        let (mut kept, mut kept_raw) = (Vec::new(), Vec::new());
        for (mut o, r) in outputs.into_iter().zip(raw) {
            if keep(&o) {
                o.contents = None;
                kept.push(o);
                kept_raw.push(r);
            }
        }
        let size: usize = kept_raw.iter().map(Bytes::len).sum();
        if size > limit {
            return Err(ServeError::ResponseTooLarge { found: size, limit });
        }
        Ok((kept, kept_raw))
    }
}

/// Extracts `payload` with `model` and runs the upstream model on it.
pub async fn forward(
    service: &ExtractorService,
    model: &Arc<Model>,
    up: &Upstream,
    payload: Payload,
    deadline: Option<CallDeadline>,
    held: Option<HeldRequest>,
) -> Result<Forwarded, ServeError> {
    let selection = model.upstream_selection().map_err(ServeError::UnknownOutput)?;
    let selected = crate::service::select(model, &selection.outputs)?;
    let out = service.extract(model, payload, Some(selected), deadline, held).await?;
    let batch_size = out.batch_size;
    let (mut outputs, mut raw) = (Vec::new(), Vec::new());
    for t in service.tensors(model, out)? {
        oip::push_outputs(t, selection, &mut outputs, &mut raw);
    }
    // Unreachable for a config that loaded: the mapping was checked then.
    let request = up.request(&outputs, &raw, &[]).map_err(|e| ServeError::UnknownOutput(e.to_string()))?;
    let response = infer(service, model, up, request, deadline).await?;
    Ok(Forwarded { batch_size, response })
}

/// How long an upstream call may take, and the deadline a call cut for
/// want of time names: the caller's (200ms) when what is left of it is
/// shorter than the config's timeout, else the timeout.
#[derive(Clone, Copy, Debug)]
struct Budget {
    left: Duration,
    deadline: Duration,
}

impl Budget {
    /// `deadline` to spend whole (no caller's deadline to share).
    fn whole(deadline: Duration) -> Self {
        Self { left: deadline, deadline }
    }

    fn of_call(up: &Upstream, deadline: Option<CallDeadline>) -> Self {
        match deadline {
            Some(d) => match d.at.saturating_duration_since(Instant::now()) {
                left if left < up.timeout => Self { left, deadline: d.budget },
                _ => Self::whole(up.timeout),
            },
            None => Self::whole(up.timeout),
        }
    }
}

/// How much later than fex's own cut the upstream's deadline (the
/// `grpc-timeout` fex sends) falls.
///
/// fex cuts an upstream call when its budget is spent by dropping it, which
/// resets the stream (RST_STREAM(CANCEL)); the upstream learns of the cut
/// from that reset, at the caller's deadline. Were the upstream told the
/// same deadline, its own timer would race fex's: Triton 2.51 ends a stream
/// whose deadline passed with its closing HEADERS (grpc-status 4) and
/// RST_STREAM(NO_ERROR), then sends that pair again, up to four times, and
/// the h2 crate (0.4.20) takes a second closing HEADERS on a stream it saw
/// closed, or reset by the peer while fex's own reset was still queued, as
/// a connection error: GOAWAY, and every call on the shared connection
/// fails (docs/upstream-reports/h2-frames-after-reset.md). Frames that
/// arrive after fex's reset went out are discarded, so fex must reset
/// first: the slack covers fex's timer firing late and its reset waiting
/// to be written. It costs nothing: the upstream still hears of the cut at
/// the deadline, through the reset; its own timer is only the backstop.
pub const UPSTREAM_SLACK: Duration = Duration::from_millis(250);

/// One unary call to the upstream, cut when `budget` is spent, its failures
/// mapped to statuses that name the upstream; counted in /metrics.
async fn call<Q, R>(
    upstreams: &Upstreams,
    max_response_bytes: usize,
    up: &Upstream,
    path: &'static str,
    request: Q,
    budget: Budget,
) -> Result<R, ServeError>
where
    Q: prost::Message + Send + Sync + 'static,
    R: RequestMessage + Default + Sync,
{
    let channel = upstreams.channel(up)?;
    let mut grpc = tonic::client::Grpc::new(channel).max_decoding_message_size(max_response_bytes);
    let mut request = tonic::Request::new(request);
    request.set_timeout(budget.left + UPSTREAM_SLACK);
    let started = Instant::now();
    let call = async {
        grpc.ready().await.map_err(|e| tonic::Status::unavailable(format!("connecting: {e}")))?;
        grpc.unary(request, PathAndQuery::from_static(path), AnswerCodec::<Q, R>::default()).await
    };
    match tokio::time::timeout(budget.left, call).await {
        Ok(Ok(response)) => Ok(response.into_inner()),
        Ok(Err(status)) => Err(mapped(up, &status, budget, started.elapsed() >= budget.left)),
        Err(_) => Err(deadline_exceeded(up, budget)),
    }
}

/// A call cut because its budget was spent, in the words of every
/// DEADLINE_EXCEEDED fex answers.
fn deadline_exceeded(up: &Upstream, budget: Budget) -> ServeError {
    ServeError::UpstreamDeadline { deadline: budget.deadline, upstream: format!("{} model {:?}", up.address, up.model) }
}

/// The client side of a call to an upstream: requests encoded once into a
/// buffer of their whole length (as fex's own responses), answers decoded
/// from the received bytes (raw contents are slices of them). An answer
/// that does not decode is the upstream's fault: UNAVAILABLE, never the
/// INVALID_ARGUMENT the server's codec gives a caller's bad request.
struct AnswerCodec<Q, R>(std::marker::PhantomData<(Q, R)>);

impl<Q, R> Default for AnswerCodec<Q, R> {
    fn default() -> Self {
        Self(std::marker::PhantomData)
    }
}

impl<Q, R> tonic::codec::Codec for AnswerCodec<Q, R>
where
    Q: prost::Message + Send + 'static,
    R: RequestMessage,
{
    type Encode = Q;
    type Decode = R;
    type Encoder = ResponseEncoder<Q>;
    type Decoder = AnswerDecoder<R>;

    fn encoder(&mut self) -> Self::Encoder {
        ResponseEncoder::default()
    }

    fn decoder(&mut self) -> Self::Decoder {
        AnswerDecoder(std::marker::PhantomData)
    }
}

struct AnswerDecoder<R>(std::marker::PhantomData<R>);

impl<R: RequestMessage> tonic::codec::Decoder for AnswerDecoder<R> {
    type Item = R;
    type Error = tonic::Status;

    fn decode(&mut self, buf: &mut tonic::codec::DecodeBuf<'_>) -> Result<Option<R>, tonic::Status> {
        use bytes::Buf;
        let bytes = buf.copy_to_bytes(buf.remaining());
        R::decode_request(bytes)
            .map(Some)
            .map_err(|e| tonic::Status::unavailable(format!("the answer does not decode: {e}")))
    }
}

/// An upstream status as the caller sees it: the model's own
/// INVALID_ARGUMENT and an overload pass through; once the budget is spent
/// (`expired`) a deadline or a reset is the call's deadline; the
/// upstream's DEADLINE_EXCEEDED with time left (its own policy, such as a
/// queue timeout) passes through naming it; anything else, CANCELLED with
/// time left included (the connection went away under the call: hyper's
/// "operation was canceled"), means the upstream cannot serve (UNAVAILABLE).
fn mapped(up: &Upstream, status: &tonic::Status, budget: Budget, expired: bool) -> ServeError {
    let code = match status.code() {
        Code::DeadlineExceeded | Code::Cancelled if expired => return deadline_exceeded(up, budget),
        Code::InvalidArgument => Code::InvalidArgument,
        Code::DeadlineExceeded => Code::DeadlineExceeded,
        // OUT_OF_RANGE: tonic's client refusing an answer over
        // --max-response-bytes, which fex answers RESOURCE_EXHAUSTED.
        Code::ResourceExhausted | Code::OutOfRange => Code::ResourceExhausted,
        _ => Code::Unavailable,
    };
    upstream_error(up, code, format!("{:?}: {}", status.code(), status.message()))
}

async fn infer(
    service: &ExtractorService,
    model: &Model,
    up: &Upstream,
    request: ModelInferRequest,
    deadline: Option<CallDeadline>,
) -> Result<ModelInferResponse, ServeError> {
    let counted = Counted { metrics: &service.metrics, model: &model.plan.name, started: Instant::now(), code: None };
    let path = "/inference.GRPCInferenceService/ModelInfer";
    let limit = service.max_response_bytes;
    let result = call(&service.upstreams, limit, up, path, request, Budget::of_call(up, deadline)).await;
    counted.finish(match &result {
        Ok(_) => "Ok",
        Err(e) => crate::layers::code_name(e.code()),
    });
    result
}

/// One ModelInfer call to an upstream, counted in `fex_upstream_calls_total`
/// and `fex_upstream_duration_seconds` once: with its status when it
/// finishes, or as `Cancelled` when the caller goes away first and the
/// call's future is dropped mid-flight.
struct Counted<'a> {
    metrics: &'a Metrics,
    model: &'a str,
    started: Instant,
    code: Option<&'static str>,
}

impl Counted<'_> {
    fn finish(mut self, code: &'static str) {
        self.code = Some(code);
    }
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        let code = self.code.unwrap_or("Cancelled");
        let labels = UpstreamLabels { model: self.model.to_string(), code };
        self.metrics.upstream_calls.get_or_create(&labels).inc();
        let model_label = Metrics::model(self.model);
        self.metrics.upstream_latency.get_or_create(&model_label).observe(self.started.elapsed().as_secs_f64());
    }
}

/// Whether the upstream model is ready (false when it cannot be asked).
pub async fn ready(service: &ExtractorService, up: &Upstream) -> bool {
    let request = ModelReadyRequest { name: up.model.clone(), version: up.version.clone() };
    let path = "/inference.GRPCInferenceService/ModelReady";
    let limit = service.max_response_bytes;
    let budget = Budget::whole(up.timeout);
    let answer: Result<ModelReadyResponse, _> = call(&service.upstreams, limit, up, path, request, budget).await;
    answer.is_ok_and(|r| r.ready)
}

/// The upstream model's metadata, asked within `budget`.
pub async fn metadata(
    upstreams: &Upstreams,
    up: &Upstream,
    budget: Duration,
) -> Result<ModelMetadataResponse, ServeError> {
    let request = ModelMetadataRequest { name: up.model.clone(), version: up.version.clone() };
    let path = "/inference.GRPCInferenceService/ModelMetadata";
    call(upstreams, METADATA_LIMIT, up, path, request, Budget::whole(budget)).await
}

/// Largest metadata answer taken (far above any model's).
const METADATA_LIMIT: usize = 16 << 20;

/// What `--check-config` found of a model's upstream.
pub enum Checked {
    /// Every input and output of the mapping is on the model, as declared.
    Matches,
    /// The model is there and the mapping does not fit it.
    Mismatch(Vec<String>),
    /// The upstream could not be asked (the mapping is unchecked).
    Unreachable(String),
}

/// Checks `up`'s mapping against its model's metadata, if it answers
/// within `budget`.
pub async fn check(up: &Upstream, budget: Duration) -> Checked {
    match metadata(&Upstreams::default(), up, budget).await {
        Ok(meta) => match check_mapping(up, &meta) {
            problems if problems.is_empty() => Checked::Matches,
            problems => Checked::Mismatch(problems),
        },
        Err(e) => Checked::Unreachable(e.to_string()),
    }
}

/// What `--check-config` says of a mapping, given the upstream's metadata:
/// every input it names, with the declared datatype, and every output.
pub fn check_mapping(up: &Upstream, meta: &ModelMetadataResponse) -> Vec<String> {
    let mut problems = Vec::new();
    for input in &up.inputs {
        match meta.inputs.iter().find(|m| m.name == input.name) {
            None => problems.push(format!("the model has no input {:?}", input.name)),
            Some(m) if m.datatype != input.datatype => problems.push(format!(
                "input {:?} is {} on the model, {} in the mapping",
                input.name, m.datatype, input.datatype
            )),
            Some(_) => {}
        }
    }
    for m in &meta.inputs {
        if up.inputs.iter().all(|i| i.name != m.name) {
            problems.push(format!("the model's input {:?} is not mapped", m.name));
        }
    }
    for name in &up.outputs {
        if meta.outputs.iter().all(|m| &m.name != name) {
            problems.push(format!("the model has no output {name:?}"));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upstream() -> Upstream {
        Upstream {
            address: "http://127.0.0.1:8001".into(),
            tls: None,
            model: "ranker".into(),
            version: String::new(),
            timeout: Duration::from_secs(1),
            max_connections: 1,
            inputs: Vec::new(),
            outputs: Vec::new(),
        }
    }

    #[test]
    fn a_reset_or_deadline_is_the_calls_deadline_only_once_the_budget_is_spent() {
        let up = upstream();
        let budget = Budget { left: Duration::from_millis(150), deadline: Duration::from_millis(200) };
        let check = |status: tonic::Status, expired: bool, code: Code, message: &str| {
            let e = mapped(&up, &status, budget, expired);
            assert_eq!((e.code(), e.to_string().as_str()), (code, message), "{status:?} expired={expired}");
        };
        let cut = r#"deadline of 200ms exceeded waiting for upstream http://127.0.0.1:8001 model "ranker""#;
        check(tonic::Status::cancelled("operation was canceled"), true, Code::DeadlineExceeded, cut);
        check(tonic::Status::deadline_exceeded("Deadline Exceeded"), true, Code::DeadlineExceeded, cut);
        // With time left, a reset is the connection going away under the
        // call, and the upstream's own DEADLINE_EXCEEDED its own policy.
        let at = r#"upstream http://127.0.0.1:8001 model "ranker": "#;
        let canceled = format!("{at}Cancelled: operation was canceled");
        check(tonic::Status::cancelled("operation was canceled"), false, Code::Unavailable, &canceled);
        let queue = format!("{at}DeadlineExceeded: queue timeout");
        check(tonic::Status::deadline_exceeded("queue timeout"), false, Code::DeadlineExceeded, &queue);
        let bad = format!("{at}InvalidArgument: bad");
        check(tonic::Status::invalid_argument("bad"), true, Code::InvalidArgument, &bad);
    }

    #[test]
    fn the_deadline_named_is_the_callers_unless_the_upstreams_timeout_is_shorter() {
        let up = upstream();
        let caller =
            |ms| CallDeadline { at: Instant::now() + Duration::from_millis(ms), budget: Duration::from_millis(ms) };
        let b = Budget::of_call(&up, Some(caller(200)));
        assert_eq!(b.deadline, Duration::from_millis(200));
        assert!(b.left <= Duration::from_millis(200));
        let b = Budget::of_call(&up, Some(caller(5000)));
        assert_eq!((b.left, b.deadline), (up.timeout, up.timeout));
        let b = Budget::of_call(&up, None);
        assert_eq!((b.left, b.deadline), (up.timeout, up.timeout));
    }
}
