//! tower layers of the gRPC stack. Each applies only to `fex.v1` calls, so
//! health checks and reflection streams are never shed or timed out.

mod admission;
mod deadline;
mod metrics;

pub use admission::{Admission, AdmissionLayer};
pub use deadline::{Deadline, DeadlineLayer, parse_grpc_timeout};
pub use metrics::{CallModel, MetricsLayer, NO_MODEL, RecordMetrics};

/// Calls the layers govern: the extraction service, not health or reflection.
fn governed(uri: &http::Uri) -> bool {
    uri.path().starts_with("/fex.v1.")
}

/// A complete gRPC error response (trailers-only), for layers that answer
/// without calling the service.
fn status_response(status: tonic::Status) -> http::Response<tonic::body::Body> {
    status.into_http()
}
