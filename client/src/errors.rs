//! Why a connection or a call failed, in words. tonic reports transport
//! failures as "transport error", "Cancelled: operation was canceled" or
//! "Internal: h2 protocol error"; the cause is further down the error's source
//! chain (`std::error::Error::source`, and the error an `io::Error` wraps):
//! a refused TCP connection, a rustls certificate check, a TLS alert, or a
//! connection the server closed. `Cause::of` finds it; `explain` says what it
//! means for someone holding these `ConnectOptions`.

use std::error::Error;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::client::ConnectOptions;

/// What really went wrong underneath a transport error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// Nothing accepts connections at the address.
    Refused,
    /// The TCP connection could not be made for another reason.
    Connect(String),
    /// The server's certificate is not signed by a CA the client trusts.
    Untrusted(String),
    /// The server's certificate does not hold the name the client asked for.
    WrongName(String),
    /// The server's certificate is expired or not valid yet.
    Expired(String),
    /// The client speaks TLS; the server answered with something else.
    ServerNotTls,
    /// The server ended the TLS handshake with an alert (a client
    /// certificate it requires, or one it does not trust).
    AlertReceived(String),
    /// Another TLS failure.
    Tls(String),
    /// The server closed the connection (drain, shutdown, or a refusal
    /// during the handshake), or stopped answering on it.
    Closed(String),
}

impl Cause {
    /// The cause underneath `err`, if it is a transport failure.
    pub fn of(err: &(dyn Error + 'static)) -> Option<Cause> {
        let mut found = None;
        let mut next = Some(err);
        // The innermost recognised error is the most precise one.
        while let Some(e) = next {
            if let Some(cause) = Self::one(e) {
                found = Some(cause);
            }
            next = e.source();
        }
        found
    }

    /// A cause from one link of the chain (not its sources).
    fn one(e: &(dyn Error + 'static)) -> Option<Cause> {
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return Some(Self::tls(tls));
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            // rustls reaches tonic inside an io::Error, whose `source` skips
            // the wrapped error itself: look inside.
            if let Some(tls) = io.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) {
                return Some(Self::tls(tls));
            }
            // h2 keeps only the kind and the text of the io errors it passes
            // on, so a TLS alert read after the handshake (TLS 1.3 servers
            // check the client certificate then) is known by rustls's text.
            let text = io.to_string();
            if let Some(alert) = text.strip_prefix("received fatal alert: ") {
                return Some(match alert {
                    "CertificateRequired" | "BadCertificate" | "UnknownCA" | "HandshakeFailure" => {
                        Self::AlertReceived(text)
                    }
                    _ => Self::Tls(text),
                });
            }
            use std::io::ErrorKind::*;
            return Some(match io.kind() {
                ConnectionRefused => Self::Refused,
                ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof => Self::Closed(text),
                _ => Self::Connect(text),
            });
        }
        if let Some(h2) = e.downcast_ref::<h2::Error>() {
            if h2.is_go_away() || h2.is_io() || (h2.is_reset() && h2.is_remote()) {
                return Some(Self::Closed(h2.to_string()));
            }
            return None;
        }
        if let Some(hyper) = e.downcast_ref::<hyper::Error>()
            && (hyper.is_canceled() || hyper.is_closed() || hyper.is_incomplete_message())
        {
            return Some(Self::Closed(hyper.to_string()));
        }
        None
    }

    fn tls(e: &rustls::Error) -> Cause {
        use rustls::{AlertDescription as A, CertificateError as C, Error as E};
        match e {
            E::InvalidCertificate(C::UnknownIssuer | C::BadSignature) => Self::Untrusted(e.to_string()),
            E::InvalidCertificate(C::NotValidForName | C::NotValidForNameContext { .. }) => {
                Self::WrongName(e.to_string())
            }
            E::InvalidCertificate(
                C::Expired | C::ExpiredContext { .. } | C::NotValidYet | C::NotValidYetContext { .. },
            ) => Self::Expired(e.to_string()),
            E::InvalidMessage(rustls::InvalidMessage::InvalidContentType) => Self::ServerNotTls,
            E::AlertReceived(A::CertificateRequired | A::BadCertificate | A::UnknownCA | A::HandshakeFailure) => {
                Self::AlertReceived(e.to_string())
            }
            _ => Self::Tls(e.to_string()),
        }
    }

    /// True when the server is unreachable or went away (as opposed to a TLS
    /// setup the client must fix): worth backing off and retrying.
    pub fn server_gone(&self) -> bool {
        matches!(self, Self::Refused | Self::Connect(_) | Self::Closed(_))
    }

    /// The cause in words, with the fix where there is one. `options` tells
    /// whether the client spoke TLS and offered a certificate.
    pub fn explain(&self, options: &ConnectOptions) -> String {
        let addr = &options.address;
        match self {
            Self::Refused => format!("connection refused: nothing is listening at {addr} (is fex-server running?)"),
            Self::Connect(e) => format!("could not connect to {addr}: {e}"),
            Self::Untrusted(e) => {
                format!("the server's certificate is not trusted: it is not signed by the CA given with --tls-ca ({e})")
            }
            Self::WrongName(e) => format!(
                "the server's certificate is not valid for the name the client checked ({e}); \
                 connect by a name it holds, or set --tls-domain"
            ),
            Self::Expired(e) => format!("the server's certificate is out of its validity period ({e})"),
            Self::ServerNotTls => format!(
                "the server at {addr} does not speak TLS (it answered the TLS handshake in plaintext): \
                 connect without --tls-ca and --tls-cert, or with an http:// address"
            ),
            Self::AlertReceived(e) => format!(
                "the server refused the TLS handshake ({e}): it requires a client certificate signed by a CA \
                 it trusts (--tls-cert, --tls-key)"
            ),
            Self::Tls(e) => format!("the TLS handshake failed: {e}"),
            Self::Closed(e) if !options.tls() => format!(
                "the server at {addr} closed the connection without answering ({e}): it requires TLS \
                 (give --tls-ca, or an https:// address), or it is shutting down"
            ),
            Self::Closed(e) if options.tls_cert.is_none() => format!(
                "the server at {addr} closed the connection after the TLS handshake ({e}): it requires a client \
                 certificate (mutual TLS: give --tls-cert and --tls-key), or it is shutting down"
            ),
            Self::Closed(e) => format!(
                "the server at {addr} closed the connection after the TLS handshake ({e}): it does not trust the \
                 client certificate (--tls-cert is not signed by its client CA), or it is shutting down"
            ),
        }
    }
}

/// A tonic status in words: the transport cause when there is one, else
/// the code and the server's message.
pub fn explain_status(status: &tonic::Status, options: &ConnectOptions) -> String {
    match Cause::of(status) {
        Some(cause) => cause.explain(options),
        None => format!("{:?}: {}", status.code(), status.message()),
    }
}

/// A connection error in words (an error from `Endpoint::connect`).
pub fn explain_connect(err: &tonic::transport::Error, options: &ConnectOptions) -> String {
    match Cause::of(err) {
        Some(cause) => cause.explain(options),
        None => format!("connecting to {}: {err}", options.address),
    }
}

/// For a plaintext client whose connection was closed unanswered: whether
/// the server speaks TLS. Sends the HTTP/2 preface; a TLS server answers
/// with a TLS alert record (content type 21, version 3.x). Bounded by 2 s.
pub async fn server_speaks_tls(options: &ConnectOptions) -> bool {
    let Ok(endpoint) = options.endpoint() else { return false };
    let uri = endpoint.uri();
    let (Some(host), Some(port)) = (uri.host(), uri.port_u16()) else { return false };
    let host = host.trim_start_matches('[').trim_end_matches(']').to_string();
    let probe = async move {
        let mut stream = tokio::net::TcpStream::connect((host.as_str(), port)).await.ok()?;
        stream.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").await.ok()?;
        let mut head = [0u8; 2];
        stream.read_exact(&mut head).await.ok()?;
        Some(head == [21, 3])
    };
    matches!(tokio::time::timeout(Duration::from_secs(2), probe).await, Ok(Some(true)))
}

/// `explain_status` for a client's first call, which can tell more: a
/// plaintext connection closed unanswered is probed for TLS.
pub async fn explain_first_call(status: &tonic::Status, options: &ConnectOptions) -> String {
    match Cause::of(status) {
        Some(Cause::Closed(_)) if !options.tls() && server_speaks_tls(options).await => format!(
            "the server at {} requires TLS (it answered in TLS, the client spoke plaintext): \
             give --tls-ca with the CA that signed its certificate, or an https:// address",
            options.address
        ),
        _ => explain_status(status, options),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cause_of(e: std::io::Error) -> Option<Cause> {
        Cause::of(&e)
    }

    #[test]
    fn io_errors_and_their_tls_text() {
        use std::io::{Error, ErrorKind};
        assert_eq!(cause_of(Error::from(ErrorKind::ConnectionRefused)), Some(Cause::Refused));
        assert!(matches!(cause_of(Error::from(ErrorKind::BrokenPipe)), Some(Cause::Closed(_))));
        // As h2 passes a TLS alert on: the kind and rustls's text only.
        let alert = Error::new(ErrorKind::InvalidData, "received fatal alert: CertificateRequired");
        assert_eq!(cause_of(alert), Some(Cause::AlertReceived("received fatal alert: CertificateRequired".into())));
        let other = Error::new(ErrorKind::InvalidData, "received fatal alert: DecodeError");
        assert_eq!(cause_of(other), Some(Cause::Tls("received fatal alert: DecodeError".into())));
        // rustls's own error inside an io::Error is matched by type.
        let tls = Error::new(
            ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer),
        );
        assert!(matches!(cause_of(tls), Some(Cause::Untrusted(_))));
    }

    #[test]
    fn explanations_name_the_fix_for_the_options_in_use() {
        let plain = ConnectOptions::plain("127.0.0.1:50051");
        let tls = ConnectOptions { tls_ca: Some("ca.pem".into()), ..plain.clone() };
        let closed = Cause::Closed("connection closed".into());
        assert!(closed.explain(&plain).contains("requires TLS (give --tls-ca"));
        assert!(closed.explain(&tls).contains("requires a client certificate (mutual TLS"));
        assert_eq!(
            Cause::Refused.explain(&plain),
            "connection refused: nothing is listening at 127.0.0.1:50051 (is fex-server running?)"
        );
        assert!(Cause::Refused.server_gone() && !Cause::ServerNotTls.server_gone());
    }
}
