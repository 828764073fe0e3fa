//! TLS mistakes through the fex-client CLI say their cause in words (issue
//! 11, item 9): they used to print "transport error", "Cancelled: operation
//! was canceled" or "Internal: h2 protocol error". Certificates are made in the
//! test (rcgen); servers are real, on loopback.

mod common;

use std::path::{Path, PathBuf};

use common::cli;
use fex_server::args::Args;
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};

/// A CA with a server certificate for "localhost" and a client certificate,
/// as PEM files in `dir`.
struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    fn new() -> Self {
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = ca_params.self_signed(&ca_key).unwrap().pem();
        let issuer = Issuer::new(ca_params, ca_key);
        let leaf = |name: &str| {
            let key = KeyPair::generate().unwrap();
            let cert = CertificateParams::new(vec![name.to_string()]).unwrap().signed_by(&key, &issuer).unwrap();
            (cert.pem(), key.serialize_pem())
        };
        let (server_cert, server_key) = leaf("localhost");
        let (client_cert, client_key) = leaf("fex-client");
        let dir = tempfile::tempdir().unwrap();
        for (name, pem) in [
            ("ca.pem", ca),
            ("server.pem", server_cert),
            ("server.key", server_key),
            ("client.pem", client_cert),
            ("client.key", client_key),
        ] {
            std::fs::write(dir.path().join(name), pem).unwrap();
        }
        Self { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

/// A TLS server (mutual TLS when `client_ca`), started and listening.
async fn tls_server(pki: &Pki, client_ca: Option<&Path>) -> fex_server::serve::Server {
    let mut args = Args::for_tests();
    args.tls_cert = Some(pki.path("server.pem"));
    args.tls_key = Some(pki.path("server.key"));
    args.tls_client_ca = client_ca.map(Path::to_path_buf);
    let registry = fex_server::serve::load_registry(&args).unwrap();
    fex_server::serve::start(&args, std::sync::Arc::new(registry)).await.unwrap()
}

/// `fex-client health` with these flags: it must fail; its first error line.
async fn health_error(addr: String, flags: &[&str]) -> String {
    let mut args = vec!["health".to_string(), "--addr".into(), addr];
    args.extend(flags.iter().map(|s| s.to_string()));
    let out = cli(args).await;
    assert!(!out.status.success(), "health should fail: {}", String::from_utf8_lossy(&out.stdout));
    String::from_utf8_lossy(&out.stderr).lines().next().unwrap_or_default().to_string()
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_right_ca_connects() {
    let pki = Pki::new();
    let server = tls_server(&pki, None).await;
    let out = cli(vec![
        "health".into(),
        "--addr".into(),
        format!("localhost:{}", server.addr.port()),
        "--tls-ca".into(),
        path(&pki.path("ca.pem")).into(),
    ])
    .await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "SERVING\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plaintext_against_a_tls_server_says_tls_is_required() {
    let pki = Pki::new();
    let server = tls_server(&pki, None).await;
    let err = health_error(server.addr.to_string(), &[]).await;
    assert!(err.starts_with(&format!("Error: the server at {} requires TLS", server.addr)), "{err}");
    assert!(err.contains("give --tls-ca"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_from_another_ca_is_not_trusted() {
    let (pki, other) = (Pki::new(), Pki::new());
    let server = tls_server(&pki, None).await;
    let addr = format!("localhost:{}", server.addr.port());
    let err = health_error(addr, &["--tls-ca", path(&other.path("ca.pem"))]).await;
    assert!(
        err.starts_with(
            "Error: the server's certificate is not trusted: it is not signed by the CA given with --tls-ca"
        ),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_for_another_name_says_which() {
    let pki = Pki::new();
    let server = tls_server(&pki, None).await;
    let err = health_error(server.addr.to_string(), &["--tls-ca", path(&pki.path("ca.pem"))]).await;
    assert!(err.starts_with("Error: the server's certificate is not valid for the name the client checked"), "{err}");
    assert!(err.contains("--tls-domain"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_against_a_plaintext_server_says_it_does_not_speak_tls() {
    let pki = Pki::new();
    let server = common::server().await;
    let addr = format!("localhost:{}", server.addr.port());
    let err = health_error(addr.clone(), &["--tls-ca", path(&pki.path("ca.pem"))]).await;
    assert!(err.starts_with(&format!("Error: the server at {addr} does not speak TLS")), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_without_a_client_certificate_says_one_is_required() {
    let pki = Pki::new();
    let server = tls_server(&pki, Some(&pki.path("ca.pem"))).await;
    let addr = format!("localhost:{}", server.addr.port());
    let err = health_error(addr, &["--tls-ca", path(&pki.path("ca.pem"))]).await;
    // The server's alert arrives during the connect or after it, as the
    // connection closing: either way the message names the missing certificate.
    assert!(err.contains("it requires a client certificate") && err.contains("--tls-cert"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_stops_before_its_run_when_tls_is_required() {
    let pki = Pki::new();
    let server = tls_server(&pki, None).await;
    let args = ["bench", "--addr", &server.addr.to_string(), "--requests", "20", "--warmup", "0s", "--no-progress"];
    let out = cli(args.iter().map(|s| s.to_string()).collect()).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(stderr.starts_with(&format!("Error: the server at {} requires TLS", server.addr)), "{stderr}");
}
