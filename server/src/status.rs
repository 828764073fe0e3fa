//! Every way a call can fail, and its gRPC status: one exhaustive match, so a
//! new error cannot reach a client without a deliberate code (extraction
//! errors are all the request's fault, by the library's contract).

use fex::{ErrorKind, ExtractError};
use tonic::{Code, Status};

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Refused by the admission layer: every permit is taken.
    #[error("server is at its limit of {limit} concurrent requests; retry with backoff")]
    Overloaded { limit: usize },
    /// Refused by the framing layer: the request's message does not fit in
    /// the bytes left of `--max-in-flight-bytes`.
    #[error(
        "request of {found} bytes does not fit in the request bytes the server holds at once ({limit} at most, --max-in-flight-bytes); retry with backoff"
    )]
    RequestBytesInFlight { found: usize, limit: usize },
    /// Every extraction thread busy and the queue full (`--max-queue`).
    #[error(
        "server's {threads} extraction threads are busy and {max_queue} calls are queued (--max-queue); retry with backoff"
    )]
    QueueFull { threads: usize, max_queue: usize },
    /// Answered by the deadline layer, or by the service for a call whose
    /// deadline passed while it waited for extraction or as it finished.
    #[error("deadline of {deadline:?} exceeded")]
    DeadlineExceeded { deadline: std::time::Duration },
    /// The deadline passed while the call waited for its upstream model
    /// server: the call's own deadline, or the upstream's `timeout_ms` when
    /// that was shorter. `upstream` names it (`ADDRESS model "NAME"`). The
    /// same words as `DeadlineExceeded`, so every deadline fex answers reads
    /// alike.
    #[error("deadline of {deadline:?} exceeded waiting for upstream {upstream}")]
    UpstreamDeadline { deadline: std::time::Duration, upstream: String },
    /// Refused by the size layer from the message's length prefix.
    #[error("request message is {found} bytes, over the limit of {limit} bytes (--max-request-bytes)")]
    RequestTooLarge { found: usize, limit: usize },
    /// `name` is the caller's string as `quoted` shows it (clipped).
    #[error("model {name} is not loaded; loaded models: {known}")]
    UnknownModel { name: String, known: String },
    #[error("request carries no payload; set example_batch or examples")]
    NoPayload,
    #[error("{0}")]
    UnknownOutput(String),
    #[error("{0}")]
    Extract(#[from] ExtractError),
    /// The request message did not decode (prost's error, without its
    /// "failed to decode Protobuf message: " preamble).
    #[error("malformed fex.v1 request message: {0}")]
    MalformedRequest(String),
    /// The gRPC framing of a unary request, checked by the framing layer.
    #[error("the call carries no request message; a unary call takes exactly one")]
    NoMessage,
    #[error("the call carries more than one request message; a unary call takes exactly one")]
    ExtraMessage,
    #[error("request body ended after {found} bytes, inside the 5-byte gRPC message prefix")]
    TruncatedPrefix { found: usize },
    #[error("request message is truncated: its prefix says {expected} bytes, the body ended after {found}")]
    TruncatedMessage { found: usize, expected: usize },
    #[error("request message has compression flag {found}, allowed 0 (uncompressed) or 1 (compressed)")]
    BadCompressionFlag { found: u8 },
    #[error("request message has the compressed flag set but the call sends no grpc-encoding header")]
    CompressedWithoutEncoding,
    #[error("response would be {found} bytes, the limit is {limit}")]
    ResponseTooLarge { found: usize, limit: usize },
    /// A v2 request whose inputs hold no samples fex can read.
    #[error("{0}")]
    BadInput(String),
    /// A v2 request for a version the server does not have.
    #[error("model {name} has version {loaded:?}, not {asked}")]
    VersionNotFound { name: String, asked: String, loaded: String },
    /// The model server a model forwards to failed; `message` names it.
    #[error("{message}")]
    Upstream { code: Code, message: String },
    /// A bug: the library panicked. Logged with the model name.
    #[error("internal error while extracting; this is a bug in fex-server")]
    Internal,
}

impl ServeError {
    pub fn code(&self) -> Code {
        match self {
            Self::Overloaded { .. }
            | Self::RequestBytesInFlight { .. }
            | Self::QueueFull { .. }
            | Self::RequestTooLarge { .. } => Code::ResourceExhausted,
            Self::DeadlineExceeded { .. } | Self::UpstreamDeadline { .. } => Code::DeadlineExceeded,
            Self::UnknownModel { .. } => Code::NotFound,
            Self::NoPayload | Self::UnknownOutput(_) | Self::BadInput(_) => Code::InvalidArgument,
            Self::VersionNotFound { .. } => Code::NotFound,
            Self::Upstream { code, .. } => *code,
            // Client mistakes in the envelope. gRPC's libraries answer most of
            // these INTERNAL (doc/statuscodes.md: "Error parsing request
            // proto"; grpc-go and grpc-java for a second message) or
            // UNIMPLEMENTED (the same table's "request cardinality
            // violation"); this server keeps INTERNAL for its own bugs and
            // answers every malformed request INVALID_ARGUMENT.
            Self::MalformedRequest(_)
            | Self::NoMessage
            | Self::ExtraMessage
            | Self::TruncatedPrefix { .. }
            | Self::TruncatedMessage { .. }
            | Self::BadCompressionFlag { .. }
            | Self::CompressedWithoutEncoding => Code::InvalidArgument,
            Self::Extract(e) => match e.kind() {
                // A valid request whose outputs pass the model's size limit.
                ErrorKind::TooLarge { .. } => Code::ResourceExhausted,
                // Every other kind describes a bad request: the library's
                // contract for `ErrorKind`, which is non_exhaustive, so kinds
                // added later are client errors too.
                _ => Code::InvalidArgument,
            },
            Self::ResponseTooLarge { .. } => Code::ResourceExhausted,
            Self::Internal => Code::Internal,
        }
    }
}

impl ServeError {
    /// A request that prost could not decode.
    pub fn malformed_request(e: &prost::DecodeError) -> Self {
        let text = e.to_string();
        let text = text.strip_prefix("failed to decode Protobuf message: ").unwrap_or(&text);
        Self::MalformedRequest(text.to_string())
    }
}

/// Longest caller string echoed whole into a message or a log line.
pub const ECHO_LIMIT: usize = 128;
/// How much of a longer string is echoed.
const ECHO_PREFIX: usize = 64;

/// A caller's string, quoted, for a status message or a log: whole when
/// short, else its first characters and its full length, so a huge name
/// cannot blow up a message past the client's metadata limit. Formats
/// lazily (a log line that is off costs nothing).
pub fn quoted(s: &str) -> Quoted<'_> {
    Quoted(s)
}

pub struct Quoted<'a>(&'a str);

impl std::fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.0;
        if s.len() <= ECHO_LIMIT {
            return write!(f, "{s:?}");
        }
        let cut = (0..=ECHO_PREFIX).rev().find(|&i| s.is_char_boundary(i)).unwrap_or(0);
        write!(f, "{:?} ({} bytes)", format!("{}…", &s[..cut]), s.len())
    }
}

impl From<ServeError> for Status {
    fn from(e: ServeError) -> Self {
        Status::new(e.code(), e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_caller_strings_are_clipped_with_their_length() {
        assert_eq!(quoted("ranker").to_string(), r#""ranker""#);
        let long = "x".repeat(100_000);
        assert_eq!(quoted(&long).to_string(), format!(r#""{}…" (100000 bytes)"#, "x".repeat(64)));
        // Never cut inside a character.
        let wide = "é".repeat(100);
        assert_eq!(quoted(&wide).to_string(), format!(r#""{}…" (200 bytes)"#, "é".repeat(32)));
    }
}
