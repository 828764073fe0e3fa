//! Vocabularies: raw ids or strings to contiguous ids, 0 = missing, 1 = out of
//! vocabulary, 2.. = the entry's position in the file (DLRM, EasyRec). The file
//! is part of the model: its digest is in the model's version.

use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;

use super::ids::{is_strings, row_ids, string_at};
use crate::columns::Column;
use crate::error::ExtractError;

pub const MISSING: i64 = 0;
pub const OUT_OF_VOCABULARY: i64 = 1;

/// Why a vocabulary could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VocabError {
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    /// Entries must be unique: a repeat would give one entry two ids.
    #[error("{}:{line}: {entry:?} repeats the entry of id {first}", path.display())]
    Repeated { path: PathBuf, line: usize, entry: String, first: i64 },
}

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
    /// Reads a vocabulary file from the filesystem; the error names the line.
    pub fn load(path: &Path) -> Result<Self, VocabError> {
        Self::load_from(&crate::files::Filesystem, path)
    }

    /// Reads a vocabulary through `files` (in-memory bytes, say).
    pub fn load_from(files: &dyn crate::files::FileSource, path: &Path) -> Result<Self, VocabError> {
        let text = files.read(path).map_err(|source| VocabError::Read { path: path.to_path_buf(), source })?;
        Self::parse(path, &text)
    }

    /// Parses a vocabulary's bytes; `path` names it in errors and identity.
    pub fn parse(path: &Path, text: &[u8]) -> Result<Self, VocabError> {
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
                let entry = String::from_utf8_lossy(line).into_owned();
                return Err(VocabError::Repeated { path: path.to_path_buf(), line: n + 1, entry, first });
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
pub(super) fn map(v: &Vocab, input: &Column, out: &mut Column, rows: usize) -> Result<(), ExtractError> {
    let o = out.ragged_mut();
    o.splits.push(0)?;
    for r in 0..rows {
        let before = o.values.len();
        if is_strings(input) {
            let s = string_at(input, r);
            if !s.is_empty() {
                o.values.push_i64(v.string(s));
            }
        } else {
            for &x in row_ids(input, r) {
                o.values.push_i64(v.id(x));
            }
        }
        if o.values.len() == before {
            o.values.push_i64(MISSING);
        }
        o.splits.push(o.values.len())?;
    }
    Ok(())
}
