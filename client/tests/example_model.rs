//! The example operator model (models/ranking_ops.yaml) end to end: synthetic
//! requests for it go through a real fex-server loaded from models/, and the
//! answer equals the library run offline on the same bytes.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use fex_client::synth::{GenOptions, Generator};
use fex_client::{ConnectOptions, FexClient, TensorView, Values};
use fex_server::args::Args;

const MODELS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../models");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ranking_ops_online_equals_offline() {
    let mut args = Args::for_tests();
    args.models = Some(MODELS.into());
    let registry = fex_server::serve::load_registry(&args).unwrap();
    let server = fex_server::serve::start(&args, Arc::new(registry)).await.unwrap();
    let mut client = FexClient::connect(&ConnectOptions::plain(server.addr.to_string())).await.unwrap();

    let plan = fex::Plan::from_file(&Path::new(MODELS).join("ranking_ops.yaml")).unwrap();
    let mut generator = Generator::new(plan.clone(), GenOptions { batch_size: 32, ..GenOptions::default() }).unwrap();
    for _ in 0..3 {
        let bytes = Bytes::from(generator.next_bytes());
        let mut attempts = 0;
        let online = loop {
            // The server may still be coming up: retry (bounded) until it answers.
            match client.extract_bytes("ranking_ops", bytes.clone()).await {
                Ok(e) => break e,
                Err(s) if s.code() == tonic::Code::Unavailable && attempts < 500 => {
                    attempts += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
                Err(s) => panic!("{s}"),
            }
        };
        let offline = fex::extract_batch(&plan, &bytes).unwrap();
        assert_eq!(online.response.tensors, offline.into_tensors());
        assert_eq!(online.batch_size(), 32);
    }

    let bytes = Bytes::from(generator.next_bytes());
    let e = client.extract_bytes("ranking_ops", bytes).await.unwrap();
    let names = e.names();
    for expected in [
        "user_id",
        "item_category",
        "user_x_category",
        "dense",
        "sparse_kjt",
        "category_multi_hot",
        "labels",
        "user_clicks_4",
    ] {
        assert!(names.contains(&expected), "{expected} missing from {names:?}");
    }
    assert!(!names.contains(&"item_id_raw"), "internal features stay internal");
    // Synthetic categories are not in the vocabulary: out-of-vocabulary (1).
    let Some(TensorView::Ragged { values: Values::I64(cats), .. }) = e.get("item_category") else { panic!() };
    assert!(cats.iter().all(|&c| c == 1), "{cats:?}");
    let Some(TensorView::Dense { shape, .. }) = e.get("dense") else { panic!() };
    assert_eq!(shape, [32, 2]);
    let Some(TensorView::KeyedJagged { keys, lengths, .. }) = e.get("sparse_kjt") else { panic!() };
    assert_eq!(keys, ["user_id", "item_id", "item_category"]);
    assert_eq!(lengths.len(), 3 * 32);
}

/// `fex-client gen --model-config` reads a config's vocabulary files
/// relative to the config, as fex-server and `fex extract` do: generating
/// for models/ranking_ops.yaml works from any working directory.
#[test]
fn gen_resolves_vocabularies_next_to_the_config() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let config = root.join("models/ranking_ops.yaml").canonicalize().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.bin");
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_fex-client"))
        .current_dir(dir.path())
        .arg("gen")
        .arg("--model-config")
        .arg(&config)
        .args(["--count", "2", "--batch-size", "4", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    assert_eq!(fex_client::frames::read_file(&out).unwrap().len(), 2);
}
