//! The near-line job's one library call per emitted request,
//! `fex::nearline::compute`, on a 30-row request of
//! benches/nearline_model.yaml (the near-line tests' model before issue 36's
//! FG operators joined it), built byte for byte as flink/'s `ComputeBench`
//! built it until then (the same fields in the same order: prost writes them
//! as that test's hand-written encoder did), so this median was the
//! library's share of that bench's per-call time through JNI
//! (benches/README.md, "The library through JNI"). Since 2026-11-29 the
//! Java builder also writes the FG operators' inputs; compare the two on
//! benches/nearline_model.yaml only, knowing the Java request is larger.

use std::hint::black_box;
use std::path::Path;

use criterion::Criterion;
use fex::Plan;
use fex::proto::fex_v1::{ExtractRequest, LoggedRequest, extract_request};
use fex::proto::matrix::LineId;
use fex::proto::monolith_pb::{self as pb, feature::Type};
use prost::Message;

/// The allocator the JNI library links (jni/src/lib.rs), so this bench
/// costs what the library does inside the JVM.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn feature(t: Type) -> pb::Feature {
    pb::Feature { r#type: Some(t) }
}

fn list(name: &str, shared: bool, feature: Vec<pb::Feature>) -> pb::NamedFeatureList {
    let r#type = if shared { pb::FeatureListType::Shared } else { pb::FeatureListType::Individual };
    pb::NamedFeatureList { name: name.into(), feature, r#type: r#type as i32, id: 0 }
}

/// ComputeBench's request: user 1001, items 1..=30, no refresh.
fn logged() -> Vec<u8> {
    let (uid, items): (u64, Vec<u64>) = (1001, (1..=30).collect());
    let fids = |v: u64| feature(Type::FidV2List(pb::FidList { value: vec![v] }));
    let line_id = |item: u64| {
        let l = LineId { uid: Some(uid), item_id: Some(item), ..Default::default() };
        feature(Type::BytesList(pb::BytesList { value: vec![l.encode_to_vec()] }))
    };
    let batch = pb::ExampleBatch {
        named_feature_list: vec![
            list("user_fids", true, vec![fids((1 << 48) | uid)]),
            list("f_refresh", true, vec![feature(Type::Int64List(pb::Int64List { value: vec![0] }))]),
            list("item_fids", false, items.iter().map(|&i| fids((3 << 48) | i)).collect()),
            list("__LINE_ID__", false, items.iter().map(|&i| line_id(i)).collect()),
        ],
        batch_size: items.len() as i32,
        ..Default::default()
    };
    let payload = extract_request::Payload::ExampleBatch(batch.encode_to_vec().into());
    let request = ExtractRequest { model: "nearline_ranker".into(), payload: Some(payload), outputs: vec![] };
    LoggedRequest {
        request: request.encode_to_vec(),
        model: "nearline_ranker".into(),
        unix_micros: 1_760_000_000_123_456,
        request_id: "bench".into(),
        ..Default::default()
    }
    .encode_to_vec()
}

fn main() {
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/nearline_model.yaml");
    let plan = Plan::from_yaml_in(&std::fs::read_to_string(&model).expect("model"), model.parent().unwrap())
        .expect("the near-line benchmarks' model loads");
    let logged = logged();
    let actions: Vec<Vec<i32>> = (0..30).map(|i| [vec![1], vec![2, 3], vec![]][i % 3].clone()).collect();
    let once = fex::nearline::compute(&plan, &logged, &actions).expect("the request computes");
    println!(
        "nearline: 30 rows, {} bytes logged; {} bytes joined, {} bytes of samples",
        logged.len(),
        once.joined.len(),
        once.samples.len()
    );
    let mut c = Criterion::default().configure_from_args();
    let mut g = c.benchmark_group("nearline");
    g.bench_function("compute_30_rows", |b| b.iter(|| fex::nearline::compute(&plan, black_box(&logged), &actions)));
    g.bench_function("request_keys", |b| b.iter(|| fex::nearline::request_keys(&plan, black_box(&logged))));
    g.finish();
    c.final_summary();
}
