//! The `fex` binary as a user runs it: help, config checks (the messages of
//! `fex-server --check-config`, server/tests/process.rs), exit codes, bad
//! records reported with file, record index and byte offset under both
//! `--on-error` modes, standard input, compressed input, and output that
//! does not depend on the thread count. Also: the binary is built on the
//! library alone, and fex-iceberg for Iceberg tables (no tonic; tokio only
//! there).

mod common;
use common::repo;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use fex::proto::monolith_pb as pb;
use fex::records::write_record;
use fex_client::synth::{GenOptions, Generator};
use prost::Message;

const FEX: &str = env!("CARGO_BIN_EXE_fex");

fn default_model() -> PathBuf {
    repo().join("models/default.yaml")
}

fn fex(args: &[&str]) -> Output {
    Command::new(FEX).args(args).output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `n` generated requests for the default model, framed.
fn requests(n: usize, batch_size: usize) -> (Vec<u8>, Vec<Vec<u8>>) {
    let options = GenOptions { batch_size, seed: 3, ..GenOptions::default() };
    let mut generator = Generator::new(fex::Plan::default_model(), options).unwrap();
    let records: Vec<Vec<u8>> = (0..n).map(|_| generator.next_bytes()).collect();
    let mut framed = Vec::new();
    for r in &records {
        write_record(&mut framed, r).unwrap();
    }
    (framed, records)
}

#[test]
fn every_subcommand_has_help() {
    for (sub, flag) in [
        ("extract", "--on-error"),
        ("inspect", "--limit"),
        ("check", "PATHS"),
        ("replay", "--allow-other-version"),
        ("", "Exit codes"),
    ] {
        let args: Vec<&str> = [sub, "--help"].into_iter().filter(|a| !a.is_empty()).collect();
        let out = fex(&args);
        assert!(out.status.success(), "{sub}");
        assert!(text(&out.stdout).contains(flag), "{sub}: {}", text(&out.stdout));
    }
}

#[test]
fn check_says_what_fex_server_check_config_says() {
    let fixtures = repo().join("tests/fixtures/config");
    let out = fex(&["check", fixtures.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(64));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("bad_many.yaml: 4 errors in model config"), "{stderr}");
    assert!(stderr.contains(r#"features.item_tags.kind: unknown feature kind "sprase""#), "{stderr}");

    let models = repo().join("models");
    let models = models.to_str().unwrap();
    let out = fex(&["check", models]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains(&format!("default: ok (version 1, 22 outputs, {models}/default.yaml)\n")));

    let out = fex(&["check", "/nonexistent/models.yaml"]);
    assert_eq!(out.status.code(), Some(64));
    assert!(text(&out.stderr).contains("/nonexistent/models.yaml: cannot read: No such file or directory"));
}

#[test]
fn bad_model_and_missing_input_have_their_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("bad.yaml");
    std::fs::write(&model, "name: b\nfeatures:\n  - {name: x, kind: sprase}\n").unwrap();
    let out = fex(&["extract", "-m", model.to_str().unwrap(), "-o", "/dev/null", "in.bin"]);
    assert_eq!(out.status.code(), Some(64), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains(r#"unknown feature kind "sprase""#));

    let out = fex(&["extract", "-m", default_model().to_str().unwrap(), "-o", "/dev/null", "/nonexistent/*.bin"]);
    assert_eq!(out.status.code(), Some(66), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("no file matches this pattern"));
}

#[test]
fn bad_records_are_reported_with_file_record_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let (good, records) = requests(3, 4);
    // Record 1: a truncated protobuf (its ExampleBatch ends inside a field).
    let mut input = Vec::new();
    write_record(&mut input, &records[0]).unwrap();
    let bad_at = input.len();
    write_record(&mut input, &records[1][..records[1].len() - 3]).unwrap();
    write_record(&mut input, &records[2]).unwrap();
    let path = dir.path().join("in.bin");
    std::fs::write(&path, &input).unwrap();
    let (p, model) = (path.to_str().unwrap(), default_model());
    let model = model.to_str().unwrap();

    let out = fex(&["extract", "-m", model, "-o", "/dev/null", p]);
    assert_eq!(out.status.code(), Some(65), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains(&format!("{p}: record 1 at byte {bad_at}: ")), "{stderr}");
    // The library's structured error says where in the payload.
    assert!(stderr.contains("named_feature_list[") && stderr.contains(" @ byte "), "{stderr}");

    let table = dir.path().join("t.parquet");
    let out = fex(&["extract", "-m", model, "-o", table.to_str().unwrap(), "--on-error", "skip", p]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains(&format!("bad record: {p}: record 1 at byte {bad_at}: ")), "{stderr}");
    assert!(stderr.contains("read 3 records") && stderr.contains("bad records: 1"), "{stderr}");
    assert!(stderr.contains("rows written: 8 to"), "{stderr}");

    // A corrupt length ends the file: counted under skip, exit 65 under fail.
    let mut corrupt = good.clone();
    let end = corrupt.len() as u64;
    corrupt.extend(0xfefe_fefeu64.to_le_bytes());
    std::fs::write(&path, &corrupt).unwrap();
    let out = fex(&["extract", "-m", model, "-o", "/dev/null", "--on-error", "skip", p]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains(&format!("{p}: record 3 at byte {end}: corrupt record: length is 0xfefefefe")), "{stderr}");
    assert!(stderr.contains("bad records: 1") && stderr.contains("rows written: 12 to"), "{stderr}");
    let out = fex(&["extract", "-m", model, "-o", "/dev/null", p]);
    assert_eq!(out.status.code(), Some(65));

    // A truncated last record names itself.
    std::fs::write(&path, &good[..good.len() - 5]).unwrap();
    let out = fex(&["extract", "-m", model, "-o", "/dev/null", p]);
    assert_eq!(out.status.code(), Some(65));
    assert!(text(&out.stderr).contains(": record 2 at byte "), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("truncated record"), "{}", text(&out.stderr));
}

#[test]
fn the_table_does_not_depend_on_the_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let (framed, _) = requests(40, 8);
    let path = dir.path().join("in.bin");
    std::fs::write(&path, &framed).unwrap();
    let model = default_model();
    let mut files = Vec::new();
    for threads in ["1", "2", "3"] {
        let out = dir.path().join(format!("t{threads}.parquet"));
        let run = fex(&[
            "extract",
            "-m",
            model.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--threads",
            threads,
            "--chunk-records",
            "3",
            "--row-group-size",
            "100",
            path.to_str().unwrap(),
        ]);
        assert!(run.status.success(), "{}", text(&run.stderr));
        assert!(text(&run.stderr).contains("rows written: 320 to"), "{}", text(&run.stderr));
        files.push(std::fs::read(out).unwrap());
    }
    assert!(files[0].len() > 1000);
    assert!(files[0] == files[1] && files[1] == files[2], "parquet files differ between thread counts");
}

/// Issue 21: a file read with the wrong header flags or compression fails at
/// its first record with a hint naming what would read it. Monolith's
/// FilePBDataset reads a sort_id unless told otherwise
/// (monolith/native_training/data/datasets.py line 525), `fex extract` no
/// header; zlib is Monolith's compression type 4 (data_reader.cc lines
/// 459-468); a lagrangex header may start like gzip (data_reader.h lines
/// 97-103).
#[test]
fn wrong_framing_or_compression_gets_a_hint_and_the_right_flags_read() {
    let dir = tempfile::tempdir().unwrap();
    let (framed, records) = requests(3, 4);
    let model = default_model();
    let model = model.to_str().unwrap();
    let run = |path: &std::path::Path, flags: &[&str]| {
        let mut args = vec!["extract", "-m", model, "-o", "/dev/null", path.to_str().unwrap()];
        args.extend(flags);
        let out = fex(&args);
        (out.status.code(), text(&out.stderr))
    };

    let mut sorted = Vec::new();
    for (i, r) in records.iter().enumerate() {
        let sort_id = format!("sort-{i:04}");
        sorted.extend((sort_id.len() as u64).to_le_bytes());
        sorted.extend(sort_id.as_bytes());
        write_record(&mut sorted, r).unwrap();
    }
    let path = dir.path().join("sorted.bin");
    std::fs::write(&path, &sorted).unwrap();
    let (code, stderr) = run(&path, &[]);
    assert_eq!(code, Some(65), "{stderr}");
    assert!(stderr.contains(": record 0 at byte 0: "), "{stderr}");
    assert!(
        stderr.contains("hint: its first records read with --has-sort-id (read here with no header flags)"),
        "{stderr}"
    );
    assert!(stderr.contains("datasets.py line 525"), "{stderr}");
    let (code, stderr) = run(&path, &["--has-sort-id"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("rows written: 12"), "{stderr}");

    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(&framed).unwrap();
    let path = dir.path().join("part.zlib");
    std::fs::write(&path, z.finish().unwrap()).unwrap();
    let (code, stderr) = run(&path, &["--compression", "none"]);
    assert_eq!(code, Some(65), "{stderr}");
    assert!(stderr.contains("cannot be right") && !stderr.contains("raise it"), "{stderr}");
    assert!(stderr.contains("hint: the file starts like a zlib stream: try --compression zlib"), "{stderr}");
    for flags in [&["--compression", "zlib"][..], &[]] {
        let (code, stderr) = run(&path, flags);
        assert_eq!(code, Some(0), "{flags:?}: {stderr}");
        assert!(stderr.contains("rows written: 12"), "{stderr}");
    }

    let mut lagrangex = Vec::new();
    for r in &records {
        lagrangex.extend(0x0008_8b1fu64.to_le_bytes());
        write_record(&mut lagrangex, r).unwrap();
    }
    assert!(lagrangex.starts_with(&[0x1f, 0x8b, 0x08]));
    let path = dir.path().join("lagrangex.bin");
    std::fs::write(&path, &lagrangex).unwrap();
    let (code, stderr) = run(&path, &["--lagrangex-header"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("rows written: 12"), "{stderr}");
}

#[test]
fn standard_input_zstd_and_examples() {
    let (framed, records) = requests(2, 3);
    let compressed = zstd::encode_all(framed.as_slice(), 1).unwrap();
    let mut child = Command::new(FEX)
        .args(["inspect", "--limit", "1", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&compressed).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with(&format!("-: record 0 at byte 0 ({} bytes)\n  batch_size 3, ", records[0].len())),
        "{stdout}"
    );
    assert!(stdout.contains("user_id (shared, 1 features)") && !stdout.contains("record 1"), "{stdout}");

    // Examples: one row each, extracted in one call per chunk.
    let batch = pb::ExampleBatch::decode(records[0].as_slice()).unwrap();
    let mut examples = Vec::new();
    for r in 0..3 {
        let e = pb::Example {
            named_feature: batch
                .named_feature_list
                .iter()
                .map(|l| pb::NamedFeature {
                    name: l.name.clone(),
                    feature: Some(l.feature[if l.r#type == 1 { 0 } else { r }].clone()),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        write_record(&mut examples, &e.encode_to_vec()).unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let from_examples = dir.path().join("e.arrows");
    let from_batch = dir.path().join("b.arrows");
    let mut child = Command::new(FEX)
        .args(["extract", "-q", "--payload", "example", "--format", "arrow", "-m"])
        .arg(default_model())
        .arg("-o")
        .arg(&from_examples)
        .arg("-")
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&examples).unwrap();
    assert!(child.wait().unwrap().success());
    let batch_file = dir.path().join("one.bin");
    let mut one = Vec::new();
    write_record(&mut one, &records[0]).unwrap();
    std::fs::write(&batch_file, one).unwrap();
    let run = Command::new(FEX)
        .args(["extract", "-q", "--format", "arrow", "-m"])
        .arg(default_model())
        .arg("-o")
        .arg(&from_batch)
        .arg(&batch_file)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", text(&run.stderr));
    let (e, b) = (std::fs::read(from_examples).unwrap(), std::fs::read(from_batch).unwrap());
    assert!(e.len() > 500 && e == b, "an ExampleBatch and its rows as Examples make the same table");
}

#[test]
fn fex_is_built_on_the_library_alone() {
    // The library and, for --format iceberg, fex-iceberg, whose catalog
    // client (sqlx, reqwest) runs on tokio: nothing of the server's stack
    // anywhere, and no async runtime outside fex-iceberg.
    let tree = |prune: &[&str]| {
        let out = Command::new(env!("CARGO"))
            .args(["tree", "-p", "fex-cli", "-e", "normal", "--prefix", "none", "--format", "{p}"])
            .args(prune)
            .current_dir(repo())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let whole = tree(&[]);
    assert!(whole.contains("fex v0.1.0") && whole.contains("fex-iceberg v0.1.0"), "{whole}");
    assert!(!whole.lines().any(|l| l.starts_with("tonic ")), "fex-cli depends on tonic:\n{whole}");
    let without_tables = tree(&["--prune", "fex-iceberg"]);
    for banned in ["tokio ", "tonic ", "hyper ", "h2 "] {
        assert!(
            !without_tables.lines().any(|l| l.starts_with(banned)),
            "fex-cli depends on {banned}other than through fex-iceberg:\n{without_tables}"
        );
    }
}
