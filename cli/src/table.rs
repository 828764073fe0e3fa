//! `fex extract --format iceberg`: the sample table (fex-iceberg) as the
//! run's sink.

use std::path::Path;

use fex::offline::ParquetOptions;
use fex_iceberg::sink::CommitReport;
use fex_iceberg::{CatalogSpec, IcebergSink, Partitioning, TableError, TableOptions};

use crate::args::{ExtractArgs, PartitionArg};
use crate::exit;

/// The plan the run extracts with (the model's, with its identity outputs)
/// and the sink, the table created or checked. Exit 64 for a model or table
/// that does not fit, 1 for a catalog that cannot be reached.
pub fn open(
    a: &ExtractArgs,
    model: &Path,
    plan: &fex::Plan,
    parquet: ParquetOptions,
) -> Result<(fex::Plan, IcebergSink), u8> {
    let fail = |e: TableError| {
        eprintln!("error: {e}");
        match e {
            TableError::Mismatch { .. } | TableError::Model(_) => exit::CONFIG,
            _ => exit::FAILURE,
        }
    };
    let text = std::fs::read_to_string(model).map_err(|e| {
        eprintln!("error: cannot read {}: {e}", model.display());
        exit::CONFIG
    })?;
    let dir = model.parent().unwrap_or(Path::new("."));
    let (run_plan, identity) = fex_iceberg::identity::with_identity(&text, dir, plan).map_err(fail)?;
    let mut catalog = CatalogSpec::in_warehouse(&a.output).map_err(|e| {
        eprintln!("error: cannot create the warehouse {}: {e}", a.output.display());
        exit::FAILURE
    })?;
    catalog.uri = a.catalog.clone();
    let options = TableOptions {
        catalog,
        table: a.table.clone().unwrap_or_else(|| format!("fex.{}_samples", plan.name)),
        partitioning: match a.partition_by {
            PartitionArg::Day => Partitioning::Day,
            PartitionArg::Hour => Partitioning::Hour,
            PartitionArg::None => Partitioning::None,
        },
        parquet,
        batch_per_record: a.input.payload() == fex::offline::Payload::ExampleBatch,
    };
    let sink = IcebergSink::open(plan, &run_plan, identity, options).map_err(fail)?;
    Ok((run_plan, sink))
}

pub fn print_commit(c: &CommitReport) {
    match c.snapshot_id {
        Some(id) => {
            eprintln!("committed {} rows in {} data file(s) to {} (snapshot {id})", c.rows, c.data_files, c.table)
        }
        None => eprintln!("no rows: nothing committed to {}", c.table),
    }
}
