//! `tokenize`: FG's tokenize_feature. Each row's string is encoded by a
//! Hugging Face tokenizer (a `tokenizer.json`, the files FG reads through
//! tokenizers-cpp) into its token ids, without special tokens; ragged ids.
//! A string that is not UTF-8 is read with each bad sequence replaced by
//! U+FFFD, as `String::from_utf8_lossy` does; an empty string gives an
//! empty row.

use std::path::{Path, PathBuf};

use super::ids::string_at;
use crate::columns::Column;
use crate::error::{ErrorKind, ExtractError};

/// A tokenizer loaded from its file, named by path and content digest.
pub struct TokenizerFile {
    pub path: PathBuf,
    pub digest: u64,
    tokenizer: tokenizers::Tokenizer,
}

impl std::fmt::Debug for TokenizerFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TokenizerFile({}, {:016x})", self.path.display(), self.digest)
    }
}

impl PartialEq for TokenizerFile {
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path && self.digest == other.digest
    }
}

impl TokenizerFile {
    /// Reads and parses `path` through `files`; the error says which file
    /// and why.
    pub fn load_from(files: &dyn crate::files::FileSource, path: &Path) -> Result<Self, String> {
        let bytes = files.read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let tokenizer = tokenizers::Tokenizer::from_bytes(&bytes)
            .map_err(|e| format!("{} is not a tokenizer.json: {e}", path.display()))?;
        Ok(Self { path: path.to_path_buf(), digest: super::hash::digest(&bytes), tokenizer })
    }
}

/// Each row's token ids.
pub(super) fn apply(
    t: &TokenizerFile,
    name: &str,
    input: &Column,
    out: &mut Column,
    rows: usize,
) -> Result<(), ExtractError> {
    let o = out.ragged_mut();
    o.splits.push(0)?;
    for r in 0..rows {
        let bytes = string_at(input, r);
        if !bytes.is_empty() {
            let text = String::from_utf8_lossy(bytes);
            // A panic in the tokenizer is this row's error, not the process's.
            let encoded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                t.tokenizer.encode_fast(text.as_ref(), false).map_err(|e| e.to_string())
            }))
            .unwrap_or_else(|_| Err("it panicked".to_string()));
            let encoding = encoded.map_err(|e| {
                let message = format!("row {r}: the tokenizer {} failed: {e}", t.path.display());
                ExtractError::from(ErrorKind::Operator { name: name.to_string(), message })
            })?;
            encoding.get_ids().iter().for_each(|&id| o.values.push_i64(i64::from(id)));
        }
        o.splits.push(o.values.len())?;
    }
    Ok(())
}
