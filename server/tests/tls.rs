//! TLS and mutual TLS handshakes with certificates made in the test (rcgen).

mod common;

use common::*;
use fex::proto::fex_v1::ListModelsRequest;
use fex::proto::fex_v1::feature_extractor_client::FeatureExtractorClient;
use fex_server::args::Args;
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};

struct Pki {
    dir: tempfile::TempDir,
    ca: String,
    client_cert: String,
    client_key: String,
}

fn pki() -> Pki {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap().pem();
    let issuer = Issuer::new(ca_params, ca_key);
    let leaf = |names: Vec<String>| {
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(names).unwrap().signed_by(&key, &issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    };
    let (server_cert, server_key) = leaf(vec!["localhost".into()]);
    let (client_cert, client_key) = leaf(vec!["fex-client".into()]);
    let dir = tempfile::tempdir().unwrap();
    for (name, pem) in [("ca.pem", &ca), ("server.pem", &server_cert), ("server.key", &server_key)] {
        std::fs::write(dir.path().join(name), pem).unwrap();
    }
    Pki { dir, ca, client_cert, client_key }
}

fn tls_args(pki: &Pki, mutual: bool) -> Args {
    let mut args = Args::for_tests();
    args.tls_cert = Some(pki.dir.path().join("server.pem"));
    args.tls_key = Some(pki.dir.path().join("server.key"));
    if mutual {
        args.tls_client_ca = Some(pki.dir.path().join("ca.pem"));
    }
    args
}

async fn tls_client(
    addr: std::net::SocketAddr,
    pki: &Pki,
    identity: bool,
) -> Result<FeatureExtractorClient<tonic::transport::Channel>, tonic::transport::Error> {
    let mut tls = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(&pki.ca)).domain_name("localhost");
    if identity {
        tls = tls.identity(Identity::from_pem(&pki.client_cert, &pki.client_key));
    }
    let channel = Endpoint::from_shared(format!("https://{addr}")).unwrap().tls_config(tls)?.connect().await?;
    Ok(FeatureExtractorClient::new(channel))
}

async fn start_tls(args: Args) -> fex_server::serve::Server {
    let registry = fex_server::serve::load_registry(&args).unwrap();
    fex_server::serve::start(&args, std::sync::Arc::new(registry)).await.unwrap()
}

#[tokio::test]
async fn tls_handshake_and_extract() {
    let pki = pki();
    let server = start_tls(tls_args(&pki, false)).await;
    let mut c = tls_client(server.addr, &pki, false).await.unwrap();
    let response = c.extract(extract_request("default", sample_batch(2))).await.unwrap().into_inner();
    assert_eq!(response.batch_size, 2);
}

#[tokio::test]
async fn mutual_tls_requires_a_client_certificate() {
    let pki = pki();
    let server = start_tls(tls_args(&pki, true)).await;
    let mut c = tls_client(server.addr, &pki, true).await.unwrap();
    assert_eq!(c.list_models(ListModelsRequest {}).await.unwrap().into_inner().models.len(), 1);
    // Without a client certificate the handshake (or the first call) fails.
    let refused = match tls_client(server.addr, &pki, false).await {
        Err(_) => true,
        Ok(mut c) => c.list_models(ListModelsRequest {}).await.is_err(),
    };
    assert!(refused, "a client without a certificate must be refused");
}

#[tokio::test]
async fn plaintext_client_cannot_talk_to_a_tls_server() {
    let pki = pki();
    let server = start_tls(tls_args(&pki, false)).await;
    let failed = match Endpoint::from_shared(format!("http://{}", server.addr)).unwrap().connect().await {
        Err(_) => true,
        Ok(ch) => FeatureExtractorClient::new(ch).list_models(ListModelsRequest {}).await.is_err(),
    };
    assert!(failed);
}

#[tokio::test]
async fn plaintext_health_listener_answers_probes_beside_tls() {
    let pki = pki();
    let mut args = tls_args(&pki, true);
    args.health_addr = fex_server::args::OptionalAddr(Some("127.0.0.1:0".parse().unwrap()));
    let server = start_tls(args).await;
    let health_addr = server.health_addr.expect("health listener bound");
    // The kubelet's gRPC probe: plaintext grpc.health.v1, no certificate.
    wait_serving(health_addr).await;
    // Only health is served there: no extraction without TLS.
    let err = client(health_addr).await.extract(extract_request("default", sample_batch(1))).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unimplemented);
    server.shutdown();
    server.wait().await.unwrap();
}

/// Issue 11, item 1: a bad TLS file is refused before anything binds, naming
/// the file and what is wrong with it (it used to surface only at SIGTERM).
#[tokio::test]
async fn bad_tls_files_are_refused_before_binding() {
    let pki = pki();
    let path = |name: &str| pki.dir.path().join(name);
    std::fs::write(path("other.key"), KeyPair::generate().unwrap().serialize_pem()).unwrap();
    std::fs::write(path("garbage.pem"), "not a certificate\n").unwrap();
    std::fs::write(path("cut.pem"), "-----BEGIN CERTIFICATE-----\nMIIB\n").unwrap();
    type Edit = fn(&mut Args, &std::path::Path);
    let cases: [(&str, Edit, &str, &str); 8] = [
        (
            "missing key",
            |a, d| a.tls_key = Some(d.join("nope.key")),
            "nope.key",
            "private key (--tls-key): cannot read: No such file",
        ),
        (
            "missing cert",
            |a, d| a.tls_cert = Some(d.join("nope.pem")),
            "nope.pem",
            "certificate chain (--tls-cert): cannot read: No such file",
        ),
        (
            "missing client CA",
            |a, d| a.tls_client_ca = Some(d.join("nope-ca.pem")),
            "nope-ca.pem",
            "client CA bundle (--tls-client-ca): cannot read: No such file",
        ),
        (
            "cert as key",
            |a, d| a.tls_key = Some(d.join("server.pem")),
            "server.pem",
            "private key (--tls-key): holds no unencrypted PEM private key (BEGIN PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY); found Certificate",
        ),
        (
            "mismatched key",
            |a, d| a.tls_key = Some(d.join("other.key")),
            "other.key",
            "private key (--tls-key): does not match the certificate in",
        ),
        (
            "garbage cert",
            |a, d| a.tls_cert = Some(d.join("garbage.pem")),
            "garbage.pem",
            "certificate chain (--tls-cert): holds no PEM certificate (BEGIN CERTIFICATE); found no PEM section in 18 bytes",
        ),
        (
            "garbage client CA",
            |a, d| a.tls_client_ca = Some(d.join("garbage.pem")),
            "garbage.pem",
            "client CA bundle (--tls-client-ca): holds no PEM certificate",
        ),
        (
            "cut PEM",
            |a, d| a.tls_cert = Some(d.join("cut.pem")),
            "cut.pem",
            "certificate chain (--tls-cert): not valid PEM: missing section end marker",
        ),
    ];
    for (case, edit, file, reason) in cases {
        let mut args = tls_args(&pki, true);
        edit(&mut args, pki.dir.path());
        let registry = std::sync::Arc::new(fex_server::serve::load_registry(&args).unwrap());
        let error = match fex_server::serve::start(&args, registry).await {
            Ok(server) => panic!("{case}: the server started on {}", server.addr),
            Err(e) => e,
        };
        let tls = error.downcast_ref::<fex_server::tls::TlsError>().unwrap_or_else(|| panic!("{case}: {error:#}"));
        let message = tls.to_string();
        assert!(tls.path.ends_with(file), "{case}: {message}");
        assert!(message.contains(reason), "{case}: {message:?} lacks {reason:?}");
    }
}

/// The binary says so on stderr and exits 64 (a bad configuration) at once.
#[tokio::test]
async fn fex_server_exits_64_on_a_bad_tls_file() {
    let pki = pki();
    let cert = pki.dir.path().join("server.pem");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_fex-server"))
        .args(["--listen-addr", "127.0.0.1:0", "--metrics-addr", "off", "--tls-cert"])
        .arg(&cert)
        .arg("--tls-key")
        .arg(&cert)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut status = None;
    let exited = || {
        status = child.try_wait().unwrap();
        status.is_some()
    };
    wait_until(exited, || "fex-server kept running with a certificate as its key".into()).await;
    let _ = child.kill();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.and_then(|s| s.code()), Some(64), "{stderr}");
    let want = format!("{}: private key (--tls-key): holds no unencrypted PEM private key", cert.display());
    assert!(stderr.contains(&want), "{stderr}");
    assert!(!stderr.contains("listening"), "{stderr}");
}

/// A model's `upstream:` over TLS: the CA of `tls.ca` verifies the model
/// server (here a TLS fex-server, whose ModelMetadata then answers), and a
/// CA that did not sign it makes the upstream unreachable, not trusted.
#[tokio::test]
async fn a_tls_upstream_is_verified_with_its_ca() {
    use fex_server::upstream::{Checked, check};
    let pki = pki();
    let upstream = start_tls(tls_args(&pki, false)).await;
    let config = |ca: &str| {
        let text = format!(
            "name: fwd\nfeatures:\n  - {{name: title, kind: string}}\nupstream:\n  address: https://127.0.0.1:{}\n  \
             tls: {{ca: {ca}, domain: localhost}}\n  model: default\n  inputs:\n    - {{name: examples, from: title}}\n",
            upstream.addr.port()
        );
        fex::Plan::from_yaml_in(&text, pki.dir.path()).unwrap().upstream.unwrap()
    };
    let budget = std::time::Duration::from_secs(5);
    match check(&config("ca.pem"), budget).await {
        Checked::Mismatch(problems) => assert_eq!(problems, ["the model's input \"example_batch\" is not mapped"]),
        Checked::Matches => panic!("the mapping leaves example_batch out"),
        Checked::Unreachable(why) => panic!("not reached over TLS: {why}"),
    }
    let stranger = pki_stranger_ca(&pki);
    match check(&config(&stranger), budget).await {
        Checked::Unreachable(why) => assert!(why.contains("upstream https://127.0.0.1"), "{why}"),
        _ => panic!("a server signed by another CA must not be trusted"),
    }
    upstream.shutdown();
    upstream.wait().await.unwrap();
}

/// Writes a CA that signed nothing here beside `pki`'s files; its name.
fn pki_stranger_ca(pki: &Pki) -> String {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    std::fs::write(pki.dir.path().join("stranger.pem"), params.self_signed(&key).unwrap().pem()).unwrap();
    "stranger.pem".into()
}
