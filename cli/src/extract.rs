//! `fex extract`: reads the inputs, runs the library's offline pipeline
//! (`fex::offline::run`) with the model's plan, writes the table, and says
//! what it did.

use std::io::Write;
use std::os::fd::AsFd;
use std::path::Path;

use fex::offline::{self, IpcSink, Options, ParquetOptions, ParquetSink, ResponsesSink, RunError, Sink, Summary};
use fex::records::sources;

use crate::args::{ExtractArgs, FormatArg, InputFormatArg};
use crate::exit;
use crate::progress::Progress;

pub fn run(a: ExtractArgs) -> u8 {
    if a.input_format != InputFormatArg::Pbdataset {
        if a.format == FormatArg::Iceberg {
            eprintln!(
                "error: --format iceberg writes a model's sample table from pbdataset input; text input writes parquet or arrow"
            );
            return exit::CONFIG;
        }
        return crate::text::extract(a);
    }
    let Some(model) = &a.model else {
        eprintln!("error: --model is required for pbdataset input");
        return exit::CONFIG;
    };
    let plan = match load_model(model) {
        Ok(plan) => plan,
        Err(code) => return code,
    };
    if a.format != FormatArg::Iceberg && (a.table.is_some() || a.catalog.is_some() || !a.catalog_property.is_empty()) {
        eprintln!("error: --table, --catalog and --catalog-property are for --format iceberg");
        return exit::CONFIG;
    }
    let inputs = match sources::expand(&a.input.inputs) {
        Ok(inputs) => inputs,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::NO_INPUT;
        }
    };
    let parquet = ParquetOptions {
        row_group_size: a.row_group_size,
        codec: a.parquet_compression.into(),
        dictionary: a.parquet_dictionary,
    };
    // An Iceberg table's rows carry their identity: the run extracts with a
    // plan that reads it too (fex_iceberg::identity).
    let mut committed = None;
    let (plan, mut sink): (fex::Plan, Box<dyn Sink>) = if a.format == FormatArg::Iceberg {
        let per_record = a.input.payload() == offline::Payload::ExampleBatch;
        match crate::table::open(&(&a).into(), model, &plan, parquet, per_record) {
            Ok((run_plan, sink)) => {
                committed = Some(sink.report());
                (run_plan, Box::new(sink))
            }
            Err(code) => return code,
        }
    } else {
        let out = match create(&a.output) {
            Ok(out) => out,
            Err(e) => {
                eprintln!("error: cannot create {}: {e}", a.output.display());
                return exit::FAILURE;
            }
        };
        let sink: Result<Box<dyn Sink>, _> = match a.format {
            FormatArg::Parquet => ParquetSink::new(out, &plan, parquet).map(|s| Box::new(s) as Box<dyn Sink>),
            FormatArg::Arrow => IpcSink::new(out, &plan).map(|s| Box::new(s) as Box<dyn Sink>),
            FormatArg::Responses => Ok(Box::new(ResponsesSink::new(out)) as Box<dyn Sink>),
            FormatArg::Iceberg => unreachable!("opened above"),
        };
        match sink {
            Ok(s) => (plan, s),
            Err(e) => {
                eprintln!("error: {e}");
                return exit::FAILURE;
            }
        }
    };
    let threads = a.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let options = Options {
        payload: a.input.payload(),
        read: a.input.read_options(),
        threads,
        on_error: a.on_error.into(),
        chunk_records: a.chunk_records.max(1),
        ..Options::default()
    };
    let progress = Progress::new(sources::total_size(&inputs), a.quiet);
    // The model's `offline:` transforms (filters, labels, negatives, shuffle,
    // batch): the stateful ones see records in input order, so the output is
    // the same for any --threads.
    let transforms = fex::samples::Transforms::new(&plan);
    let (restore, save) = (a.item_pool_restore.as_deref(), a.item_pool_save.as_deref());
    if let Err(code) = crate::item_pool::prepare(&transforms, restore, save) {
        return code;
    }
    let hook: Option<&dyn offline::RowsHook> = if transforms.is_empty() { None } else { Some(&transforms) };
    let result = offline::run(&plan, &inputs, options, sink.as_mut(), hook, &progress);
    progress.finish();
    match result {
        Ok(summary) => {
            if !a.quiet {
                print_summary(&summary, &a, progress.elapsed());
                if let Some(c) = committed.as_ref().and_then(|c| c.get()) {
                    crate::table::print_commit(c);
                }
            }
            crate::item_pool::save(&transforms, a.item_pool_save.as_deref())
        }
        Err(RunError::Bad(bad)) => {
            eprintln!("error: {bad}");
            // A first record that does not read is most often read with the
            // wrong header flags or compression: say which would read it.
            if bad.index == 0
                && let Some(hint) = fex::offline::hint(Path::new(&*bad.source), a.input.read_options())
            {
                eprintln!("hint: {hint}");
            }
            eprintln!("(stopped at the first bad record; --on-error skip reports them all and goes on)");
            if matches!(bad.error, offline::BadError::Read(ref e) if is_not_found(e)) {
                exit::NO_INPUT
            } else {
                exit::DATA
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            exit::FAILURE
        }
    }
}

fn is_not_found(e: &fex::records::RecordError) -> bool {
    matches!(e.kind(), fex::records::RecordErrorKind::Io(io) if io.kind() == std::io::ErrorKind::NotFound)
}

/// Compiles the model config; a bad one is exit 64 with every error.
pub fn load_model(path: &Path) -> Result<fex::Plan, u8> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        eprintln!("{}", fex::catalog::LoadError::cannot_read(path, &e));
        exit::CONFIG
    })?;
    fex::catalog::compile(path, &text).map_err(|e| {
        eprintln!("{e}");
        exit::CONFIG
    })
}

/// The output file, or standard output for `-`, buffered for the sinks
/// (`fex::offline::buffered`: large writes are not copied).
pub fn create(path: &Path) -> std::io::Result<Box<dyn Write + Send>> {
    if path.as_os_str() == "-" {
        // Standard output's own handle buffers by line; its descriptor,
        // duplicated, is written directly.
        let stdout = std::io::stdout().as_fd().try_clone_to_owned()?;
        return Ok(fex::offline::buffered(std::fs::File::from(stdout)));
    }
    Ok(fex::offline::buffered(std::fs::File::create(path)?))
}

fn print_summary(s: &Summary, a: &ExtractArgs, seconds: f64) {
    let mb = s.input_bytes as f64 / 1e6;
    let secs = seconds.max(1e-9);
    eprintln!(
        "read {} records ({mb:.1} MB) from {} file(s) in {seconds:.2} s: {:.0} records/s, {:.1} MB/s",
        s.records,
        s.files,
        s.records as f64 / secs,
        mb / secs
    );
    eprintln!("bad records: {}", s.bad_records);
    for (name, count) in &s.transforms {
        eprintln!("{name}: {count}");
    }
    let format = match a.format {
        FormatArg::Parquet => "parquet",
        FormatArg::Arrow => "arrow ipc stream",
        FormatArg::Responses => "framed fex.v1.ExtractResponse",
        FormatArg::Iceberg => "iceberg data files, committed below",
    };
    eprintln!("rows written: {} to {} ({format})", s.rows_written, a.output.display());
}
