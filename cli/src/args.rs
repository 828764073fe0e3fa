//! The command line: every subcommand's flags, with `--help` text.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use fex::offline::{OnError, ParquetCodec, Payload};
use fex::records::{Compression, Framing, ReadOptions};

#[derive(Parser, Debug)]
#[command(name = "fex", version, about = "Build training data with the fex feature library", long_about = None)]
#[command(after_help = "Exit codes: 0 done, 1 output or other failure, 2 bad usage, 64 bad model config, \
                        65 bad record (--on-error fail), 66 input not found")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Samples in, training table out: extract a model's outputs from PBDataset files.
    Extract(ExtractArgs),
    /// Print records and their features readably.
    Inspect(InspectArgs),
    /// Validate model configs (the same messages as `fex-server --check-config`).
    Check(CheckArgs),
    /// fex-server's request log in, the responses the server gave out, byte for byte.
    Replay(ReplayArgs),
    /// Fit what a text format's reading needs (Criteo's vocabularies).
    #[command(subcommand)]
    Fit(FitCommand),
    /// A model's Iceberg sample table.
    #[command(subcommand)]
    Table(TableCommand),
    /// Compute only a model's new outputs over the joined-request (Shitu)
    /// table, into a sidecar table keyed by row identity; no data file of
    /// the sample table is read or rewritten.
    Backfill(BackfillArgs),
}

#[derive(Args, Debug)]
pub struct BackfillArgs {
    /// The model config with the new outputs (YAML).
    #[arg(long, short)]
    pub model: PathBuf,
    /// The warehouse: a directory (with the embedded catalog, catalog.db in
    /// it), or an object store's URI (s3://bucket/prefix) with --catalog.
    #[arg(long, short)]
    pub output: PathBuf,
    /// The joined-request table read (default: fex.<model>_shitu).
    #[arg(long)]
    pub shitu: Option<String>,
    /// The sample table whose columns are not recomputed (default: fex.<model>_samples).
    #[arg(long)]
    pub base: Option<String>,
    /// The sidecar table the new outputs go into, namespace.table (made if missing).
    #[arg(long)]
    pub into: String,
    /// The catalog: default, an embedded SQLite catalog (catalog.db in the
    /// warehouse); or postgresql://user:password@host/db, sqlite:PATH, or a
    /// REST catalog's http(s):// URI.
    #[arg(long, env = "FEX_ICEBERG_CATALOG")]
    pub catalog: Option<String>,
    /// A catalog or file-IO property, KEY=VALUE, repeatable: s3.endpoint,
    /// client.region, s3.access-key-id, s3.path-style-access, a REST catalog's
    /// credential or token (S3 credentials otherwise come from AWS's
    /// environment variables and files).
    #[arg(long = "catalog-property", value_name = "KEY=VALUE")]
    pub catalog_property: Vec<String>,
    /// Only requests at or after this time (YYYY-MM-DD, or RFC 3339).
    #[arg(long)]
    pub since: Option<String>,
    /// Only requests before this time (YYYY-MM-DD, or RFC 3339).
    #[arg(long)]
    pub until: Option<String>,
    /// A delta snapshot, namespace.table: raw features keyed by request_id
    /// and row (the row's index in the logged request), added to each
    /// request's records before the new outputs are extracted.
    #[arg(long)]
    pub delta: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum TableCommand {
    /// Create the model's sample table (the columns `extract --format iceberg`
    /// writes), or check an existing one against the model: for writers
    /// that do not create it themselves (the near-line job's Iceberg sink).
    Create(TableCreateArgs),
}

#[derive(Args, Debug)]
pub struct TableCreateArgs {
    /// The model config (YAML).
    #[arg(long, short)]
    pub model: PathBuf,
    /// The warehouse: a directory (with the embedded catalog, catalog.db in
    /// it), or an object store's URI (s3://bucket/prefix) with --catalog.
    #[arg(long, short)]
    pub output: PathBuf,
    /// The table, as namespace.table (default: fex.<model>_samples).
    #[arg(long)]
    pub table: Option<String>,
    /// The catalog: default, an embedded SQLite catalog (catalog.db in the
    /// warehouse); or postgresql://user:password@host/db, sqlite:PATH, or a
    /// REST catalog's http(s):// URI.
    #[arg(long, env = "FEX_ICEBERG_CATALOG")]
    pub catalog: Option<String>,
    /// A catalog or file-IO property, KEY=VALUE, repeatable: s3.endpoint,
    /// client.region, s3.access-key-id, s3.path-style-access, a REST catalog's
    /// credential or token (S3 credentials otherwise come from AWS's
    /// environment variables and files).
    #[arg(long = "catalog-property", value_name = "KEY=VALUE")]
    pub catalog_property: Vec<String>,
    /// How a new table is partitioned by request_time.
    #[arg(long, value_enum, default_value_t = PartitionArg::Day)]
    pub partition_by: PartitionArg,
    /// Also the joined-request ("Shitu") table the near-line job appends
    /// to, named this (namespace.table; the job's default is fex.<model>_shitu).
    #[arg(long)]
    pub shitu_table: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum FitCommand {
    /// Criteo: one vocabulary per categorical column (cat_<c>.txt), values in
    /// first-seen order over the training days, for `extract --input-format criteo`.
    Criteo(FitCriteoArgs),
}

#[derive(Args, Debug)]
pub struct FitCriteoArgs {
    /// The training days (Criteo TSV), in order.
    #[arg(required = true)]
    pub days: Vec<PathBuf>,
    /// Where to write cat_0.txt .. cat_25.txt.
    #[arg(long)]
    pub vocab_dir: PathBuf,
    /// Values seen fewer times than this are left out (0 or 1 keeps all).
    #[arg(long, default_value_t = 0)]
    pub threshold: u32,
    /// On a bad line: stop (exit 65), or count it and go on.
    #[arg(long, value_enum, default_value_t = OnErrorArg::Fail)]
    pub on_error: OnErrorArg,
}

/// How the input files are framed and what their records hold.
#[derive(Args, Debug, Clone)]
pub struct InputArgs {
    /// Input files, glob patterns, directories, or `-` for standard input.
    #[arg(required = true)]
    pub inputs: Vec<String>,
    /// What each record's payload is.
    #[arg(long, value_enum, default_value_t = PayloadArg::ExampleBatch)]
    pub payload: PayloadArg,
    /// Each record starts with a lagrangex header (u64: pb type, data source key).
    #[arg(long)]
    pub lagrangex_header: bool,
    /// Each record starts with a kafka dump prefix (u64; 0 means one more u64 follows).
    #[arg(long)]
    pub kafka_dump_prefix: bool,
    /// Each record carries a sort_id (u64 length, then the bytes).
    #[arg(long)]
    pub has_sort_id: bool,
    /// Each record carries a kafka dump word (u64, skipped).
    #[arg(long)]
    pub kafka_dump: bool,
    /// Whole-stream compression; `auto` reads the magic bytes (and `.snappy`
    /// names), taking a gzip or zlib header only when the stream decodes.
    #[arg(long, value_enum, default_value_t = CompressionArg::Auto)]
    pub compression: CompressionArg,
    /// The largest record (and sort_id) accepted, in bytes.
    #[arg(long, default_value_t = fex::records::DEFAULT_MAX_RECORD_BYTES)]
    pub max_record_bytes: u64,
}

impl InputArgs {
    pub fn read_options(&self) -> ReadOptions {
        ReadOptions {
            framing: Framing {
                lagrangex_header: self.lagrangex_header,
                kafka_dump_prefix: self.kafka_dump_prefix,
                has_sort_id: self.has_sort_id,
                kafka_dump: self.kafka_dump,
            },
            compression: match self.compression {
                CompressionArg::Auto => Compression::Auto,
                CompressionArg::None => Compression::None,
                CompressionArg::Zstd => Compression::Zstd,
                CompressionArg::Gzip => Compression::Gzip,
                CompressionArg::Zlib => Compression::Zlib,
                CompressionArg::Snappy => Compression::Snappy,
                CompressionArg::SnappyFramed => Compression::SnappyFramed,
            },
            max_record_bytes: self.max_record_bytes,
        }
    }

    pub fn payload(&self) -> Payload {
        match self.payload {
            PayloadArg::ExampleBatch => Payload::ExampleBatch,
            PayloadArg::Example => Payload::Example,
            PayloadArg::Instance => Payload::Instance,
        }
    }
}

#[derive(Args, Debug)]
pub struct ExtractArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// The model config (YAML), the same file fex-server loads (required for
    /// pbdataset input; text formats have their own columns).
    #[arg(long, short)]
    pub model: Option<PathBuf>,
    /// What the inputs are: PBDataset records (Monolith samples, through the
    /// model), or a text format read straight into columns: deepx's libsvm,
    /// libsvm_ex, uch, or Criteo TSV.
    #[arg(long, value_enum, default_value_t = InputFormatArg::Pbdataset)]
    pub input_format: InputFormatArg,
    /// deepx reader config for libsvm/libsvm_ex/uch, deepx's own string,
    /// e.g. "batch=32;label_size=1".
    #[arg(long, default_value = "")]
    pub reader_config: String,
    /// Criteo: the vocabularies `fex fit criteo` wrote (without it the raw
    /// hashed values are the ids).
    #[arg(long)]
    pub vocab_dir: Option<PathBuf>,
    /// Criteo: rows per batch.
    #[arg(long, default_value_t = 4096)]
    pub batch_size: usize,
    /// Where to write the table (`-` for standard output); with --format
    /// iceberg, the warehouse: a directory, or an object store's URI
    /// (s3://bucket/prefix) with --catalog.
    #[arg(long, short)]
    pub output: PathBuf,
    /// Output format: a Parquet file, an Arrow IPC stream, framed
    /// fex.v1.ExtractResponse records (what fex-server answers per record),
    /// or rows appended to an Iceberg table in one commit.
    #[arg(long, value_enum, default_value_t = FormatArg::Parquet)]
    pub format: FormatArg,
    /// Iceberg: the table, as namespace.table (default: fex.<model>_samples),
    /// created with the model's columns if the catalog has none.
    #[arg(long)]
    pub table: Option<String>,
    /// Iceberg: the catalog. Default: an embedded SQLite catalog,
    /// catalog.db in the warehouse; or postgresql://user:password@host/db,
    /// sqlite:PATH, or a REST catalog's http(s):// URI.
    #[arg(long, env = "FEX_ICEBERG_CATALOG")]
    pub catalog: Option<String>,
    /// Iceberg: a catalog or file-IO property, KEY=VALUE, repeatable: s3.endpoint,
    /// client.region, s3.access-key-id, s3.path-style-access, a REST catalog's
    /// credential or token (S3 credentials otherwise come from AWS's
    /// environment variables and files).
    #[arg(long = "catalog-property", value_name = "KEY=VALUE")]
    pub catalog_property: Vec<String>,
    /// Iceberg: how a table this run creates is partitioned by request_time.
    #[arg(long, value_enum, default_value_t = PartitionArg::Day)]
    pub partition_by: PartitionArg,
    /// Rows per Parquet row group.
    #[arg(long, default_value_t = 65536)]
    pub row_group_size: usize,
    /// Parquet page compression.
    #[arg(long, value_enum, default_value_t = ParquetCodecArg::Snappy)]
    pub parquet_compression: ParquetCodecArg,
    /// Dictionary-encode Parquet columns: a somewhat smaller file, written
    /// about 1.6x slower (off by default).
    #[arg(long)]
    pub parquet_dictionary: bool,
    /// Extraction threads (default: all cores). The output is the same for any count.
    #[arg(long)]
    pub threads: Option<usize>,
    /// On a bad record: stop (exit 65), or report it, count it and go on.
    #[arg(long, value_enum, default_value_t = OnErrorArg::Fail)]
    pub on_error: OnErrorArg,
    /// Records per chunk (a chunk is the unit of work of one thread; it
    /// also ends at 256 KiB of payload). Changes nothing in the output.
    #[arg(long, default_value_t = 4096)]
    pub chunk_records: usize,
    /// negative_gen: start from the item pool (and draw state) a run saved
    /// with --item-pool-save, so this run continues it (Monolith's
    /// ItemPoolRestore).
    #[arg(long, value_name = "FILE")]
    pub item_pool_restore: Option<PathBuf>,
    /// negative_gen: after the run, save its item pool and draw state to
    /// FILE, for --item-pool-restore (Monolith's ItemPoolSave).
    #[arg(long, value_name = "FILE")]
    pub item_pool_save: Option<PathBuf>,
    /// No progress bar and no summary.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Args, Debug)]
pub struct InspectArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// Print this many records at most.
    #[arg(long, default_value_t = 10)]
    pub limit: u64,
    /// Print the model's extracted tensors for each record instead of its raw features.
    #[arg(long, short)]
    pub model: Option<PathBuf>,
    /// Values shown per feature before "...".
    #[arg(long, default_value_t = 8)]
    pub values: usize,
}

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Model config files or directories of them (*.yaml, *.yml).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
}

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// Request log directories (fex-server --request-log; their requests-*.log
    /// files in the order written) or log files.
    #[arg(required = true)]
    pub logs: Vec<PathBuf>,
    /// The model configs the server ran: a directory of *.yaml / *.yml or one
    /// file, as fex-server's --models [default: the embedded default model].
    #[arg(long)]
    pub models: Option<PathBuf>,
    /// Where to write the framed fex.v1.ExtractResponse records (`-` for
    /// standard output), one per logged request, in log order.
    #[arg(long, short)]
    pub output: PathBuf,
    /// Replay requests logged by another version (identity) of a model
    /// instead of refusing them.
    #[arg(long)]
    pub allow_other_version: bool,
    /// No summary.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(ValueEnum, Debug, Clone, Copy)]
pub enum PayloadArg {
    ExampleBatch,
    Example,
    Instance,
}

#[derive(ValueEnum, Debug, Clone, Copy)]
pub enum CompressionArg {
    Auto,
    None,
    Zstd,
    Gzip,
    /// One zlib stream (Monolith's compression type 4).
    Zlib,
    /// Monolith's snappy (Hadoop block format).
    Snappy,
    /// The snappy framing format.
    SnappyFramed,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputFormatArg {
    Pbdataset,
    Libsvm,
    #[value(name = "libsvm_ex")]
    LibsvmEx,
    Uch,
    Criteo,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormatArg {
    Parquet,
    Arrow,
    Responses,
    /// Rows appended to an Apache Iceberg table (--output is the warehouse
    /// directory; --table names the table).
    Iceberg,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartitionArg {
    Day,
    Hour,
    None,
}

#[derive(ValueEnum, Debug, Clone, Copy)]
pub enum ParquetCodecArg {
    None,
    Snappy,
    Zstd,
}

impl From<ParquetCodecArg> for ParquetCodec {
    fn from(c: ParquetCodecArg) -> Self {
        match c {
            ParquetCodecArg::None => ParquetCodec::None,
            ParquetCodecArg::Snappy => ParquetCodec::Snappy,
            ParquetCodecArg::Zstd => ParquetCodec::Zstd,
        }
    }
}

#[derive(ValueEnum, Debug, Clone, Copy)]
pub enum OnErrorArg {
    Fail,
    Skip,
}

impl From<OnErrorArg> for fex::text::OnError {
    fn from(o: OnErrorArg) -> Self {
        match o {
            OnErrorArg::Fail => fex::text::OnError::Fail,
            OnErrorArg::Skip => fex::text::OnError::Skip,
        }
    }
}

impl From<OnErrorArg> for OnError {
    fn from(o: OnErrorArg) -> Self {
        match o {
            OnErrorArg::Fail => OnError::Fail,
            OnErrorArg::Skip => OnError::Skip,
        }
    }
}
