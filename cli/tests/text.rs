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

fn extract(format: &str, config: &str, output: &str, out: &Path, inputs: &[&Path], extra: &[&str]) -> Output {
    let mut v = vec!["extract", "--input-format", format, "--reader-config", config, "--format", output];
    v.extend_from_slice(extra);
    v.extend_from_slice(&["-o", out.to_str().unwrap()]);
    v.extend(inputs.iter().map(|p| p.to_str().unwrap()));
    fex(&v)
}

fn read_ipc(path: &Path) -> Vec<RecordBatch> {
    let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let reader = arrow_ipc::reader::StreamReader::try_new(file, None).unwrap();
    reader.map(|b| b.unwrap_or_else(|e| panic!("{}: {e}", path.display()))).collect()
}

/// Each row's ids and weights of a List or LargeList column of
/// {value: u64, weight: f32}, every batch, each array checked valid.
fn weighted_rows(batches: &[RecordBatch], name: &str) -> Vec<Vec<(u64, f32)>> {
    use arrow_array::types::UInt64Type;
    let mut rows = Vec::new();
    for b in batches {
        let c = b.column_by_name(name).unwrap_or_else(|| panic!("no {name} in {:?}", b.schema()));
        c.to_data().validate_full().unwrap_or_else(|e| panic!("{name}: {e}"));
        let l = c.as_list::<i64>();
        for r in 0..l.len() {
            let row = l.value(r);
            let s = row.as_struct_opt().unwrap_or_else(|| panic!("{name} row {r} is {}", row.data_type()));
            let ids = s.column(0).as_primitive::<UInt64Type>().values().to_vec();
            let weights = s.column(1).as_primitive::<Float32Type>().values().to_vec();
            rows.push(ids.into_iter().zip(weights).collect());
        }
    }
    rows
}

// Issue 24, 1: a batch where no line fills a group (here history slot 1,
// and with batch=1 a line with no feature at all) wrote that column without
// its weights: a corrupt Arrow IPC stream, a Parquet error.
#[test]
fn a_group_no_line_fills_is_written_with_its_type_by_both_writers() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("a.uch");
    std::fs::write(&input, "1 1|2|3\n0 4:0.5|5|6|7:0.25\n1 8|9\n").unwrap();
    let want_hist1: Vec<Vec<(u64, f32)>> = vec![vec![], vec![(7, 0.25)], vec![]];
    for batch in [1, 2] {
        let config = format!("batch={batch};x_hist_item_size=2");
        let ipc = dir.path().join(format!("b{batch}.arrow"));
        let run = extract("uch", &config, "arrow", &ipc, &[&input], &[]);
        assert!(run.status.success(), "{}", stderr(&run));
        let batches = read_ipc(&ipc);
        assert_eq!(weighted_rows(&batches, "__instXhist1"), want_hist1, "arrow, batch={batch}");
        assert_eq!(weighted_rows(&batches, "__instXuser")[1], [(4, 0.5)]);
        let parquet = dir.path().join(format!("b{batch}.parquet"));
        let run = extract("uch", &config, "parquet", &parquet, &[&input], &[]);
        assert!(run.status.success(), "{}", stderr(&run));
        assert_eq!(weighted_rows(&read_parquet(&parquet), "__instXhist1"), want_hist1, "parquet, batch={batch}");
    }
    // libsvm with batch=1: the second line has no feature.
    std::fs::write(&input, "1 3:0.5\n0\n1 4\n").unwrap();
    let out = dir.path().join("l.arrow");
    let run = extract("libsvm", "batch=1", "arrow", &out, &[&input], &[]);
    assert!(run.status.success(), "{}", stderr(&run));
    assert_eq!(weighted_rows(&read_ipc(&out), "__instX"), [vec![(3, 0.5)], vec![], vec![(4, 1.0)]]);
}

// Issue 24, 2: deepx reads `*.gz` through zlib (deepx_core
// src/common/stream.cc:2022-2023); fex reads gzip, zstd and framed snappy
// text inputs by their first bytes, whatever their name, and standard input.
#[test]
fn compressed_text_inputs_read_as_their_plain_text() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let text = "1 1:0.5 3\n0 2:2\n1 7\n";
    let plain = dir.path().join("a.libsvm");
    std::fs::write(&plain, text).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&text.as_bytes()[..10]).unwrap();
    let mut gzip = gz.finish().unwrap();
    // Two gzip members, as `cat a.gz b.gz` makes.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&text.as_bytes()[10..]).unwrap();
    gzip.extend(gz.finish().unwrap());
    let files = [
        ("a.libsvm.gz", gzip.clone()),
        ("gzip_named_txt.txt", gzip.clone()),
        ("a.libsvm.zst", zstd::encode_all(text.as_bytes(), 3).unwrap()),
    ];
    let want = {
        let out = dir.path().join("plain.parquet");
        let run = extract("libsvm", "batch=2", "parquet", &out, &[&plain], &[]);
        assert!(run.status.success(), "{}", stderr(&run));
        read_parquet(&out)
    };
    assert_eq!(weighted_rows(&want, "__instX"), [vec![(1, 0.5), (3, 1.0)], vec![(2, 2.0)], vec![(7, 1.0)]]);
    for (name, bytes) in files {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let out = dir.path().join(format!("{name}.parquet"));
        let run = extract("libsvm", "batch=2", "parquet", &out, &[&path], &[]);
        assert!(run.status.success(), "{name}: {}", stderr(&run));
        assert_eq!(read_parquet(&out), want, "{name}");
    }
    // Standard input, gzip.
    let out = dir.path().join("stdin.parquet");
    let mut child = Command::new(FEX)
        .args(["extract", "--input-format", "libsvm", "--reader-config", "batch=2", "-o", out.to_str().unwrap(), "-"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&gzip).unwrap();
    let run = child.wait_with_output().unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    assert_eq!(read_parquet(&out), want, "stdin");
    // --compression none reads the bytes as they are: line 1 is not a label.
    let run = extract("libsvm", "", "parquet", &out, &[&dir.path().join("a.libsvm.gz")], &["--compression", "none"]);
    assert_eq!(run.status.code(), Some(65), "{}", stderr(&run));
    // A gzip stream cut short: an I/O error naming the file and line.
    let cut = dir.path().join("cut.gz");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(text.as_bytes()).unwrap();
    let whole = gz.finish().unwrap();
    std::fs::write(&cut, &whole[..whole.len() - 12]).unwrap();
    let run = extract("libsvm", "", "parquet", &out, &[&cut], &[]);
    assert_eq!(run.status.code(), Some(1), "{}", stderr(&run));
    assert!(stderr(&run).contains(&format!("{}:3:0: cannot read: ", cut.display())), "{}", stderr(&run));
}
