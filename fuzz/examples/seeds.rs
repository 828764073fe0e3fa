//! Writes the seed corpus: valid samples that use every feature name the fuzz
//! plans read, in every encoding the decoders accept (packed and unpacked,
//! SHARED and INDIVIDUAL lists, unknown fields, numbered LineId fields), so
//! the fuzzer starts past the name lookups.
//!
//! Also turns rows of a committed realistic batch (seed-corpus/decode_batch/,
//! written by scripts/fuzz_corpus.sh) into Examples for decode_examples.
//!
//! Usage: `cargo run --example seeds -- DIR` (from fuzz/) writes
//! DIR/decode_batch/ and DIR/decode_examples/.

use std::path::Path;

use fex::proto::matrix::{self, LineId};
use fex::proto::monolith_pb::{self as pb, feature::Type};
use fex::proto::parser_pb::Instance;
use prost::Message;
use prost::encoding as enc;

fn feature(t: Type) -> pb::Feature {
    pb::Feature { r#type: Some(t) }
}

fn fids(v: &[u64]) -> pb::Feature {
    feature(Type::FidV2List(pb::FidList { value: v.to_vec() }))
}

fn fids_v1(v: &[u64]) -> pb::Feature {
    feature(Type::FidV1List(pb::FidList { value: v.to_vec() }))
}

fn floats(v: &[f32]) -> pb::Feature {
    feature(Type::FloatList(pb::FloatList { value: v.to_vec() }))
}

fn int64s(v: &[i64]) -> pb::Feature {
    feature(Type::Int64List(pb::Int64List { value: v.to_vec() }))
}

fn bytes(v: &[&[u8]]) -> pb::Feature {
    feature(Type::BytesList(pb::BytesList { value: v.iter().map(|b| b.to_vec()).collect() }))
}

fn fid_lists(v: &[&[u64]]) -> pb::Feature {
    let list = v.iter().map(|l| pb::FidList { value: l.to_vec() }).collect();
    feature(Type::FidV2Lists(pb::FidLists { list }))
}

fn float_lists(v: &[&[f32]]) -> pb::Feature {
    let list = v.iter().map(|l| pb::FloatList { value: l.to_vec() }).collect();
    feature(Type::FloatLists(pb::FloatLists { list }))
}

fn double_lists(v: &[&[f64]]) -> pb::Feature {
    let list = v.iter().map(|l| pb::DoubleList { value: l.to_vec() }).collect();
    feature(Type::DoubleLists(pb::DoubleLists { list }))
}

fn int64_lists(v: &[&[i64]]) -> pb::Feature {
    let list = v.iter().map(|l| pb::Int64List { value: l.to_vec() }).collect();
    feature(Type::Int64Lists(pb::Int64Lists { list }))
}

/// A LineId with known fields and the numbered fields 300..=305 of the plans.
fn line_id(row: u64) -> Vec<u8> {
    let known = LineId {
        uid: Some(1000 + row),
        req_time: Some(1_700_000_000 + row as i64),
        req_id: Some(format!("req-{row}")),
        actions: vec![1, 2, 3, 4, 5],
        sample_rate: Some(0.5),
        special_strategies: vec![7],
        is_draw: Some(true),
        rank: Some(-3),
        ..Default::default()
    };
    let mut buf = known.encode_to_vec();
    enc::sint64::encode(300, &-(row as i64), &mut buf);
    enc::double::encode_packed(301, &[0.25], &mut buf);
    enc::fixed32::encode(302, &7, &mut buf);
    enc::bytes::encode(303, &b"x".to_vec(), &mut buf);
    enc::int32::encode_packed(304, &[1, 2, 3], &mut buf);
    enc::sfixed64::encode(305, &-5, &mut buf);
    buf
}

fn list(name: &str, shared: bool, feature: Vec<pb::Feature>) -> pb::NamedFeatureList {
    pb::NamedFeatureList { name: name.into(), feature, r#type: i32::from(shared), id: 0 }
}

/// One Feature per row, built by `f(row)`.
fn rows(name: &str, n: u64, f: impl Fn(u64) -> pb::Feature) -> pb::NamedFeatureList {
    list(name, false, (0..n).map(f).collect())
}

/// Every source of the Monolith and native fuzz plans, for `n` rows.
fn fuzz_plan_batch(n: u64) -> pb::ExampleBatch {
    let r = n as f32;
    let named_feature_list = vec![
        rows("fid_v1", n, |i| fids_v1(&[i, 1 << 54 | i])),
        rows("fid_v2", n, |i| fids(&[i + 1, i + 2])),
        list("user_fid", true, vec![fids(&[42])]),
        rows("float_dense", n, |i| floats(&[i as f32, 0.5, -1.0])),
        rows("float_one", n, |_| floats(&[])),
        rows("int_dense", n, |i| int64s(&[i as i64, -1, 1 << 40])),
        rows("int_one", n, |i| int64s(&[i as i64])),
        list("user_dense", true, vec![floats(&[1.0, 2.0, 3.0, 4.0])]),
        rows("title", n, |i| bytes(&[format!("title {i}").as_bytes(), b"second"])),
        list("user_title", true, vec![feature(Type::BytesValue(b"shared title".to_vec()))]),
        rows("seq_fid", n, |i| fid_lists(&[&[i, i + 1, i + 2], &[], &[9]])),
        rows("seq_float", n, |_| float_lists(&[&[0.5; 4], &[1.5]])),
        list("seq_user", true, vec![int64_lists(&[&[1, 2], &[3]])]),
        rows("__LINE_ID__", n, |i| bytes(&[&line_id(i)])),
        rows("__LABEL__", n, |i| floats(&[1.0, i as f32 / r])),
        rows("instance_weight", n, |i| floats(&[i as f32])),
    ];
    pb::ExampleBatch { named_feature_list, batch_size: n as i32, ..Default::default() }
}

/// The default model's features, for `n` candidates.
fn default_model_batch(n: u64) -> pb::ExampleBatch {
    let shared = |name: &str, f: pb::Feature| list(name, true, vec![f]);
    let named_feature_list = vec![
        shared("user_id", fids(&[7])),
        shared("user_gender", fids(&[1])),
        shared("user_age", fids(&[30])),
        shared("user_city", fids(&[])),
        shared("user_embedding", floats(&[0.125; 32])),
        shared("user_click_seq", fid_lists(&[&[1], &[2, 3]])),
        shared("ctx_hour", fids(&[9])),
        shared("ctx_device", fids(&[2])),
        shared("ctx_network", fids(&[3])),
        rows("item_id", n, |i| fids(&[100 + i])),
        rows("item_author", n, |i| fids(&[200 + i])),
        rows("item_category", n, |i| fids(&[300 + i, 301])),
        rows("item_tags", n, |i| fids(&[400, 401, 402 + i])),
        rows("item_ctr_7d", n, |_| floats(&[0.03])),
        rows("item_duration", n, |i| floats(&[i as f32 * 10.0])),
        rows("item_embedding", n, |_| floats(&[0.5; 16])),
        rows("item_title", n, |i| bytes(&[format!("item {i}").as_bytes()])),
        rows("__LINE_ID__", n, |i| bytes(&[&line_id(i)])),
        rows("__LABEL__", n, |_| floats(&[1.0, 0.0])),
        rows("instance_weight", n, |_| floats(&[2.0])),
    ];
    pb::ExampleBatch { named_feature_list, batch_size: n as i32, ..Default::default() }
}

/// Hand-encoded: an unpacked fid run, an unknown field and a group inside a
/// Feature, a repeated name, and reserved lists sent SHARED.
fn odd_encodings_batch() -> Vec<u8> {
    let mut fid_list = Vec::new();
    enc::fixed64::encode_repeated(1, &[5, 6], &mut fid_list);
    enc::fixed64::encode_packed(1, &[7], &mut fid_list);
    let mut feature = Vec::new();
    enc::bytes::encode(2, &fid_list, &mut feature);
    enc::int32::encode(99, &1, &mut feature);
    enc::encode_key(98, enc::WireType::StartGroup, &mut feature);
    enc::int32::encode(1, &2, &mut feature);
    enc::encode_key(98, enc::WireType::EndGroup, &mut feature);
    let mut fid_v2 = Vec::new();
    enc::string::encode(1, &"ignored".to_string(), &mut fid_v2);
    enc::string::encode(1, &"fid_v2".to_string(), &mut fid_v2);
    enc::bytes::encode(2, &feature, &mut fid_v2);
    let mut batch = Vec::new();
    enc::bytes::encode(1, &fid_v2, &mut batch);
    let reserved = pb::ExampleBatch {
        named_feature_list: vec![
            list("__LINE_ID__", true, vec![bytes(&[&line_id(3)])]),
            list("__LABEL__", true, vec![floats(&[1.0])]),
            list("instance_weight", true, vec![floats(&[0.5])]),
        ],
        ..Default::default()
    };
    batch.extend(reserved.encode_to_vec());
    enc::int32::encode(3, &1, &mut batch);
    batch
}

fn named(name: &str, f: pb::Feature) -> pb::NamedFeature {
    pb::NamedFeature { name: name.into(), feature: Some(f), id: 0, sorted_id: 0 }
}

/// One Example with LineId, labels and weight in fields 100..=102.
fn example(i: u64) -> Vec<u8> {
    let e = pb::Example {
        named_feature: vec![
            named("fid_v2", fids(&[i])),
            named("float_dense", floats(&[0.5])),
            named("int_one", feature(Type::Int64Value(i as i64))),
            named("title", feature(Type::BytesValue(b"t".to_vec()))),
            named("seq_float", double_lists(&[&[0.25]])),
            named("__LABEL__", floats(&[0.5])),
        ],
        label: vec![1.0],
        instance_weight: i as f32,
        ..Default::default()
    };
    let mut buf = e.encode_to_vec();
    // Field 100 as raw bytes: prost's LineId would drop the numbered fields.
    enc::bytes::encode(100, &line_id(i), &mut buf);
    buf
}

fn instance() -> Vec<u8> {
    let feature = matrix::Feature {
        name: Some("f".into()),
        fid: vec![1, 2],
        float_value: vec![0.5],
        int64_value: vec![-1, 3],
        bytes_value: vec![b"b".to_vec()],
    };
    let i = Instance {
        fid: vec![10, 11],
        value: vec![1.5],
        label: vec![0.0, 1.0],
        instance_weight: Some(2.0),
        line_id: Some(LineId { uid: Some(1), sample_rate: Some(0.1), ..Default::default() }),
        next_fid: vec![12],
        feature: vec![feature],
        data_source_key: Some(4),
    };
    i.encode_to_vec()
}

/// Row `row` of `batch` as one Example: a SHARED list gives its one Feature to
/// every row, an INDIVIDUAL list its Feature of that row.
fn row_as_example(batch: &pb::ExampleBatch, row: usize) -> Vec<u8> {
    let named_feature = batch
        .named_feature_list
        .iter()
        .filter_map(|l| {
            let f = if l.r#type == 1 { l.feature.first() } else { l.feature.get(row) };
            f.map(|f| named(&l.name, f.clone()))
        })
        .collect();
    pb::Example { named_feature, ..Default::default() }.encode_to_vec()
}

/// Writes one seed and says how each plan extracts it: a seed that every plan
/// rejects early teaches the fuzzer little.
fn write(dir: &Path, name: &str, bytes: &[u8]) {
    std::fs::write(dir.join(name), bytes).unwrap_or_else(|e| panic!("writing {}: {e}", dir.join(name).display()));
    let target = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let examples = fex_fuzz::split::split_examples(bytes);
    for plan in fex_fuzz::plans::all() {
        let result = match target {
            "decode_batch" => fex::extract_batch(plan, bytes),
            _ => fex::extract_examples(plan, &examples),
        };
        let verdict = result.map_or_else(|e| format!("error: {e}"), |out| format!("ok, {} rows", out.batch_size));
        println!("{target}/{name} with {}: {verdict}", plan.name);
    }
}

fn main() {
    let root = std::env::args().nth(1).expect("usage: seeds DIR");
    let batch_dir = Path::new(&root).join("decode_batch");
    let examples_dir = Path::new(&root).join("decode_examples");
    for dir in [&batch_dir, &examples_dir] {
        std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    }
    write(&batch_dir, "fuzz_plans_3", &fuzz_plan_batch(3).encode_to_vec());
    write(&batch_dir, "fuzz_plans_1", &fuzz_plan_batch(1).encode_to_vec());
    write(&batch_dir, "default_model_4", &default_model_batch(4).encode_to_vec());
    write(&batch_dir, "empty_batch", &pb::ExampleBatch::default().encode_to_vec());
    write(&batch_dir, "odd_encodings", &odd_encodings_batch());

    let small: Vec<Vec<u8>> = (0..3).map(example).collect();
    let small: Vec<&[u8]> = small.iter().map(Vec::as_slice).collect();
    let instance = instance();
    let join = |parts: &[&[u8]]| fex_fuzz::split::join_examples(parts).expect("seed examples fit the split format");
    write(&examples_dir, "examples_3", &join(&small));
    write(&examples_dir, "example_1", &join(&small[..1]));
    write(&examples_dir, "instance", &join(&[&instance]));
    write(&examples_dir, "example_and_instance", &join(&[small[0], &instance]));

    let realistic = "seed-corpus/decode_batch/default_b8";
    let bytes = std::fs::read(realistic).unwrap_or_else(|e| panic!("reading {realistic}: {e}"));
    let batch = pb::ExampleBatch::decode(bytes.as_slice()).expect("the committed seed batch decodes");
    for row in 0..3 {
        write(&examples_dir, &format!("realistic_row_{row}"), &join(&[&row_as_example(&batch, row)]));
    }
    println!("seeds written to {root}");
}
