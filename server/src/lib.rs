//! fex-server: the gRPC adapter around the fex library. `args` (flags),
//! `registry` (models), `service` (fex.v1.FeatureExtractor), `layers` (tower
//! stack), `status` (error → gRPC code), `metrics` (Prometheus), `serve`
//! (wiring, health, reflection, drain).

pub mod args;
pub mod layers;
pub mod metrics;
pub mod registry;
pub mod serve;
pub mod service;
pub mod status;
