//! An emitted request's sample computation, in one call: its samples with
//! the joined actions attached ([`attach_actions`]), framed as a record
//! file holds them, then the model's `offline:` transforms and extraction
//! over those records, written as `fex extract --format responses` writes
//! them. What the near-line job calls once per emitted request (through
//! JNI from the JVM), so the join's output equals `fex extract` run on its
//! joined records by construction.

use super::keys::request_id_and_payload;
use super::{NearlineError, Payload, attach_actions};
use crate::config::Plan;
use crate::offline::{self, CollectSink, Options, Quiet, ResponsesSink, RowsHook, RunError, RunInput, SharedBuf, Sink};
use crate::samples::Transforms;

/// What [`compute`] made of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Computed {
    pub payload: Payload,
    /// The request's samples with their actions, each framed as PBDataset
    /// records are (u64 little-endian length, then the bytes): a file of
    /// them is input `fex extract` reads.
    pub joined: bytes::Bytes,
    /// Framed `fex.v1.ExtractResponse` records, the bytes
    /// `fex extract --format responses` writes for `joined`.
    pub samples: Vec<u8>,
    /// Rows in `samples`, after the transforms.
    pub rows_written: u64,
}

/// Why a request's samples could not be computed.
#[derive(Debug, thiserror::Error)]
pub enum ComputeError {
    /// The logged request, or the actions given for it.
    #[error(transparent)]
    Join(#[from] NearlineError),
    /// Its samples do not extract, or the transforms refuse them.
    #[error("{0}")]
    Extract(String),
}

/// Attaches `actions` (one list per row of the request) to the logged
/// request's samples, and runs the model's transforms and extraction over
/// them on this thread. Each call starts the transforms afresh: state such
/// as negative_gen's item pool is not carried from one request to the next.
pub fn compute(plan: &Plan, logged: &[u8], actions: &[Vec<i32>]) -> Result<Computed, ComputeError> {
    let out = SharedBuf::default();
    let mut sink = ResponsesSink::new(Box::new(out.clone()));
    let (payload, joined, rows_written) = run(plan, logged, actions, &mut sink)?;
    drop(sink);
    Ok(Computed { payload, joined, samples: out.take(), rows_written })
}

/// What [`compute_batches`] made of one request.
#[derive(Debug, Clone)]
pub struct ComputedBatches {
    pub payload: Payload,
    /// As [`Computed::joined`].
    pub joined: bytes::Bytes,
    /// The samples as the Arrow record batches `fex extract` writes to
    /// Parquet (one per record of the request, in order).
    pub batches: Vec<arrow_array::RecordBatch>,
    pub rows_written: u64,
}

/// [`compute`], with the samples as record batches: for a sink that takes
/// them as a table (the near-line job's Iceberg table, through JNI).
pub fn compute_batches(plan: &Plan, logged: &[u8], actions: &[Vec<i32>]) -> Result<ComputedBatches, ComputeError> {
    let mut sink = CollectSink::default();
    let (payload, joined, rows_written) = run(plan, logged, actions, &mut sink)?;
    Ok(ComputedBatches { payload, joined, batches: sink.batches, rows_written })
}

/// Attaches the actions and runs the transforms and extraction into `sink`:
/// the payload, the joined records, and the rows written.
fn run(
    plan: &Plan,
    logged: &[u8],
    actions: &[Vec<i32>],
    sink: &mut dyn Sink,
) -> Result<(Payload, bytes::Bytes, u64), ComputeError> {
    let (request_id, payload) = request_id_and_payload(plan, logged)?;
    let records = attach_actions(logged, actions)?;
    let mut joined = Vec::with_capacity(records.iter().map(|r| r.len() + 8).sum());
    for r in &records {
        joined.extend_from_slice(&(r.len() as u64).to_le_bytes());
        joined.extend_from_slice(r);
    }
    let kind = match payload {
        Payload::Batch => offline::Payload::ExampleBatch,
        Payload::Examples => offline::Payload::Example,
    };
    let joined = bytes::Bytes::from(joined);
    let input = RunInput::Memory { name: format!("request {request_id}"), bytes: joined.clone() };
    let options = Options { payload: kind, threads: 1, ..Options::default() };
    let transforms = Transforms::new(plan);
    let hook = (!transforms.is_empty()).then_some(&transforms as &dyn RowsHook);
    let summary = offline::run_inputs(plan, &[input], options, sink, hook, &Quiet)
        .map_err(|e: RunError| ComputeError::Extract(e.to_string()))?;
    Ok((payload, joined, summary.rows_written))
}
