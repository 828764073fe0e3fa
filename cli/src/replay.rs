//! `fex replay`: fex-server's request log (`--request-log`) in, the
//! responses the server gave out. Each logged `fex.v1.LoggedRequest` holds
//! an `ExtractRequest`; it is run through the library exactly as the
//! server's service runs it (the request's output selection, the default
//! policy, `Extractor::extract`, `into_tensors`) with the same model config,
//! and the `fex.v1.ExtractResponse` is written framed (`[u64 LE
//! length][response]`), byte for byte what the server sent. A request
//! logged by another identity of its model is refused unless
//! `--allow-other-version`.

use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use fex::proto::fex_v1::extract_request::Payload;
use fex::proto::fex_v1::{ExtractRequest, ExtractResponse, LoggedRequest};
use fex::records::{ReadOptions, RecordReader, write_record};
use fex::{Extracted, Extractor, Plan};
use prost::Message;

use crate::args::ReplayArgs;
use crate::exit;

/// Why a replay stopped, and its exit code.
struct Stop {
    code: u8,
    message: String,
}

impl Stop {
    fn new(code: u8, message: impl Into<String>) -> Self {
        Self { code, message: message.into() }
    }
}

pub fn run(a: ReplayArgs) -> u8 {
    match replay(&a) {
        Ok((requests, files)) => {
            if !a.quiet {
                eprintln!("replayed {requests} requests from {files} log files");
            }
            0
        }
        Err(stop) => {
            eprintln!("fex replay: {}", stop.message);
            stop.code
        }
    }
}

/// The models by name: --models (a directory or a file) or the embedded default.
fn models(a: &ReplayArgs) -> Result<HashMap<String, Plan>, Stop> {
    let Some(path) = &a.models else {
        let plan = Plan::default_model();
        return Ok(HashMap::from([(plan.name.clone(), plan)]));
    };
    let (loaded, errors) = fex::catalog::load(path);
    if !errors.is_empty() {
        let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
        return Err(Stop::new(exit::CONFIG, lines.join("\n")));
    }
    Ok(loaded.into_iter().map(|m| (m.plan.name.clone(), m.plan)).collect())
}

/// Whether `name` is a request log file's (`requests-*.log`, as fex-server names them).
fn is_log_file(name: &str) -> bool {
    name.starts_with("requests-") && name.ends_with(".log")
}

/// The log files: each directory's `requests-*.log` in name order (the
/// order they were written), and files given by name as they are.
fn log_files(inputs: &[PathBuf]) -> Result<Vec<PathBuf>, Stop> {
    let mut files = Vec::new();
    for input in inputs {
        let meta = std::fs::metadata(input)
            .map_err(|e| Stop::new(exit::NO_INPUT, format!("{}: cannot open: {e}", input.display())))?;
        if !meta.is_dir() {
            files.push(input.clone());
            continue;
        }
        let entries = std::fs::read_dir(input)
            .map_err(|e| Stop::new(exit::NO_INPUT, format!("{}: cannot read: {e}", input.display())))?;
        let mut found: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_str().is_some_and(is_log_file))
            .map(|e| e.path())
            .collect();
        if found.is_empty() {
            return Err(Stop::new(
                exit::NO_INPUT,
                format!("{}: no request log files (requests-*.log)", input.display()),
            ));
        }
        found.sort();
        files.extend(found);
    }
    Ok(files)
}

fn replay(a: &ReplayArgs) -> Result<(u64, usize), Stop> {
    let models = models(a)?;
    let files = log_files(&a.logs)?;
    let out: Box<dyn Write> = if a.output == Path::new("-") {
        Box::new(std::io::stdout().lock())
    } else {
        let file = std::fs::File::create(&a.output)
            .map_err(|e| Stop::new(exit::FAILURE, format!("{}: cannot create: {e}", a.output.display())))?;
        Box::new(file)
    };
    let mut out = BufWriter::with_capacity(1 << 20, out);
    let write_error = |e: std::io::Error| Stop::new(exit::FAILURE, format!("{}: {e}", a.output.display()));
    let mut extractor = Extractor::new();
    let (mut record, mut encoded) = (Vec::new(), Vec::new());
    let mut requests = 0u64;
    for file in &files {
        let mut reader = RecordReader::open(file, ReadOptions::default(), None)
            .map_err(|e| Stop::new(exit::NO_INPUT, e.to_string()))?;
        while let Some(meta) = reader.next_into(&mut record).map_err(|e| Stop::new(exit::DATA, e.to_string()))? {
            let at = format!("{}: record {} at byte {}", file.display(), meta.index, meta.offset);
            let bad = |what: String| Stop::new(exit::DATA, format!("{at}: {what}"));
            let logged = LoggedRequest::decode(record.as_slice())
                .map_err(|e| bad(format!("not a fex.v1.LoggedRequest: {e}")))?;
            let request = ExtractRequest::decode(logged.request.as_slice())
                .map_err(|e| bad(format!("its request is not a fex.v1.ExtractRequest: {e}")))?;
            let plan = models.get(&logged.model).ok_or_else(|| {
                let mut known: Vec<&str> = models.keys().map(String::as_str).collect();
                known.sort_unstable();
                Stop::new(
                    exit::CONFIG,
                    format!(
                        "{at}: model {:?} is not in the model configs (they have {})",
                        logged.model,
                        known.join(", ")
                    ),
                )
            })?;
            let identity = plan.identity();
            if !a.allow_other_version
                && (identity.version != logged.model_version || identity.digest != logged.model_digest)
            {
                return Err(Stop::new(
                    exit::CONFIG,
                    format!(
                        "{at}: logged by model {:?} version {} (digest {:016x}), but the config is version {} (digest \
                         {:016x}); replay with the config the server ran, or pass --allow-other-version",
                        logged.model, logged.model_version, logged.model_digest, identity.version, identity.digest
                    ),
                ));
            }
            let response = extract(&mut extractor, plan, request)
                .map_err(|e| bad(format!("the server answered this request, but replaying it fails: {e}")))?;
            encoded.clear();
            response.encode(&mut encoded).expect("a Vec grows");
            write_record(&mut out, &encoded).map_err(write_error)?;
            requests += 1;
        }
    }
    out.flush().map_err(write_error)?;
    Ok((requests, files.len()))
}

/// What fex-server's service does with a request (server/src/service.rs):
/// the selected outputs (all when none are named), the default policy, one
/// `extract`, the columns moved into tensors.
fn extract(ex: &mut Extractor, plan: &Plan, request: ExtractRequest) -> Result<ExtractResponse, String> {
    let selected =
        if request.outputs.is_empty() { None } else { Some(plan.select(&request.outputs).map_err(|e| e.to_string())?) };
    let payload = request.payload.ok_or("the request has no payload")?;
    let mut out = Extracted::default();
    let policy = fex::Policy { outputs: selected.as_deref(), ..Default::default() };
    let result = match &payload {
        Payload::ExampleBatch(bytes) => ex.extract(plan, fex::Input::Batch(bytes), policy, &mut out),
        Payload::Examples(list) => {
            let rows: Vec<&[u8]> = list.example.iter().map(|b| b.as_ref()).collect();
            ex.extract(plan, fex::Input::Examples(&rows), policy, &mut out)
        }
    };
    result.map_err(|e| e.to_string())?;
    let batch_size = out.batch_size as i32;
    Ok(ExtractResponse {
        model: plan.name.clone(),
        model_version: plan.identity().version.clone(),
        batch_size,
        tensors: out.into_tensors(),
    })
}
