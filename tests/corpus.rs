//! Runs every case of the golden corpus (tests/corpus/*.yaml) through the
//! library and compares the rendered output with the case's `expect` section.
//! A mismatch prints a diff of the case file through expect-test;
//! `UPDATE_EXPECT=1 cargo test --test corpus` rewrites the `expect` sections
//! instead. Every failing case is reported, not only the first.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use expect_test::expect_file;
use fex::corpus::{Case, with_expect};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

fn case_files() -> Vec<PathBuf> {
    let entries = std::fs::read_dir(corpus_dir()).expect("tests/corpus exists");
    let mut files: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).filter(|p| is_case(p)).collect();
    files.sort();
    files
}

fn is_case(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "yaml")
}

/// expect-test rewrites files instead of failing when this is set.
fn updating() -> bool {
    std::env::var_os("UPDATE_EXPECT").is_some()
}

/// Checks one case file. Only a mismatch goes through expect-test, which
/// compares the whole file with the file as it should be (so its diff shows
/// the `expect` lines in context) and, when updating, writes it.
fn check(path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    if !text.starts_with('#') {
        return Err("a case opens with a comment saying what it shows".into());
    }
    let case = Case::parse(&text).map_err(|e| format!("bad case file: {e}"))?;
    let actual = case.run(path.parent().unwrap_or(Path::new("."))).map_err(|e| format!("bad case file: {e}"))?;
    if actual == case.expect {
        return Ok(());
    }
    let fixed = with_expect(&text, &actual).map_err(|e| e.to_string())?;
    catch_unwind(AssertUnwindSafe(|| expect_file![path].assert_eq(&fixed)))
        .map_err(|_| "output differs from expect (diff above)".to_string())
}

#[test]
fn every_case_matches_its_expectation() {
    let files = case_files();
    assert!(!files.is_empty(), "no case files in {}", corpus_dir().display());
    let failures: Vec<String> = files
        .iter()
        .filter_map(|p| check(p).err().map(|e| format!("  {}: {e}", p.file_name().unwrap().to_string_lossy())))
        .collect();
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), files.len(), failures.join("\n"));
}

const CASE: &str = "# A shared list is broadcast.
model:
  name: t
  features:
    - {name: u, kind: sparse}
input:
  batch:
    batch_size: 2
    lists:
      - {name: u, type: SHARED, features: [{fid_v2_list: [7]}]}
expect: |
";

const RIGHT: &str = "batch_size: 2
u: ragged i64 shape=[2, -1] splits=i64
  splits: [0, 1, 2]
  row 0: [7]
  row 1: [7]
";

fn case_with(expect: &str) -> String {
    let lines: String = expect.lines().map(|l| format!("  {l}\n")).collect();
    format!("{CASE}{lines}")
}

/// The check can fail: a case whose expectation is one value off is reported
/// (or, with UPDATE_EXPECT=1, rewritten to the right text), and the right
/// expectation passes.
#[test]
fn a_wrong_expectation_fails() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wrong.yaml");
    let wrong = case_with(&RIGHT.replace("row 1: [7]", "row 1: [8]"));
    std::fs::write(&path, &wrong).unwrap();
    let result = check(&path);
    let now = std::fs::read_to_string(&path).unwrap();
    if updating() {
        assert_eq!((result, now), (Ok(()), case_with(RIGHT)));
    } else {
        assert_eq!((result.is_err(), now), (true, wrong));
    }
    std::fs::write(&path, case_with(RIGHT)).unwrap();
    assert_eq!(check(&path), Ok(()));
}

/// Rewriting keeps every line before `expect` and replaces only its block.
#[test]
fn with_expect_replaces_only_the_expect_block() {
    let stale = case_with("batch_size: 1\nstale: line");
    assert_eq!(with_expect(&stale, RIGHT).unwrap(), case_with(RIGHT));
    let missing = CASE.trim_end_matches("expect: |\n");
    assert_eq!(with_expect(missing, RIGHT).unwrap(), case_with(RIGHT));
    let err = with_expect(&format!("{CASE}  x\ninput: again\n"), RIGHT).unwrap_err();
    assert_eq!(err.to_string(), r#"the expect key must come last in a case file; found "input: again" after it"#);
}

/// A sample that sets two oneof variants in one Feature is a bad case, named
/// by its list, not a silent choice of one of them.
#[test]
fn a_feature_with_two_types_is_a_bad_case() {
    let text = CASE.replace("{fid_v2_list: [7]}", "{fid_v2_list: [7], float_list: [1]}");
    let err = Case::parse(&text).unwrap().run(Path::new(".")).unwrap_err();
    assert_eq!(err.to_string(), r#"list "u": a feature holds one type; found fid_v2_list and float_list"#);
}

/// `input` names exactly one kind of sample.
#[test]
fn input_holds_one_of_batch_and_examples() {
    let both = CASE.replace("input:\n", "input:\n  examples: []\n");
    let err = Case::parse(&both).unwrap_err().to_string();
    assert!(err.contains("input holds exactly one of `batch` and `examples`"), "{err}");
}
