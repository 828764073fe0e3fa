//! The models a server serves, as its callers and operators see them (issue
//! 11, items 3, 5, 6 and 7): health with no model left, a rejected file
//! reported once, output counts, and `--models` naming one file.

mod common;

use common::*;
use fex::proto::fex_v1::{DescribeModelRequest, ListModelsRequest};
use fex_server::args::Args;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

const MODEL: &str = "name: ranker\nversion: \"1\"\nfeatures:\n  - {name: item_id, kind: sparse}\n";
const BAD: &str = "name: ranker\nversion: \"2\"\nfeatures:\n  - {name: item_id, kind: sprase}\n";

fn models_dir(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

async fn start_with(models: &std::path::Path) -> fex_server::serve::Server {
    let mut args = Args::for_tests();
    args.models = Some(models.to_path_buf());
    start(args).await
}

/// The health of "" and of fex.v1.FeatureExtractor.
async fn health(addr: std::net::SocketAddr) -> [i32; 2] {
    let mut h = HealthClient::new(channel(addr).await);
    let mut statuses = [0; 2];
    for (status, service) in statuses.iter_mut().zip(["", "fex.v1.FeatureExtractor"]) {
        *status = h.check(HealthCheckRequest { service: service.into() }).await.unwrap().into_inner().status;
    }
    statuses
}

#[tokio::test]
async fn health_is_not_serving_while_no_model_is_loaded() {
    let dir = models_dir(&[("ranker.yaml", MODEL)]);
    let server = start_with(dir.path()).await;
    let serving = ServingStatus::Serving as i32;
    let not_serving = ServingStatus::NotServing as i32;
    assert_eq!(health(server.addr).await, [serving; 2]);

    std::fs::remove_file(dir.path().join("ranker.yaml")).unwrap();
    assert_eq!(server.reload().await.removed, ["ranker"]);
    assert_eq!(health(server.addr).await, [not_serving; 2]);
    assert!(has_line(&server.metrics.render(), "fex_models_loaded 0"), "{}", server.metrics.render());

    std::fs::write(dir.path().join("ranker.yaml"), MODEL).unwrap();
    assert_eq!(server.reload().await.loaded, ["ranker"]);
    assert_eq!(health(server.addr).await, [serving; 2]);
    assert!(has_line(&server.metrics.render(), "fex_models_loaded 1"), "{}", server.metrics.render());
}

#[tokio::test]
async fn a_rejected_file_is_reported_once_per_change() {
    let dir = models_dir(&[("ranker.yaml", MODEL)]);
    let file = dir.path().join("ranker.yaml");
    let server = start_with(dir.path()).await;
    std::fs::write(&file, BAD).unwrap();
    assert_eq!(server.reload().await.rejected.len(), 1);
    // The same file again: judged already, nothing reported or counted.
    for _ in 0..3 {
        assert_eq!(server.reload().await, Default::default());
    }
    let rejected = r#"fex_reloads_total{result="rejected"} 1"#;
    assert!(has_line(&server.metrics.render(), rejected), "{}", server.metrics.render());
    // A different bad text is a new judgement; the old model keeps serving.
    std::fs::write(&file, BAD.replace("sprase", "dnese")).unwrap();
    let report = server.reload().await;
    assert!(report.rejected[0].message.contains(r#""dnese""#), "{report:?}");
    assert_eq!(server.registry.get("ranker").unwrap().version, "1");
    // Fixed, then broken the first way again: reported again.
    std::fs::write(&file, MODEL.replace("\"1\"", "\"3\"")).unwrap();
    assert_eq!(server.reload().await.loaded, ["ranker"]);
    std::fs::write(&file, BAD).unwrap();
    assert_eq!(server.reload().await.rejected.len(), 1);
}

#[tokio::test]
async fn list_models_counts_the_outputs_a_caller_gets() {
    let models = concat!(env!("CARGO_MANIFEST_DIR"), "/../models");
    let server = start_with(std::path::Path::new(models)).await;
    let mut c = client(server.addr).await;
    let listed = c.list_models(ListModelsRequest {}).await.unwrap().into_inner().models;
    let ranking = listed.iter().find(|m| m.name == "ranking_ops").expect("ranking_ops is served");
    let described = c.describe_model(DescribeModelRequest { model: "ranking_ops".into() }).await.unwrap().into_inner();
    // models/ranking_ops.yaml keeps some features internal (output: false).
    let all = server.registry.get("ranking_ops").unwrap().plan.outputs.len();
    assert!(described.outputs.len() < all, "the fixture has hidden features");
    assert_eq!(ranking.outputs as usize, described.outputs.len());
}

#[tokio::test]
async fn models_may_name_a_single_file() {
    let dir = models_dir(&[("ranker.yaml", MODEL), ("other.yaml", BAD)]);
    let file = dir.path().join("ranker.yaml");
    let server = start_with(&file).await;
    let mut c = client(server.addr).await;
    let response = c.extract(extract_request("ranker", sample_batch(2))).await.unwrap().into_inner();
    assert_eq!((response.model.as_str(), response.batch_size), ("ranker", 2));
    // Only that file is watched: its neighbour is never read.
    std::fs::write(&file, MODEL.replace("\"1\"", "\"2\"")).unwrap();
    assert_eq!(
        server.reload().await,
        fex_server::registry::ReloadReport { loaded: vec!["ranker".into()], ..Default::default() }
    );
}

const COMPAT_FEATURES: &str = "features:
  - {name: w, kind: instance_weight}
  - {name: title, kind: string}
  - {name: req_id, kind: line_id, field: req_id}
  - {name: ctr, kind: dense, shape: [2]}
";

/// DescribeModel states each mode's shapes, and Extract answers with them:
/// Monolith's kernel allocates weights and strings `[B, 1]`
/// (parse_example_lib.cc:73), native mode gives `[B]`.
#[tokio::test]
async fn describe_model_states_the_compat_mode_shapes() {
    let native = format!("name: native_m\ncompat: native\n{COMPAT_FEATURES}");
    let monolith = format!("name: monolith_m\ncompat: monolith\n{COMPAT_FEATURES}");
    let dir = models_dir(&[("native_m.yaml", &native), ("monolith_m.yaml", &monolith)]);
    let server = start_with(dir.path()).await;
    let mut c = client(server.addr).await;
    let batch = fex::corpus::Batch::from_yaml(
        "batch_size: 2
lists:
  - {name: instance_weight, features: [{float_list: [0.5]}, {float_list: [2]}]}
  - {name: title, features: [{bytes_list: [a]}, {bytes_list: [b]}]}
  - {name: __LINE_ID__, features: [{line_id: {req_id: r}}, {line_id: {req_id: s}}]}
  - {name: ctr, features: [{float_list: [1, 2]}, {float_list: [3]}]}
",
    )
    .unwrap()
    .encode()
    .unwrap();
    for (model, compat, unit) in [("native_m", "native", vec![]), ("monolith_m", "monolith", vec![1])] {
        let described = c.describe_model(DescribeModelRequest { model: model.into() }).await.unwrap().into_inner();
        assert_eq!(described.compat, compat);
        let shapes: Vec<(String, Vec<i64>)> =
            described.outputs.iter().map(|o| (o.name.clone(), o.shape.clone())).collect();
        let with_rows = |rows: i64| {
            let row_then = |rest: &[i64]| std::iter::once(rows).chain(rest.iter().copied()).collect::<Vec<_>>();
            vec![
                ("w".to_string(), row_then(&unit)),
                ("title".to_string(), row_then(&unit)),
                ("req_id".to_string(), row_then(&unit)),
                ("ctr".to_string(), row_then(&[2])),
            ]
        };
        assert_eq!(shapes, with_rows(-1), "{model}");
        let response = c.extract(extract_request(model, batch.clone())).await.unwrap().into_inner();
        let got: Vec<(String, Vec<i64>)> = response.tensors.iter().map(|t| (t.name.clone(), t.shape.clone())).collect();
        assert_eq!(got, with_rows(2), "{model}");
    }
}
