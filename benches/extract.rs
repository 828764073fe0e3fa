//! Extraction benches: fex against two baselines measured in the same run.
//!
//! - `fex`: `Extractor::extract_batch`, reusing the Extractor and the Extracted;
//!   `fex_fresh`: the same with a new `Extracted` per call (a caller that keeps
//!   the columns, as the Python package does).
//! - `prost`: a full `prost::Message::decode` of the same bytes into
//!   `ExampleBatch`, then the same extraction written over the structs (same
//!   tensors, byte for byte; checked before timing).
//! - `memcpy`: copying the input into a preallocated buffer (the physical floor).
//!
//! Shapes (seeded, so every run sees the same bytes):
//! - `snapshot`: a ~250 KB snapshot-like ExampleBatch, 1000 feature lists, 4 rows;
//!   models that need 5%, 20% and 100% of the lists.
//! - `ranking`: a ranking request, B = 256 candidates, 40 SHARED user/context
//!   lists and 160 INDIVIDUAL item lists; models that need 100% and 20% of them.
//!
//! Before criterion runs, a counting global allocator reports allocations per
//! extraction in steady state. `FEX_BENCH_TRACE_ALLOCS=N` prints the backtraces
//! of the first N steady-state allocations of fex; `FEX_BENCH_PROFILE` (see
//! `profile`) runs one case alone, for callgrind or perf.

use std::hint::black_box;
use std::sync::atomic::Ordering;

use criterion::{Criterion, Throughput};
use fex::proto::monolith_pb as pb;
use fex::{Extracted, Extractor, Plan};
use prost::Message;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rustc_hash::FxHashMap;

mod common;

use common::{TRACES, allocs_per_call};

// ---------------------------------------------------------------------------
// Synthetic samples

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// fid_v2_list with 1..=max fids per row.
    Sparse { max: usize },
    /// float_list of `dim` floats, read as f32 `[dim]`.
    Dense { dim: usize },
    /// bytes_list with one string per row.
    Str,
}

#[derive(Debug, Clone)]
struct ListSpec {
    name: String,
    kind: Kind,
    shared: bool,
    /// The model asks for this SHARED list once (`shared: once`), not broadcast.
    once: bool,
}

/// One Feature of `spec`. `slot` keeps the list's fids apart, as real slots do.
fn feature(rng: &mut ChaCha8Rng, spec: &ListSpec, slot: u64, empty_rate: f64) -> pb::Feature {
    use pb::feature::Type;
    if rng.random_bool(empty_rate) {
        return pb::Feature { r#type: None };
    }
    let ty = match spec.kind {
        Kind::Sparse { max } => {
            let n = rng.random_range(1..=max);
            let value = (0..n).map(|_| (slot << 48) | (rng.random::<u64>() & ((1 << 48) - 1))).collect();
            Type::FidV2List(pb::FidList { value })
        }
        Kind::Dense { dim } => {
            // Now and then a short list, to exercise padding.
            let n = if dim > 1 && rng.random_bool(0.05) { rng.random_range(0..dim) } else { dim };
            Type::FloatList(pb::FloatList { value: (0..n).map(|_| rng.random_range(-1.0..1.0)).collect() })
        }
        Kind::Str => {
            let n = rng.random_range(8..=48);
            let s: Vec<u8> = (0..n).map(|_| rng.random_range(b'a'..=b'z')).collect();
            Type::BytesList(pb::BytesList { value: vec![s] })
        }
    };
    pb::Feature { r#type: Some(ty) }
}

fn batch(rng: &mut ChaCha8Rng, specs: &[ListSpec], rows: usize, empty_rate: f64) -> Vec<u8> {
    let lists = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let n = if spec.shared { 1 } else { rows };
            let slot = (i as u64 % 0x7fff) + 1;
            pb::NamedFeatureList {
                name: spec.name.clone(),
                feature: (0..n).map(|_| feature(rng, spec, slot, empty_rate)).collect(),
                r#type: if spec.shared { pb::FeatureListType::Shared } else { pb::FeatureListType::Individual } as i32,
                id: i as i32,
            }
        })
        .collect();
    pb::ExampleBatch { named_feature_list: lists, batch_size: rows as i32, ..Default::default() }.encode_to_vec()
}

/// The model config (YAML) reading `specs`, in the given order.
fn model_yaml(name: &str, specs: &[&ListSpec]) -> String {
    let mut y = format!("name: {name}\ncompat: native\nlimits:\n  max_batch_size: 4096\nfeatures:\n");
    for s in specs {
        let once = if s.once { ", shared: once" } else { "" };
        let line = match s.kind {
            Kind::Sparse { .. } => format!("  - {{name: {}, kind: sparse{once}}}\n", s.name),
            Kind::Dense { dim } => format!("  - {{name: {}, kind: dense, dtype: f32, shape: [{dim}]{once}}}\n", s.name),
            Kind::Str => format!("  - {{name: {}, kind: string{once}}}\n", s.name),
        };
        y.push_str(&line);
    }
    y
}

/// Snapshot-like: 1000 lists (a quarter SHARED user/context, the rest per
/// item), 4 rows; 75% sparse (1..=16 fids), 15% dense (f32 [1] to [64]),
/// 10% strings.
fn snapshot_specs(rng: &mut ChaCha8Rng) -> Vec<ListSpec> {
    (0..1000)
        .map(|i| {
            let shared = rng.random_bool(0.25);
            let r: f64 = rng.random();
            let kind = if r < 0.75 {
                Kind::Sparse { max: 16 }
            } else if r < 0.90 {
                Kind::Dense { dim: [1, 4, 16, 32, 64][rng.random_range(0..5)] }
            } else {
                Kind::Str
            };
            let prefix = if shared { "user" } else { "item" };
            ListSpec { name: format!("{prefix}_f{i:04}"), kind, shared, once: false }
        })
        .collect()
}

/// Ranking request: 40 SHARED lists (24 user features returned once, 16 context
/// features broadcast) and 160 INDIVIDUAL item lists.
fn ranking_specs(rng: &mut ChaCha8Rng) -> Vec<ListSpec> {
    let mut specs = Vec::new();
    for i in 0..40 {
        let kind = match i % 10 {
            0 | 1 => Kind::Dense { dim: if i % 20 == 0 { 16 } else { 1 } },
            _ => Kind::Sparse { max: 10 },
        };
        let (name, once) = if i < 24 { (format!("user_f{i:03}"), true) } else { (format!("ctx_f{i:03}"), false) };
        specs.push(ListSpec { name, kind, shared: true, once });
    }
    for i in 0..160 {
        let kind = match i % 16 {
            0 | 1 => Kind::Dense { dim: 1 },
            2 => Kind::Dense { dim: 16 },
            _ => Kind::Sparse { max: 10 },
        };
        specs.push(ListSpec { name: format!("item_f{i:03}"), kind, shared: false, once: false });
    }
    // Wire order as a client would send it: not grouped by kind.
    specs.shuffle(rng);
    specs
}

// ---------------------------------------------------------------------------
// The prost baseline: full decode, then the same extraction over the structs

/// One output of the baseline: the same buffers fex fills.
#[derive(Debug, Default, Clone, PartialEq)]
struct Out {
    shape: Vec<i64>,
    values: Vec<u8>,
    row_splits: Vec<u8>,
}

/// The baseline's compiled model: output specs and a name index.
struct Baseline {
    outputs: Vec<(Kind, bool)>,
    index: FxHashMap<String, usize>,
}

impl Baseline {
    fn new(specs: &[&ListSpec]) -> Self {
        let outputs = specs.iter().map(|s| (s.kind, s.once)).collect();
        let index = specs.iter().enumerate().map(|(i, s)| (s.name.clone(), i)).collect();
        Self { outputs, index }
    }
}

/// Scratch the baseline keeps between calls (its output buffers are reused,
/// like fex's; the decoded message cannot be).
#[derive(Default)]
struct BaselineOut {
    slots: Vec<Option<usize>>,
    tensors: Vec<Out>,
}

fn push_split(splits: &mut Vec<u8>, n: usize) {
    splits.extend_from_slice(&(n as i64).to_le_bytes());
}

/// `prost::Message::decode`, then per output: sparse → i64 row_splits + u64
/// ids, dense → f32 `[rows, dim]` (prefix, zero padding), strings → bytes +
/// row_splits; SHARED lists broadcast to every row unless asked once.
fn prost_extract(base: &Baseline, bytes: &[u8], out: &mut BaselineOut) -> usize {
    use pb::feature::Type;
    let batch = pb::ExampleBatch::decode(bytes).expect("valid batch");
    let rows = batch.batch_size as usize;
    out.slots.clear();
    out.slots.resize(base.outputs.len(), None);
    for (i, list) in batch.named_feature_list.iter().enumerate() {
        if let Some(&o) = base.index.get(list.name.as_str()) {
            out.slots[o] = Some(i);
        }
    }
    out.tensors.resize_with(base.outputs.len(), Out::default);
    for ((&(kind, once), slot), t) in base.outputs.iter().zip(&out.slots).zip(&mut out.tensors) {
        t.shape.clear();
        t.values.clear();
        t.row_splits.clear();
        let list = slot.map(|i| &batch.named_feature_list[i]);
        let shared = list.is_some_and(|l| l.r#type == pb::FeatureListType::Shared as i32);
        let compute = if shared { rows.min(1) } else { rows };
        let total = if shared && once { 1 } else { rows };
        let feature = |row: usize| list.and_then(|l| l.feature.get(row)).and_then(|f| f.r#type.as_ref());
        match kind {
            Kind::Sparse { .. } => {
                push_split(&mut t.row_splits, 0);
                for row in 0..compute {
                    match feature(row) {
                        Some(Type::FidV2List(l)) => {
                            l.value.iter().for_each(|v| t.values.extend_from_slice(&v.to_le_bytes()))
                        }
                        Some(Type::FidV1List(l)) => l
                            .value
                            .iter()
                            .for_each(|v| t.values.extend_from_slice(&fex::fid::v1_to_v2(*v).to_le_bytes())),
                        _ => {}
                    }
                    push_split(&mut t.row_splits, t.values.len() / 8);
                }
            }
            Kind::Dense { dim } => {
                for row in 0..compute {
                    let vals: &[f32] = match feature(row) {
                        Some(Type::FloatList(l)) => &l.value,
                        _ => &[],
                    };
                    let n = vals.len().min(dim);
                    vals[..n].iter().for_each(|v| t.values.extend_from_slice(&v.to_le_bytes()));
                    (n..dim).for_each(|_| t.values.extend_from_slice(&0f32.to_le_bytes()));
                }
            }
            Kind::Str => {
                push_split(&mut t.row_splits, 0);
                for row in 0..compute {
                    match feature(row) {
                        Some(Type::BytesList(l)) => t.values.extend_from_slice(l.value.first().map_or(&[][..], |v| v)),
                        Some(Type::BytesValue(v)) => t.values.extend_from_slice(v),
                        _ => {}
                    }
                    push_split(&mut t.row_splits, t.values.len());
                }
            }
        }
        if total > compute {
            let one = t.values.len();
            for _ in 1..total {
                t.values.extend_from_within(..one);
            }
            if !t.row_splits.is_empty() {
                let n = if kind == Kind::Str { one } else { one / 8 };
                t.row_splits.truncate(8);
                (1..=total).for_each(|r| push_split(&mut t.row_splits, n * r));
            }
        }
        t.shape.push(total as i64);
        match kind {
            Kind::Sparse { .. } => t.shape.push(-1),
            Kind::Dense { dim } => t.shape.push(dim as i64),
            Kind::Str => {}
        }
    }
    rows
}

// ---------------------------------------------------------------------------
// Cases

struct Shape {
    group: &'static str,
    input: Vec<u8>,
    lists: usize,
    rows: usize,
    cases: Vec<Case>,
}

struct Case {
    /// Share of the lists the model needs, e.g. "5pct".
    label: String,
    plan: Plan,
    /// The model's YAML (written out by `FEX_BENCH_DUMP`).
    yaml: String,
    baseline: Baseline,
}

fn case(label: &str, specs: &[&ListSpec]) -> Case {
    let yaml = model_yaml(&format!("bench_{label}"), specs);
    let plan = Plan::from_yaml(&yaml).unwrap_or_else(|e| panic!("bench model {label}: {e}"));
    Case { label: label.to_string(), plan, yaml, baseline: Baseline::new(specs) }
}

/// The first `pct`% of `order` (a seeded shuffle of the lists), in that order.
fn needed<'s>(specs: &'s [ListSpec], order: &[usize], pct: usize) -> Vec<&'s ListSpec> {
    let n = (specs.len() * pct).div_ceil(100);
    order[..n].iter().map(|&i| &specs[i]).collect()
}

fn shapes() -> Vec<Shape> {
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed_0001);
    let specs = snapshot_specs(&mut rng);
    let rows = 4;
    let input = batch(&mut rng, &specs, rows, 0.02);
    let mut order: Vec<usize> = (0..specs.len()).collect();
    order.shuffle(&mut rng);
    let snapshot = Shape {
        group: "snapshot",
        lists: specs.len(),
        rows,
        cases: [5, 20, 100].iter().map(|&p| case(&format!("{p}pct"), &needed(&specs, &order, p))).collect(),
        input,
    };

    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed_0002);
    let specs = ranking_specs(&mut rng);
    let rows = 256;
    let input = batch(&mut rng, &specs, rows, 0.01);
    let mut order: Vec<usize> = (0..specs.len()).collect();
    order.shuffle(&mut rng);
    let ranking = Shape {
        group: "ranking",
        lists: specs.len(),
        rows,
        cases: [100, 20].iter().map(|&p| case(&format!("{p}pct"), &needed(&specs, &order, p))).collect(),
        input,
    };
    vec![snapshot, ranking]
}

/// fex and the baseline must produce the same tensors, or the comparison means nothing.
fn check_equal(shape: &Shape, case: &Case, fex_out: &Extracted, base: &BaselineOut) {
    assert_eq!(fex_out.tensors().len(), base.tensors.len());
    for (t, b) in fex_out.tensors().iter().zip(&base.tensors) {
        let what = format!("{}/{} output {}", shape.group, case.label, t.name);
        assert_eq!(t.shape, b.shape, "{what}: shape");
        assert_eq!(t.values, b.values, "{what}: values");
        assert_eq!(t.row_splits, b.row_splits, "{what}: row_splits");
    }
}

/// Checks outputs, then prints allocations per extraction in steady state.
fn allocation_report(shapes: &[Shape]) {
    const WARM: u64 = 3;
    const ITERS: u64 = 50;
    let trace = std::env::var("FEX_BENCH_TRACE_ALLOCS").ok().and_then(|v| v.parse().ok()).unwrap_or(0u64);
    println!("Steady-state allocations per extraction (after {WARM} warm-up calls, mean of {ITERS}):");
    println!("| case | input bytes | fex allocs | fex bytes | prost allocs | prost bytes | memcpy allocs |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for shape in shapes {
        let mut dst = vec![0u8; shape.input.len()];
        for case in &shape.cases {
            let mut ex = Extractor::new();
            let mut out = Extracted::default();
            let mut base = BaselineOut::default();
            let mut fex_call = || ex.extract_batch(&case.plan, &shape.input, &mut out).expect("fex extracts");
            for _ in 0..WARM {
                fex_call();
            }
            TRACES.store(trace, Ordering::Relaxed);
            let (fa, fb) = allocs_per_call(ITERS, &mut fex_call);
            TRACES.store(0, Ordering::Relaxed);
            for _ in 0..WARM {
                prost_extract(&case.baseline, &shape.input, &mut base);
            }
            let (pa, pb) = allocs_per_call(ITERS, || {
                black_box(prost_extract(&case.baseline, &shape.input, &mut base));
            });
            let (ma, _) = allocs_per_call(ITERS, || dst.copy_from_slice(black_box(&shape.input)));
            check_equal(shape, case, &out, &base);
            println!(
                "| {}/{} | {} | {fa} | {fb} | {pa:.0} | {pb:.0} | {ma} |",
                shape.group,
                case.label,
                shape.input.len()
            );
            if fa > 0.0 && trace == 0 {
                println!("  fex allocates in steady state: rerun with FEX_BENCH_TRACE_ALLOCS=5 for backtraces");
            }
        }
    }
    println!();
}

fn bench(c: &mut Criterion, shapes: &[Shape]) {
    for shape in shapes {
        let input = &shape.input;
        let mut group = c.benchmark_group(shape.group);
        group.throughput(Throughput::Bytes(input.len() as u64));
        for case in &shape.cases {
            let mut ex = Extractor::new();
            let mut out = Extracted::default();
            group.bench_function(format!("fex_{}", case.label), |b| {
                b.iter(|| {
                    ex.extract_batch(&case.plan, black_box(input), &mut out).expect("fex extracts");
                    black_box(&out);
                })
            });
            let mut base = BaselineOut::default();
            // What a caller that keeps the columns pays (the Python package:
            // its arrays own the buffers), a fresh `Extracted` per call.
            group.bench_function(format!("fex_fresh_{}", case.label), |b| {
                b.iter(|| {
                    let mut out = Extracted::default();
                    ex.extract_batch(&case.plan, black_box(input), &mut out).expect("fex extracts");
                    black_box(out)
                })
            });
            group.bench_function(format!("prost_{}", case.label), |b| {
                b.iter(|| {
                    black_box(prost_extract(&case.baseline, black_box(input), &mut base));
                    black_box(&base.tensors);
                })
            });
        }
        let mut dst = vec![0u8; input.len()];
        group.bench_function("memcpy", |b| {
            b.iter(|| {
                dst.copy_from_slice(black_box(input));
                black_box(&dst);
            })
        });
        group.finish();
    }
}

/// fex-server's request: the embedded default model on a B = 256 request
/// written by `fex-client gen --count 1` (benches/data/default_b256.pb,
/// 94 KB), against a bare prost decode of the same bytes and a memcpy.
const SERVER_REQUEST: &[u8] = include_bytes!("data/default_b256.pb");

fn bench_server(c: &mut Criterion) {
    let plan = Plan::default_model();
    let mut group = c.benchmark_group("server");
    group.throughput(Throughput::Bytes(SERVER_REQUEST.len() as u64));
    let mut ex = Extractor::new();
    let mut out = Extracted::default();
    group.bench_function("fex_default", |b| {
        b.iter(|| {
            ex.extract_batch(&plan, black_box(SERVER_REQUEST), &mut out).expect("fex extracts");
            black_box(&out);
        })
    });
    group.bench_function("prost_decode_only", |b| {
        b.iter(|| black_box(pb::ExampleBatch::decode(black_box(SERVER_REQUEST)).expect("decodes")))
    });
    let mut dst = vec![0u8; SERVER_REQUEST.len()];
    group.bench_function("memcpy", |b| {
        b.iter(|| {
            dst.copy_from_slice(black_box(SERVER_REQUEST));
            black_box(&dst);
        })
    });
    group.finish();
}

/// `FEX_BENCH_PROFILE=snapshot/5pct:N[:prost]` runs N extractions of one case
/// (fex, or the prost baseline) and exits: a driver for callgrind or perf
/// without criterion around it.
fn profile(shapes: &[Shape], spec: &str) {
    let usage = "FEX_BENCH_PROFILE=group/case:iterations[:prost]";
    let mut parts = spec.split(':');
    let (group, label) = parts.next().and_then(|n| n.split_once('/')).expect(usage);
    let n: usize = parts.next().unwrap_or("1000").parse().expect(usage);
    if (group, label) == ("server", "default") {
        let (plan, mut ex, mut out) = (Plan::default_model(), Extractor::new(), Extracted::default());
        for _ in 0..n {
            ex.extract_batch(&plan, black_box(SERVER_REQUEST), &mut out).expect("fex extracts");
            black_box(&out);
        }
        return;
    }
    let prost = parts.next() == Some("prost");
    let shape = shapes.iter().find(|s| s.group == group).expect("known group");
    let case = shape.cases.iter().find(|c| c.label == label).expect("known case");
    let mut ex = Extractor::new();
    let mut out = Extracted::default();
    let mut base = BaselineOut::default();
    for _ in 0..n {
        if prost {
            black_box(prost_extract(&case.baseline, black_box(&shape.input), &mut base));
        } else {
            ex.extract_batch(&case.plan, black_box(&shape.input), &mut out).expect("fex extracts");
        }
        black_box((&out, &base.tensors));
    }
}

/// `FEX_BENCH_RATIO=snapshot/100pct:R` times one case against a memcpy of
/// its input in R rounds, each a few milliseconds of fex calls then as
/// long of memcpys, and prints the median of the rounds' ratios (and each
/// side's median ns per call): on a shared, noisy host a ratio taken
/// within a few milliseconds moves far less than either time.
fn ratio(shapes: &[Shape], spec: &str) {
    let usage = "FEX_BENCH_RATIO=group/case:rounds";
    let (name, rounds) = spec.split_once(':').expect(usage);
    let rounds: usize = rounds.parse().expect(usage);
    let (group, label) = name.split_once('/').expect(usage);
    let shape = shapes.iter().find(|s| s.group == group).expect("known group");
    let case = shape.cases.iter().find(|c| c.label == label).expect("known case");
    let (mut ex, mut out) = (Extractor::new(), Extracted::default());
    let mut dst = vec![0u8; shape.input.len()];
    let time = |f: &mut dyn FnMut()| {
        let start = std::time::Instant::now();
        let mut n = 0u32;
        while start.elapsed() < std::time::Duration::from_millis(5) {
            f();
            n += 1;
        }
        start.elapsed().as_nanos() as f64 / f64::from(n)
    };
    let mut fex_ns = Vec::new();
    let mut copy_ns = Vec::new();
    let mut ratios = Vec::new();
    for _ in 0..rounds {
        let f = time(&mut || {
            ex.extract_batch(&case.plan, black_box(&shape.input), &mut out).expect("fex extracts");
            black_box(&out);
        });
        let c = time(&mut || {
            dst.copy_from_slice(black_box(&shape.input));
            black_box(&dst);
        });
        fex_ns.push(f);
        copy_ns.push(c);
        ratios.push(f / c);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "{name}: fex / memcpy {:.2} (median of {rounds} rounds); fex {:.0} ns, memcpy {:.0} ns per call",
        median(&mut ratios),
        median(&mut fex_ns),
        median(&mut copy_ns)
    );
}

/// `FEX_BENCH_DUMP=dir` writes each shape's input (`<group>.pb`) and each
/// case's model (`<group>_<case>.yaml`) and exits: the same bytes for the
/// Python package's bench (benches/python_overhead.py).
fn dump(shapes: &[Shape], dir: &str) {
    let dir = std::path::Path::new(dir);
    std::fs::create_dir_all(dir).expect("dump directory");
    for s in shapes {
        std::fs::write(dir.join(format!("{}.pb", s.group)), &s.input).expect("write input");
        for c in &s.cases {
            std::fs::write(dir.join(format!("{}_{}.yaml", s.group, c.label)), &c.yaml).expect("write model");
        }
    }
}

fn main() {
    let shapes = shapes();
    if let Ok(spec) = std::env::var("FEX_BENCH_PROFILE") {
        return profile(&shapes, &spec);
    }
    if let Ok(spec) = std::env::var("FEX_BENCH_RATIO") {
        return ratio(&shapes, &spec);
    }
    if let Ok(dir) = std::env::var("FEX_BENCH_DUMP") {
        return dump(&shapes, &dir);
    }
    for s in &shapes {
        let needs: Vec<String> =
            s.cases.iter().map(|c| format!("{} = {} lists", c.label, c.plan.source_names.len())).collect();
        println!(
            "{}: {} bytes, {} lists, {} rows; models: {}",
            s.group,
            s.input.len(),
            s.lists,
            s.rows,
            needs.join(", ")
        );
    }
    allocation_report(&shapes);
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c, &shapes);
    bench_server(&mut c);
    c.final_summary();
}
