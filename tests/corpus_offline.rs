//! The offline golden corpus (tests/corpus_offline/*.yaml): each case a
//! model with an `offline:` section, its input records, and the tables the
//! transforms make of them, as `fex extract` writes them
//! (`fex::corpus::Case::run_offline`). Every case opens with a comment
//! quoting the Monolith source it follows. `UPDATE_EXPECT=1` rewrites the
//! `expect` blocks; `cli/tests/transforms.rs` runs the same cases through
//! the `fex` command and compares its responses byte for byte.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use expect_test::expect_file;
use fex::corpus::{Case, Input, with_expect};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus_offline")
}

fn check(path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    if !text.starts_with('#') {
        return Err("a case opens with a comment saying what it shows and the Monolith line it follows".into());
    }
    let case = Case::parse(&text).map_err(|e| format!("bad case file: {e}"))?;
    if !case.model.contains("offline:") {
        return Err("an offline case's model has an offline: section".into());
    }
    // Transforms that rewrote labels once reset the weight unseen: no case
    // wrote the weight, and none gave its rows weights other than 1.
    if !case.model.contains("kind: instance_weight") || !carries_weights(&case.input) {
        return Err("an offline case writes the instance weight (an output of kind instance_weight) of rows \
                    that carry weights of their own, so a transform that changes a weight shows"
            .into());
    }
    let actual = case.run_offline(path.parent().unwrap()).map_err(|e| format!("bad case file: {e}"))?;
    if actual == case.expect {
        return Ok(());
    }
    let fixed = with_expect(&text, &actual).map_err(|e| e.to_string())?;
    catch_unwind(AssertUnwindSafe(|| expect_file![path].assert_eq(&fixed)))
        .map_err(|_| "output differs from expect (diff above)".to_string())
}

/// True when some input row has a weight other than the default 1.
fn carries_weights(input: &Input) -> bool {
    match input {
        Input::Batch(b) => b.lists.iter().any(|l| l.name == "instance_weight"),
        Input::Examples(es) => es.iter().any(|e| {
            (e.instance_weight != 0.0 && e.instance_weight != 1.0)
                || e.features.iter().any(|(name, _)| name == "instance_weight")
        }),
    }
}

#[test]
fn every_offline_case_matches_its_expectation() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("tests/corpus_offline exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no case files in {}", corpus_dir().display());
    let failures: Vec<String> = files
        .iter()
        .filter_map(|p| check(p).err().map(|e| format!("  {}: {e}", p.file_name().unwrap().to_string_lossy())))
        .collect();
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), files.len(), failures.join("\n"));
}
