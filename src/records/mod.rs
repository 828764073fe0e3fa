//! Monolith PBDataset record streams, read as
//! `monolith/native_training/data/training_instance/cc/data_reader.h`
//! (`BaseStreamReaderTmpl::ReadPBBytes`) reads them: each record is
//! `[optional header][u64 little-endian length][payload]`. The header options
//! are [`Framing`]'s; a length of 0xfefefefe is a corrupt record; the whole
//! stream may be zstd, gzip, zlib or snappy compressed ([`Compression`]).
//!
//! Streaming with bounded memory: a record is read straight into the
//! caller's buffer, which grows with the bytes that actually arrive (never
//! reserved from a length the file claims), and no record may be larger than
//! `ReadOptions::max_record_bytes`. The same reader serves `fex extract`,
//! `fex inspect`, fex-client's replayed requests and the Python binding.

pub mod codec;
mod error;
#[cfg(feature = "compression")]
mod snappy;
#[cfg(feature = "offline")]
pub mod sources;

use std::io::{self, BufRead, Read, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

pub use codec::Compression;
pub use error::{RecordError, RecordErrorKind};

/// Monolith's marker of a corrupt record (data_reader.h, `ReadPBBytes`).
pub const CORRUPT_LENGTH: u64 = 0xfefe_fefe;
/// The default bound on one record's length (and on a sort_id's).
pub const DEFAULT_MAX_RECORD_BYTES: u64 = 256 << 20;
/// No protobuf message is larger (protobuf's 2 GiB limit): a longer record
/// length was not written as one, whatever `max_record_bytes` allows.
pub const MAX_MESSAGE_BYTES: u64 = i32::MAX as u64;

/// The optional header before each record's length (Monolith's
/// `DataFormatOptions`). With `lagrangex_header` the others are ignored, as
/// Monolith ignores them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Framing {
    /// One u64: the low byte is the pb type, bits 8..31 the data source key.
    pub lagrangex_header: bool,
    /// One u64 A: when A is 0 one more u64 follows (skipped), otherwise A is
    /// the length of the sort_id that `has_sort_id` skips.
    pub kafka_dump_prefix: bool,
    /// A u64 length L (unless `kafka_dump_prefix` gave it), then L bytes.
    pub has_sort_id: bool,
    /// One u64, skipped.
    pub kafka_dump: bool,
}

/// How to read a stream.
#[derive(Debug, Clone, Copy)]
pub struct ReadOptions {
    pub framing: Framing,
    pub compression: Compression,
    /// Records (and sort_ids) longer than this are an error.
    pub max_record_bytes: u64,
}

impl Default for ReadOptions {
    fn default() -> Self {
        Self { framing: Framing::default(), compression: Compression::Auto, max_record_bytes: DEFAULT_MAX_RECORD_BYTES }
    }
}

/// Where a record was and what its header said.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecordMeta {
    /// The record's index in its stream, from 0.
    pub index: u64,
    /// Byte offset of the record's first header byte (of the decompressed
    /// stream when it is compressed).
    pub offset: u64,
    /// The payload's length.
    pub len: usize,
    /// From a lagrangex header (0 otherwise).
    pub pb_type: u8,
    /// From a lagrangex header: bits 8..31 of it, low byte zero (0 otherwise).
    pub data_source_key: u32,
}

/// Reads records one after another from one stream.
pub struct RecordReader {
    inner: Box<dyn BufRead + Send>,
    name: String,
    options: ReadOptions,
    index: u64,
    offset: u64,
    /// Set after the stream ended or failed: a framing error loses the
    /// record boundaries, so nothing after it can be trusted.
    done: bool,
}

/// Counts the bytes read from the underlying file (compressed bytes for a
/// compressed stream), for progress reports.
pub type ByteCounter = Arc<AtomicU64>;

impl RecordReader {
    /// Reads `input`, named `name` in errors, decompressing it as
    /// `options.compression` says (or as its first bytes say).
    pub fn new(name: &str, input: impl Read + Send + 'static, options: ReadOptions) -> Result<Self, RecordError> {
        let plain_fits = |head: &[u8]| first_record_fits(head, options);
        let inner = codec::decoder(name, Box::new(input), options.compression, &plain_fits)
            .map_err(|kind| RecordError::new(name, 0, 0, kind))?;
        Ok(Self { inner, name: name.to_string(), options, index: 0, offset: 0, done: false })
    }

    /// Opens a file, or standard input for `-`. A name ending in `.snappy`
    /// is read as Monolith's snappy (datasets.py does the same) unless
    /// `options.compression` says otherwise.
    pub fn open(path: &Path, options: ReadOptions, counter: Option<ByteCounter>) -> Result<Self, RecordError> {
        let name = path.display().to_string();
        let options = for_name(&name, options);
        let counted = |r: Box<dyn Read + Send>| -> Box<dyn Read + Send> {
            match &counter {
                Some(c) => Box::new(Counted { inner: r, counter: Arc::clone(c) }),
                None => r,
            }
        };
        if name == "-" {
            return Self::new(&name, counted(Box::new(io::stdin())), options);
        }
        let file = std::fs::File::open(path).map_err(|e| RecordError::new(&name, 0, 0, RecordErrorKind::Io(e)))?;
        Self::new(&name, counted(Box::new(file)), options)
    }

    /// The stream's name (the path, or `-`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Bytes consumed so far (of the decompressed stream).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Reads the next record into `buf` (cleared first).
    pub fn next_into(&mut self, buf: &mut Vec<u8>) -> Result<Option<RecordMeta>, RecordError> {
        buf.clear();
        self.append_next(buf)
    }

    /// Appends the next record's payload to `buf`; `None` at the end of the
    /// stream. After an error the stream is done (its framing is lost).
    pub fn append_next(&mut self, buf: &mut Vec<u8>) -> Result<Option<RecordMeta>, RecordError> {
        if self.done {
            return Ok(None);
        }
        let start = self.offset;
        match self.read_record(buf) {
            Ok(Some(mut meta)) => {
                meta.index = self.index;
                meta.offset = start;
                self.index += 1;
                Ok(Some(meta))
            }
            Ok(None) => {
                self.done = true;
                Ok(None)
            }
            Err(kind) => {
                self.done = true;
                Err(RecordError::new(&self.name, self.index, start, kind))
            }
        }
    }

    fn read_record(&mut self, buf: &mut Vec<u8>) -> Result<Option<RecordMeta>, RecordErrorKind> {
        let mut meta = RecordMeta::default();
        // The first u64 of a record may meet a clean end of stream.
        let first = match self.u64_or_end("header")? {
            Some(v) => v,
            None => return Ok(None),
        };
        let len = self.header(first, &mut meta)?;
        if len == CORRUPT_LENGTH {
            return Err(RecordErrorKind::CorruptLength);
        }
        self.check_size("record", len)?;
        let at = buf.len();
        self.read_payload(buf, len, "record")?;
        meta.len = buf.len() - at;
        Ok(Some(meta))
    }

    /// Reads the header (whose first u64 is `first`) and returns the
    /// record's length, in data_reader.h's order (`ReadDataHeader`).
    fn header(&mut self, first: u64, meta: &mut RecordMeta) -> Result<u64, RecordErrorKind> {
        let f = self.options.framing;
        let mut next = Some(first);
        let mut take = |r: &mut Self, what| match next.take() {
            Some(v) => Ok(v),
            None => r.u64(what),
        };
        if f.lagrangex_header {
            let h = take(self, "lagrangex header")?;
            meta.pb_type = (h & 0xff) as u8;
            meta.data_source_key = ((h as u32) >> 8) << 8;
            return take(self, "length");
        }
        let mut sort_id_len = 0;
        if f.kafka_dump_prefix {
            let a = take(self, "kafka dump prefix")?;
            if a == 0 {
                take(self, "kafka dump prefix")?;
            } else {
                sort_id_len = a;
            }
        }
        if f.has_sort_id {
            let len = if sort_id_len == 0 { take(self, "sort_id length")? } else { sort_id_len };
            self.check_size("sort_id", len)?;
            self.skip(len, "sort_id")?;
        }
        if f.kafka_dump {
            take(self, "kafka dump header")?;
        }
        take(self, "length")
    }

    fn check_size(&self, what: &'static str, len: u64) -> Result<(), RecordErrorKind> {
        let limit = self.options.max_record_bytes;
        match len {
            _ if len <= limit => Ok(()),
            // Raising the limit cannot help: the bytes are not a length.
            _ if len > MAX_MESSAGE_BYTES => Err(RecordErrorKind::NotALength { what, found: len }),
            _ => Err(RecordErrorKind::TooLarge { what, found: len, limit }),
        }
    }

    /// A little-endian u64; `None` when the stream ends before its first byte.
    fn u64_or_end(&mut self, what: &'static str) -> Result<Option<u64>, RecordErrorKind> {
        let mut word = [0u8; 8];
        let mut got = 0;
        while got < 8 {
            match self.inner.read(&mut word[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io_or_codec(e)),
            }
        }
        self.offset += got as u64;
        match got {
            0 => Ok(None),
            8 => Ok(Some(u64::from_le_bytes(word))),
            _ => Err(RecordErrorKind::Truncated { what, expected: 8, found: got as u64 }),
        }
    }

    fn u64(&mut self, what: &'static str) -> Result<u64, RecordErrorKind> {
        self.u64_or_end(what)?.ok_or(RecordErrorKind::Truncated { what, expected: 8, found: 0 })
    }

    /// Appends `len` bytes to `buf`, growing it only as bytes arrive.
    fn read_payload(&mut self, buf: &mut Vec<u8>, len: u64, what: &'static str) -> Result<(), RecordErrorKind> {
        buf.reserve(len.min(1 << 20) as usize);
        let got = (&mut self.inner).take(len).read_to_end(buf).map_err(io_or_codec)? as u64;
        self.offset += got;
        if got < len {
            return Err(RecordErrorKind::Truncated { what, expected: len, found: got });
        }
        Ok(())
    }

    fn skip(&mut self, len: u64, what: &'static str) -> Result<(), RecordErrorKind> {
        let got = io::copy(&mut (&mut self.inner).take(len), &mut io::sink()).map_err(io_or_codec)?;
        self.offset += got;
        if got < len {
            return Err(RecordErrorKind::Truncated { what, expected: len, found: got });
        }
        Ok(())
    }
}

/// `options` for the file `name`: a `.snappy` name is Monolith's snappy
/// under `Auto`.
pub(crate) fn for_name(name: &str, mut options: ReadOptions) -> ReadOptions {
    if options.compression == Compression::Auto && name.ends_with(".snappy") {
        options.compression = Compression::Snappy;
    }
    options
}

/// Whether `head`, a stream's first bytes read uncompressed with `options`'
/// framing, starts with a record header whose lengths are within the limit
/// (a header cut off by the end of `head` fits).
fn first_record_fits(head: &[u8], options: ReadOptions) -> bool {
    let options = ReadOptions { compression: Compression::None, ..options };
    let Ok(mut reader) = RecordReader::new("", io::Cursor::new(head.to_vec()), options) else {
        return true;
    };
    match reader.next_into(&mut Vec::new()) {
        Err(e) => !matches!(
            e.kind(),
            RecordErrorKind::TooLarge { .. } | RecordErrorKind::NotALength { .. } | RecordErrorKind::CorruptLength
        ),
        Ok(_) => true,
    }
}

/// A decoder's error arrives as an `io::Error` of kind `InvalidData`.
fn io_or_codec(e: io::Error) -> RecordErrorKind {
    if e.kind() == io::ErrorKind::InvalidData {
        RecordErrorKind::Compression(e.to_string())
    } else {
        RecordErrorKind::Io(e)
    }
}

struct Counted {
    inner: Box<dyn Read + Send>,
    counter: ByteCounter,
}

impl Read for Counted {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.counter.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Writes one record without a header: `[u64 LE length][payload]`.
pub fn write_record(out: &mut impl Write, payload: &[u8]) -> io::Result<()> {
    out.write_all(&(payload.len() as u64).to_le_bytes())?;
    out.write_all(payload)
}

#[cfg(feature = "compression")]
pub use snappy::encode_blocks as encode_snappy_blocks;
