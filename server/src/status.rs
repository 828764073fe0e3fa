//! Every way a call can fail, and its gRPC status: one exhaustive match, so a
//! new error cannot reach a client without a deliberate code.

use fex::ExtractError;
use tonic::{Code, Status};

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Refused by the admission layer: every permit is taken.
    #[error("server is at its limit of {limit} concurrent requests; retry with backoff")]
    Overloaded { limit: usize },
    /// Answered by the deadline layer.
    #[error("deadline of {deadline:?} exceeded")]
    DeadlineExceeded { deadline: std::time::Duration },
    /// Refused by the size layer from the message's length prefix.
    #[error("request message is {found} bytes, over the limit of {limit} bytes (--max-request-bytes)")]
    RequestTooLarge { found: usize, limit: usize },
    #[error("model {name:?} is not loaded; loaded models: {known}")]
    UnknownModel { name: String, known: String },
    #[error("request carries no payload; set example_batch or examples")]
    NoPayload,
    #[error("{0}")]
    UnknownOutput(fex::config::SelectError),
    #[error("{0}")]
    Extract(#[from] ExtractError),
    #[error("response would be {found} bytes, the limit is {limit}")]
    ResponseTooLarge { found: usize, limit: usize },
    /// A bug: the library panicked. Logged with the model name.
    #[error("internal error while extracting; this is a bug in fex-server")]
    Internal,
}

impl ServeError {
    pub fn code(&self) -> Code {
        match self {
            Self::Overloaded { .. } | Self::RequestTooLarge { .. } => Code::ResourceExhausted,
            Self::DeadlineExceeded { .. } => Code::DeadlineExceeded,
            Self::UnknownModel { .. } => Code::NotFound,
            Self::NoPayload | Self::UnknownOutput(_) => Code::InvalidArgument,
            Self::Extract(e) => match e {
                ExtractError::Decode(_)
                | ExtractError::BatchSize { .. }
                | ExtractError::TooManyRows { .. }
                | ExtractError::ListLength { .. }
                | ExtractError::TypeMismatch { .. }
                | ExtractError::Invalid { .. }
                | ExtractError::InputTooLarge { .. }
                | ExtractError::SplitsOverflow { .. }
                | ExtractError::Operator { .. } => Code::InvalidArgument,
                ExtractError::TooLarge { .. } => Code::ResourceExhausted,
            },
            Self::ResponseTooLarge { .. } => Code::ResourceExhausted,
            Self::Internal => Code::Internal,
        }
    }
}

impl From<ServeError> for Status {
    fn from(e: ServeError) -> Self {
        Status::new(e.code(), e.to_string())
    }
}
