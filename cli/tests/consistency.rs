//! The online = offline proof: the same samples go through a real fex-server
//! over gRPC (127.0.0.1:0) and through `fex extract --format responses` (the
//! binary, reading framed files); every response must be byte-identical, and
//! a sample the server refuses must be a bad record offline with the same
//! library error. The samples: every case of the golden corpus
//! (tests/corpus/*.yaml, each model under its own name), ExampleBatches that
//! fex-client's generator makes for each corpus model and for the embedded
//! default model, and the same batches split into Examples.
//!
//! Legacy `parser.proto.Instance` records are the third payload `fex
//! extract` reads, but fex.v1's ExtractRequest has no Instance payload (an
//! ExampleBatch or Examples only: proto/fex/v1/service.proto), so no server
//! answers them. For them the proof is one step shorter: the library's entry
//! point, called on each record as the server calls it on a request, against
//! `fex extract --payload instance` (reader, chunks, threads, bad records).

mod common;
use common::{connect, repo};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use fex::corpus::{Case, Encoded};
use fex::proto::monolith_pb as pb;
use fex::records::{ReadOptions, RecordReader, write_record};
use fex_client::FexClient;
use fex_client::synth::{GenOptions, Generator};
use prost::Message;

/// One model's samples, as records of one kind.
struct Set {
    model: String,
    plan: fex::Plan,
    kind: Kind,
    records: Vec<Vec<u8>>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Batch,
    Example,
}

/// Writes each corpus model (renamed after its case) into `dir/corpus/`,
/// beside a link to the fixtures its files name (`../fixtures/...`).
fn corpus_sets(dir: &Path) -> Vec<Set> {
    let models = dir.join("corpus");
    std::fs::create_dir_all(&models).unwrap();
    std::os::unix::fs::symlink(repo().join("tests/fixtures"), dir.join("fixtures")).unwrap();
    let mut cases: Vec<PathBuf> = std::fs::read_dir(repo().join("tests/corpus"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    cases.sort();
    let mut sets = Vec::new();
    for path in cases {
        let case = Case::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        assert!(case.model.contains("name: t\n"), "{name}: corpus models are named t");
        let model = case.model.replacen("name: t\n", &format!("name: {name}\n"), 1);
        let file = models.join(format!("{name}.yaml"));
        std::fs::write(&file, &model).unwrap();
        // A case whose model is refused has nothing to serve.
        let Ok(plan) = fex::Plan::from_yaml_in(&model, &models) else { continue };
        let (kind, records) = match case.input.encode().unwrap() {
            Encoded::Batch(bytes) => (Kind::Batch, vec![bytes]),
            Encoded::Examples(rows) => (Kind::Example, rows),
        };
        sets.push(Set { model: name, plan, kind, records });
    }
    assert!(sets.len() > 50, "the corpus has its cases: {}", sets.len());
    sets
}

/// Generated batches for `plan`, and the same rows as Examples.
fn generated_sets(plan: &fex::Plan, seed: u64) -> [Set; 2] {
    let options = GenOptions { batch_size: 7, list_len: (0, 5), seed, ..GenOptions::default() };
    let mut generator = Generator::new(plan.clone(), options).unwrap();
    let batches: Vec<pb::ExampleBatch> = (0..4).map(|_| generator.next_batch()).collect();
    let examples = batches.iter().flat_map(split_rows).map(|e| e.encode_to_vec()).collect();
    let model = plan.name.clone();
    [
        Set {
            model: model.clone(),
            plan: plan.clone(),
            kind: Kind::Batch,
            records: batches.iter().map(|b| b.encode_to_vec()).collect(),
        },
        Set { model, plan: plan.clone(), kind: Kind::Example, records: examples },
    ]
}

/// An ExampleBatch's rows as Examples (a SHARED list gives every row its
/// one Feature), as Monolith's `ExampleBatchToExample` does.
fn split_rows(batch: &pb::ExampleBatch) -> Vec<pb::Example> {
    (0..batch.batch_size as usize)
        .map(|r| pb::Example {
            named_feature: batch
                .named_feature_list
                .iter()
                .filter_map(|l| {
                    let f = if l.r#type == 1 { l.feature.first() } else { l.feature.get(r) };
                    f.map(|f| pb::NamedFeature { name: l.name.clone(), feature: Some(f.clone()), ..Default::default() })
                })
                .collect(),
            ..Default::default()
        })
        .collect()
}

/// What the server answers for each record: the encoded response, or the
/// status message.
async fn online(client: &mut FexClient, set: &Set) -> Vec<Result<Vec<u8>, String>> {
    let mut answers = Vec::new();
    for record in &set.records {
        let bytes = Bytes::from(record.clone());
        let result = match set.kind {
            Kind::Batch => client.extract_bytes(&set.model, bytes).await,
            Kind::Example => client.extract_examples(&set.model, vec![bytes]).await,
        };
        answers.push(match result {
            Ok(x) => Ok(x.response.encode_to_vec()),
            Err(status) => {
                // Bad sample bytes, or an output over the model's limits.
                let client_error = [tonic::Code::InvalidArgument, tonic::Code::ResourceExhausted];
                assert!(client_error.contains(&status.code()), "{}: {status:?}", set.model);
                Err(status.message().to_string())
            }
        });
    }
    answers
}

/// What `fex extract --format responses` writes for each record (in order:
/// good records' responses), and its stderr.
fn offline(dir: &Path, model_file: &Path, set: &Set, tag: &str) -> (Vec<Vec<u8>>, String) {
    let input = dir.join(format!("{tag}.bin"));
    let mut framed = Vec::new();
    for r in &set.records {
        write_record(&mut framed, r).unwrap();
    }
    std::fs::write(&input, framed).unwrap();
    let output = dir.join(format!("{tag}.responses"));
    let payload = if set.kind == Kind::Batch { "example-batch" } else { "example" };
    fex_responses(&input, &output, model_file, &["--payload", payload], tag)
}

/// Runs `fex extract --format responses --on-error skip --threads 2` with
/// `flags`; returns the responses it wrote, in order, and its stderr.
fn fex_responses(input: &Path, output: &Path, model_file: &Path, flags: &[&str], tag: &str) -> (Vec<Vec<u8>>, String) {
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_fex"))
        .args(["extract", "--format", "responses", "--on-error", "skip", "--threads", "2"])
        .args(flags)
        .arg("--model")
        .arg(model_file)
        .arg("--output")
        .arg(output)
        .arg(input)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr).to_string();
    assert!(run.status.success(), "{tag}: {stderr}");
    let mut reader = RecordReader::open(output, ReadOptions::default(), None).unwrap();
    let mut out = Vec::new();
    let mut buf = Vec::new();
    while reader.next_into(&mut buf).unwrap().is_some() {
        out.push(buf.clone());
    }
    (out, stderr)
}

fn compare(online: &[Result<Vec<u8>, String>], offline: &[Vec<u8>], stderr: &str, tag: &str) -> usize {
    let mut good = offline.iter();
    let mut refused = 0;
    for (i, answer) in online.iter().enumerate() {
        match answer {
            Ok(bytes) => {
                let theirs = good.next().unwrap_or_else(|| panic!("{tag}: record {i} missing offline\n{stderr}"));
                assert!(bytes == theirs, "{tag}: record {i}: the server's response and fex extract's differ");
            }
            Err(message) => {
                refused += 1;
                let line =
                    stderr.lines().find(|l| l.contains(&format!(": record {i} at byte "))).unwrap_or_else(|| {
                        panic!("{tag}: record {i} refused online ({message}) but not offline\n{stderr}")
                    });
                // The server's message is the library's error (clipped when long).
                let core = message.split(" (").next().unwrap();
                assert!(line.contains(core.trim_end_matches('…')), "{tag}: record {i}: {line:?} vs {message:?}");
            }
        }
    }
    assert!(good.next().is_none(), "{tag}: fex extract wrote more responses than the server gave");
    refused
}

#[test]
fn server_and_fex_extract_give_byte_identical_tensors() {
    let dir = tempfile::tempdir().unwrap();
    let models = dir.path().join("corpus");
    let mut sets = corpus_sets(dir.path());
    std::fs::copy(repo().join("models/default.yaml"), models.join("default.yaml")).unwrap();
    let default = fex::Plan::from_file(&models.join("default.yaml")).unwrap();
    let mut generated: Vec<Set> = generated_sets(&default, 1).into_iter().collect();
    for plan in sets.iter().filter(|s| s.kind == Kind::Batch).map(|s| s.plan.clone()).collect::<Vec<_>>() {
        generated.extend(generated_sets(&plan, 2));
    }
    sets.extend(generated);

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut args = fex_server::args::Args::for_tests();
    args.models = Some(models.clone());
    // The corpus holds models the library refuses too: serve the others.
    let (registry, _refused) = fex_server::registry::Registry::open(&models);
    let server = runtime.block_on(fex_server::serve::start(&args, Arc::new(registry))).unwrap();
    let mut client = runtime.block_on(connect(server.addr));

    let (mut checked, mut refused) = (0, 0);
    for (n, set) in sets.iter().enumerate() {
        let tag = format!("{}-{n}-{:?}", set.model, set.kind);
        let online = runtime.block_on(online(&mut client, set));
        let model_file = models.join(format!("{}.yaml", set.model));
        let (offline, stderr) = offline(dir.path(), &model_file, set, &tag);
        refused += compare(&online, &offline, &stderr, &tag);
        checked += set.records.len();
    }
    assert!(checked > 500, "records compared: {checked}");
    assert!(refused > 0, "the corpus's refused samples were compared too");
    assert!(checked - refused > 400, "most samples extract: {checked} checked, {refused} refused");
}

/// A model that reads every part of an Instance: v1 fids by slot, matrix
/// features by name (fids and float values), labels, the instance weight and
/// LineId fields.
const INSTANCE_MODEL: &str = "name: legacy
version: \"3\"
features:
  - {name: slot_1, kind: sparse}
  - {name: slot_2, kind: sparse}
  - {name: slot_7, kind: sparse}
  - {name: goods, kind: sparse}
  - {name: score, kind: dense, shape: [2]}
  - {name: label, kind: label, shape: [2]}
  - {name: w, kind: instance_weight}
  - {name: uid, kind: line_id, field: uid}
  - {name: req_time, kind: line_id, field: req_time}
  - {name: actions, kind: line_id, field: actions, shape: [3]}
";

/// `n` varied Instances (a splitmix64 stream from `seed`), every seventh
/// one broken (a fid list whose length runs past the record).
fn instances(n: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let v1 = |slot: u64, id: u64| (slot << 54) | (id & ((1 << 54) - 1));
    (0..n)
        .map(|i| {
            if i % 7 == 6 {
                return b"\x0a\x40\x01\x02".to_vec();
            }
            let fids = (0..next() % 6).map(|_| v1([1, 2, 7, 9][next() as usize % 4], next())).collect();
            let matrix = |name: &str, fid: Vec<u64>, value: Vec<f32>| fex::proto::matrix::Feature {
                name: Some(name.into()),
                fid,
                float_value: value,
                ..Default::default()
            };
            let goods = (0..next() % 3).map(|_| next() >> 8).collect();
            let score = (0..next() % 4).map(|k| k as f32 * 0.25).collect();
            let line_id = fex::proto::matrix::LineId {
                uid: Some(next()),
                req_time: Some((next() % 1_000_000) as i64),
                actions: (0..next() % 5).map(|a| a as i32).collect(),
                ..Default::default()
            };
            fex::proto::parser_pb::Instance {
                fid: fids,
                label: vec![(next() % 2) as f32, 1.0],
                instance_weight: (i % 3 != 0).then_some((next() % 4) as f32),
                line_id: Some(line_id),
                feature: vec![matrix("goods", goods, vec![]), matrix("score", vec![], score)],
                ..Default::default()
            }
            .encode_to_vec()
        })
        .collect()
}

#[test]
fn the_library_and_fex_extract_give_byte_identical_tensors_for_instances() {
    let dir = tempfile::tempdir().unwrap();
    let model_file = dir.path().join("legacy.yaml");
    std::fs::write(&model_file, INSTANCE_MODEL).unwrap();
    let plan = fex::Plan::from_file(&model_file).unwrap();
    let records = instances(60, 7);
    // Each record as the server extracts a request: the library's entry
    // point, SHARED rows as declared, the response built as it answers.
    let mut ex = fex::Extractor::new();
    let policy = fex::Policy { shared: fex::SharedRows::AsDeclared, ..fex::Policy::default() };
    let library: Vec<Result<Vec<u8>, String>> = records
        .iter()
        .map(|r| {
            let mut out = fex::Extracted::default();
            match ex.extract(&plan, fex::Input::Instances(&[r.as_slice()]), policy, &mut out) {
                Ok(()) => Ok(fex::proto::fex_v1::ExtractResponse {
                    model: plan.name.clone(),
                    model_version: plan.identity().version.clone(),
                    batch_size: out.batch_size as i32,
                    tensors: out.into_tensors(),
                }
                .encode_to_vec()),
                Err(e) => Err(e.to_string()),
            }
        })
        .collect();
    let input = dir.path().join("instances.bin");
    let mut framed = Vec::new();
    for r in &records {
        write_record(&mut framed, r).unwrap();
    }
    std::fs::write(&input, framed).unwrap();
    // Chunks of 4 records on 2 threads: the output is still in input order.
    let output = dir.path().join("instances.responses");
    let flags = ["--payload", "instance", "--chunk-records", "4"];
    let (offline, stderr) = fex_responses(&input, &output, &model_file, &flags, "instances");
    let refused = compare(&library, &offline, &stderr, "instances");
    assert_eq!(refused, 60 / 7, "the broken records were compared too");
    assert!(library.iter().flatten().any(|r| r.len() > 100), "the good records carry tensors");
}
