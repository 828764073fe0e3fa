//! The offline half (feature `offline`): PBDataset records in (`records`),
//! the plan's outputs extracted by the same entry point the server runs,
//! optionally transformed on the row index (`RowsHook`), and written as a
//! training table (Parquet, Arrow IPC) or as the framed
//! `fex.v1.ExtractResponse`s the server would have answered. The `fex`
//! command and the Python binding both run `run`.
//! `identity` keys each row of a training table by its request and row.

mod hint;
mod hook;
pub mod identity;
mod ipc;
mod report;
mod run;
mod sink;
pub mod table;
mod transforms;

pub use hint::{FRAMINGS, framings_that_read, hint};
pub use hook::{Carry, RecordCtx, RowsHook};
pub use report::{BadError, BadRecord, RunError, Summary};
pub use run::{Observer, OnError, Options, Payload, Quiet, RunInput, run, run_inputs, run_selected};
pub use sink::{
    BatchEncoder, CollectSink, Format, IpcMessage, IpcSink, ParquetCodec, ParquetOptions, ParquetSink, Prepared,
    ResponsesSink, SharedBuf, Sink, SinkError, SinkHelper, buffered,
};
