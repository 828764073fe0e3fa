//! Text sample formats read into typed columns: deepx_core's `libsvm`,
//! `libsvm_ex` and `uch` instance readers (seed 003) and Criteo's TSV with
//! DLRM's preprocessing (seed 004). Every reader streams over a `BufRead`,
//! holds one line and one batch at a time, and says where a bad line is
//! (file, line, column, the offending text); `OnError::Skip` counts and
//! skips bad lines instead.
//!
//! - `input`: a file or standard input, decompressed (gzip, zstd, snappy).
//! - `lines`: the bounded line source every reader shares.
//! - `error`: `TextError` (where and what) and `OnError`.
//! - `deepx`: the three deepx formats, configured by deepx's own string.
//! - `criteo`: the Criteo TSV reader, the vocabulary fit pass, the
//!   KeyedJaggedTensor and its multi-hot expansion, the day split.

pub mod criteo;
pub mod deepx;
mod error;
mod input;
mod lines;

pub use error::{OnError, TextError, TextErrorKind};
pub use input::open;
pub use lines::{DEFAULT_MAX_LINE_BYTES, LineSource};
