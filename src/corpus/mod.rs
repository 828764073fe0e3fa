//! The golden corpus: case files that hold a model config, a readable sample
//! and the expected output as text. The library's tests, the offline command
//! and the Python binding all run the same files through this module, so each
//! front end checks the same expectations.
//!
//! A case is one YAML file with three keys, `expect` last:
//!
//! ```yaml
//! # What the case shows, and why.
//! model:            # a model config, as in models/*.yaml
//!   name: t
//!   features:
//!     - {name: user_id, kind: sparse}
//! input:            # `batch: {...}` or `examples: [...]`, see `sample`
//!   batch:
//!     batch_size: 2
//!     lists:
//!       - {name: user_id, type: SHARED, features: [{fid_v2_list: [7, 8]}]}
//! expect: |         # what `render` prints, or `error: <message>`
//!   batch_size: 2
//!   ...
//! ```

mod feature;
mod line_id;
#[cfg(feature = "offline")]
mod offline;
mod render;
mod sample;

use std::path::Path;

use serde::Deserialize;

pub use feature::Feature;
pub use line_id::LineIdFields;
#[cfg(feature = "offline")]
pub use offline::OfflineRun;
pub use render::{render, render_columns, render_error};
pub use sample::{Batch, Encoded, Example, Input, List, ListType};

use crate::Plan;

/// A case file that cannot be run: the case is wrong, not the library.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CorpusError {
    #[error("{0}")]
    Yaml(String),
    #[error("list {list:?}: {message}")]
    Sample { list: String, message: String },
    #[error("the expect key must come last in a case file; found {0:?} after it")]
    ExpectNotLast(String),
}

/// One parsed case file.
#[derive(Debug, Clone)]
pub struct Case {
    /// The model config as YAML text, ready for `Plan::from_yaml_in`.
    pub model: String,
    pub input: Input,
    /// The expected text (empty when the file has no `expect` yet).
    pub expect: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCase {
    model: serde_norway::Value,
    input: Input,
    #[serde(default)]
    expect: String,
}

impl Case {
    pub fn parse(text: &str) -> Result<Self, CorpusError> {
        let raw: RawCase = serde_norway::from_str(text).map_err(yaml)?;
        let model = match raw.model {
            serde_norway::Value::String(s) => s,
            other => serde_norway::to_string(&other).map_err(yaml)?,
        };
        Ok(Self { model, input: raw.input, expect: raw.expect })
    }

    /// Runs the case: compiles the model (file references resolve against
    /// `base_dir`, the case file's directory), extracts the encoded sample and
    /// renders the result, or the error either step gave.
    pub fn run(&self, base_dir: &Path) -> Result<String, CorpusError> {
        let encoded = self.input.encode()?;
        let plan = match Plan::from_yaml_in(&self.model, base_dir) {
            Ok(p) => p,
            Err(e) => return Ok(render_error(&e)),
        };
        let result = match &encoded {
            Encoded::Batch(bytes) => crate::extract_batch(&plan, bytes),
            Encoded::Examples(rows) => {
                let rows: Vec<&[u8]> = rows.iter().map(Vec::as_slice).collect();
                crate::extract_examples(&plan, &rows)
            }
        };
        Ok(result.map_or_else(|e| render_error(&e), |out| render(&out)))
    }
}

/// The case file `text` with its `expect` section replaced by `actual`
/// (appended when there is none); every other line is kept as written.
pub fn with_expect(text: &str, actual: &str) -> Result<String, CorpusError> {
    let lines: Vec<&str> = text.lines().collect();
    let at = lines.iter().rposition(|l| l.starts_with("expect:")).unwrap_or(lines.len());
    if let Some(after) = lines.iter().skip(at + 1).find(|l| top_level(l)) {
        return Err(CorpusError::ExpectNotLast(after.to_string()));
    }
    let mut out: String = lines[..at].iter().flat_map(|l| [l, "\n"]).collect();
    out.push_str("expect: |\n");
    for line in actual.lines() {
        if !line.is_empty() {
            out.push_str("  ");
        }
        out.push_str(line);
        out.push('\n');
    }
    Ok(out)
}

/// A line that starts a new top-level key (not indented, not a comment).
fn top_level(line: &str) -> bool {
    !line.is_empty() && !line.starts_with([' ', '#'])
}

fn yaml(e: serde_norway::Error) -> CorpusError {
    CorpusError::Yaml(e.to_string())
}
