//! fex-client: a typed client for fex-server (`client`, `views`) and the tools
//! built on it: a synthetic request generator (`synth`), framed request files
//! (`frames`) and a load generator (`bench`, `report`, `backoff`); `errors`
//! says in words why a connection or call failed. The load generator speaks
//! fex.v1, the Open Inference Protocol (`v2`), or relays fex's tensors to a
//! model server as a caller would (`relay`); `calls` sends one call of each.

pub mod backoff;
pub mod bench;
pub mod calls;
pub mod client;
pub mod errors;
pub mod frames;
pub mod relay;
pub mod report;
pub mod synth;
pub mod v2;
pub mod views;

pub use client::{ConnectOptions, Extraction, FexClient};
pub use views::{TensorView, Values};
