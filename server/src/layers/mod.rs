//! tower layers of the gRPC stack. Each applies only to `fex.v1` calls, so
//! health checks and reflection streams are never shed or timed out.

mod admission;
mod deadline;
mod framing;
mod metrics;

pub use admission::{Admission, AdmissionLayer};
pub use deadline::{CallDeadline, Deadline, DeadlineLayer, parse_grpc_timeout};
pub use framing::{Framing, FramingLayer, HeldRequest, RequestBytes};
pub use metrics::{CallModel, MetricsLayer, NO_MODEL, RecordMetrics, code_name};

/// Calls the layers govern: the extraction services (fex.v1 and the Open
/// Inference Protocol's), not health, reflection or v2's liveness and
/// readiness probes.
fn governed(uri: &http::Uri) -> bool {
    let path = uri.path();
    path.starts_with("/fex.v1.")
        || (path.starts_with("/inference.GRPCInferenceService/")
            && !matches!(path.rsplit('/').next(), Some("ServerLive" | "ServerReady")))
}

/// A complete gRPC error response (trailers-only), for layers that answer
/// without calling the service; the code comes from `ServeError::code`.
fn status_response(error: crate::status::ServeError) -> http::Response<tonic::body::Body> {
    tonic::Status::from(error).into_http()
}
