//! `fex extract` runs the model's `offline:` transforms: a real `fex`
//! process over Examples written here, checking the rows, labels and the
//! summary it reports, and that the table does not depend on `--threads`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use arrow_array::Array;
use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Int64Type};
use fex::proto::matrix::LineId;
use fex::proto::monolith_pb as pb;
use fex::records::write_record;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use prost::Message;

const FEX: &str = env!("CARGO_BIN_EXE_fex");

const MODEL: &str = "name: t
compat: native
features:
  - {name: f_user_id, kind: sparse}
  - {name: f_goods_id, kind: sparse}
  - {name: label, kind: label, shape: [2]}
  - {name: gid, kind: line_id, field: item_id}
  - {name: acts, kind: line_id, field: actions, shape: [1]}
offline:
  transforms:
    - {transform: filter_by_label, label_threshold: [0.0]}
    - {transform: add_label, config: \"1:2:1.0\", negative_value: 0.0, new_sample_rate: 1.0}
    - {transform: negative_gen, neg_num: 1, item_features: [f_goods_id], start_num: 0, max_item_num: 100, negative_action: 9, seed: 5}
";

fn example(user: u64, goods: u64, label: f32, action: i32) -> Vec<u8> {
    let fids = |v: u64| pb::Feature { r#type: Some(pb::feature::Type::FidV2List(pb::FidList { value: vec![v] })) };
    let named =
        |name: &str, v: u64| pb::NamedFeature { name: name.into(), feature: Some(fids(v)), ..Default::default() };
    pb::Example {
        named_feature: vec![named("f_user_id", user), named("f_goods_id", goods)],
        line_id: Some(LineId { item_id: Some(goods), actions: vec![action], ..Default::default() }),
        label: vec![label],
        ..Default::default()
    }
    .encode_to_vec()
}

fn extract(dir: &Path, input: &Path, out: &str, extra: &[&str]) -> Output {
    let model = dir.join("model.yaml");
    std::fs::write(&model, MODEL).unwrap();
    Command::new(FEX)
        .args(["extract", "--payload", "example", "--chunk-records", "5", "-m"])
        .arg(&model)
        .arg("-o")
        .arg(dir.join(out))
        .args(extra)
        .arg(input)
        .output()
        .unwrap()
}

/// The first id of each row of a sparse column (List or LargeList).
fn first_ids(column: &dyn Array) -> Vec<u64> {
    let first = |v: std::sync::Arc<dyn Array>| match v.as_primitive_opt::<arrow_array::types::UInt64Type>() {
        Some(p) => p.value(0),
        None => v.as_primitive::<Int64Type>().value(0) as u64,
    };
    match column.as_list_opt::<i32>() {
        Some(l) => (0..l.len()).map(|r| first(l.value(r))).collect(),
        None => {
            let l = column.as_list::<i64>();
            (0..l.len()).map(|r| first(l.value(r))).collect()
        }
    }
}

/// Writes `records` to `path`, PBDataset-framed; returns the path.
fn write_records(path: PathBuf, records: impl IntoIterator<Item = Vec<u8>>) -> PathBuf {
    let mut framed = Vec::new();
    for r in records {
        write_record(&mut framed, &r).unwrap();
    }
    std::fs::write(&path, framed).unwrap();
    path
}

/// The batch size of each framed `ExtractResponse` in `bytes`.
fn response_sizes(bytes: &[u8]) -> Vec<i32> {
    let (mut at, mut sizes) = (0, Vec::new());
    while at < bytes.len() {
        let len = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
        sizes.push(fex::proto::fex_v1::ExtractResponse::decode(&bytes[at + 8..at + 8 + len]).unwrap().batch_size);
        at += 8 + len;
    }
    sizes
}

fn count(stderr: &str, name: &str) -> u64 {
    let line = stderr.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("no {name:?} in {stderr}"));
    line[name.len()..].split_whitespace().next().unwrap().parse().unwrap()
}

/// 12 Examples: every third has label -1 (filter_by_label's threshold 0.0
/// drops it: feature_utils.py filter_by_label), the rest label 1 with action
/// 1 (add_label task "1:2:1.0" appends 1) or 2 (appends 0.0); negative_gen
/// adds negatives labelled -1 with action 9 for positives once its pool has
/// items.
#[test]
fn extract_applies_filter_add_label_and_negative_gen() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_records(
        dir.path().join("examples.bin"),
        (0..12u64).map(|i| example(i, 100 + i, if i % 3 == 0 { -1.0 } else { 1.0 }, if i % 2 == 0 { 1 } else { 2 })),
    );

    let mut tables = Vec::new();
    for threads in ["1", "2"] {
        let name = format!("t{threads}.parquet");
        let run = extract(dir.path(), &input, &name, &["--threads", threads]);
        let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
        assert!(run.status.success(), "{stderr}");
        assert_eq!(count(&stderr, "filter_by_label: dropped:"), 4, "{stderr}");
        assert_eq!(count(&stderr, "add_label: dropped:"), 0, "{stderr}");
        let generated = count(&stderr, "negative_gen: generated:");
        assert!(generated > 0, "{stderr}");
        assert_eq!(count(&stderr, "rows written:"), 8 + generated, "{stderr}");
        tables.push(std::fs::read(dir.path().join(name)).unwrap());

        let file = std::fs::File::open(dir.path().join(format!("t{threads}.parquet"))).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(file).unwrap().build().unwrap();
        let (mut labels, mut acts, mut users) = (Vec::new(), Vec::new(), Vec::new());
        for batch in reader {
            let batch = batch.unwrap();
            let label = batch.column_by_name("label").unwrap().as_fixed_size_list();
            for r in 0..label.len() {
                let v = label.value(r);
                labels.push(v.as_primitive::<Float32Type>().values().to_vec());
            }
            let a = batch.column_by_name("acts").unwrap().as_fixed_size_list();
            for r in 0..a.len() {
                acts.push(a.value(r).as_primitive::<Int64Type>().value(0));
            }
            users.extend(first_ids(batch.column_by_name("f_user_id").unwrap()));
        }
        assert_eq!(labels.len() as u64, 8 + generated);
        // The originals kept, in order: no user whose label was -1.
        let originals: Vec<usize> = (0..labels.len()).filter(|&r| labels[r][0] == 1.0).collect();
        assert_eq!(originals.len(), 8);
        let kept: Vec<u64> = originals.iter().map(|&r| users[r]).collect();
        assert_eq!(kept, [1, 2, 4, 5, 7, 8, 10, 11]);
        for &r in &originals {
            let want = if users[r] % 2 == 0 { 1.0 } else { 0.0 };
            assert_eq!(labels[r][1], want, "row {r}: user {}", users[r]);
            assert_eq!(acts[r], if users[r] % 2 == 0 { 1 } else { 2 });
        }
        // Every other row is a generated negative: label -1, action 9.
        let negatives: Vec<usize> = (0..labels.len()).filter(|&r| labels[r][0] != 1.0).collect();
        assert_eq!(negatives.len() as u64, generated);
        assert!(negatives.iter().all(|&r| labels[r][0] == -1.0 && acts[r] == 9), "{labels:?} {acts:?}");
    }
    assert!(tables[0] == tables[1], "the table differs between --threads 1 and 2");

    // Framed responses: the same number of rows.
    let run = extract(dir.path(), &input, "r.bin", &["--format", "responses"]);
    assert!(run.status.success());
    let rows: i32 = response_sizes(&std::fs::read(dir.path().join("r.bin")).unwrap()).iter().sum();
    let rows = rows as u64;
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    assert_eq!(rows, count(&stderr, "rows written:"), "{stderr}");
}

/// shuffle and batch run after the row transforms: the same rows, in an
/// order set by the seed; batch's drop_remainder drops the short last batch.
#[test]
fn extract_shuffles_and_batches_across_records() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_records(dir.path().join("examples.bin"), (0..10u64).map(|i| example(i, 100 + i, 1.0, 1)));
    let model = dir.path().join("m.yaml");
    let users = |transforms: &str| -> (Vec<u64>, String) {
        std::fs::write(
            &model,
            format!(
                "name: t\ncompat: native\nfeatures:\n  - {{name: f_user_id, kind: sparse}}\noffline:\n  transforms:\n{transforms}"
            ),
        )
        .unwrap();
        let out = dir.path().join("s.parquet");
        let run = Command::new(FEX)
            .args(["extract", "--payload", "example", "--chunk-records", "3", "-m"])
            .arg(&model)
            .arg("-o")
            .arg(&out)
            .arg(&input)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
        assert!(run.status.success(), "{stderr}");
        let reader =
            ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&out).unwrap()).unwrap().build().unwrap();
        let mut users = Vec::new();
        for batch in reader {
            let batch = batch.unwrap();
            users.extend(first_ids(batch.column_by_name("f_user_id").unwrap()));
        }
        (users, stderr)
    };
    let (shuffled, _) = users("    - {transform: shuffle, buffer_size: 4, seed: 7}\n");
    let mut sorted = shuffled.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..10).collect::<Vec<_>>());
    assert_ne!(shuffled, sorted, "a shuffle of 10 rows with a buffer of 4 moved nothing");
    assert_eq!(users("    - {transform: shuffle, buffer_size: 4, seed: 7}\n").0, shuffled, "same seed, same order");
    let (batched, stderr) = users("    - {transform: batch, batch_size: 4, drop_remainder: true}\n");
    assert_eq!(batched, (0..8).collect::<Vec<_>>());
    assert_eq!(count(&stderr, "batch: dropped:"), 2, "{stderr}");
}

/// Every case of the offline golden corpus (tests/corpus_offline) through
/// the `fex` command: its records in a PBDataset file, `fex extract
/// --format responses` on 1 and 3 threads, whose framed responses must be
/// the library's tables (`Case::offline_tables`, the tables the corpus
/// renders) byte for byte, one response per table.
#[test]
fn the_offline_corpus_through_fex_extract_is_the_librarys() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus_offline");
    let mut cases: Vec<_> = std::fs::read_dir(&corpus).unwrap().map(|e| e.unwrap().path()).collect();
    cases.retain(|p| p.extension().is_some_and(|e| e == "yaml"));
    cases.sort();
    assert!(!cases.is_empty());
    for path in cases {
        let case = fex::corpus::Case::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let Ok(run) = case.offline_tables(&corpus).unwrap() else { continue };
        let expected: Vec<u8> = run
            .tables
            .into_iter()
            .flat_map(|out| {
                let response = fex::proto::fex_v1::ExtractResponse {
                    model: run.plan.name.clone(),
                    model_version: run.plan.identity().version.clone(),
                    batch_size: out.batch_size as i32,
                    tensors: out.into_tensors(),
                };
                let mut frame = Vec::new();
                write_record(&mut frame, &response.encode_to_vec()).unwrap();
                frame
            })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let (payload, records) = match case.input.encode().unwrap() {
            fex::corpus::Encoded::Batch(b) => ("example-batch", vec![b]),
            fex::corpus::Encoded::Examples(e) => ("example", e),
        };
        let input = write_records(dir.path().join("in.pb"), records);
        let model = dir.path().join("model.yaml");
        std::fs::write(&model, &case.model).unwrap();
        copy_dirs(&corpus, dir.path());
        for threads in ["1", "3"] {
            let out = dir.path().join("out.bin");
            let status = Command::new(FEX)
                .args(["extract", "--quiet", "--format", "responses", "--payload", payload, "--threads", threads])
                .arg("-m")
                .arg(&model)
                .arg("-o")
                .arg(&out)
                .arg(&input)
                .output()
                .unwrap();
            assert!(status.status.success(), "{}: {}", path.display(), String::from_utf8_lossy(&status.stderr));
            assert!(std::fs::read(&out).unwrap() == expected, "{} on {threads} threads", path.display());
        }
    }
}

/// Copies the directories beside the cases (operand files a case's model
/// names, as `operands/floats.pb`) into `to`, so the model finds them
/// beside itself there too.
fn copy_dirs(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            let dest = to.join(path.file_name().unwrap());
            std::fs::create_dir_all(&dest).unwrap();
            for file in std::fs::read_dir(&path).unwrap() {
                let file = file.unwrap().path();
                std::fs::copy(&file, dest.join(file.file_name().unwrap())).unwrap();
            }
        }
    }
}

/// Transforms on several threads write what one thread writes, byte for
/// byte: 600 Examples in chunks of 7 records, so many chunks are in flight
/// at once while negative_gen's pool and batch's rows must see them in
/// file order (the stateful transforms run behind a turnstile).
#[test]
fn transforms_on_any_thread_count_write_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_records(
        dir.path().join("examples.bin"),
        (0..600u64)
            .map(|i| example(i, 100 + i % 37, if i % 5 == 0 { -1.0 } else { 1.0 }, if i % 2 == 0 { 1 } else { 2 })),
    );
    let model = dir.path().join("batched.yaml");
    std::fs::write(&model, format!("{MODEL}    - {{transform: batch, batch_size: 50}}\n")).unwrap();
    let mut outputs = Vec::new();
    for threads in ["1", "2", "4"] {
        for format in ["arrow", "responses"] {
            let out = dir.path().join(format!("{threads}.{format}"));
            let run = Command::new(FEX)
                .args(["extract", "--quiet", "--payload", "example", "--chunk-records", "7", "--threads", threads])
                .args(["--format", format, "-m"])
                .arg(&model)
                .arg("-o")
                .arg(&out)
                .arg(&input)
                .output()
                .unwrap();
            assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
            outputs.push((threads, format, std::fs::read(&out).unwrap()));
        }
    }
    for (threads, format, bytes) in &outputs[2..] {
        let (_, _, one) = outputs.iter().find(|(t, f, _)| *t == "1" && f == format).unwrap();
        assert!(bytes == one, "{format} on {threads} threads differs from 1 thread");
    }
    // Batches of exactly 50 rows, one response each, and a short last one.
    let sizes = response_sizes(&outputs[1].2);
    assert!(sizes.len() > 3 && sizes[..sizes.len() - 1].iter().all(|&n| n == 50), "{sizes:?}");
    assert!((1..=50).contains(sizes.last().unwrap()), "{sizes:?}");
}

/// (user, goods, labels) of every row of a Parquet table MODEL wrote.
fn table_rows(path: &Path) -> Vec<(u64, u64, Vec<f32>)> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(path).unwrap()).unwrap().build().unwrap();
    let mut rows = Vec::new();
    for batch in reader {
        let batch = batch.unwrap();
        let users = first_ids(batch.column_by_name("f_user_id").unwrap());
        let goods = first_ids(batch.column_by_name("f_goods_id").unwrap());
        let label = batch.column_by_name("label").unwrap().as_fixed_size_list();
        for r in 0..label.len() {
            let labels = label.value(r).as_primitive::<Float32Type>().values().to_vec();
            rows.push((users[r], goods[r], labels));
        }
    }
    rows
}

/// --item-pool-save and --item-pool-restore (Monolith's ItemPoolSave /
/// ItemPoolRestore, item_pool_kernels.cc lines 357-500): two runs, the
/// second restoring the pool the first saved, write the rows one run over
/// both inputs writes. A damaged pool file is exit 65 naming the file.
#[test]
fn extract_carries_the_item_pool_across_runs() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, range: std::ops::Range<u64>| {
        write_records(dir.path().join(name), range.map(|i| example(i, 100 + i % 5, 1.0, 1)))
    };
    let (first, second) = (write("a.bin", 0..6), write("b.bin", 6..12));
    let pool = dir.path().join("pool.bin");
    let pool_arg = pool.to_str().unwrap();
    let ok = |run: Output| assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    ok(extract(dir.path(), &first, "1.parquet", &["--item-pool-save", pool_arg]));
    ok(extract(dir.path(), &second, "2.parquet", &["--item-pool-restore", pool_arg]));
    let whole_input = dir.path().join("ab.bin");
    let mut both = std::fs::read(&first).unwrap();
    both.extend(std::fs::read(&second).unwrap());
    std::fs::write(&whole_input, both).unwrap();
    ok(extract(dir.path(), &whole_input, "whole.parquet", &[]));
    let mut split = table_rows(&dir.path().join("1.parquet"));
    split.extend(table_rows(&dir.path().join("2.parquet")));
    assert_eq!(split, table_rows(&dir.path().join("whole.parquet")));

    std::fs::write(&pool, b"FEXPOOL\0\x01\0\0\0").unwrap();
    let run = extract(dir.path(), &second, "3.parquet", &["--item-pool-restore", pool_arg]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(65), "{stderr}");
    assert!(stderr.contains("pool.bin: item pool file cut short or damaged"), "{stderr}");
}

/// An Example that fails (a dense feature given fids) is reported as its
/// own record under `--on-error skip` and the other Examples of its chunk
/// are written; a table past the model's max_batch_size (negatives add
/// rows) is written in pieces; with `--payload instance` a file that does
/// not open is an error, not a crash.
#[test]
fn a_bad_example_costs_only_itself_and_big_tables_are_cut() {
    let dir = tempfile::tempdir().unwrap();
    let run = |model: &str, records: &[Vec<u8>]| {
        let path = dir.path().join("m.yaml");
        std::fs::write(&path, model).unwrap();
        let input = write_records(dir.path().join("in.pb"), records.iter().cloned());
        let out = dir.path().join("out.bin");
        let run = Command::new(FEX)
            .args(["extract", "--payload", "example", "--on-error", "skip", "--format", "responses", "-m"])
            .arg(&path)
            .arg("-o")
            .arg(&out)
            .arg(&input)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
        assert!(run.status.success(), "{stderr}");
        (stderr, response_sizes(&std::fs::read(&out).unwrap()))
    };
    let records: Vec<Vec<u8>> = (0..6u64)
        .map(|i| {
            let mut e = pb::Example::decode(&example(i, 100 + i, 1.0, 1)[..]).unwrap();
            if i != 2 {
                // f_goods_id as an int64 list, which the dense output reads.
                let value = pb::Int64List { value: vec![i as i64] };
                e.named_feature[1].feature = Some(pb::Feature { r#type: Some(pb::feature::Type::Int64List(value)) });
            }
            e.encode_to_vec()
        })
        .collect();
    let dense = "name: t
compat: native
features:
  - {name: f_user_id, kind: sparse}
  - {name: f_goods_id, kind: dense, shape: [1], dtype: i64}
offline:
  transforms:
    - {transform: filter_by_label, label_threshold: [-100.0]}
";
    let (stderr, sizes) = run(dense, &records);
    assert_eq!(count(&stderr, "bad records:"), 1, "{stderr}");
    assert!(stderr.contains("record 2 "), "the Example with fids is the bad one: {stderr}");
    assert_eq!(sizes.iter().sum::<i32>(), 5, "{sizes:?}");

    let good: Vec<Vec<u8>> = (0..4u64).map(|i| example(i, 100 + i, 1.0, 1)).collect();
    let negatives = format!("{MODEL}limits: {{max_batch_size: 4}}\n");
    let (stderr, sizes) = run(&negatives, &good);
    assert_eq!(count(&stderr, "bad records:"), 0, "{stderr}");
    assert_eq!(sizes, [4, 4], "4 positives and their 4 negatives, in tables of at most 4 rows");

    let run = Command::new(FEX)
        .args(["extract", "--payload", "instance", "--threads", "2", "-m"])
        .arg(dir.path().join("m.yaml"))
        .arg("-o")
        .arg(dir.path().join("i.parquet"))
        .arg(dir.path().join("missing.pb"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(66), "{stderr}");
    assert!(stderr.contains("missing.pb"), "{stderr}");
}

/// negative_sample's draws depend on the record, not on how records are
/// cut into chunks (`--chunk-records`, a speed setting): the same rows are
/// kept with chunks of 1 and of 7 records.
#[test]
fn sampling_does_not_depend_on_chunking() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_records(dir.path().join("in.pb"), (0..60u64).map(|i| example(i, 100 + i, -1.0, 1)));
    let model = dir.path().join("m.yaml");
    std::fs::write(
        &model,
        "name: t\ncompat: native\nfeatures:\n  - {name: f_user_id, kind: sparse}\noffline:\n  transforms:\n    - {transform: negative_sample, drop_rate: 0.5, seed: 1}\n",
    )
    .unwrap();
    let kept = |chunk: &str| {
        let out = dir.path().join(format!("{chunk}.parquet"));
        let run = Command::new(FEX)
            .args(["extract", "--quiet", "--payload", "example", "--chunk-records", chunk, "-m"])
            .arg(&model)
            .arg("-o")
            .arg(&out)
            .arg(&input)
            .output()
            .unwrap();
        assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
        let reader = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&out).unwrap()).unwrap().build();
        let mut users = Vec::new();
        for batch in reader.unwrap() {
            users.extend(first_ids(batch.unwrap().column_by_name("f_user_id").unwrap()));
        }
        users
    };
    let one = kept("1");
    assert!((10..=50).contains(&one.len()), "{one:?}");
    assert_eq!(kept("7"), one);
}

/// A chunk that fails after some transforms ran (here add_label, on a
/// LineId cut short) is run again a record at a time; what the transforms
/// did is counted once, by the run that stands.
#[test]
fn a_retried_chunk_is_counted_once() {
    let dir = tempfile::tempdir().unwrap();
    let records = (0..6u64).map(|i| {
        let mut e = example(i, 100 + i, if i % 2 == 0 { -1.0 } else { 1.0 }, 1);
        if i == 3 {
            // Field 100 (line_id) again, holding a varint cut short.
            e.extend_from_slice(&[0xa2, 0x06, 0x01, 0x08]);
        }
        e
    });
    let input = write_records(dir.path().join("in.pb"), records);
    let run = extract(dir.path(), &input, "out.parquet", &["--on-error", "skip"]);
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    assert!(run.status.success(), "{stderr}");
    assert_eq!(count(&stderr, "bad records:"), 1, "{stderr}");
    assert_eq!(count(&stderr, "filter_by_label: dropped:"), 3, "{stderr}");
}
