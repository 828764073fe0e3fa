//! An incremental backfill (seed 002 §4.2): a model config with new
//! outputs, run over the joined-request ("Shitu") table, computes only the
//! outputs its sample table does not have yet, and stores them in a
//! **sidecar table** keyed by the rows' identity (`request_id`, `row`,
//! `request_time`), partitioned as the sample table is. No data file of the
//! sample table is read or rewritten: Iceberg writes whole rows into data
//! files, so new values for existing rows could only be added by rewriting
//! their files (or deleting and inserting the rows again); a sidecar adds
//! files of its own. A reader joins the two on the identity (ARCHITECTURE.md
//! argues the choice).
//!
//! The rows are recomputed from each Shitu row's `joined` bytes by the
//! library's offline run with the model's transforms, one request at a
//! time as the near-line job computes them, so each row's identity is the
//! request's and its index after the transforms, as in the sample table.
//! The model is compiled with only the new outputs selected: features that
//! only old outputs need are not decoded.

use std::collections::{BTreeSet, HashSet};
use std::time::Instant;

use arrow_array::cast::AsArray;
use arrow_array::types::TimestampMicrosecondType;
use arrow_array::{Array, RecordBatch};
use fex::Plan;
use fex::offline::{self, Options, Payload, Quiet, RowsHook, RunInput, Sink};
use fex::samples::Transforms;
use iceberg::TableIdent;
use iceberg::expr::Reference;
use iceberg::spec::Datum;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::delta::Delta;
use crate::identity::IdentitySource;
use crate::sink::{IdentityFrom, Partitioning, TableOptions, table_ident};
use crate::{CatalogSpec, IcebergSink, TableError};

/// What to backfill, from where, into where.
#[derive(Debug, Clone)]
pub struct BackfillOptions {
    pub catalog: CatalogSpec,
    /// The joined-request table read.
    pub shitu: String,
    /// The sample table whose columns are not recomputed.
    pub base: String,
    /// The sidecar table the new outputs go into (made if missing).
    pub into: String,
    /// Requests at or after this time (microseconds), if given.
    pub since: Option<i64>,
    /// Requests before this time (microseconds), if given.
    pub until: Option<i64>,
    /// A delta snapshot table (`delta`): raw features added to each
    /// request's records before extraction.
    pub delta: Option<String>,
    pub parquet: offline::ParquetOptions,
}

/// What a backfill did.
#[derive(Debug, Clone)]
pub struct BackfillReport {
    /// The outputs computed: the model's that the base table lacks.
    pub columns: Vec<String>,
    /// Shitu rows (requests) read, and sample rows written.
    pub requests: u64,
    pub rows: u64,
    /// Bytes of joined records read.
    pub joined_bytes: u64,
    /// Data files of the Shitu table read.
    pub shitu_files: usize,
    /// Rows of the delta snapshot, and the features it added.
    pub delta_rows: usize,
    pub delta_features: Vec<String>,
    pub commit: crate::sink::CommitReport,
    pub seconds: f64,
}

/// Runs the backfill of `plan` (the model as its config says) over the
/// Shitu table.
pub fn backfill(plan: &Plan, opts: &BackfillOptions) -> Result<BackfillReport, TableError> {
    let started = Instant::now();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let describe = opts.catalog.describe();
    let catalog = runtime.block_on(opts.catalog.open(&runtime))?;
    let catalog_err = |e: iceberg::Error| TableError::Catalog { catalog: describe.clone(), message: e.to_string() };
    let load = |name: &str| -> Result<iceberg::table::Table, TableError> {
        let ident: TableIdent = table_ident(name)?;
        runtime.block_on(async {
            if !catalog.table_exists(&ident).await.map_err(catalog_err)? {
                return Err(TableError::Model(format!("the catalog {describe} has no table {name}")));
            }
            catalog.load_table(&ident).await.map_err(catalog_err)
        })
    };
    let base = load(&opts.base)?;
    let shitu = load(&opts.shitu)?;
    let delta = match &opts.delta {
        Some(name) => Some(Delta::new(name, read_table(&runtime, &load(name)?, opts)?)?),
        None => None,
    };
    let have: HashSet<String> =
        base.metadata().current_schema().as_struct().fields().iter().map(|f| f.name.clone()).collect();
    let written = fex::offline::table::empty_batch(plan)
        .map_err(|e| TableError::Model(format!("the model's table: {e}")))?
        .schema();
    let columns: Vec<String> =
        written.fields().iter().map(|f| f.name().clone()).filter(|n| !have.contains(n)).collect();
    if columns.is_empty() {
        return Err(TableError::Model(format!(
            "every output of model {:?} is a column of {} already: nothing to backfill",
            plan.name, opts.base
        )));
    }
    let partitioning = partitioning_of(&base, &opts.base)?;
    let options = TableOptions {
        catalog: opts.catalog.clone(),
        table: opts.into.clone(),
        partitioning,
        parquet: opts.parquet,
        batch_per_record: true,
        identity: IdentityFrom::Given,
        columns: Some(columns.clone()),
    };
    let mut sink = IcebergSink::open(plan, plan, IdentitySource::of(plan), options)?;
    drop(catalog);

    // The Shitu table's data files that may hold requests in the range
    // (partitions and column statistics prune the rest).
    let tasks = runtime.block_on(async {
        let mut scan = shitu.scan().select(["request_id", "request_time", "payload", "joined"]);
        if let Some(p) = time_filter(opts.since, opts.until) {
            scan = scan.with_filter(p);
        }
        let scan = scan.build()?;
        use futures::TryStreamExt;
        let tasks: Vec<_> = scan.plan_files().await?.try_collect().await?;
        Ok::<_, iceberg::Error>(tasks)
    })?;
    let files: BTreeSet<String> = tasks.into_iter().map(|t| t.data_file_path).collect();

    let selected = plan.select(&columns).map_err(|e| TableError::Model(e.to_string()))?;
    let transforms = Transforms::new(plan);
    let hook = (!transforms.is_empty()).then_some(&transforms as &dyn RowsHook);
    let mut report = BackfillReport {
        columns,
        requests: 0,
        rows: 0,
        joined_bytes: 0,
        shitu_files: files.len(),
        delta_rows: delta.as_ref().map_or(0, Delta::len),
        delta_features: delta
            .as_ref()
            .map_or_else(Vec::new, |d| d.feature_names().into_iter().map(String::from).collect()),
        commit: crate::sink::CommitReport { table: opts.into.clone(), snapshot_id: None, data_files: 0, rows: 0 },
        seconds: 0.0,
    };
    for path in &files {
        let file = crate::files::open(&runtime, shitu.file_io(), path)?;
        let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(parquet_err(path))?;
        let wanted = ["request_id", "request_time", "payload", "joined"];
        let schema = builder.parquet_schema();
        let leaves: Vec<usize> = (0..schema.num_columns())
            .filter(|&i| wanted.contains(&schema.column(i).path().string().as_str()))
            .collect();
        if leaves.len() != wanted.len() {
            return Err(TableError::Model(format!("{path}: not a data file of a joined-request table")));
        }
        let mask = ProjectionMask::leaves(schema, leaves);
        let reader = builder.with_projection(mask).with_batch_size(1024).build().map_err(parquet_err(path))?;
        for batch in reader {
            let batch = batch.map_err(|e| TableError::Model(format!("{path}: {e}")))?;
            let run = Run { plan, selected: &selected, hook, delta: delta.as_ref() };
            requests(&run, &batch, opts, &mut sink, &mut report, path)?;
        }
    }
    sink.finish().map_err(|e| TableError::Io(std::io::Error::other(e.to_string())))?;
    report.commit = sink.report().get().cloned().unwrap_or(report.commit);
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// How each request is computed.
struct Run<'a> {
    plan: &'a Plan,
    selected: &'a [usize],
    hook: Option<&'a dyn RowsHook>,
    delta: Option<&'a Delta>,
}

/// The requests of one batch of Shitu rows, each through the library into the sink.
fn requests(
    run: &Run<'_>,
    batch: &RecordBatch,
    opts: &BackfillOptions,
    sink: &mut IcebergSink,
    report: &mut BackfillReport,
    path: &str,
) -> Result<(), TableError> {
    let column =
        |name: &str| batch.column_by_name(name).ok_or_else(|| TableError::Model(format!("{path}: no column {name}")));
    let ids = strings(column("request_id")?).ok_or_else(|| bad(path, "request_id"))?;
    let times = column("request_time")?
        .as_primitive_opt::<TimestampMicrosecondType>()
        .ok_or_else(|| bad(path, "request_time"))?;
    let payloads = strings(column("payload")?).ok_or_else(|| bad(path, "payload"))?;
    let joined = column("joined")?;
    let joined: Vec<Option<&[u8]>> = match joined.data_type() {
        arrow_schema::DataType::Binary => joined.as_binary::<i32>().iter().collect(),
        arrow_schema::DataType::LargeBinary => joined.as_binary::<i64>().iter().collect(),
        _ => return Err(bad(path, "joined")),
    };
    for (r, bytes) in joined.into_iter().enumerate() {
        let micros = times.is_valid(r).then(|| times.value(r));
        if opts.since.is_some_and(|a| micros.is_none_or(|t| t < a))
            || opts.until.is_some_and(|b| micros.is_none_or(|t| t >= b))
        {
            continue;
        }
        let Some(bytes) = bytes else { continue };
        let id = ids[r].unwrap_or("");
        let payload = match payloads[r] {
            Some("examples") => Payload::Example,
            _ => Payload::ExampleBatch,
        };
        sink.set_request(id, micros);
        let records = match run.delta {
            Some(delta) => bytes::Bytes::from(delta.add_to(id, payload, bytes)?),
            None => bytes::Bytes::copy_from_slice(bytes),
        };
        let input = RunInput::Memory { name: format!("request {id}"), bytes: records };
        let options = Options { payload, threads: 1, ..Options::default() };
        let forward = &mut Forward(sink);
        let summary = offline::run_selected(run.plan, Some(run.selected), &[input], options, forward, run.hook, &Quiet)
            .map_err(|e| TableError::Model(format!("request {id} of {path}: {e}")))?;
        report.requests += 1;
        report.rows += summary.rows_written;
        report.joined_bytes += bytes.len() as u64;
    }
    Ok(())
}

/// Every row of `table`'s data files (for a table with `request_time`,
/// those of the backfill's range: partitions and statistics prune the rest),
/// read by fex's own Parquet reader.
fn read_table(
    runtime: &tokio::runtime::Runtime,
    table: &iceberg::table::Table,
    opts: &BackfillOptions,
) -> Result<Vec<RecordBatch>, TableError> {
    let timed = table.metadata().current_schema().field_by_name("request_time").is_some();
    let tasks = runtime.block_on(async {
        let mut scan = table.scan();
        if timed && let Some(p) = time_filter(opts.since, opts.until) {
            scan = scan.with_filter(p);
        }
        let scan = scan.build()?;
        use futures::TryStreamExt;
        let tasks: Vec<_> = scan.plan_files().await?.try_collect().await?;
        Ok::<_, iceberg::Error>(tasks)
    })?;
    let mut batches = Vec::new();
    for task in tasks {
        let path = task.data_file_path;
        let file = crate::files::open(runtime, table.file_io(), &path)?;
        let reader = ParquetRecordBatchReaderBuilder::try_new(file).map_err(parquet_err(&path))?;
        for batch in reader.with_batch_size(8192).build().map_err(parquet_err(&path))? {
            batches.push(batch.map_err(|e| TableError::Model(format!("{path}: {e}")))?);
        }
    }
    Ok(batches)
}

/// `request_time` in `[since, until)`, either end open.
fn time_filter(since: Option<i64>, until: Option<i64>) -> Option<iceberg::expr::Predicate> {
    let time = || Reference::new("request_time");
    match (since, until) {
        (Some(a), Some(b)) => Some(
            time()
                .greater_than_or_equal_to(Datum::timestamptz_micros(a))
                .and(time().less_than(Datum::timestamptz_micros(b))),
        ),
        (Some(a), None) => Some(time().greater_than_or_equal_to(Datum::timestamptz_micros(a))),
        (None, Some(b)) => Some(time().less_than(Datum::timestamptz_micros(b))),
        (None, None) => None,
    }
}

/// The sink for one request's run: its batches go on, the end is not the run's.
struct Forward<'a>(&'a mut IcebergSink);

impl Sink for Forward<'_> {
    fn format(&self) -> offline::Format {
        self.0.format()
    }

    fn write(&mut self, item: offline::Prepared) -> Result<(), offline::SinkError> {
        self.0.write(item)
    }

    fn finish(&mut self) -> Result<(), offline::SinkError> {
        Ok(())
    }
}

/// A string column's values, whichever of Arrow's string types its writer
/// chose (Java's and fex's write Utf8, pyiceberg's LargeUtf8).
fn strings(array: &arrow_array::ArrayRef) -> Option<Vec<Option<&str>>> {
    use arrow_schema::DataType;
    match array.data_type() {
        DataType::Utf8 => Some(array.as_string::<i32>().iter().collect()),
        DataType::LargeUtf8 => Some(array.as_string::<i64>().iter().collect()),
        DataType::Utf8View => Some(array.as_string_view().iter().collect()),
        _ => None,
    }
}

fn bad(path: &str, column: &str) -> TableError {
    TableError::Model(format!("{path}: column {column} is not of a joined-request table's type"))
}

fn parquet_err(path: &str) -> impl Fn(parquet::errors::ParquetError) -> TableError + '_ {
    move |e| TableError::Model(format!("{path}: {e}"))
}

/// A time given as `YYYY-MM-DD` (midnight UTC) or RFC 3339, in microseconds.
pub fn parse_time(s: &str) -> Result<i64, String> {
    let full = if s.len() == 10 { format!("{s}T00:00:00+00:00") } else { s.to_string() };
    match Datum::timestamptz_from_str(&full).map(|d| d.literal().clone()) {
        Ok(iceberg::spec::PrimitiveLiteral::Long(micros)) => Ok(micros),
        _ => Err(format!("{s:?} is not a date (YYYY-MM-DD) or an RFC 3339 time")),
    }
}

/// How `table` is partitioned, as a new sidecar should be.
fn partitioning_of(table: &iceberg::table::Table, name: &str) -> Result<Partitioning, TableError> {
    let spec = table.metadata().default_partition_spec();
    match spec.fields() {
        [] => Ok(Partitioning::None),
        [f] if f.transform == iceberg::spec::Transform::Day => Ok(Partitioning::Day),
        [f] if f.transform == iceberg::spec::Transform::Hour => Ok(Partitioning::Hour),
        _ => Err(TableError::Model(format!("table {name} is not partitioned as fex partitions its tables"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_dates_or_rfc3339() {
        assert_eq!(parse_time("1970-01-02"), Ok(86_400_000_000));
        assert_eq!(parse_time("1970-01-01T00:00:01.5+00:00"), Ok(1_500_000));
        assert!(parse_time("yesterday").unwrap_err().contains("not a date"));
    }
}
