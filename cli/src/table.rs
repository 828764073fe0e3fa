//! `fex extract --format iceberg`: the sample table (fex-iceberg) as the
//! run's sink.

use std::path::Path;

use fex::offline::ParquetOptions;
use fex_iceberg::sink::CommitReport;
use fex_iceberg::sink::IdentityFrom;
use fex_iceberg::{CatalogSpec, IcebergSink, Partitioning, TableError, TableOptions};

use crate::args::{BackfillArgs, ExtractArgs, PartitionArg, TableCommand, TableCreateArgs};
use crate::exit;
use fex_iceberg::backfill::BackfillOptions;

/// Where the table is and how a new one is made: `extract --format
/// iceberg`'s flags, and `table create`'s.
pub struct Where<'a> {
    pub warehouse: &'a Path,
    pub table: Option<&'a str>,
    pub catalog: Option<&'a str>,
    pub properties: &'a [String],
    pub partition_by: PartitionArg,
}

impl<'a> From<&'a ExtractArgs> for Where<'a> {
    fn from(a: &'a ExtractArgs) -> Self {
        Where {
            warehouse: &a.output,
            table: a.table.as_deref(),
            catalog: a.catalog.as_deref(),
            properties: &a.catalog_property,
            partition_by: a.partition_by,
        }
    }
}

pub fn run(c: TableCommand) -> u8 {
    match c {
        TableCommand::Create(a) => create(&a),
    }
}

/// `fex table create`: the table made, or found and checked; exit 64 for a
/// model or a table that does not fit, 1 for a catalog that cannot be reached.
fn create(a: &TableCreateArgs) -> u8 {
    let plan = match crate::extract::load_model(&a.model) {
        Ok(plan) => plan,
        Err(code) => return code,
    };
    let at = Where {
        warehouse: &a.output,
        table: a.table.as_deref(),
        catalog: a.catalog.as_deref(),
        properties: &a.catalog_property,
        partition_by: a.partition_by,
    };
    let sink = match open(&at, &a.model, &plan, ParquetOptions::default(), true) {
        Ok((_, sink)) => sink,
        Err(code) => return code,
    };
    println!("{}", sink.describe_table());
    if let Some(shitu) = &a.shitu_table {
        let catalog = match catalog_of(&a.output, a.catalog.as_deref(), &a.catalog_property) {
            Ok(c) => c,
            Err(code) => return code,
        };
        match fex_iceberg::shitu::create_shitu(&catalog, shitu, partitioning(a.partition_by)) {
            Ok(line) => println!("{line}"),
            Err(e) => {
                eprintln!("error: {e}");
                return match e {
                    TableError::Mismatch { .. } | TableError::Model(_) => exit::CONFIG,
                    _ => exit::FAILURE,
                };
            }
        }
    }
    0
}

/// The plan the run extracts with (the model's, with its identity outputs)
/// and the sink, the table created or checked. Exit 64 for a model or table
/// that does not fit, 1 for a catalog that cannot be reached.
pub fn open(
    a: &Where<'_>,
    model: &Path,
    plan: &fex::Plan,
    parquet: ParquetOptions,
    batch_per_record: bool,
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
    let catalog = catalog_of(a.warehouse, a.catalog, a.properties)?;
    let options = TableOptions {
        catalog,
        table: a.table.map_or_else(|| format!("fex.{}_samples", plan.name), str::to_string),
        partitioning: partitioning(a.partition_by),
        parquet,
        batch_per_record,
        identity: IdentityFrom::LineId,
        columns: None,
    };
    let sink = IcebergSink::open(plan, &run_plan, identity, options).map_err(fail)?;
    Ok((run_plan, sink))
}

/// `fex backfill`: exit 64 for a model or tables that do not fit, 1 for a
/// catalog that cannot be reached or a run that fails.
pub fn backfill(a: BackfillArgs) -> u8 {
    let plan = match crate::extract::load_model(&a.model) {
        Ok(plan) => plan,
        Err(code) => return code,
    };
    let time = |s: &Option<String>, flag: &str| match s {
        None => Ok(None),
        Some(s) => fex_iceberg::backfill::parse_time(s).map(Some).map_err(|e| {
            eprintln!("error: {flag} {e}");
            exit::CONFIG
        }),
    };
    let (since, until) = match (time(&a.since, "--since"), time(&a.until, "--until")) {
        (Ok(s), Ok(u)) => (s, u),
        (Err(code), _) | (_, Err(code)) => return code,
    };
    let catalog = match catalog_of(&a.output, a.catalog.as_deref(), &a.catalog_property) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let opts = BackfillOptions {
        catalog,
        shitu: a.shitu.clone().unwrap_or_else(|| format!("fex.{}_shitu", plan.name)),
        base: a.base.clone().unwrap_or_else(|| format!("fex.{}_samples", plan.name)),
        into: a.into.clone(),
        since,
        until,
        delta: a.delta.clone(),
        parquet: ParquetOptions::default(),
    };
    match fex_iceberg::backfill::backfill(&plan, &opts) {
        Ok(r) => {
            if let Some(delta) = &opts.delta {
                eprintln!("delta {delta}: {} rows, adding feature(s) {}", r.delta_rows, r.delta_features.join(", "));
            }
            eprintln!(
                "backfilled {} ({} new output(s)) for {} requests, {} rows, from {} data file(s) of {} ({} bytes of joined records) in {:.2} s",
                r.columns.join(", "),
                r.columns.len(),
                r.requests,
                r.rows,
                r.shitu_files,
                opts.shitu,
                r.joined_bytes,
                r.seconds
            );
            print_commit(&r.commit);
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            match e {
                TableError::Mismatch { .. } | TableError::Model(_) => exit::CONFIG,
                _ => exit::FAILURE,
            }
        }
    }
}

/// The catalog of `warehouse` (a directory, made if missing, or an object
/// store's URI): its embedded SQLite file, or `uri`'s catalog, with
/// `properties` (KEY=VALUE). Exit 64 for a property or an object store
/// without a catalog, 1 when the directory cannot be made.
fn catalog_of(warehouse: &Path, uri: Option<&str>, properties: &[String]) -> Result<CatalogSpec, u8> {
    let mut props = std::collections::BTreeMap::new();
    for p in properties {
        let (k, v) = fex_iceberg::catalog::parse_property(p).map_err(|e| {
            eprintln!("error: --catalog-property {e}");
            exit::CONFIG
        })?;
        props.insert(k, v);
    }
    let Some(location) = warehouse.to_str() else {
        eprintln!("error: the warehouse {} is not UTF-8", warehouse.display());
        return Err(exit::CONFIG);
    };
    CatalogSpec::new(location, uri, props).map_err(|e| {
        eprintln!("error: {e}");
        if fex_iceberg::files::local_path(location).is_some() { exit::FAILURE } else { exit::CONFIG }
    })
}

fn partitioning(p: PartitionArg) -> Partitioning {
    match p {
        PartitionArg::Day => Partitioning::Day,
        PartitionArg::Hour => Partitioning::Hour,
        PartitionArg::None => Partitioning::None,
    }
}

pub fn print_commit(c: &CommitReport) {
    match c.snapshot_id {
        Some(id) => {
            eprintln!("committed {} rows in {} data file(s) to {} (snapshot {id})", c.rows, c.data_files, c.table)
        }
        None => eprintln!("no rows: nothing committed to {}", c.table),
    }
}
