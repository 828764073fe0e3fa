//! Text samples on the command line: `fex extract --input-format
//! libsvm|libsvm_ex|uch|criteo` reads each input (decompressed as
//! `--compression` says; by default as its first bytes say) with the
//! library's text readers (`fex::text`) and writes their batches through the
//! same sinks as PBDataset input; `fex fit criteo` fits Criteo's
//! vocabularies (compressed days too). A bad line
//! is reported as file:line:column (exit 65 under `--on-error fail`; counted
//! and skipped under `skip`).

use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;

use fex::columns::NamedColumn;
use fex::offline::{IpcSink, ParquetOptions, ParquetSink, Prepared, Sink};
use fex::records::{Compression, sources};
use fex::text::TextError;
use fex::text::criteo::{self, CriteoReader, Fit, FitOptions};
use fex::text::deepx::{self, ReadOptions};

use crate::args::{ExtractArgs, FitCriteoArgs, FormatArg, InputFormatArg};
use crate::exit;

/// A text input, decompressed as `--compression` says (by default, as its
/// first bytes say: gzip, zstd or framed snappy), as PBDataset input is.
fn open_input(path: &Path, compression: Compression) -> std::io::Result<Box<dyn BufRead + Send>> {
    fex::text::open(path, compression)
}

fn name(path: &Path) -> String {
    path.display().to_string()
}

/// What a text extraction did.
#[derive(Default)]
struct Counts {
    files: u64,
    rows: u64,
    skipped: u64,
}

pub fn extract(a: ExtractArgs) -> u8 {
    let format = a.input_format;
    let opts = ReadOptions { on_error: a.on_error.into(), ..ReadOptions::default() };
    // Check the reader config (and load vocabularies) before writing anything.
    let format_name = match format {
        InputFormatArg::Libsvm => "libsvm",
        InputFormatArg::LibsvmEx => "libsvm_ex",
        InputFormatArg::Uch => "uch",
        InputFormatArg::Criteo => "criteo",
        InputFormatArg::Pbdataset => unreachable!("pbdataset input is extract::run's"),
    };
    if format != InputFormatArg::Criteo {
        let config = deepx::Format::parse(format_name).and_then(|f| deepx::DeepxConfig::parse(f, &a.reader_config));
        if let Err(e) = config {
            eprintln!("error: --reader-config {:?}: {e}", a.reader_config);
            return exit::CONFIG;
        }
    } else if !a.reader_config.is_empty() {
        eprintln!("error: --reader-config is for libsvm, libsvm_ex and uch; criteo takes --batch-size and --vocab-dir");
        return exit::CONFIG;
    }
    if a.model.is_some() {
        eprintln!("error: --model is for pbdataset input; text formats have their own columns");
        return exit::CONFIG;
    }
    let vocabs = match (&a.vocab_dir, format) {
        (Some(dir), InputFormatArg::Criteo) => match criteo::load_vocabs(dir) {
            Ok(v) => Some(v),
            Err(e) => {
                eprintln!("error: --vocab-dir {}: {e}", dir.display());
                return exit::CONFIG;
            }
        },
        (Some(_), _) => {
            eprintln!("error: --vocab-dir is for criteo input");
            return exit::CONFIG;
        }
        (None, _) => None,
    };
    let inputs = match sources::expand(&a.input.inputs) {
        Ok(inputs) => inputs,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::NO_INPUT;
        }
    };
    let out = match crate::extract::create(&a.output) {
        Ok(out) => out,
        Err(e) => {
            eprintln!("error: cannot create {}: {e}", a.output.display());
            return exit::FAILURE;
        }
    };
    let metadata = HashMap::from([
        ("fex.input_format".to_string(), format_name.to_string()),
        ("fex.version".to_string(), env!("CARGO_PKG_VERSION").to_string()),
    ]);
    let mut sink: Box<dyn Sink> = match a.format {
        FormatArg::Parquet => {
            let options = ParquetOptions {
                row_group_size: a.row_group_size,
                codec: a.parquet_compression.into(),
                dictionary: a.parquet_dictionary,
            };
            Box::new(ParquetSink::for_columns(out, options, metadata))
        }
        FormatArg::Arrow => Box::new(IpcSink::for_columns(out)),
        FormatArg::Responses => {
            eprintln!("error: --format responses answers a model's request; text input writes parquet or arrow");
            return exit::CONFIG;
        }
        FormatArg::Iceberg => unreachable!("refused by extract::run"),
    };
    let mut counts = Counts::default();
    for path in &inputs {
        counts.files += 1;
        let input = match open_input(path, a.input.read_options().compression) {
            Ok(i) => i,
            Err(e) => {
                eprintln!("error: {}: cannot open: {e}", path.display());
                return if e.kind() == std::io::ErrorKind::NotFound { exit::NO_INPUT } else { exit::FAILURE };
            }
        };
        let result = match format {
            InputFormatArg::Criteo => {
                let mut reader = CriteoReader::new(input, name(path), vocabs.clone(), a.batch_size, opts);
                let r = write_all(&mut || reader.next_batch(), sink.as_mut(), &mut counts);
                counts.skipped += reader.skipped();
                r
            }
            _ => {
                let mut reader = match deepx::open(format_name, &a.reader_config, input, name(path), opts) {
                    Ok(r) => r,
                    Err(e) => {
                        eprintln!("error: --reader-config {:?}: {e}", a.reader_config);
                        return exit::CONFIG;
                    }
                };
                let r = write_all(&mut || reader.next_batch(), sink.as_mut(), &mut counts);
                counts.skipped += reader.skipped();
                r
            }
        };
        if let Err(code) = result {
            return code;
        }
    }
    if let Err(e) = sink.finish() {
        eprintln!("error: {e}");
        return exit::FAILURE;
    }
    if !a.quiet {
        eprintln!("read {} file(s) ({format_name})", counts.files);
        eprintln!("bad lines: {}", counts.skipped);
        let kind = if a.format == FormatArg::Parquet { "parquet" } else { "arrow ipc stream" };
        eprintln!("rows written: {} to {} ({kind})", counts.rows, a.output.display());
    }
    0
}

/// Writes every batch of one input.
fn write_all(
    next: &mut dyn FnMut() -> Result<Option<Vec<NamedColumn>>, TextError>,
    sink: &mut dyn Sink,
    counts: &mut Counts,
) -> Result<(), u8> {
    loop {
        let columns = match next() {
            Ok(Some(c)) => c,
            Ok(None) => return Ok(()),
            Err(e) => {
                eprintln!("error: {e}");
                eprintln!("(stopped at the first bad line; --on-error skip counts them and goes on)");
                return Err(bad_line_code(&e));
            }
        };
        let rows = columns.iter().map(|c| c.column.rows()).next().unwrap_or(0);
        let batch = match fex::offline::table::columns_to_batch(columns, rows, HashMap::new()) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("error: {e}");
                return Err(exit::FAILURE);
            }
        };
        counts.rows += rows as u64;
        if let Err(e) = sink.write(Prepared::Batch(batch)) {
            eprintln!("error: {e}");
            return Err(exit::FAILURE);
        }
    }
}

fn bad_line_code(e: &TextError) -> u8 {
    match e.kind() {
        fex::text::TextErrorKind::Io(_) => exit::FAILURE,
        _ => exit::DATA,
    }
}

/// `fex fit criteo`: streams the days into the fit, writes the vocabularies.
pub fn fit_criteo(a: FitCriteoArgs) -> u8 {
    let mut fit = Fit::new(FitOptions { threshold: a.threshold, ..FitOptions::default() });
    let opts = ReadOptions { on_error: a.on_error.into(), ..ReadOptions::default() };
    let mut skipped = 0;
    for day in &a.days {
        let input = match open_input(day, Compression::Auto) {
            Ok(i) => i,
            Err(e) => {
                eprintln!("error: {}: cannot open: {e}", day.display());
                return if e.kind() == std::io::ErrorKind::NotFound { exit::NO_INPUT } else { exit::FAILURE };
            }
        };
        match fit.add_input(input, &name(day), opts) {
            Ok(stats) => skipped += stats.skipped,
            Err(e) => {
                eprintln!("error: {e}");
                let code = bad_line_code(&e);
                if code == exit::DATA {
                    eprintln!("(stopped at the first bad line; --on-error skip counts them and goes on)");
                }
                return code;
            }
        }
    }
    match fit.write(&a.vocab_dir) {
        Ok(written) => {
            eprintln!("fitted {} rows from {} day(s); bad lines: {skipped}", fit.rows(), a.days.len());
            eprintln!("wrote {} vocabularies to {}", written.len(), a.vocab_dir.display());
            0
        }
        Err(e) => {
            eprintln!("error: cannot write {}: {e}", a.vocab_dir.display());
            exit::FAILURE
        }
    }
}
