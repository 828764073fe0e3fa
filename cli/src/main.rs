//! `fex`: the offline command. Builds training tables from Monolith sample
//! files with the same library and model config fex-server runs (`extract`),
//! shows what records hold (`inspect`), checks model configs (`check`),
//! replays fex-server's request logs (`replay`),
//! reads text samples (deepx libsvm/libsvm_ex/uch, Criteo TSV: `extract
//! --input-format`) and fits Criteo's vocabularies (`fit criteo`).
//! Exit codes: 0 done; 1 an output or other failure; 2 bad usage; 64 a bad
//! model config; 65 a bad record under `--on-error fail`; 66 an input that
//! cannot be found or opened.

mod args;
mod check;
mod extract;
mod inspect;
mod item_pool;
mod progress;
mod replay;
mod table;
mod text;

use std::process::ExitCode;

use clap::Parser;

/// Exit codes (sysexits.h where one fits).
pub mod exit {
    pub const FAILURE: u8 = 1;
    pub const CONFIG: u8 = 64;
    pub const DATA: u8 = 65;
    pub const NO_INPUT: u8 = 66;
}

/// Each record's table is allocated on the worker that extracts it and
/// freed on whichever worker writes it; mimalloc frees across threads
/// without glibc's arena locks (benches/README.md, "Offline").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = args::Cli::parse();
    let code = match cli.command {
        args::Command::Extract(a) => extract::run(a),
        args::Command::Inspect(a) => inspect::run(a),
        args::Command::Check(a) => check::run(a),
        args::Command::Fit(args::FitCommand::Criteo(a)) => text::fit_criteo(a),
        args::Command::Replay(a) => replay::run(a),
        args::Command::Table(c) => table::run(c),
        args::Command::Backfill(a) => table::backfill(a),
    };
    ExitCode::from(code)
}
