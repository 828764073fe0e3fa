//! Operator benches: what each `op:` (and the operator-like kinds
//! `per_position` and `action_label`) adds to one ranking request, B = 256.
//!
//! One seeded ExampleBatch holds every input the operators read. `baseline` is
//! a plan of the source features alone, all returned, so every source is
//! decoded; each operator's plan is the baseline plus that one entry, so the
//! difference of the medians is the operator's own cost. Two more references
//! run in the same group:
//! - `gather_only`: the same sources declared `output: false`, so nothing is
//!   decoded; `baseline - gather_only` is what decoding the sources costs.
//! - `baseline_repeat`: the baseline again, last, to show drift over the run.
//!
//! `multi_hot` reads two vocabulary outputs; `multi_hot_inputs` is the baseline
//! plus those two, the reference for multi_hot's own cost.
//!
//! A cheap operator adds about as much as the noise between two runs of the
//! baseline, so the group `operators_x16` holds each entry 16 times over the
//! same inputs: one copy costs `(median - baseline) / 16` (for per_position:
//! over `per_position_inputs`, 16 plain sequences).
//!
//! Before criterion runs, a counting global allocator reports allocations per
//! extraction in steady state for every plan. `FEX_BENCH_PROFILE=group/case:N`
//! (`operators_x16/hash_ids:20`) runs N extractions of one plan and exits: a
//! driver for callgrind, whose instruction counts hold still where this
//! machine's wall clock does not.

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, Throughput};
use fex::proto::matrix::LineId;
use fex::proto::monolith_pb::{self as pb, feature::Type};
use fex::{Extracted, Extractor, Plan};
use prost::Message;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

mod common;

use common::allocs_per_call;

// ---------------------------------------------------------------------------
// The request

const ROWS: usize = 256;
/// Entries in each vocabulary file.
const VOCAB: usize = 10_000;
/// Distinct item ids and categories drawn from: the vocabularies hold the
/// first `VOCAB`, so about one value in six is out of vocabulary.
const POOL: u64 = 12_000;
/// Slots that item_tags' fids are spread over (filter_slots keeps 3 and 7).
const TAG_SLOTS: [u64; 4] = [3, 6, 7, 8];

fn item_id(k: u64) -> u64 {
    (2 << 48) | (1_000_000 + k)
}

fn category(k: u64) -> String {
    format!("category_{k:05}")
}

fn feature(t: Type) -> pb::Feature {
    pb::Feature { r#type: Some(t) }
}

/// 1..=8 fids; `fid` draws one.
fn fids(rng: &mut ChaCha8Rng, fid: impl Fn(&mut ChaCha8Rng) -> u64) -> pb::Feature {
    let n = rng.random_range(1..=8);
    feature(Type::FidV2List(pb::FidList { value: (0..n).map(|_| fid(rng)).collect() }))
}

fn random_fid(slot: u64) -> impl Fn(&mut ChaCha8Rng) -> u64 {
    move |rng| (slot << 48) | (rng.random::<u64>() & ((1 << 48) - 1))
}

fn floats(rng: &mut ChaCha8Rng, n: usize, max: f32) -> pb::Feature {
    feature(Type::FloatList(pb::FloatList { value: (0..n).map(|_| rng.random_range(0.0..max)).collect() }))
}

fn string(s: String) -> pb::Feature {
    feature(Type::BytesList(pb::BytesList { value: vec![s.into_bytes()] }))
}

/// 1..=20 positions of one fid each.
fn sequence(rng: &mut ChaCha8Rng) -> pb::Feature {
    let n = rng.random_range(1..=20);
    let list = (0..n).map(|_| pb::FidList { value: vec![random_fid(10)(rng)] }).collect();
    feature(Type::FidV2Lists(pb::FidLists { list }))
}

/// A LineId with request metadata and 0..=3 actions out of 1..=5.
fn line_id(rng: &mut ChaCha8Rng, row: usize) -> pb::Feature {
    let n = rng.random_range(0..=3);
    let id = LineId {
        uid: Some(rng.random()),
        req_time: Some(1_700_000_000 + row as i64),
        item_id: Some(rng.random()),
        actions: (0..n).map(|_| rng.random_range(1..=5)).collect(),
        ..Default::default()
    };
    feature(Type::BytesList(pb::BytesList { value: vec![id.encode_to_vec()] }))
}

fn list(name: &str, shared: bool, rows: impl FnMut(usize) -> pb::Feature) -> pb::NamedFeatureList {
    let n = if shared { 1 } else { ROWS };
    let r#type = if shared { pb::FeatureListType::Shared } else { pb::FeatureListType::Individual };
    pb::NamedFeatureList { name: name.into(), feature: (0..n).map(rows).collect(), r#type: r#type as i32, id: 0 }
}

/// The seeded request: SHARED user lists (ids, maps, a query), four item id
/// lists, a title, dense [8]
/// and [1], a string, a sequence, `__LINE_ID__` and `__LABEL__`.
fn request() -> Vec<u8> {
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed_0003);
    let r = &mut rng;
    let tag = |rng: &mut ChaCha8Rng| random_fid(TAG_SLOTS[rng.random_range(0..TAG_SLOTS.len())])(rng);
    let lists = vec![
        list("user_ids", true, |_| fids(r, random_fid(1))),
        list("item_id", false, |_| fids(r, |rng| item_id(rng.random_range(0..POOL)))),
        list("item_tags", false, |_| fids(r, tag)),
        list("item_author", false, |_| fids(r, random_fid(4))),
        list("item_topic", false, |_| fids(r, random_fid(5))),
        list("item_dense", false, |_| floats(r, 8, 100.0)),
        list("item_ctr", false, |_| floats(r, 1, 1.0)),
        list("category", false, |_| string(category(r.random_range(0..POOL)))),
        list("click_seq", false, |_| sequence(r)),
        list("__LINE_ID__", false, |row| line_id(r, row)),
        // A user-side map for `lookup`: 64 categories and a count each.
        list("user_cate_cnt", true, |_| {
            let entries: Vec<String> =
                (0..64).map(|_| format!("{}:{}", category(r.random_range(0..POOL)), r.random_range(1..100))).collect();
            string(entries.join("\u{1d}"))
        }),
        // The same kind of map as parallel lists, for `lookup` with
        // `map_keys` and `map_values`: 64 categories, and a count each.
        list("user_cate_keys", true, |_| {
            let keys = (0..64).map(|_| category(r.random_range(0..POOL)).into_bytes()).collect();
            feature(Type::BytesList(pb::BytesList { value: keys }))
        }),
        list("user_cate_vals", true, |_| {
            feature(Type::FloatList(pb::FloatList { value: (0..64).map(|_| r.random_range(1..100) as f32).collect() }))
        }),
        // A user-side two-level map for `match`: 16 categories of 4 each.
        list("user_kkv", true, |_| {
            let outer: Vec<String> = (0..16)
                .map(|_| {
                    let inner: Vec<String> = (0..4)
                        .map(|_| format!("{}:{}", category(r.random_range(0..POOL)), r.random_range(1..100)))
                        .collect();
                    format!("{}^{}", category(r.random_range(0..POOL)), inner.join(","))
                })
                .collect();
            string(outer.join("|"))
        }),
        // A query of 4 words (SHARED) and each item's title of 12, words
        // from a pool of 64, for `overlap`.
        list("query", true, |_| string(words(r, 4))),
        list("title", false, |_| string(words(r, 12))),
        // Each item's weighted tags for `hash` with `weighted: true`: 4
        // `word:weight` parts.
        list("item_tag_weights", false, |_| {
            let parts: Vec<String> = (0..4)
                .map(|_| format!("w{}:{}", r.random_range(0..64), r.random_range(1..100) as f32 / 10.0))
                .collect();
            string(parts.join("\u{1d}"))
        }),
        list("__LABEL__", false, |_| {
            feature(Type::FloatList(pb::FloatList { value: vec![r.random_range(0..2) as f32] }))
        }),
    ];
    pb::ExampleBatch { named_feature_list: lists, batch_size: ROWS as i32, ..Default::default() }.encode_to_vec()
}

/// `n` words of a pool of 64, separated by 0x1D.
fn words(rng: &mut ChaCha8Rng, n: usize) -> String {
    let words: Vec<String> = (0..n).map(|_| format!("w{}", rng.random_range(0..64))).collect();
    words.join("\u{1d}")
}

/// `item_ids.txt` and `categories.txt`: the first `VOCAB` of each pool;
/// `title_df.tsv`, document counts of 48 of the 64 title words (of 100,000
/// documents; the other 16 are counted as in none); and `bpe.json` and
/// `unigram.model`, the tests' tokenizers.
fn write_vocabularies(dir: &Path) {
    let ids: String = (0..VOCAB as u64).map(|k| format!("{}\n", item_id(k))).collect();
    let cats: String = (0..VOCAB as u64).map(|k| format!("{}\n", category(k))).collect();
    std::fs::write(dir.join("item_ids.txt"), ids).expect("write vocabulary");
    std::fs::write(dir.join("categories.txt"), cats).expect("write vocabulary");
    let df: String = (0..48u64).map(|k| format!("w{k}\t{}\n", (k + 1) * 1000)).collect();
    std::fs::write(dir.join("title_df.tsv"), df).expect("write document counts");
    // The tests' byte-level BPE tokenizer (tests/fixtures/tokenizer).
    // Read at run time, not included: the Docker build context holds only
    // what a build includes (scripts/helm_test.sh checks).
    let bpe = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tokenizer/bpe.json"))
        .expect("read the tests' tokenizer");
    std::fs::write(dir.join("bpe.json"), bpe).expect("write tokenizer");
    let unigram = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tokenizer/unigram.model"))
        .expect("read the tests' sentencepiece model");
    std::fs::write(dir.join("unigram.model"), unigram).expect("write sentencepiece model");
}

// ---------------------------------------------------------------------------
// Plans

/// The source features, every list of the request.
const SOURCES: &[&str] = &[
    "{name: user_ids, kind: sparse, shared: once",
    "{name: item_id, kind: sparse",
    "{name: item_tags, kind: sparse",
    "{name: item_author, kind: sparse",
    "{name: item_topic, kind: sparse",
    "{name: item_dense, kind: dense, shape: [8]",
    "{name: item_ctr, kind: dense, shape: [1]",
    "{name: category, kind: string",
    "{name: user_cate_cnt, kind: string, shared: once",
    "{name: user_cate_keys, kind: string, join: \"\\x1d\", shared: once",
    "{name: user_cate_vals, kind: list, shared: once",
    "{name: user_kkv, kind: string, shared: once",
    "{name: query, kind: string, shared: once",
    "{name: title, kind: string",
    "{name: item_tag_weights, kind: string",
    "{name: click_seq, kind: sequence, dtype: i64, max_len: 20, width: 1",
    "{name: req_time, kind: line_id, field: req_time",
    "{name: label, kind: label",
];

const VOCAB_INPUTS: &str = "{name: vid, op: vocab, input: item_id, file: item_ids.txt}\n  \
     - {name: vcat, op: vocab, input: category, file: categories.txt}";

/// Copies of each operator in the `operators_x16` group: a cheap operator
/// adds 1% to the baseline, less than the noise between runs, so its cost is
/// read from 16 copies and divided by 16.
const COPIES: usize = 16;
const AMPLIFIED: &str = "operators_x16";

/// (bench name, the entry added to the baseline). `per_position` declares the
/// sequence `per_position: true` instead; `per_position_inputs` is its
/// reference in the amplified group (16 plain sequences over click_seq).
const OPS: &[(&str, &str)] = &[
    ("v1_to_v2", "{name: op, op: v1_to_v2, input: item_id}"),
    ("slot", "{name: op, op: slot, input: item_tags}"),
    ("reslot", "{name: op, op: reslot, input: item_id, slot: 9}"),
    ("hash_ids", "{name: op, op: hash, input: item_tags, buckets: 1000003}"),
    ("hash_strings", "{name: op, op: hash, input: category, buckets: 1000003}"),
    ("filter_slots", "{name: op, op: filter_slots, input: item_tags, slots: [3, 7]}"),
    ("cross", "{name: op, op: cross, inputs: [item_id, item_author], buckets: 1048576}"),
    ("vocab_ids", "{name: op, op: vocab, input: item_id, file: item_ids.txt}"),
    ("vocab_strings", "{name: op, op: vocab, input: category, file: categories.txt}"),
    ("ln", "{name: op, op: ln, input: item_dense, c: 1}"),
    ("clip", "{name: op, op: clip, input: item_dense, min: 0, max: 50}"),
    ("normalize_zscore", "{name: op, op: normalize, input: item_dense, method: zscore, mean: 50, std: 29}"),
    ("normalize_minmax", "{name: op, op: normalize, input: item_dense, method: minmax, min: 0, max: 100}"),
    ("bucketize", "{name: op, op: bucketize, input: item_dense, boundaries: [1, 2, 5, 10, 20, 30, 50, 70, 90, 99]}"),
    ("cast", "{name: op, op: cast, input: item_dense, dtype: i64}"),
    ("scale", "{name: op, op: scale, input: item_dense, factor: 0.01}"),
    ("pow", "{name: op, op: pow, input: item_dense, exponent: 0.5}"),
    ("group", "{name: op, op: group, inputs: [user_ids, item_id, item_tags]}"),
    ("kjt", "{name: op, op: kjt, inputs: [item_id, item_tags, item_author, item_topic]}"),
    ("concat", "{name: op, op: concat, inputs: [item_dense, item_ctr]}"),
    ("per_position_inputs", ""),
    ("per_position", ""),
    ("multi_hot_inputs", VOCAB_INPUTS),
    (
        "multi_hot",
        "{name: op, op: multi_hot, inputs: [vid, vcat], num_embeddings: [16384, 16384], \
         min_table_size: 1000, multi_hot_size: 4}",
    ),
    ("action_label", "{name: op, kind: action_label, tasks: [{pos: [1]}, {pos: [2], neg: [3]}]}"),
    ("lookup", "{name: op, op: lookup, inputs: [user_cate_cnt, category]}"),
    ("lookup_ids", "{name: op, op: lookup, inputs: [user_cate_cnt, category], need_discrete: true, buckets: 1000003}"),
    ("match", "{name: op, op: match, inputs: [user_kkv, category, category]}"),
    ("match_all", "{name: op, op: match, inputs: [user_kkv, ALL, category]}"),
    ("overlap_ratio", "{name: op, op: overlap, inputs: [query, title], method: query_common_ratio}"),
    ("overlap_contain", "{name: op, op: overlap, inputs: [query, title], method: is_contain}"),
    ("overlap_index", "{name: op, op: overlap, inputs: [query, title], method: index_of}"),
    ("overlap_cover", "{name: op, op: overlap, inputs: [query, title], method: proximity_min_cover}"),
    ("overlap_min_dist", "{name: op, op: overlap, inputs: [query, title], method: proximity_min_dist}"),
    ("overlap_avg_dist", "{name: op, op: overlap, inputs: [query, title], method: proximity_avg_dist}"),
    ("bm25", "{name: op, op: bm25, inputs: [query, title], file: title_df.tsv, documents: 100000, avg_len: 12}"),
    ("kv_dot", "{name: op, op: kv_dot, inputs: [query, title]}"),
    ("bool_mask", "{name: op, op: bool_mask, inputs: [item_tags, item_tags]}"),
    ("hash_weighted", "{name: op, op: hash, input: item_tag_weights, buckets: 1000003, weighted: true}"),
    ("hash_prefix_ids", "{name: op, op: hash, input: item_tags, buckets: 1000003, need_prefix: true}"),
    ("hash_prefix_strings", "{name: op, op: hash, input: category, buckets: 1000003, need_prefix: true}"),
    ("hash_num_buckets", "{name: op, op: hash, input: item_tags, num_buckets: 9223372036854775807}"),
    (
        "lookup_ids_key",
        "{name: op, op: lookup, inputs: [user_cate_cnt, category], need_discrete: true, need_key: true, buckets: 1000003}",
    ),
    ("lookup_dim", "{name: op, op: lookup, inputs: [user_cate_cnt, category], value_dim: 2}"),
    (
        "lookup_lists",
        "{name: op, op: lookup, inputs: [category], map_keys: user_cate_keys, map_values: user_cate_vals}",
    ),
    ("tokenize", "{name: op, op: tokenize, input: title, file: bpe.json}"),
    (
        "tokenize_sentencepiece",
        "{name: op, op: tokenize, input: title, tokenizer_type: sentencepiece, file: unigram.model}",
    ),
    ("normalize_text", "{name: op, op: normalize_text, input: title, options: [TEXT_LOWER2UPPER, TEXT_SBC2DBC]}"),
    ("seq_hash", "{name: op, op: hash, input: click_seq, buckets: 1000003}"),
    ("seq_lookup", "{name: op, op: lookup, inputs: [user_cate_cnt, click_seq]}"),
    ("seq_match", "{name: op, op: match, inputs: [user_kkv, click_seq, category]}"),
    ("normalize_text_cht2chs", "{name: op, op: normalize_text, input: title, options: [TEXT_CHT2CHS]}"),
    ("regex_replace", "{name: op, op: regex_replace, input: category, pattern: \"[0-9]+\", replacement: \"#\"}"),
    ("slice", "{name: op, op: slice, input: category, start: -3}"),
    ("split", "{name: op, op: split, input: category, separator: \"_\", index: -1}"),
    ("expr_scalar", "{name: op, op: expr, inputs: [item_ctr], expression: \"sigmoid(item_ctr * 4 - 2)\"}"),
    (
        "expr_vector",
        "{name: op, op: expr, inputs: [item_dense, item_ctr], expression: \"log(item_dense + 1) * item_ctr\"}",
    ),
    (
        "expr_reduce",
        "{name: op, op: expr, inputs: [item_dense, item_ctr], \
         expression: \"dot(item_dense, item_dense) / (l2_norm(item_dense) + item_ctr)\"}",
    ),
];

/// The model: the sources (returned or not, the sequence per position or
/// not), then `extra` entries.
fn model(visible: bool, per_position: bool, extra: &[&str]) -> String {
    let mut y = String::from("name: operators\ncompat: native\nlimits: {max_batch_size: 4096}\nfeatures:\n");
    for s in SOURCES {
        let hidden = if visible { "" } else { ", output: false" };
        let pos = if per_position && s.contains("click_seq") { ", per_position: true" } else { "" };
        y.push_str(&format!("  - {s}{hidden}{pos}}}\n"));
    }
    extra.iter().filter(|e| !e.is_empty()).for_each(|e| y.push_str(&format!("  - {e}\n")));
    y
}

struct Case {
    name: &'static str,
    /// The YAML of the entry added to the baseline, for the report.
    entry: String,
    plan: Plan,
}

/// `copies` of an operator entry, named `op`, `op_1`, `op_2`...
fn copies(entry: &str, copies: usize) -> Vec<String> {
    (0..copies)
        .map(|i| if i == 0 { entry.to_string() } else { entry.replace("{name: op,", &format!("{{name: op_{i},")) })
        .collect()
}

/// `n - 1` more sequences reading click_seq, so a plan holds `n` in all.
fn sequences(n: usize, per_position: bool) -> Vec<String> {
    let pos = if per_position { ", per_position: true" } else { "" };
    let seq =
        |i| format!("{{name: seq{i}, kind: sequence, source: click_seq, dtype: i64, max_len: 20, width: 1{pos}}}");
    (1..n).map(seq).collect()
}

/// The YAML of operator `name` with `n` copies of `entry`, or None when the
/// group has no such plan. References (`*_inputs`) keep one copy.
fn op_model(name: &str, entry: &str, n: usize) -> Option<String> {
    let mut extra = copies(entry, n);
    match name {
        "per_position_inputs" if n == 1 => return None,
        "per_position_inputs" | "per_position" => extra = sequences(n, name == "per_position"),
        "multi_hot_inputs" => extra.truncate(1),
        "multi_hot" => extra.insert(0, VOCAB_INPUTS.to_string()),
        _ => {}
    }
    Some(model(true, name == "per_position", &extra.iter().map(String::as_str).collect::<Vec<_>>()))
}

/// The plans of one group: the baseline, each operator with `n` copies of its
/// entry, and the baseline again.
fn cases(dir: &Path, n: usize) -> Vec<Case> {
    let compile = |name: &'static str, entry: &str, yaml: String| {
        let plan = Plan::from_yaml_in(&yaml, dir).unwrap_or_else(|e| panic!("plan {name}: {e}"));
        Case { name, entry: entry.to_string(), plan }
    };
    let mut cases = vec![compile("baseline", "", model(true, false, &[]))];
    if n == 1 {
        cases.push(compile("gather_only", "sources output: false", model(false, false, &[])));
    }
    for &(name, entry) in OPS {
        let shown = match name {
            "per_position" => "click_seq: per_position: true",
            "per_position_inputs" => "16 sequences over click_seq",
            _ => entry,
        };
        if let Some(yaml) = op_model(name, entry, n) {
            cases.push(compile(name, shown, yaml));
        }
    }
    cases.push(compile("baseline_repeat", "", model(true, false, &[])));
    cases
}

// ---------------------------------------------------------------------------
// Runs

/// Elements in a column's values (bytes for strings).
fn values(c: &fex::Column) -> usize {
    match c {
        fex::Column::Strings(s) => s.bytes.len(),
        other => other.values().map_or(0, fex::Values::len),
    }
}

/// The operator's output must be there, with a row per candidate; returns
/// how many values it holds.
fn check(case: &Case, out: &Extracted) -> Option<usize> {
    let name = match case.name {
        "per_position" => "click_seq_19",
        "multi_hot_inputs" => "vcat",
        _ if case.entry.starts_with("{name: op") => "op",
        _ => return None,
    };
    let c = out.column(name).unwrap_or_else(|| panic!("{}: no output {name}", case.name));
    assert_eq!(c.rows(), ROWS, "{}: rows of {name}", case.name);
    assert!(values(c) > 0, "{}: {name} is empty", case.name);
    Some(values(c))
}

/// Checks every plan's output, then prints allocations per extraction in
/// steady state (after warm-up calls that grow the reused buffers).
fn allocation_report(group: &str, cases: &[Case], input: &[u8], iters: u64) {
    const WARM: u64 = 3;
    println!("{group}: steady-state allocations per extraction (after {WARM} warm-up calls, mean of {iters}):");
    println!("| plan | allocs | bytes | values out |");
    println!("|---|---:|---:|---:|");
    for case in cases {
        let mut ex = Extractor::new();
        let mut out = Extracted::default();
        let mut call = || ex.extract_batch(&case.plan, input, &mut out).expect("extracts");
        (0..WARM).for_each(|_| call());
        let (allocs, bytes) = allocs_per_call(iters, &mut call);
        let n = check(case, &out).map_or(String::new(), |n| n.to_string());
        println!("| {} | {allocs} | {bytes} | {n} |", case.name);
    }
    println!();
}

fn bench(c: &mut Criterion, group: &str, cases: &[Case], input: &[u8]) {
    let mut group = c.benchmark_group(group);
    group.throughput(Throughput::Elements(ROWS as u64));
    for case in cases {
        let mut ex = Extractor::new();
        let mut out = Extracted::default();
        group.bench_function(case.name, |b| {
            b.iter(|| {
                ex.extract_batch(&case.plan, black_box(input), &mut out).expect("extracts");
                black_box(&out);
            })
        });
    }
    group.finish();
}

/// Values per source in the request, so costs per row can be read per value.
fn describe(plan: &Plan, input: &[u8]) {
    let out = fex::extract_batch(plan, input).expect("extracts");
    let sizes: Vec<String> =
        out.columns.iter().map(|c| format!("{} {:?} {}", c.name, c.column.shape(), values(&c.column))).collect();
    println!("sources (name, shape, values): {}", sizes.join(", "));
}

/// Runs the baseline for a few seconds before anything is timed: in three of
/// five full runs the first benches read 10-15% slow without it.
fn settle(plan: &Plan, input: &[u8]) {
    let (mut ex, mut out) = (Extractor::new(), Extracted::default());
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(3) {
        ex.extract_batch(plan, black_box(input), &mut out).expect("extracts");
    }
}

/// `FEX_BENCH_PROFILE=group/case:N`: N extractions of one plan, after one
/// untimed warm-up call, and nothing else.
fn profile(groups: &[(&str, Vec<Case>)], input: &[u8], spec: &str) {
    let usage = "FEX_BENCH_PROFILE=group/case:iterations";
    let (name, n) = spec.split_once(':').expect(usage);
    let (group, case) = name.split_once('/').expect(usage);
    let n: usize = n.parse().expect(usage);
    let cases = &groups.iter().find(|g| g.0 == group).expect("known group").1;
    let case = cases.iter().find(|c| c.name == case).expect("known case");
    let (mut ex, mut out) = (Extractor::new(), Extracted::default());
    ex.extract_batch(&case.plan, input, &mut out).expect("extracts");
    for _ in 0..n {
        ex.extract_batch(&case.plan, black_box(input), &mut out).expect("extracts");
        black_box(&out);
    }
}

fn main() {
    let input = request();
    let dir = tempfile::tempdir().expect("tempdir");
    write_vocabularies(dir.path());
    let groups = [("operators", cases(dir.path(), 1)), (AMPLIFIED, cases(dir.path(), COPIES))];
    if let Ok(spec) = std::env::var("FEX_BENCH_PROFILE") {
        return profile(&groups, &input, &spec);
    }
    println!("operators: {} bytes, {ROWS} rows", input.len());
    describe(&groups[0].1[0].plan, &input);
    for case in groups[0].1.iter().filter(|c| !c.entry.is_empty()) {
        println!("  {}: {}", case.name, case.entry);
    }
    // `cargo test --benches` runs each bench once; keep its report short too.
    let benching = std::env::args().any(|a| a == "--bench");
    for (name, cases) in &groups {
        allocation_report(name, cases, &input, if benching { 50 } else { 2 });
    }
    if benching {
        settle(&groups[0].1[0].plan, &input);
    }
    let mut c = Criterion::default().configure_from_args();
    for (name, cases) in &groups {
        bench(&mut c, name, cases, &input);
    }
    c.final_summary();
}
