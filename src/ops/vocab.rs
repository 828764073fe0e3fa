//! Vocabularies: raw ids or strings to contiguous ids, 0 = missing, 1 = out of
//! vocabulary, 2.. = the entry's position in the file (DLRM, EasyRec). The file
//! is part of the model: its digest is in the model's version.

use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;

use super::ids::{is_strings, row_range, string_at};
use crate::extract::{ExtractError, push_split};
use crate::proto::fex_v1::{DataType, Tensor};

pub const MISSING: i64 = 0;
pub const OUT_OF_VOCABULARY: i64 = 1;

/// One entry per line: a decimal id (for id inputs) or a string (for string
/// inputs). Blank lines are skipped; a repeated entry is an error.
#[derive(Debug)]
pub struct Vocab {
    pub path: PathBuf,
    pub digest: u64,
    ids: FxHashMap<u64, i64>,
    strings: FxHashMap<Box<[u8]>, i64>,
}

impl PartialEq for Vocab {
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path && self.digest == other.digest
    }
}

impl Vocab {
    /// Reads a vocabulary file; the error names the line.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Self::parse(path, &text)
    }

    pub fn parse(path: &Path, text: &[u8]) -> Result<Self, String> {
        let mut v = Self {
            path: path.to_path_buf(),
            digest: super::hash::digest(text),
            ids: FxHashMap::default(),
            strings: FxHashMap::default(),
        };
        let mut next = 2i64;
        for (n, line) in text.split(|&b| b == b'\n').enumerate() {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.is_empty() {
                continue;
            }
            if let Some(first) = v.strings.insert(line.into(), next) {
                return Err(format!(
                    "{}:{}: {:?} repeats the entry of id {first}",
                    path.display(),
                    n + 1,
                    String::from_utf8_lossy(line)
                ));
            }
            if let Some(id) = std::str::from_utf8(line).ok().and_then(|s| s.trim().parse::<i64>().ok()) {
                v.ids.insert(id as u64, next);
            }
            next += 1;
        }
        Ok(v)
    }

    pub fn len(&self) -> usize {
        self.strings.len()
    }

    pub fn is_empty(&self) -> bool {
        self.strings.is_empty()
    }

    #[inline]
    pub fn id(&self, raw: u64) -> i64 {
        self.ids.get(&raw).copied().unwrap_or(OUT_OF_VOCABULARY)
    }

    #[inline]
    pub fn string(&self, raw: &[u8]) -> i64 {
        self.strings.get(raw).copied().unwrap_or(OUT_OF_VOCABULARY)
    }
}

/// Maps every value; a row with no value becomes one MISSING id.
pub(super) fn map(
    v: &Vocab,
    input: &Tensor,
    out: &mut Tensor,
    splits: DataType,
    rows: usize,
) -> Result<(), ExtractError> {
    push_split(out, splits, 0)?;
    for r in 0..rows {
        let before = out.values.len();
        if is_strings(input) {
            let s = string_at(input, r);
            if !s.is_empty() {
                out.values.extend_from_slice(&v.string(s).to_le_bytes());
            }
        } else {
            for i in row_range(input, r) {
                out.values.extend_from_slice(&v.id(input.u64_at(i)).to_le_bytes());
            }
        }
        if out.values.len() == before {
            out.values.extend_from_slice(&MISSING.to_le_bytes());
        }
        push_split(out, splits, out.values.len() / 8)?;
    }
    Ok(())
}
