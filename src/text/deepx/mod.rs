//! deepx_core's instance readers (seed 003; Tencent/deepx_core
//! doc/instance.md, doc/instance_reader.md): `libsvm`, `libsvm_ex` and `uch`
//! lines into batches of typed columns under deepx's tensor names.
//! `config` reads deepx's config string, `line` parses one line (`number`
//! its numbers, with what deepx's parser would make of them), `reader`
//! batches lines.

mod config;
mod line;
mod number;
mod reader;

pub use config::{ConfigError, DeepxConfig, Format, MAX_GROUPS, MAX_LABEL_SIZE};
pub use reader::{
    DeepxReader, LastBatch, ReadOptions, UUID_NAME, W_NAME, X_CAND_NAME, X_HIST_NAME, X_HIST_SIZE_NAME, X_NAME,
    X_USER_NAME, Y_NAME,
};

/// A reader for `name` (`libsvm`, `libsvm_ex`, `uch`) and its deepx config
/// string, as deepx's `--instance_reader` and `--instance_reader_config`.
pub fn open<R: std::io::BufRead>(
    name: &str,
    config: &str,
    input: R,
    file: impl Into<String>,
    opts: ReadOptions,
) -> Result<DeepxReader<R>, ConfigError> {
    let cfg = DeepxConfig::parse(Format::parse(name)?, config)?;
    Ok(DeepxReader::new(input, file, cfg, opts))
}
