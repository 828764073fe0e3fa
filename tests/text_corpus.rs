//! The text readers' golden cases (tests/text_corpus/*.yaml): a deepx reader
//! name and config string verbatim, reader options, the input text, and the
//! batches as `fex::corpus::render_columns` prints them, then `skipped: N`
//! or the error that stopped the reader. `UPDATE_EXPECT=1` rewrites the
//! `expect` blocks, as for tests/corpus. Format facts come from
//! Tencent/deepx_core (doc/instance.md; include/deepx_core/instance/base.h;
//! include/deepx_core/graph/instance_reader.h:14-26), cited in each case.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use expect_test::expect_file;
use fex::DataType;
use fex::corpus::{render_columns, with_expect};
use fex::text::OnError;
use fex::text::deepx::{LastBatch, ReadOptions};
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    reader: String,
    config: String,
    #[serde(default)]
    options: Options,
    input: String,
    #[serde(default)]
    #[allow(dead_code)]
    expect: String,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Options {
    #[serde(default)]
    on_error: Option<String>,
    #[serde(default)]
    last_batch: Option<String>,
    #[serde(default)]
    max_line_bytes: Option<usize>,
    #[serde(default)]
    splits: Option<String>,
}

impl Options {
    fn read_options(&self) -> ReadOptions {
        let mut o = ReadOptions::default();
        match self.on_error.as_deref() {
            None | Some("fail") => {}
            Some("skip") => o.on_error = OnError::Skip,
            Some(x) => panic!("on_error {x:?}: fail or skip"),
        }
        match self.last_batch.as_deref() {
            None | Some("keep") => {}
            Some("drop") => o.last_batch = LastBatch::Drop,
            Some(x) => panic!("last_batch {x:?}: keep or drop"),
        }
        if let Some(n) = self.max_line_bytes {
            o.max_line_bytes = n;
        }
        match self.splits.as_deref() {
            None | Some("i64") => {}
            Some("i32") => o.splits = DataType::I32,
            Some(x) => panic!("splits {x:?}: i32 or i64"),
        }
        o
    }
}

/// What the reader makes of a case: every batch, then how it ended.
fn run(case: &Case) -> String {
    if case.reader == "criteo" {
        return run_criteo(case);
    }
    let mut out = String::new();
    let input = std::io::Cursor::new(case.input.as_bytes());
    let mut reader =
        match fex::text::deepx::open(&case.reader, &case.config, input, "input.txt", case.options.read_options()) {
            Ok(r) => r,
            Err(e) => return format!("config error: {e}\n"),
        };
    if !render_batches(|| reader.next_batch(), &mut out) {
        return out;
    }
    out.push_str(&format!("rows: {}, skipped: {}\n", reader.rows(), reader.skipped()));
    out
}

/// Renders every batch `next` gives into `out`, then the error that ends
/// the input, if one does (false then).
fn render_batches(
    mut next: impl FnMut() -> Result<Option<Vec<fex::NamedColumn>>, fex::text::TextError>,
    out: &mut String,
) -> bool {
    let mut n = 0;
    loop {
        match next() {
            Ok(Some(columns)) => {
                out.push_str(&format!("batch {n}:\n{}", render_columns(&columns)));
                n += 1;
            }
            Ok(None) => return true,
            Err(e) => {
                out.push_str(&format!("error: {e}\n"));
                return false;
            }
        }
    }
}

/// A Criteo case: `config` is `batch=N`; ids are the raw values (no
/// vocabularies), so the case shows parsing, the dense rule and the layout.
fn run_criteo(case: &Case) -> String {
    let batch: usize =
        case.config.strip_prefix("batch=").and_then(|n| n.parse().ok()).expect("criteo config is batch=N");
    let input = std::io::Cursor::new(case.input.as_bytes());
    let mut reader = fex::text::criteo::CriteoReader::new(input, "input.tsv", None, batch, case.options.read_options());
    let mut out = String::new();
    if !render_batches(|| reader.next_batch(), &mut out) {
        return out;
    }
    out.push_str(&format!("skipped: {}\n", reader.skipped()));
    out
}

fn check(path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    if !text.starts_with('#') {
        return Err("a case opens with a comment saying what it shows".into());
    }
    let case: Case = serde_norway::from_str(&text).map_err(|e| format!("bad case file: {e}"))?;
    let actual = run(&case);
    if actual == case.expect {
        return Ok(());
    }
    let fixed = with_expect(&text, &actual).map_err(|e| e.to_string())?;
    catch_unwind(AssertUnwindSafe(|| expect_file![path].assert_eq(&fixed)))
        .map_err(|_| "output differs from expect (diff above)".to_string())
}

#[test]
fn every_text_case_matches_its_expectation() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/text_corpus");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "the text corpus has its cases");
    let failures: Vec<String> = files
        .iter()
        .filter_map(|p| check(p).err().map(|e| format!("  {}: {e}", p.file_name().unwrap().to_string_lossy())))
        .collect();
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), files.len(), failures.join("\n"));
}
