//! What the `fex` command's integration tests share.

use std::path::{Path, PathBuf};
use std::time::Duration;

use fex_client::{ConnectOptions, FexClient};

/// The repository's root (the workspace above `cli/`).
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// A client of the fex-server at `addr`, once it answers SERVING.
#[allow(dead_code, reason = "not every test binary starts a server")]
pub async fn connect(addr: std::net::SocketAddr) -> FexClient {
    let mut client = FexClient::connect(&ConnectOptions::plain(addr.to_string())).await.unwrap();
    for _ in 0..2000 {
        if client.health("fex.v1.FeatureExtractor").await.is_ok_and(|s| s == "SERVING") {
            return client;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("server never became SERVING");
}
