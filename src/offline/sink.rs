//! Where the rows go: a Parquet file (the default), an Arrow IPC stream, or
//! framed `fex.v1.ExtractResponse` records (what fex-server answers, for byte
//! comparisons). Sinks receive prepared items in input order, one at a time.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression as ParquetCompression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;

use crate::config::Plan;

/// What the workers prepare for a sink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Arrow record batches, one row per sample (Parquet, Arrow IPC).
    Table,
    /// Framed `fex.v1.ExtractResponse` records, one per input record.
    Responses,
}

/// One chunk's output, prepared off the sink's thread.
#[derive(Debug)]
pub enum Prepared {
    Batch(RecordBatch),
    /// Already framed: `[u64 LE length][ExtractResponse]` per record.
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
    /// Ends the output (footers, flushes). Called once, after the last write.
    fn finish(&mut self) -> Result<(), SinkError>;
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
}

impl Default for ParquetOptions {
    fn default() -> Self {
        Self { row_group_size: 64 * 1024, codec: ParquetCodec::Snappy }
    }
}

/// The table's schema for a plan: the columns an extraction of no rows has.
/// Used when nothing was written, so an empty table still has its columns.
fn empty_batch(plan: &Plan) -> Result<RecordBatch, SinkError> {
    let mut ex = crate::Extractor::new();
    let mut out = crate::Extracted::default();
    let policy = crate::Policy { shared: crate::SharedRows::Broadcast, ..Default::default() };
    ex.extract(plan, crate::Input::Examples(&[]), policy, &mut out)
        .map_err(|e| std::io::Error::other(format!("the model's empty table: {e}")))?;
    Ok(super::table::to_batch(out, plan)?)
}

pub struct ParquetSink {
    out: Option<Box<dyn Write + Send>>,
    writer: Option<ArrowWriter<Box<dyn Write + Send>>>,
    props: WriterProperties,
    empty: Option<RecordBatch>,
}

impl ParquetSink {
    pub fn new(out: Box<dyn Write + Send>, plan: &Plan, options: ParquetOptions) -> Result<Self, SinkError> {
        let metadata = super::table::metadata(plan);
        Ok(Self { empty: Some(empty_batch(plan)?), ..Self::for_columns(out, options, metadata) })
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
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(options.row_group_size.max(1)))
            .set_compression(compression)
            .set_key_value_metadata(Some(kv))
            .set_created_by(format!("fex version {}", env!("CARGO_PKG_VERSION")))
            .build();
        Self { out: Some(out), writer: None, props, empty: Some(empty) }
    }

    fn writer(&mut self, schema: SchemaRef) -> Result<&mut ArrowWriter<Box<dyn Write + Send>>, SinkError> {
        if self.writer.is_none() {
            let out = self.out.take().expect("the output is taken once");
            self.writer = Some(ArrowWriter::try_new(out, schema, Some(self.props.clone()))?);
        }
        Ok(self.writer.as_mut().expect("just made"))
    }
}

impl Sink for ParquetSink {
    fn format(&self) -> Format {
        Format::Table
    }

    fn write(&mut self, item: Prepared) -> Result<(), SinkError> {
        let Prepared::Batch(batch) = item else {
            return Err(SinkError::Format { found: "frames", expected: "parquet" });
        };
        self.writer(batch.schema())?.write(&batch)?;
        Ok(())
    }

    fn finish(&mut self) -> Result<(), SinkError> {
        if self.writer.is_none() {
            let empty = self.empty.take().expect("finish is called once");
            self.writer(empty.schema())?;
        }
        let mut out = self.writer.take().expect("made above").into_inner()?;
        out.flush()?;
        Ok(())
    }
}

pub struct IpcSink {
    out: Option<Box<dyn Write + Send>>,
    writer: Option<arrow_ipc::writer::StreamWriter<Box<dyn Write + Send>>>,
    empty: Option<RecordBatch>,
}

impl IpcSink {
    pub fn new(out: Box<dyn Write + Send>, plan: &Plan) -> Result<Self, SinkError> {
        Ok(Self { out: Some(out), writer: None, empty: Some(empty_batch(plan)?) })
    }

    /// A sink for batches of columns no plan describes (the text readers'):
    /// the schema is the first batch's; with no batch, a stream of no columns.
    pub fn for_columns(out: Box<dyn Write + Send>) -> Self {
        let empty = RecordBatch::new_empty(Arc::new(arrow_schema::Schema::empty()));
        Self { out: Some(out), writer: None, empty: Some(empty) }
    }

    fn writer(
        &mut self,
        schema: &arrow_schema::Schema,
    ) -> Result<&mut arrow_ipc::writer::StreamWriter<Box<dyn Write + Send>>, SinkError> {
        if self.writer.is_none() {
            let out = self.out.take().expect("the output is taken once");
            self.writer = Some(arrow_ipc::writer::StreamWriter::try_new(out, schema)?);
        }
        Ok(self.writer.as_mut().expect("just made"))
    }
}

impl Sink for IpcSink {
    fn format(&self) -> Format {
        Format::Table
    }

    fn write(&mut self, item: Prepared) -> Result<(), SinkError> {
        let Prepared::Batch(batch) = item else {
            return Err(SinkError::Format { found: "frames", expected: "arrow" });
        };
        self.writer(&batch.schema())?.write(&batch)?;
        Ok(())
    }

    fn finish(&mut self) -> Result<(), SinkError> {
        if self.writer.is_none() {
            let empty = self.empty.take().expect("finish is called once");
            self.writer(&empty.schema())?;
        }
        let mut writer = self.writer.take().expect("made above");
        writer.finish()?;
        writer.get_mut().flush()?;
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
        }
    }

    fn finish(&mut self) -> Result<(), SinkError> {
        Ok(())
    }
}
