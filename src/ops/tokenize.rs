//! `tokenize`: FG's tokenize_feature. Each row's string is encoded into its
//! token ids, without special tokens; ragged ids. FG's two tokenizer types:
//! `bpe` (the default), a Hugging Face `tokenizer.json` read by Hugging
//! Face's tokenizers, the library tokenizers-cpp wraps; and
//! `sentencepiece`, a SentencePiece `.model` file encoded by Google's
//! SentencePiece library itself, the one tokenizers-cpp calls for it.
//! A string that is not UTF-8 is read with each bad sequence replaced by
//! U+FFFD, as `String::from_utf8_lossy` does; an empty string gives an
//! empty row. Each thread keeps the ids of the strings it tokenized lately
//! (`Cache`): the ids are a function of the tokenizer file and the bytes.

use std::path::{Path, PathBuf};

use super::ids::string_at;
use crate::columns::Column;
use crate::error::{ErrorKind, ExtractError};

/// FG's `tokenizer_type`: which library reads the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenizerKind {
    /// `bpe`: a Hugging Face `tokenizer.json` (BPE, WordPiece, Unigram ...).
    HuggingFace,
    /// `sentencepiece`: a SentencePiece `.model` (a serialized ModelProto).
    SentencePiece,
}

enum Backend {
    HuggingFace(Box<tokenizers::Tokenizer>),
    SentencePiece(sentencepiece::SentencePieceProcessor),
}

/// A tokenizer loaded from its file, named by path and content digest.
pub struct TokenizerFile {
    pub path: PathBuf,
    pub digest: u64,
    backend: Backend,
}

impl std::fmt::Debug for TokenizerFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TokenizerFile({}, {:016x})", self.path.display(), self.digest)
    }
}

impl PartialEq for TokenizerFile {
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path && self.digest == other.digest && self.kind() == other.kind()
    }
}

impl TokenizerFile {
    /// Reads and parses `path` through `files` as a file of `kind`; the
    /// error says which file and why.
    pub fn load_from(files: &dyn crate::files::FileSource, path: &Path, kind: TokenizerKind) -> Result<Self, String> {
        let bytes = files.read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let backend = match kind {
            TokenizerKind::HuggingFace => match tokenizers::Tokenizer::from_bytes(&bytes) {
                Ok(t) => Backend::HuggingFace(Box::new(t)),
                Err(e) => {
                    let json = bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
                    let hint =
                        if json { "" } else { " (a sentencepiece .model file needs tokenizer_type: sentencepiece)" };
                    return Err(format!("{} is not a tokenizer.json: {e}{hint}", path.display()));
                }
            },
            TokenizerKind::SentencePiece => {
                // The library parses the ModelProto and checks its pieces; a
                // file it refuses is this config's error.
                let loaded =
                    std::panic::catch_unwind(|| sentencepiece::SentencePieceProcessor::from_serialized_proto(&bytes));
                match loaded {
                    Ok(Ok(p)) => Backend::SentencePiece(p),
                    Ok(Err(e)) => {
                        let hint = if bytes.first() == Some(&b'{') {
                            " (a tokenizer.json needs tokenizer_type: bpe)"
                        } else {
                            ""
                        };
                        return Err(format!("{} is not a sentencepiece model: {e}{hint}", path.display()));
                    }
                    Err(_) => {
                        return Err(format!("{} is not a sentencepiece model: the library panicked", path.display()));
                    }
                }
            }
        };
        Ok(Self { path: path.to_path_buf(), digest: super::hash::digest(&bytes), backend })
    }

    pub fn kind(&self) -> TokenizerKind {
        match self.backend {
            Backend::HuggingFace(_) => TokenizerKind::HuggingFace,
            Backend::SentencePiece(_) => TokenizerKind::SentencePiece,
        }
    }
}

/// Strings a thread tokenized lately and their ids, for strings that come
/// again (an item's title in request after request): a hit costs a hash and
/// a comparison instead of the tokenizer's hundreds of thousands of
/// instructions. Keyed by the tokenizer's digest and the string's bytes;
/// emptied whole when it holds `CACHED` strings or `CACHED_BYTES`.
#[derive(Default)]
struct Cache {
    /// XXH64 of the bytes, seeded with the tokenizer's digest → entries.
    entries: rustc_hash::FxHashMap<u64, Vec<Cached>>,
    strings: usize,
    bytes: usize,
}

/// A cached string: the tokenizer's digest, the bytes, their ids.
type Cached = (u64, Box<[u8]>, Box<[u32]>);

const CACHED: usize = 16_384;
const CACHED_BYTES: usize = 8 << 20;

impl Cache {
    fn get(&self, digest: u64, key: u64, text: &[u8]) -> Option<&[u32]> {
        let bucket = self.entries.get(&key)?;
        bucket.iter().find(|(d, t, _)| *d == digest && **t == *text).map(|(_, _, ids)| &ids[..])
    }

    fn put(&mut self, digest: u64, key: u64, text: &[u8], ids: &[u32]) {
        let size = text.len() + 4 * ids.len();
        if self.strings >= CACHED || self.bytes + size > CACHED_BYTES {
            self.entries.clear();
            (self.strings, self.bytes) = (0, 0);
        }
        self.entries.entry(key).or_default().push((digest, text.into(), ids.into()));
        self.strings += 1;
        self.bytes += size;
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
    super::rows::with_scratch(|cache: &mut Cache| {
        for r in 0..rows {
            let bytes = string_at(input, r);
            if !bytes.is_empty() {
                let key = xxhash_rust::xxh64::xxh64(bytes, t.digest);
                if let Some(ids) = cache.get(t.digest, key, bytes) {
                    ids.iter().for_each(|&id| o.values.push_i64(i64::from(id)));
                } else {
                    let ids = encode(t, bytes).map_err(|e| {
                        let message = format!("row {r}: the tokenizer {} failed: {e}", t.path.display());
                        ExtractError::from(ErrorKind::Operator { name: name.to_string(), message })
                    })?;
                    ids.iter().for_each(|&id| o.values.push_i64(i64::from(id)));
                    cache.put(t.digest, key, bytes, &ids);
                }
            }
            o.splits.push(o.values.len())?;
        }
        Ok(())
    })
}

/// One string's ids; a panic in the tokenizer is this string's error, not
/// the process's.
fn encode(t: &TokenizerFile, bytes: &[u8]) -> Result<Vec<u32>, String> {
    let text = String::from_utf8_lossy(bytes);
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match &t.backend {
        Backend::HuggingFace(h) => {
            h.encode_fast(text.as_ref(), false).map(|e| e.get_ids().to_vec()).map_err(|e| e.to_string())
        }
        // SentencePiece's EncodeAsIds: the pieces' ids, no BOS or EOS.
        Backend::SentencePiece(p) => {
            p.encode(text.as_ref()).map(|pieces| pieces.iter().map(|p| p.id).collect()).map_err(|e| e.to_string())
        }
    }))
    .unwrap_or_else(|_| Err("it panicked".to_string()))
}
