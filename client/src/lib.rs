//! fex-client: a typed client for fex-server (`client`, `views`) and the tools
//! built on it: a synthetic request generator (`synth`), framed request files
//! (`frames`) and a load generator (`bench`, `report`, `backoff`); `errors`
//! says in words why a connection or call failed.

pub mod backoff;
pub mod bench;
pub mod client;
pub mod errors;
pub mod frames;
pub mod report;
pub mod synth;
pub mod views;

pub use client::{ConnectOptions, Extraction, FexClient};
pub use views::{TensorView, Values};
