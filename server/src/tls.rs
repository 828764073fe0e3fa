//! TLS files, read and checked before anything binds: the certificate chain,
//! its private key (and that they match), and the client CA bundle, with the
//! same rustls that serves them. tonic would only read them inside the serve
//! task, where a bad file leaves a silent server with closed ports.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::{PemObject, SectionKind};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use tonic::transport::{Certificate, Identity, ServerTlsConfig};

use crate::args::Args;

/// A TLS file that cannot serve, with its path and the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {what}: {reason}", path.display())]
pub struct TlsError {
    pub path: PathBuf,
    /// Which file it is: the flag that named it.
    pub what: &'static str,
    pub reason: String,
}

const CERT: &str = "certificate chain (--tls-cert)";
const KEY: &str = "private key (--tls-key)";
const CLIENT_CA: &str = "client CA bundle (--tls-client-ca)";

/// The TLS configuration `args` asks for, every file checked; `None` when
/// TLS is off.
pub fn load(args: &Args) -> Result<Option<ServerTlsConfig>, TlsError> {
    let (Some(cert_path), Some(key_path)) = (&args.tls_cert, &args.tls_key) else { return Ok(None) };
    install_crypto();
    let cert = PemFile::read(cert_path, CERT)?;
    let key = PemFile::read(key_path, KEY)?;
    let chain = cert.certificates()?;
    let private_key = key.private_key()?;
    ServerConfig::builder().with_no_client_auth().with_single_cert(chain, private_key).map_err(|e| match e {
        rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch) => {
            key.error(format!("does not match the certificate in {}", cert_path.display()))
        }
        other => key.error(format!("cannot be used with {}: {other}", cert_path.display())),
    })?;
    let mut tls = ServerTlsConfig::new().identity(Identity::from_pem(&cert.bytes, &key.bytes));
    if let Some(ca_path) = &args.tls_client_ca {
        let ca = PemFile::read(ca_path, CLIENT_CA)?;
        let mut roots = RootCertStore::empty();
        for (i, c) in ca.certificates()?.into_iter().enumerate() {
            roots.add(c).map_err(|e| ca.error(format!("certificate {} is not a usable CA: {e}", i + 1)))?;
        }
        WebPkiClientVerifier::builder(Arc::new(roots)).build().map_err(|e| ca.error(e.to_string()))?;
        tls = tls.client_ca_root(Certificate::from_pem(&ca.bytes));
    }
    Ok(Some(tls))
}

/// Makes ring rustls's process-wide crypto, as tonic's `tls-ring` says.
/// rustls picks its default from its own features only when exactly one
/// backend is compiled in; a build of the whole workspace has two
/// (fex-iceberg's object-store client brings aws-lc-rs), and then every
/// server TLS configuration (ours below, tonic's when it serves) would
/// panic. Installed before any is made; a second call changes nothing.
fn install_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A PEM file's bytes and sections.
struct PemFile<'a> {
    path: &'a Path,
    what: &'static str,
    bytes: Vec<u8>,
    sections: Vec<(SectionKind, Vec<u8>)>,
}

impl<'a> PemFile<'a> {
    fn read(path: &'a Path, what: &'static str) -> Result<Self, TlsError> {
        let error = |reason: String| TlsError { path: path.to_path_buf(), what, reason };
        let bytes = std::fs::read(path).map_err(|e| error(format!("cannot read: {e}")))?;
        let sections = <(SectionKind, Vec<u8>)>::pem_slice_iter(&bytes)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| error(format!("not valid PEM: {e}")))?;
        Ok(Self { path, what, bytes, sections })
    }

    fn error(&self, reason: String) -> TlsError {
        TlsError { path: self.path.to_path_buf(), what: self.what, reason }
    }

    fn certificates(&self) -> Result<Vec<CertificateDer<'static>>, TlsError> {
        let certs: Vec<_> = self
            .sections
            .iter()
            .filter(|(kind, _)| *kind == SectionKind::Certificate)
            .map(|(_, der)| CertificateDer::from(der.clone()))
            .collect();
        if certs.is_empty() {
            return Err(self.error(format!("holds no PEM certificate (BEGIN CERTIFICATE); found {}", self.found())));
        }
        Ok(certs)
    }

    fn private_key(&self) -> Result<PrivateKeyDer<'static>, TlsError> {
        self.sections.iter().find_map(|(kind, der)| PrivateKeyDer::from_pem(*kind, der.clone())).ok_or_else(|| {
            let expected = "BEGIN PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY";
            self.error(format!("holds no unencrypted PEM private key ({expected}); found {}", self.found()))
        })
    }

    /// What the file holds, for an error message.
    fn found(&self) -> String {
        if self.sections.is_empty() {
            return format!("no PEM section in {} bytes", self.bytes.len());
        }
        let kinds: Vec<String> = self.sections.iter().map(|(kind, _)| format!("{kind:?}")).collect();
        kinds.join(", ")
    }
}
