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
