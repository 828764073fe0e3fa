//! fex's training tables on Apache Iceberg (seed 002 §4): the sample table
//! a model's rows go into, whoever writes them.
//!
//! - [`backfill`]: a model's new outputs only, recomputed from the
//!   joined-request table into a sidecar table keyed by row identity.
//! - [`delta`]: a backfill's delta snapshot (§3.4): raw features keyed by
//!   request id and row, added to each request's records before extraction.
//! - [`identity`]: which request and row each sample is. Two outputs are
//!   added to the model (hidden from the table under their own names) that
//!   read each row's request id and request time from its LineId, so the
//!   identity rides through the `offline:` transforms with the row.
//! - [`schema`]: the table's Iceberg schema from the model's Arrow table
//!   (identity columns, then one column per output), the check of an
//!   existing table against it (every mismatch named), and the Arrow schema
//!   the data files are written with (Iceberg's field ids on every field).
//! - [`catalog`]: the catalog: an embedded SQL catalog on a SQLite file in
//!   the warehouse directory by default, PostgreSQL by URI, or a REST
//!   catalog; the warehouse a local directory or an object store.
//! - [`files`]: data files read and written where their location says
//!   (locally in place, an object store's through the table's file IO).
//! - [`shitu`]: the joined-request ("Shitu") table's fixed schema, made or
//!   checked by `fex table create` for the near-line job to append to.
//! - [`sink`]: [`IcebergSink`], a `fex::offline::Sink`: Parquet data files
//!   (fex's own writer, one file per partition value) under the table's
//!   location, then one atomic commit (a fast append) when the run ends.
//!   Nothing is visible to readers before that commit.
//!
//! The library itself knows nothing of Iceberg: this crate sits beside the
//! `fex` command (ARCHITECTURE.md).

pub mod backfill;
pub mod catalog;
pub mod delta;
pub mod files;
pub mod identity;
pub mod schema;
pub mod shitu;
pub mod sink;

pub use catalog::CatalogSpec;
pub use sink::{IcebergSink, Partitioning, TableOptions};

/// Why a table could not be opened, checked or committed.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error("the catalog {catalog}: {message}")]
    Catalog { catalog: String, message: String },
    #[error("table {table} does not match the model: {}", .problems.join("; "))]
    Mismatch { table: String, problems: Vec<String> },
    #[error("{0}")]
    Model(String),
    #[error("iceberg: {0}")]
    Iceberg(#[from] iceberg::Error),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}
