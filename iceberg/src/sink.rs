//! [`IcebergSink`]: a run's rows into the sample table.
//!
//! The table is created (or loaded and checked) when the sink is made,
//! before any file is written. Each batch becomes the table's columns
//! (identity first; fids as Int64 of the same bits, strings as binary, every
//! field with its Iceberg id) and its rows go, in runs of equal partition
//! value, to one Parquet file per value under `<table>/data/`, written by
//! fex's own Parquet sink (row groups encoded on the run's threads). When
//! the run ends, the files' footers give each data file's counts and sizes
//! and one fast append commits them all: readers see every row of the run
//! or none. The snapshot's summary names the model (`fex.model`,
//! `fex.model_version`, `fex.model_digest`) and fex's version.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use arrow_array::cast::AsArray;
use arrow_array::types::{TimestampMicrosecondType, UInt64Type};
use arrow_array::{
    Array, ArrayRef, FixedSizeListArray, Int32Array, Int64Array, LargeListArray, ListArray, RecordBatch, StringArray,
    StructArray, TimestampMicrosecondArray, UInt32Array,
};
use arrow_buffer::ScalarBuffer;
use arrow_schema::{DataType, SchemaRef};
use fex::Plan;
use fex::offline::{Format, ParquetOptions, ParquetSink, Prepared, Sink, SinkError, SinkHelper};
use iceberg::spec::{
    DataContentType, DataFile, DataFileBuilder, DataFileFormat, Literal, Struct, Transform, UnboundPartitionSpec,
};
use iceberg::transaction::{ApplyTransactionAction, Transaction};
use iceberg::{Catalog, NamespaceIdent, TableCreation, TableIdent};
use parquet::file::metadata::ParquetMetaDataReader;

use crate::TableError;
use crate::catalog::CatalogSpec;
use crate::identity::{IdentitySource, REQUEST_ID_OUTPUT, REQUEST_TIME_OUTPUT, RowIdentity};
use crate::schema::{self, REQUEST_ID, REQUEST_TIME, ROW};

/// How a new table is partitioned by `request_time`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Partitioning {
    #[default]
    Day,
    Hour,
    None,
}

/// What the sink is asked to do.
#[derive(Debug, Clone)]
pub struct TableOptions {
    pub catalog: CatalogSpec,
    /// `namespace.table` (the namespace may have dots of its own: the last
    /// dot splits).
    pub table: String,
    /// For a table this run creates; an existing table keeps its own.
    pub partitioning: Partitioning,
    pub parquet: ParquetOptions,
    /// Each batch is one record's rows (ExampleBatch input): `row` counts
    /// from 0 in each batch. Otherwise every record is one row: `row` is 0.
    pub batch_per_record: bool,
    /// Where each row's identity comes from.
    pub identity: IdentityFrom,
    /// Only these outputs are the table's columns (after the identity), in
    /// this order; None: every output of the model's table.
    pub columns: Option<Vec<String>>,
}

/// Where a row's request id and time come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IdentityFrom {
    /// The row's LineId, through the identity outputs (`identity`).
    #[default]
    LineId,
    /// The request being written, given before its rows
    /// ([`IcebergSink::set_request`]); `row` counts its rows from 0.
    Given,
}

/// Where the columns of the run's batches are.
struct Layout {
    /// The Arrow schema the files are written with.
    write: SchemaRef,
    /// For each written column, what fills it.
    fill: Vec<Fill>,
}

#[derive(Clone, Copy)]
enum Fill {
    RequestId(usize),
    Row,
    RequestTime(usize),
    Output(usize),
    /// The identity of the request given (`IdentityFrom::Given`).
    GivenId,
    GivenRow,
    GivenTime,
}

/// The request whose rows are being written (`IdentityFrom::Given`).
#[derive(Default)]
struct Given {
    request_id: String,
    micros: Option<i64>,
    /// Rows of it written so far: the next row's index.
    rows: i32,
}

/// How the table's partition value is computed from `request_time`.
#[derive(Clone, Copy)]
enum PartitionBy {
    None,
    /// Microseconds per unit, and whether the value is a date.
    Every {
        micros: i64,
        date: bool,
    },
}

/// One partition's data file, being written.
struct Open {
    sink: ParquetSink,
    /// Where it is written: at its location, or (an object store's) in a
    /// local temporary file uploaded before the commit.
    path: PathBuf,
    location: String,
    staged: Option<tempfile::TempPath>,
    partition: Struct,
    rows: u64,
}

pub struct IcebergSink {
    runtime: tokio::runtime::Runtime,
    catalog: Arc<dyn Catalog>,
    table: iceberg::table::Table,
    describe: String,
    layout: Layout,
    identity: RowIdentity,
    by: PartitionBy,
    options: TableOptions,
    files: BTreeMap<Option<i64>, Open>,
    helpers: Arc<Helpers>,
    summary: HashMap<String, String>,
    /// The run's id, in every data file's name.
    run: String,
    committed: Arc<OnceLock<CommitReport>>,
    given: Given,
}

/// What the commit did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitReport {
    pub table: String,
    pub snapshot_id: Option<i64>,
    pub data_files: usize,
    pub rows: u64,
}

impl IcebergSink {
    /// Opens (or creates) the table for `plan`'s rows: `with_identity` is the
    /// plan the run extracts with (`identity::with_identity`), `plan` the
    /// model as its config says (its name, version and digest go into each
    /// snapshot). A table whose columns do not match is refused here, before
    /// any file is written.
    pub fn open(
        plan: &Plan,
        with_identity: &Plan,
        identity: IdentitySource,
        options: TableOptions,
    ) -> Result<Self, TableError> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let describe = options.catalog.describe();
        let catalog = runtime.block_on(options.catalog.open(&runtime))?;
        let ident = table_ident(&options.table)?;
        let mut outputs = fex::offline::table::empty_batch(with_identity)
            .map_err(|e| TableError::Model(format!("the model's table: {e}")))?
            .schema();
        if let Some(columns) = &options.columns {
            let fields = columns
                .iter()
                .map(|c| {
                    outputs
                        .field_with_name(c)
                        .cloned()
                        .map_err(|_| TableError::Model(format!("the model has no output {c:?}")))
                })
                .collect::<Result<Vec<_>, _>>()?;
            outputs = Arc::new(arrow_schema::Schema::new(fields));
        }
        let wanted = schema::table_schema(&outputs)?;
        let table =
            runtime.block_on(create_or_load(catalog.as_ref(), &ident, &wanted, options.partitioning, &describe))?;
        let current = table.metadata().current_schema().clone();
        schema::check(&options.table, &current, &wanted)?;
        let write = schema::write_schema(&current, &outputs)?;
        let by = partition_by(&table, &options.table)?;
        let index = |name: &str| outputs.index_of(name).map_err(|e| TableError::Model(e.to_string()));
        let mut fill = Vec::with_capacity(write.fields().len());
        let given = options.identity == IdentityFrom::Given;
        for f in write.fields() {
            fill.push(match f.name().as_str() {
                REQUEST_ID if given => Fill::GivenId,
                ROW if given => Fill::GivenRow,
                REQUEST_TIME if given => Fill::GivenTime,
                REQUEST_ID => Fill::RequestId(index(REQUEST_ID_OUTPUT)?),
                ROW => Fill::Row,
                REQUEST_TIME => Fill::RequestTime(index(REQUEST_TIME_OUTPUT)?),
                name => Fill::Output(index(name)?),
            });
        }
        let summary = fex::offline::table::metadata(plan);
        Ok(Self {
            runtime,
            catalog,
            table,
            describe,
            layout: Layout { write, fill },
            identity: RowIdentity { source: identity, batch_per_record: options.batch_per_record },
            by,
            options,
            files: BTreeMap::new(),
            helpers: Arc::default(),
            summary,
            run: uuid::Uuid::new_v4().to_string(),
            committed: Arc::default(),
            given: Given::default(),
        })
    }

    /// The table as opened: its name, catalog, columns, partitioning and
    /// snapshots, one line (`fex table create` prints it).
    pub fn describe_table(&self) -> String {
        describe(&self.options.table, &self.describe, &self.table)
    }

    /// Where the commit is reported once `finish` has made it (the sink
    /// itself is usually boxed by then).
    pub fn report(&self) -> Arc<OnceLock<CommitReport>> {
        Arc::clone(&self.committed)
    }

    /// The request the next rows are of (`IdentityFrom::Given`): its id and
    /// its time in microseconds (None: no time); their `row` counts from 0.
    pub fn set_request(&mut self, request_id: &str, micros: Option<i64>) {
        self.given = Given { request_id: request_id.to_string(), micros, rows: 0 };
    }

    /// The table's columns for `batch`.
    fn columns(&mut self, batch: &RecordBatch) -> Result<(Vec<ArrayRef>, Option<ArrayRef>), SinkError> {
        let rows = batch.num_rows();
        let mut out = Vec::with_capacity(self.layout.fill.len());
        let mut times = None;
        for (fill, field) in self.layout.fill.iter().zip(self.layout.write.fields()) {
            out.push(match *fill {
                Fill::RequestId(i) => self.identity.request_ids(batch.column(i))?,
                Fill::Row => self.identity.rows(rows),
                Fill::RequestTime(i) => {
                    let array = self.identity.request_times(batch.column(i))?;
                    times = Some(Arc::clone(&array));
                    array
                }
                Fill::Output(i) => retag(batch.column(i), field.data_type())?,
                Fill::GivenId => {
                    Arc::new(StringArray::from_iter_values(std::iter::repeat_n(&self.given.request_id, rows)))
                        as ArrayRef
                }
                Fill::GivenRow => {
                    let first = self.given.rows;
                    Arc::new(Int32Array::from_iter_values(first..first + rows as i32)) as ArrayRef
                }
                Fill::GivenTime => {
                    let micros = self.given.micros;
                    let array =
                        TimestampMicrosecondArray::from_iter(std::iter::repeat_n(micros, rows)).with_timezone("UTC");
                    let array = Arc::new(array) as ArrayRef;
                    times = Some(Arc::clone(&array));
                    array
                }
            });
        }
        self.given.rows += rows as i32;
        Ok((out, times))
    }

    fn partition_key(&self, micros: i64, valid: bool) -> Option<i64> {
        match self.by {
            PartitionBy::None => Some(0),
            PartitionBy::Every { micros: unit, .. } => valid.then(|| micros.div_euclid(unit)),
        }
    }

    fn open_file(&mut self, key: Option<i64>) -> Result<&mut Open, SinkError> {
        if !self.files.contains_key(&key) {
            let partition = match (self.by, key) {
                (PartitionBy::None, _) => Struct::empty(),
                (PartitionBy::Every { .. }, None) => Struct::from_iter([None]),
                (PartitionBy::Every { date: true, .. }, Some(k)) => Struct::from_iter([Some(Literal::date(k as i32))]),
                (PartitionBy::Every { date: false, .. }, Some(k)) => Struct::from_iter([Some(Literal::int(k as i32))]),
            };
            let metadata = self.table.metadata();
            let spec = metadata.default_partition_spec();
            let dir = if spec.is_unpartitioned() {
                "data".to_string()
            } else {
                format!("data/{}", spec.partition_to_path(&partition, metadata.current_schema().clone()))
            };
            let location = format!(
                "{}/{dir}/{}-{:05}.parquet",
                metadata.location().trim_end_matches('/'),
                self.run,
                self.files.len()
            );
            let (file, path, staged) = match crate::files::local_path(&location) {
                Some(path) => {
                    if let Some(parent) = path.parent() {
                        std::fs::create_dir_all(parent)?;
                    }
                    (File::create_new(&path)?, path, None)
                }
                None => {
                    let (file, staged) = tempfile::NamedTempFile::new()?.into_parts();
                    (file, staged.to_path_buf(), Some(staged))
                }
            };
            let sink =
                ParquetSink::for_columns(fex::offline::buffered(file), self.options.parquet, self.summary.clone());
            self.helpers.add(sink.helper());
            self.files.insert(key, Open { sink, path, location, staged, partition, rows: 0 });
        }
        Ok(self.files.get_mut(&key).expect("just opened"))
    }

    fn append(&mut self, key: Option<i64>, rows: RecordBatch) -> Result<(), SinkError> {
        let open = self.open_file(key)?;
        open.rows += rows.num_rows() as u64;
        open.sink.write(Prepared::Batch(rows))
    }

    fn commit(&mut self) -> Result<CommitReport, TableError> {
        let mut data_files = Vec::with_capacity(self.files.len());
        let mut rows = 0;
        let spec_id = self.table.metadata().default_partition_spec_id();
        let io = self.table.file_io().clone();
        for open in std::mem::take(&mut self.files).into_values() {
            rows += open.rows;
            if open.staged.is_some() {
                crate::files::upload(&self.runtime, &io, &open.path, &open.location)?;
            }
            data_files.push(data_file(&open, spec_id)?);
        }
        let mut report =
            CommitReport { table: self.options.table.clone(), snapshot_id: None, data_files: data_files.len(), rows };
        if data_files.is_empty() {
            return Ok(report);
        }
        let catalog_err =
            |e: iceberg::Error| TableError::Catalog { catalog: self.describe.clone(), message: e.to_string() };
        let table = self.runtime.block_on(async {
            let tx = Transaction::new(&self.table);
            let append = tx.fast_append().set_snapshot_properties(self.summary.clone()).add_data_files(data_files);
            let tx = append.apply(tx)?;
            tx.commit(self.catalog.as_ref()).await.map_err(catalog_err)
        })?;
        report.snapshot_id = table.metadata().current_snapshot().map(|s| s.snapshot_id());
        self.table = table;
        Ok(report)
    }
}

impl Sink for IcebergSink {
    fn format(&self) -> Format {
        Format::Table
    }

    fn write(&mut self, item: Prepared) -> Result<(), SinkError> {
        let batch = match item {
            Prepared::Batch(batch) => batch,
            Prepared::Frames(_) => return Err(SinkError::Format { found: "frames", expected: "iceberg" }),
            Prepared::Ipc(_) => return Err(SinkError::Format { found: "arrow message", expected: "iceberg" }),
        };
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let (columns, times) = self.columns(&batch)?;
        let table = RecordBatch::try_new(Arc::clone(&self.layout.write), columns)?;
        let times = times.as_ref().map(|t| t.as_primitive::<TimestampMicrosecondType>());
        let key = |r: usize| match times {
            Some(t) => self.partition_key(t.value(r), t.is_valid(r)),
            None => self.partition_key(0, false),
        };
        // A record's rows share their request's time, so a batch is most
        // often one partition's, written whole; otherwise each partition's
        // rows are taken out of it once.
        let first = key(0);
        if (1..table.num_rows()).all(|r| key(r) == first) {
            return self.append(first, table);
        }
        let mut rows: BTreeMap<Option<i64>, Vec<u32>> = BTreeMap::new();
        for r in 0..table.num_rows() {
            rows.entry(key(r)).or_default().push(r as u32);
        }
        for (k, indices) in rows {
            let part = arrow_select::take::take_record_batch(&table, &UInt32Array::from(indices))?;
            self.append(k, part)?;
        }
        Ok(())
    }

    fn helper(&self) -> Option<Arc<dyn SinkHelper>> {
        Some(Arc::clone(&self.helpers) as Arc<dyn SinkHelper>)
    }

    fn finish(&mut self) -> Result<(), SinkError> {
        for open in self.files.values_mut() {
            open.sink.finish()?;
        }
        let report = self.commit().map_err(|e| SinkError::Io(std::io::Error::other(e.to_string())))?;
        let _ = self.committed.set(report);
        Ok(())
    }
}

/// The partition files' helpers, as one (`Sink::helper` is asked once, before
/// any file is open).
#[derive(Default)]
struct Helpers(Mutex<Vec<Arc<dyn SinkHelper>>>);

impl Helpers {
    fn add(&self, helper: Option<Arc<dyn SinkHelper>>) {
        if let Some(h) = helper {
            self.0.lock().unwrap_or_else(|p| p.into_inner()).push(h);
        }
    }
}

impl SinkHelper for Helpers {
    fn help(&self) -> Result<bool, SinkError> {
        let helpers: Vec<_> = self.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
        for h in helpers {
            if h.help()? {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// The table `ident`, created with `schema` and partitioned by
/// `request_time` as `partitioning` says when the catalog has none (its
/// namespace too). A writer that created it meanwhile wins: its table is
/// loaded, to be checked like any existing table.
pub(crate) async fn create_or_load(
    catalog: &dyn Catalog,
    ident: &TableIdent,
    schema: &iceberg::spec::Schema,
    partitioning: Partitioning,
    describe: &str,
) -> Result<iceberg::table::Table, TableError> {
    let catalog_err = |e: iceberg::Error| TableError::Catalog { catalog: describe.to_string(), message: e.to_string() };
    if catalog.table_exists(ident).await.map_err(catalog_err)? {
        return catalog.load_table(ident).await.map_err(catalog_err);
    }
    if !catalog.namespace_exists(ident.namespace()).await.map_err(catalog_err)?
        && let Err(e) = catalog.create_namespace(ident.namespace(), HashMap::new()).await
        && !catalog.namespace_exists(ident.namespace()).await.unwrap_or(false)
    {
        return Err(catalog_err(e));
    }
    let time_id = schema.field_by_name(REQUEST_TIME).map(|f| f.id).expect("every fex table has request_time");
    // The spec's id is given (a new table's first is 0): Iceberg's Java REST
    // server refuses a create-table request whose spec has none.
    let builder = UnboundPartitionSpec::builder().with_spec_id(0);
    let spec = match partitioning {
        Partitioning::None => builder.build(),
        Partitioning::Day => builder.add_partition_field(time_id, "request_day", Transform::Day)?.build(),
        Partitioning::Hour => builder.add_partition_field(time_id, "request_hour", Transform::Hour)?.build(),
    };
    let creation = TableCreation::builder()
        .name(ident.name().to_string())
        .schema(schema.clone())
        .partition_spec(spec)
        // Iceberg's Java writers (the near-line job's Flink sink) compress
        // with zstd here instead of their gzip default: cheaper to write and
        // to read, and a codec every fex build reads.
        .properties([
            ("write.format.default".to_string(), "parquet".to_string()),
            ("write.parquet.compression-codec".to_string(), "zstd".to_string()),
        ])
        .build();
    match catalog.create_table(ident.namespace(), creation).await {
        Ok(table) => Ok(table),
        // Another writer created it since we looked (the SQL catalog says so
        // as a unique-key violation): take theirs.
        Err(e) => match catalog.table_exists(ident).await {
            Ok(true) => catalog.load_table(ident).await.map_err(catalog_err),
            _ => Err(catalog_err(e)),
        },
    }
}

/// One line for a table: its name, catalog, columns, partitioning and
/// snapshots (`fex table create` prints it).
pub(crate) fn describe(name: &str, catalog: &str, table: &iceberg::table::Table) -> String {
    let meta = table.metadata();
    let spec = meta.default_partition_spec();
    let by = if spec.fields().is_empty() {
        "unpartitioned".to_string()
    } else {
        let fields: Vec<String> = spec.fields().iter().map(|f| format!("{} ({})", f.name, f.transform)).collect();
        format!("partitioned by {}", fields.join(", "))
    };
    format!(
        "table {name} in {catalog}: {} columns, {by}, {} snapshot(s), at {}",
        meta.current_schema().as_struct().fields().len(),
        meta.snapshots().count(),
        meta.location()
    )
}

fn bad(message: String) -> SinkError {
    SinkError::Arrow(arrow_schema::ArrowError::InvalidArgumentError(message))
}

/// `namespace.table`.
pub(crate) fn table_ident(name: &str) -> Result<TableIdent, TableError> {
    match name.rsplit_once('.') {
        Some((ns, table)) if !ns.is_empty() && !table.is_empty() => {
            let namespace = NamespaceIdent::from_strs(ns.split('.'))
                .map_err(|e| TableError::Model(format!("table {name:?}: {e}")))?;
            Ok(TableIdent::new(namespace, table.to_string()))
        }
        _ => Err(TableError::Model(format!("table {name:?}: give it as namespace.table"))),
    }
}

/// The table's partition spec as a computation on `request_time`.
fn partition_by(table: &iceberg::table::Table, name: &str) -> Result<PartitionBy, TableError> {
    let metadata = table.metadata();
    let spec = metadata.default_partition_spec();
    let time_id = metadata.current_schema().field_by_name(REQUEST_TIME).map(|f| f.id);
    match spec.fields() {
        [] => Ok(PartitionBy::None),
        [f] if Some(f.source_id) == time_id => match f.transform {
            Transform::Day => Ok(PartitionBy::Every { micros: 86_400_000_000, date: true }),
            Transform::Hour => Ok(PartitionBy::Every { micros: 3_600_000_000, date: false }),
            other => Err(TableError::Model(format!(
                "table {name} is partitioned by {other}(request_time); fex writes day or hour"
            ))),
        },
        _ => Err(TableError::Model(format!(
            "table {name} is partitioned by {:?}; fex writes tables partitioned by request_time's day or hour, or not at all",
            spec.fields().iter().map(|f| &f.name).collect::<Vec<_>>()
        ))),
    }
}

/// A written file as Iceberg's `DataFile`: counts and sizes per leaf column
/// (by the field ids the file carries) from its footer.
fn data_file(open: &Open, spec_id: i32) -> Result<DataFile, TableError> {
    let file = File::open(&open.path)?;
    let size = file.metadata()?.len();
    let footer = ParquetMetaDataReader::new()
        .parse_and_finish(&file)
        .map_err(|e| TableError::Io(std::io::Error::other(format!("{}: {e}", open.path.display()))))?;
    let (mut sizes, mut values, mut nulls) = (HashMap::new(), HashMap::new(), HashMap::new());
    let schema = footer.file_metadata().schema_descr();
    for group in footer.row_groups() {
        for (i, chunk) in group.columns().iter().enumerate() {
            let info = schema.column(i).self_type().get_basic_info().clone();
            if !info.has_id() {
                continue;
            }
            let id = info.id();
            *sizes.entry(id).or_insert(0u64) += chunk.compressed_size() as u64;
            *values.entry(id).or_insert(0u64) += chunk.num_values() as u64;
            if let Some(n) = chunk.statistics().and_then(|s| s.null_count_opt()) {
                *nulls.entry(id).or_insert(0u64) += n;
            }
        }
    }
    let offsets: Vec<i64> = footer.row_groups().iter().filter_map(|g| g.file_offset()).collect();
    let mut b = DataFileBuilder::default();
    b.content(DataContentType::Data)
        .file_path(match open.staged {
            Some(_) => open.location.clone(),
            None => format!("file://{}", open.path.display()),
        })
        .file_format(DataFileFormat::Parquet)
        .partition(open.partition.clone())
        .partition_spec_id(spec_id)
        .record_count(footer.file_metadata().num_rows() as u64)
        .file_size_in_bytes(size)
        .column_sizes(sizes)
        .value_counts(values)
        .null_value_counts(nulls)
        .split_offsets(Some(offsets));
    b.build().map_err(|e| TableError::Model(format!("data file {}: {e}", open.path.display())))
}

/// `array` as the written type `to` (the same buffers): u64 as i64, lists
/// and structs with the fields that carry the table's ids.
fn retag(array: &ArrayRef, to: &DataType) -> Result<ArrayRef, SinkError> {
    if array.data_type() == to {
        return Ok(Arc::clone(array));
    }
    Ok(match (array.data_type(), to) {
        (DataType::UInt64, DataType::Int64) => {
            let a = array.as_primitive::<UInt64Type>();
            let values = ScalarBuffer::<i64>::new(a.values().inner().clone(), 0, a.len());
            Arc::new(Int64Array::new(values, a.nulls().cloned()))
        }
        (DataType::List(_), DataType::List(item)) => {
            let a = array.as_list::<i32>();
            Arc::new(ListArray::new(
                Arc::clone(item),
                a.offsets().clone(),
                retag(a.values(), item.data_type())?,
                a.nulls().cloned(),
            ))
        }
        (DataType::LargeList(_), DataType::LargeList(item)) => {
            let a = array.as_list::<i64>();
            let values = retag(a.values(), item.data_type())?;
            Arc::new(LargeListArray::new(Arc::clone(item), a.offsets().clone(), values, a.nulls().cloned()))
        }
        (DataType::FixedSizeList(_, size), DataType::FixedSizeList(item, _)) => {
            let a: &FixedSizeListArray = array.as_fixed_size_list();
            let values = retag(a.values(), item.data_type())?;
            Arc::new(FixedSizeListArray::new(Arc::clone(item), *size, values, a.nulls().cloned()))
        }
        (DataType::Struct(_), DataType::Struct(fields)) => {
            let a: &StructArray = array.as_struct();
            let columns = a
                .columns()
                .iter()
                .zip(fields.iter())
                .map(|(c, f)| retag(c, f.data_type()))
                .collect::<Result<Vec<_>, _>>()?;
            Arc::new(StructArray::try_new(fields.clone(), columns, a.nulls().cloned())?)
        }
        (from, to) => return Err(bad(format!("a column of {from} cannot be written as {to}"))),
    })
}
