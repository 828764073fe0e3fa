//! Where the rows go: a Parquet file (the default), an Arrow IPC stream, or
//! framed `fex.v1.ExtractResponse` records (what fex-server answers, for byte
//! comparisons). Sinks receive prepared items in input order, one at a time.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::Write;
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_writer::{ArrowColumnChunk, ArrowColumnWriter, ArrowRowGroupWriterFactory, compute_leaves};
use parquet::basic::{Compression as ParquetCompression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;

use crate::config::Plan;

/// What the workers prepare for a sink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Arrow record batches, one row per sample (Parquet, Arrow IPC).
    Table,
    /// Framed `fex.v1.ExtractResponse` records, one per input record.
    Responses,
}

/// One extraction's output (a record's; a chunk's of Examples), prepared
/// off the sink's thread.
#[derive(Debug)]
pub enum Prepared {
    Batch(RecordBatch),
    /// A batch already encoded as an Arrow IPC message (`IpcSink::encoder`).
    Ipc(IpcMessage),
    /// Already framed: `[u64 LE length][ExtractResponse]`.
    Frames(Vec<u8>),
}

/// Why a sink failed.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    #[error("writing: {0}")]
    Io(#[from] std::io::Error),
    #[error("parquet: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    #[error("arrow: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    #[error("a {found} item was given to a {expected} sink")]
    Format { found: &'static str, expected: &'static str },
}

/// A destination for prepared chunks, written in input order.
pub trait Sink: Send {
    fn format(&self) -> Format;
    fn write(&mut self, item: Prepared) -> Result<(), SinkError>;
    /// Work the sink leaves to the run's threads (Parquet encodes its row
    /// groups there): `run` calls `help` on every worker between chunks.
    /// None by default.
    fn helper(&self) -> Option<Arc<dyn SinkHelper>> {
        None
    }
    /// What each worker does to a batch before handing it over (Arrow IPC
    /// encodes its message there); the run asks once per worker. None by
    /// default: batches come as they are.
    fn encoder(&self) -> Option<Box<dyn BatchEncoder>> {
        None
    }
    /// Ends the output (footers, flushes). Called once, after the last write.
    fn finish(&mut self) -> Result<(), SinkError>;
}

/// Prepares a batch for a sink on a worker thread (`Sink::encoder`).
pub trait BatchEncoder: Send {
    fn encode(&mut self, batch: RecordBatch) -> Result<Prepared, SinkError>;
}

/// A sink's work that any thread may do, in any order (`Sink::helper`).
pub trait SinkHelper: Send + Sync {
    /// Does one piece of pending work on the calling thread; `Ok(false)`
    /// when none was waiting.
    fn help(&self) -> Result<bool, SinkError>;
}

/// Parquet compression of the table's pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ParquetCodec {
    None,
    #[default]
    Snappy,
    Zstd,
}

/// Parquet options.
#[derive(Debug, Clone, Copy)]
pub struct ParquetOptions {
    /// Rows per row group.
    pub row_group_size: usize,
    pub codec: ParquetCodec,
    /// Dictionary-encode column chunks (off by default: interning every
    /// value made writing 1.6x slower for a file 11% smaller, on the default
    /// model's table; benches/README.md, "Offline").
    pub dictionary: bool,
}

impl Default for ParquetOptions {
    fn default() -> Self {
        Self { row_group_size: 64 * 1024, codec: ParquetCodec::Snappy, dictionary: false }
    }
}

/// A Parquet file. Rows are cut into row groups of exactly `row_group_size`
/// rows in input order (the last one may be shorter), so the file does not
/// depend on how the input was chunked or on the thread count. Encoding a
/// row group's column chunks is the expensive part; it is queued as a job
/// per field (`Sink::helper`) that the run's worker threads take between
/// chunks, and whoever finishes a row group's last job appends every
/// finished row group to the file in order. Without helpers the sink encodes on its own thread once more
/// than one row group waits, so memory stays bounded either way.
pub struct ParquetSink {
    out: Option<Box<dyn Write + Send>>,
    props: WriterProperties,
    empty: Option<RecordBatch>,
    row_group_size: usize,
    encoder: Option<Arc<Encoder>>,
    pipeline: Arc<Pipeline>,
    /// The rows of the row group being filled, in order.
    filling: Vec<RecordBatch>,
    filling_rows: usize,
    /// Row groups queued so far.
    groups: usize,
}

/// Queued row groups above which `write` encodes one itself.
const MAX_QUEUED: usize = 1;

/// What encoding a row group needs: the column writers' factory, the Arrow
/// schema its batches have, and how many Parquet leaf columns each field
/// has (which of a row group's column writers are whose).
struct Encoder {
    factory: ArrowRowGroupWriterFactory,
    schema: SchemaRef,
    leaves: Vec<usize>,
}

impl Encoder {
    fn new(factory: ArrowRowGroupWriterFactory, schema: SchemaRef) -> Self {
        let leaves = schema.fields().iter().map(|f| leaf_count(f.data_type())).collect();
        Self { factory, schema, leaves }
    }

    /// Row group `index`'s encoding as jobs of one field each (so the
    /// run's threads share a row group, not only take turns with them),
    /// or one job for all fields if the writers do not split as expected.
    fn jobs(self: &Arc<Self>, index: usize, rows: Vec<RecordBatch>) -> Result<Vec<Job>, SinkError> {
        let writers = self.factory.create_column_writers(index)?;
        let rows = Arc::new(rows);
        let job = |fields: std::ops::Range<usize>, writers| Job {
            group: index,
            fields,
            writers,
            rows: Arc::clone(&rows),
            encoder: Arc::clone(self),
        };
        if self.leaves.iter().sum::<usize>() != writers.len() {
            return Ok(vec![job(0..self.leaves.len(), writers)]);
        }
        let mut writers = writers.into_iter();
        Ok(self.leaves.iter().enumerate().map(|(i, &n)| job(i..i + 1, writers.by_ref().take(n).collect())).collect())
    }
}

/// How many Parquet leaf columns an Arrow type is written as.
fn leaf_count(data_type: &arrow_schema::DataType) -> usize {
    use arrow_schema::DataType as T;
    match data_type {
        T::List(f) | T::LargeList(f) | T::FixedSizeList(f, _) | T::ListView(f) | T::LargeListView(f) | T::Map(f, _) => {
            leaf_count(f.data_type())
        }
        T::Struct(fields) => fields.iter().map(|f| leaf_count(f.data_type())).sum(),
        T::RunEndEncoded(_, values) => leaf_count(values.data_type()),
        _ => 1,
    }
}

/// Some fields of a row group, waiting to be encoded into their column
/// chunks.
struct Job {
    group: usize,
    fields: std::ops::Range<usize>,
    /// The column writers of those fields' leaves, in order.
    writers: Vec<ArrowColumnWriter>,
    rows: Arc<Vec<RecordBatch>>,
    encoder: Arc<Encoder>,
}

impl Job {
    fn encode(self) -> Result<Vec<ArrowColumnChunk>, SinkError> {
        let Job { fields, mut writers, rows, encoder, .. } = self;
        let schema_fields = &encoder.schema.fields()[fields.clone()];
        for batch in rows.iter() {
            let mut leaves_out = writers.iter_mut();
            for (field, column) in schema_fields.iter().zip(&batch.columns()[fields.clone()]) {
                for leaf in compute_leaves(field, column)? {
                    let writer = leaves_out.next().ok_or_else(|| {
                        arrow_schema::ArrowError::SchemaError(format!(
                            "column {:?} has more leaves than the file's schema",
                            field.name()
                        ))
                    })?;
                    writer.write(&leaf)?;
                }
            }
        }
        drop(rows);
        Ok(writers.into_iter().map(|w| w.close()).collect::<Result<_, _>>()?)
    }
}

/// Row groups' jobs waiting to be done, and the file they are appended to.
#[derive(Default)]
struct Pipeline {
    queue: Mutex<VecDeque<Job>>,
    file: Mutex<Appender>,
}

/// The file, the next row group it takes, and the parts of row groups
/// encoded so far (each field's column chunks, by field).
#[derive(Default)]
struct Appender {
    writer: Option<SerializedFileWriter<Box<dyn Write + Send>>>,
    next: usize,
    done: BTreeMap<usize, Parts>,
    failed: bool,
}

/// A row group's column chunks as its jobs finish.
#[derive(Default)]
struct Parts {
    /// By first field.
    chunks: BTreeMap<usize, Vec<ArrowColumnChunk>>,
    /// Jobs not finished yet.
    left: usize,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Pipeline {
    /// Row groups with work still queued.
    fn queued(&self) -> usize {
        let queue = lock(&self.queue);
        match (queue.front(), queue.back()) {
            (Some(first), Some(last)) => last.group - first.group + 1,
            _ => 0,
        }
    }

    fn push(&self, jobs: Vec<Job>) {
        let Some(first) = jobs.first() else { return };
        let (group, n) = (first.group, jobs.len());
        lock(&self.file).done.insert(group, Parts { chunks: BTreeMap::new(), left: n });
        lock(&self.queue).extend(jobs);
    }
}

impl SinkHelper for Pipeline {
    fn help(&self) -> Result<bool, SinkError> {
        let Some(job) = lock(&self.queue).pop_front() else {
            return Ok(false);
        };
        let (group, first) = (job.group, job.fields.start);
        let encoded = job.encode();
        let mut file = lock(&self.file);
        let chunks = match encoded {
            Ok(chunks) => chunks,
            Err(e) => {
                file.failed = true;
                return Err(e);
            }
        };
        if file.failed {
            return Ok(true);
        }
        let parts = file.done.get_mut(&group).expect("a row group's parts are made when it is queued");
        parts.chunks.insert(first, chunks);
        parts.left -= 1;
        // Append every finished row group that is next, in order.
        let file = &mut *file;
        while file.done.get(&file.next).is_some_and(|p| p.left == 0) {
            let parts = file.done.remove(&file.next).expect("just seen");
            let appended = (|| -> Result<(), SinkError> {
                let writer = file.writer.as_mut().expect("the file is open while row groups are queued");
                let mut group = writer.next_row_group()?;
                for chunk in parts.chunks.into_values().flatten() {
                    chunk.append_to_row_group(&mut group)?;
                }
                group.close()?;
                Ok(())
            })();
            if let Err(e) = appended {
                file.failed = true;
                return Err(e);
            }
            file.next += 1;
        }
        Ok(true)
    }
}

impl ParquetSink {
    pub fn new(out: Box<dyn Write + Send>, plan: &Plan, options: ParquetOptions) -> Result<Self, SinkError> {
        let metadata = super::table::metadata(plan);
        Ok(Self { empty: Some(super::table::empty_batch(plan)?), ..Self::for_columns(out, options, metadata) })
    }

    /// A sink for batches of columns no plan describes (the text readers'):
    /// the schema is the first batch's; with no batch, a table of no columns.
    pub fn for_columns(out: Box<dyn Write + Send>, options: ParquetOptions, metadata: HashMap<String, String>) -> Self {
        let empty = RecordBatch::new_empty(Arc::new(arrow_schema::Schema::empty().with_metadata(metadata.clone())));
        let compression = match options.codec {
            ParquetCodec::None => ParquetCompression::UNCOMPRESSED,
            ParquetCodec::Snappy => ParquetCompression::SNAPPY,
            ParquetCodec::Zstd => ParquetCompression::ZSTD(ZstdLevel::default()),
        };
        let kv = metadata.into_iter().map(|(k, v)| KeyValue::new(k, v));
        let mut kv: Vec<KeyValue> = kv.collect();
        kv.sort_by(|a, b| a.key.cmp(&b.key));
        let row_group_size = options.row_group_size.max(1);
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(row_group_size))
            .set_compression(compression)
            .set_key_value_metadata(Some(kv))
            .set_created_by(format!("fex version {}", env!("CARGO_PKG_VERSION")))
            .set_dictionary_enabled(options.dictionary)
            .build();
        Self {
            out: Some(out),
            props,
            empty: Some(empty),
            row_group_size,
            encoder: None,
            pipeline: Arc::default(),
            filling: Vec::new(),
            filling_rows: 0,
            groups: 0,
        }
    }

    /// Opens the file with `schema` (the first batch's) on first use.
    fn encoder(&mut self, schema: SchemaRef) -> Result<Arc<Encoder>, SinkError> {
        if let Some(encoder) = &self.encoder {
            return Ok(Arc::clone(encoder));
        }
        let out = self.out.take().expect("the output is taken once");
        let writer = ArrowWriter::try_new(out, Arc::clone(&schema), Some(self.props.clone()))?;
        let (writer, factory) = writer.into_serialized_writer()?;
        lock(&self.pipeline.file).writer = Some(writer);
        let encoder = Arc::new(Encoder::new(factory, schema));
        self.encoder = Some(Arc::clone(&encoder));
        Ok(encoder)
    }

    /// Queues the filled row group; encodes queued ones here while more than
    /// `MAX_QUEUED` wait (nobody else is taking them).
    fn queue_group(&mut self, encoder: Arc<Encoder>) -> Result<(), SinkError> {
        let rows = std::mem::take(&mut self.filling);
        self.filling_rows = 0;
        self.pipeline.push(encoder.jobs(self.groups, rows)?);
        self.groups += 1;
        while self.pipeline.queued() > MAX_QUEUED {
            self.pipeline.help()?;
        }
        Ok(())
    }
}

impl Sink for ParquetSink {
    fn format(&self) -> Format {
        Format::Table
    }

    fn write(&mut self, item: Prepared) -> Result<(), SinkError> {
        let batch = match item {
            Prepared::Batch(batch) => batch,
            Prepared::Frames(_) => return Err(SinkError::Format { found: "frames", expected: "parquet" }),
            Prepared::Ipc(_) => return Err(SinkError::Format { found: "arrow message", expected: "parquet" }),
        };
        let encoder = self.encoder(batch.schema())?;
        same_columns(&encoder.schema, &batch.schema())?;
        let mut at = 0;
        while at < batch.num_rows() {
            let take = (self.row_group_size - self.filling_rows).min(batch.num_rows() - at);
            self.filling.push(batch.slice(at, take));
            self.filling_rows += take;
            at += take;
            if self.filling_rows == self.row_group_size {
                self.queue_group(Arc::clone(&encoder))?;
            }
        }
        Ok(())
    }

    fn helper(&self) -> Option<Arc<dyn SinkHelper>> {
        Some(Arc::clone(&self.pipeline) as Arc<dyn SinkHelper>)
    }

    fn finish(&mut self) -> Result<(), SinkError> {
        let encoder = match &self.encoder {
            Some(encoder) => Arc::clone(encoder),
            None => {
                let empty = self.empty.take().expect("finish is called once");
                self.encoder(empty.schema())?
            }
        };
        if self.filling_rows > 0 {
            self.queue_group(encoder)?;
        }
        while self.pipeline.help()? {}
        let mut file = lock(&self.pipeline.file);
        if file.failed || file.next != self.groups {
            let message = format!("{} of {} row groups were written", file.next, self.groups);
            return Err(SinkError::Io(std::io::Error::other(message)));
        }
        let writer = file.writer.take().expect("the file is open until finish");
        let mut out = writer.into_inner()?;
        out.flush()?;
        Ok(())
    }
}

/// An Arrow IPC stream. Each batch becomes one record batch message whose
/// body is the batch's own buffers: the run's workers encode it
/// (`Sink::encoder`), which only builds the small flatbuffer header, and the
/// sink writes header and buffers with vectored writes, so the table's bytes
/// are not copied on their way out. The bytes are arrow-ipc's
/// `StreamWriter`'s (tests/offline.rs compares them).
pub struct IpcSink {
    out: Box<dyn Write + Send>,
    /// Encodes the batches given as `Prepared::Batch` (a hook's held-back
    /// rows, the text readers); made for the first.
    encoder: Option<IpcEncoder>,
    /// The schema of the stream, once its message is written.
    schema: Option<SchemaRef>,
    empty: Option<RecordBatch>,
}

impl IpcSink {
    pub fn new(out: Box<dyn Write + Send>, plan: &Plan) -> Result<Self, SinkError> {
        Ok(Self { out, encoder: None, schema: None, empty: Some(super::table::empty_batch(plan)?) })
    }

    /// A sink for batches of columns no plan describes (the text readers'):
    /// the schema is the first batch's; with no batch, a stream of no columns.
    pub fn for_columns(out: Box<dyn Write + Send>) -> Self {
        let empty = RecordBatch::new_empty(Arc::new(arrow_schema::Schema::empty()));
        Self { out, encoder: None, schema: None, empty: Some(empty) }
    }

    /// Writes the schema message before the first batch.
    fn start(&mut self, schema: &SchemaRef) -> Result<(), SinkError> {
        if self.schema.is_none() {
            let options = arrow_ipc::writer::IpcWriteOptions::default();
            let generator = arrow_ipc::writer::IpcDataGenerator::default();
            let mut tracker = arrow_ipc::writer::DictionaryTracker::new(false);
            let message = generator.schema_to_bytes_with_dictionary_tracker(schema, &mut tracker, &options);
            arrow_ipc::writer::write_message(&mut self.out, message, &options)?;
            self.schema = Some(Arc::clone(schema));
        }
        Ok(())
    }
}

impl Sink for IpcSink {
    fn format(&self) -> Format {
        Format::Table
    }

    fn write(&mut self, item: Prepared) -> Result<(), SinkError> {
        let message = match item {
            Prepared::Batch(batch) => self.encoder.get_or_insert_with(IpcEncoder::new).message(batch)?,
            Prepared::Ipc(message) => message,
            Prepared::Frames(_) => return Err(SinkError::Format { found: "frames", expected: "arrow" }),
        };
        self.start(&message.schema)?;
        if let Some(schema) = &self.schema {
            same_columns(schema, &message.schema)?;
        }
        write_buffers(&mut self.out, &message.buffers)?;
        Ok(())
    }

    fn encoder(&self) -> Option<Box<dyn BatchEncoder>> {
        Some(Box::new(IpcEncoder::new()))
    }

    fn finish(&mut self) -> Result<(), SinkError> {
        if self.schema.is_none() {
            let empty = self.empty.take().expect("finish is called once");
            self.start(&empty.schema())?;
        }
        // The end-of-stream marker: a continuation word and a zero length.
        self.out.write_all(&[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0])?;
        self.out.flush()?;
        Ok(())
    }
}

/// Refuses a batch whose columns are not the file's (named and typed as its
/// first batch's): an IPC stream would be corrupt and a Parquet file fail
/// deep in its writer. Metadata may differ.
fn same_columns(file: &SchemaRef, batch: &SchemaRef) -> Result<(), SinkError> {
    let (a, b) = (file.fields(), batch.fields());
    if a == b {
        return Ok(());
    }
    let message = match a.iter().zip(b.iter()).find(|(x, y)| x != y) {
        Some((x, y)) => format!(
            "column {:?} is {} in this batch, but the file's column {:?} is {}",
            y.name(),
            y.data_type(),
            x.name(),
            x.data_type()
        ),
        None => format!("this batch has {} columns, the file {}", b.len(), a.len()),
    };
    Err(SinkError::Arrow(arrow_schema::ArrowError::SchemaError(message)))
}

/// One Arrow IPC record batch message: the header, the batch's buffers and
/// their padding, in the order they are written. The buffers are the
/// batch's own, shared, not copied.
#[derive(Debug)]
pub struct IpcMessage {
    schema: SchemaRef,
    buffers: Vec<arrow_buffer::Buffer>,
}

/// Turns batches into IPC record batch messages (without the stream's schema
/// message, which the sink writes once): `ipc::Encoder` for the tables fex
/// makes, arrow-ipc's own encoder for anything else.
struct IpcEncoder {
    fast: super::ipc::Encoder,
    general: Option<arrow_ipc::writer::StreamEncoder>,
}

impl IpcEncoder {
    fn new() -> Self {
        Self { fast: super::ipc::Encoder::new(), general: None }
    }

    fn message(&mut self, batch: RecordBatch) -> Result<IpcMessage, SinkError> {
        if let Some(buffers) = self.fast.encode(&batch) {
            return Ok(IpcMessage { schema: batch.schema(), buffers });
        }
        let general = match &mut self.general {
            Some(general) => general,
            None => {
                // arrow-ipc's encoder puts the schema message before its
                // first batch; that one is spent here on an empty batch of
                // no columns, and the encoder never uses its schema again
                // (no dictionaries).
                let nothing = Arc::new(arrow_schema::Schema::empty());
                let mut general = arrow_ipc::writer::StreamEncoder::try_new(&nothing)?;
                general.encode(&RecordBatch::new_empty(nothing))?;
                self.general.insert(general)
            }
        };
        let buffers = general.encode(&batch)?;
        Ok(IpcMessage { schema: batch.schema(), buffers })
    }
}

impl BatchEncoder for IpcEncoder {
    fn encode(&mut self, batch: RecordBatch) -> Result<Prepared, SinkError> {
        Ok(Prepared::Ipc(self.message(batch)?))
    }
}

/// Writes `buffers` in order with vectored writes: one system call for many
/// buffers, none of them copied on the way (unless `out` buffers them).
fn write_buffers(out: &mut dyn Write, buffers: &[arrow_buffer::Buffer]) -> std::io::Result<()> {
    let mut slices: Vec<std::io::IoSlice<'_>> =
        buffers.iter().filter(|b| !b.is_empty()).map(|b| std::io::IoSlice::new(b.as_slice())).collect();
    let mut rest = &mut slices[..];
    while !rest.is_empty() {
        match out.write_vectored(rest) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => std::io::IoSlice::advance_slices(&mut rest, n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Buffers writes to `out` for a sink: small writes (headers, short
/// messages) are gathered, and a write of at least `OUTPUT_BUFFER` bytes (an
/// Arrow message, a Parquet page, a chunk of responses) goes straight
/// through instead of being copied into the buffer first.
pub fn buffered(out: impl Write + Send + 'static) -> Box<dyn Write + Send> {
    Box::new(std::io::BufWriter::with_capacity(OUTPUT_BUFFER, out))
}

/// `buffered`'s buffer size.
const OUTPUT_BUFFER: usize = 64 << 10;

/// Bytes a sink writes to memory, shared with whoever reads them after the
/// run (`take`): `fex.run` without a file, the near-line `compute`.
#[derive(Clone, Default)]
pub struct SharedBuf(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl SharedBuf {
    /// What was written, leaving the buffer empty.
    pub fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }
}

impl Write for SharedBuf {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Framed `fex.v1.ExtractResponse` records.
pub struct ResponsesSink {
    out: Box<dyn Write + Send>,
}

impl ResponsesSink {
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        Self { out }
    }
}

impl Sink for ResponsesSink {
    fn format(&self) -> Format {
        Format::Responses
    }

    fn write(&mut self, item: Prepared) -> Result<(), SinkError> {
        let Prepared::Frames(bytes) = item else {
            return Err(SinkError::Format { found: "table", expected: "responses" });
        };
        self.out.write_all(&bytes)?;
        Ok(())
    }

    fn finish(&mut self) -> Result<(), SinkError> {
        self.out.flush()?;
        Ok(())
    }
}

/// Keeps the batches in memory (the Python binding, tests).
#[derive(Default)]
pub struct CollectSink {
    pub batches: Vec<RecordBatch>,
}

impl Sink for CollectSink {
    fn format(&self) -> Format {
        Format::Table
    }

    fn write(&mut self, item: Prepared) -> Result<(), SinkError> {
        match item {
            Prepared::Batch(b) => {
                self.batches.push(b);
                Ok(())
            }
            Prepared::Frames(_) => Err(SinkError::Format { found: "frames", expected: "collect" }),
            Prepared::Ipc(_) => Err(SinkError::Format { found: "arrow message", expected: "collect" }),
        }
    }

    fn finish(&mut self) -> Result<(), SinkError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_schema::{DataType, Field, Fields, Schema};

    use super::*;

    #[test]
    fn leaf_counts_split_a_row_groups_writers_by_field() {
        let item = |t: DataType| Arc::new(Field::new("item", t, false));
        let weighted = DataType::Struct(Fields::from(vec![
            Field::new("value", DataType::UInt64, false),
            Field::new("weight", DataType::Float32, false),
        ]));
        let fields = vec![
            Field::new("ids", DataType::List(item(DataType::Int64)), false),
            Field::new("weighted", DataType::LargeList(item(weighted)), false),
            Field::new("sequence", DataType::List(item(DataType::FixedSizeList(item(DataType::Int64), 2))), false),
            Field::new("dense", DataType::FixedSizeList(item(DataType::Float32), 6), false),
            Field::new("strings", DataType::LargeBinary, false),
            Field::new("scalar", DataType::Float64, false),
        ];
        let schema = Arc::new(Schema::new(fields));
        let writer = ArrowWriter::try_new(Vec::new(), Arc::clone(&schema), None).unwrap();
        let (_file, factory) = writer.into_serialized_writer().unwrap();
        let writers = factory.create_column_writers(0).unwrap().len();
        let encoder = Arc::new(Encoder::new(factory, schema));
        assert_eq!(encoder.leaves, [1, 2, 1, 1, 1, 1]);
        assert_eq!(encoder.leaves.iter().sum::<usize>(), writers);
        // One job per field, each with its own leaves' writers.
        let jobs = encoder.jobs(0, Vec::new()).unwrap();
        let split: Vec<(usize, usize)> = jobs.iter().map(|j| (j.fields.start, j.writers.len())).collect();
        assert_eq!(split, [(0, 1), (1, 2), (2, 1), (3, 1), (4, 1), (5, 1)]);
    }
}
