//! Text samples through the `fex` binary: `extract --input-format` over
//! deepx libsvm and Criteo TSV files written here, the Parquet read back;
//! `fit criteo` vocabularies; bad lines named file:line:column (exit 65) or
//! counted under `--on-error skip`; a bad reader config is exit 64.

use std::path::Path;
use std::process::{Command, Output};

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Int64Type};
use arrow_array::{Array, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

const FEX: &str = env!("CARGO_BIN_EXE_fex");

fn fex(args: &[&str]) -> Output {
    Command::new(FEX).args(args).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn read_parquet(path: &Path) -> Vec<RecordBatch> {
    let file = std::fs::File::open(path).unwrap();
    ParquetRecordBatchReaderBuilder::try_new(file).unwrap().build().unwrap().map(Result::unwrap).collect()
}

/// f32 values of a Float32 or FixedSizeList<Float32> column, all batches.
fn dense(batches: &[RecordBatch], name: &str) -> Vec<f32> {
    let mut out = Vec::new();
    for b in batches {
        let c = b.column_by_name(name).unwrap_or_else(|| panic!("no {name} in {:?}", b.schema()));
        let values = match c.as_fixed_size_list_opt() {
            Some(l) => l.values().clone(),
            None => c.clone(),
        };
        out.extend(values.as_primitive::<Float32Type>().values().iter().copied());
    }
    out
}

#[test]
fn libsvm_to_parquet_with_bad_lines_failing_or_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("a.libsvm");
    std::fs::write(&good, "1 1:0.5 3:1.0\n0 2:2.0\n1 7:1\n").unwrap();
    let out = dir.path().join("a.parquet");
    let args = |input: &Path, out: &Path, extra: &[&str]| -> Output {
        let mut v = vec!["extract", "--input-format", "libsvm", "--reader-config", "batch=2;label_size=1"];
        v.extend_from_slice(extra);
        v.extend_from_slice(&["-o", out.to_str().unwrap(), input.to_str().unwrap()]);
        fex(&v)
    };
    let run = args(&good, &out, &[]);
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(stderr(&run).contains("rows written: 3 to"), "{}", stderr(&run));
    let batches = read_parquet(&out);
    assert_eq!(batches.iter().map(RecordBatch::num_rows).sum::<usize>(), 3);
    assert_eq!(dense(&batches, "__instY"), [1.0, 0.0, 1.0]);
    assert!(batches[0].column_by_name("__instX").is_some(), "{:?}", batches[0].schema());

    // Line 2's value is not a number: column 5 of that line.
    let bad = dir.path().join("bad.libsvm");
    std::fs::write(&bad, "1 1:0.5\n0 2:x\n1 4:1\n").unwrap();
    let run = args(&bad, &dir.path().join("b.parquet"), &[]);
    assert_eq!(run.status.code(), Some(65), "{}", stderr(&run));
    assert!(stderr(&run).contains(&format!("{}:2:5: ", bad.display())), "{}", stderr(&run));
    let run = args(&bad, &dir.path().join("b.parquet"), &["--on-error", "skip"]);
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(stderr(&run).contains("bad lines: 1\n") && stderr(&run).contains("rows written: 2 to"), "{}", stderr(&run));
    assert_eq!(dense(&read_parquet(&dir.path().join("b.parquet")), "__instY"), [1.0, 1.0]);

    let run = fex(&[
        "extract",
        "--input-format",
        "uch",
        "--reader-config",
        "bogus=1",
        "-o",
        out.to_str().unwrap(),
        good.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(64));
    assert!(stderr(&run).contains("unknown key \"bogus\""), "{}", stderr(&run));
}

fn criteo_line(label: u8, ints: [i64; 13], cats: [&str; 26]) -> String {
    let ints: Vec<String> = ints.iter().map(i64::to_string).collect();
    format!("{label}\t{}\t{}\n", ints.join("\t"), cats.join("\t"))
}

#[test]
fn criteo_fit_then_extract_maps_categories_through_the_vocabularies() {
    let dir = tempfile::tempdir().unwrap();
    let day = dir.path().join("day_0");
    let mut text = String::new();
    for (label, c0) in [(1, "0000000a"), (0, "0000000b"), (1, "0000000a")] {
        let mut cats = ["00000001"; 26];
        cats[0] = c0;
        text.push_str(&criteo_line(label, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0], cats));
    }
    std::fs::write(&day, &text).unwrap();
    let vocab = dir.path().join("vocab");
    let run = fex(&["fit", "criteo", "--vocab-dir", vocab.to_str().unwrap(), day.to_str().unwrap()]);
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(vocab.join("cat_0.txt").exists() && vocab.join("cat_25.txt").exists());

    let out = dir.path().join("c.parquet");
    let run = fex(&[
        "extract",
        "--input-format",
        "criteo",
        "--vocab-dir",
        vocab.to_str().unwrap(),
        "--batch-size",
        "8",
        "-o",
        out.to_str().unwrap(),
        day.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    let batches = read_parquet(&out);
    assert_eq!(batches.len(), 1);
    assert_eq!(dense(&batches, "label"), [1.0, 0.0, 1.0]);
    // ln(x + 3) of the integer features (seed 004's preprocessing, as
    // src/text/criteo/line.rs `dense_ln` states it).
    let d = dense(&batches, "dense");
    assert_eq!(d.len(), 39);
    assert!((d[0] - 4f32.ln()).abs() < 1e-6 && (d[12] - 3f32.ln()).abs() < 1e-6, "{d:?}");
    // Category ids are the vocabulary's: the same raw value, the same id.
    let vocabs = fex::text::criteo::load_vocabs(&vocab).unwrap();
    let c0 = batches[0].column_by_name("sparse.cat_0").unwrap_or_else(|| panic!("{:?}", batches[0].schema()));
    let ids: Vec<i64> = match c0.as_list_opt::<i32>() {
        Some(l) => (0..l.len()).map(|r| l.value(r).as_primitive::<Int64Type>().value(0)).collect(),
        None => {
            let l = c0.as_list::<i64>();
            (0..l.len()).map(|r| l.value(r).as_primitive::<Int64Type>().value(0)).collect()
        }
    };
    assert_eq!(ids, [vocabs[0].id(0xa), vocabs[0].id(0xb), vocabs[0].id(0xa)]);
    assert_ne!(ids[0], ids[1]);

    // A bad line in a day: named file:line:column, exit 65.
    let bad = dir.path().join("day_1");
    std::fs::write(&bad, format!("{}2\tnot a line\n", text)).unwrap();
    let run = fex(&["fit", "criteo", "--vocab-dir", vocab.to_str().unwrap(), bad.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(65), "{}", stderr(&run));
    assert!(stderr(&run).contains(&format!("{}:4:1: ", bad.display())), "{}", stderr(&run));
    // Issue 21: fit says how to go on, as extract does.
    assert!(stderr(&run).contains("--on-error skip counts them and goes on"), "{}", stderr(&run));
    let run =
        fex(&["fit", "criteo", "--on-error", "skip", "--vocab-dir", vocab.to_str().unwrap(), bad.to_str().unwrap()]);
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(stderr(&run).contains("bad lines: 1"), "{}", stderr(&run));
}
