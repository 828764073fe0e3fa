//! Whole-stream compression: chosen by flag, or by the stream's first bytes
//! (zstd, gzip, zlib and framed-snappy magic numbers). Monolith's own snappy
//! (`snappy_inputbuffer.cc`: Hadoop's block format, no magic number) is
//! chosen by flag or by a `.snappy` file name. The decoders need the
//! `compression` feature; without it a compressed stream is a clear error.
//!
//! gzip's and zlib's magic numbers are short enough to open an uncompressed
//! stream too: a lagrangex header can start `1f 8b 08`, and a record of
//! 376, 24184, 40056 or 55928 bytes starts its length `78 01`, `78 5e`,
//! `78 9c` or `78 da`, each a valid zlib header. So a magic number is only
//! taken when the stream also decodes (its first 64 KiB, or the whole of a
//! shorter stream, with checksums) or when the bytes cannot be read as
//! records uncompressed (a length over the limit): a corrupt gzip file is
//! then reported as gzip's error, not as a record of 1.5e19 bytes.

use std::io::{self, BufRead, BufReader, Cursor, Read};

use super::RecordErrorKind;

/// How a stream is compressed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Compression {
    /// By the first bytes: zstd, gzip or framed snappy, else none.
    #[default]
    Auto,
    None,
    Zstd,
    /// gzip (one member or several concatenated).
    Gzip,
    /// One zlib stream (RFC 1950): Monolith's compression type 4, read by
    /// TensorFlow's `ZlibInputStream` with `ZlibCompressionOptions::DEFAULT()`
    /// (data_reader.cc lines 459-468).
    Zlib,
    /// Monolith's snappy: blocks of `[u32 BE raw length]` then chunks of
    /// `[u32 BE compressed length][raw snappy]` (Hadoop's block format).
    Snappy,
    /// The snappy framing format (stream identifier `sNaPpY`).
    SnappyFramed,
}

impl Compression {
    pub fn name(self) -> &'static str {
        match self {
            Compression::Auto => "auto",
            Compression::None => "none",
            Compression::Zstd => "zstd",
            Compression::Gzip => "gzip",
            Compression::Zlib => "zlib",
            Compression::Snappy => "snappy",
            Compression::SnappyFramed => "snappy-framed",
        }
    }

    /// Parses a flag value (`auto`, `none`, `zstd`, `gzip`, `zlib`, `snappy`, `snappy-framed`).
    pub fn parse(s: &str) -> Option<Self> {
        [Self::Auto, Self::None, Self::Zstd, Self::Gzip, Self::Zlib, Self::Snappy, Self::SnappyFramed]
            .into_iter()
            .find(|c| c.name() == s)
    }

    /// The compression the first bytes of a stream show, if any, by magic
    /// number and header alone (gzip's and zlib's are confirmed by decoding
    /// before a stream is read so; see the module's doc).
    pub fn sniff(head: &[u8]) -> Compression {
        const ZSTD: &[u8] = &[0x28, 0xb5, 0x2f, 0xfd];
        const GZIP: &[u8] = &[0x1f, 0x8b, 0x08];
        const SNAPPY_FRAMED: &[u8] = b"\xff\x06\x00\x00sNaPpY";
        if head.starts_with(ZSTD) {
            Compression::Zstd
        } else if head.starts_with(GZIP) && head.get(3).is_none_or(|flags| flags & 0xe0 == 0) {
            // RFC 1952 2.3.1: the flags byte's top three bits are reserved, zero.
            Compression::Gzip
        } else if is_zlib_header(head) {
            Compression::Zlib
        } else if head.starts_with(SNAPPY_FRAMED) {
            Compression::SnappyFramed
        } else {
            Compression::None
        }
    }
}

/// RFC 1950 2.2: deflate (CM 8) with a window of at most 32 KiB, no preset
/// dictionary (which no reader here or in TensorFlow supplies), and
/// `(CMF * 256 + FLG) % 31 == 0`.
fn is_zlib_header(head: &[u8]) -> bool {
    match head {
        [cmf, flg, ..] => {
            cmf & 0x0f == 8 && cmf >> 4 <= 7 && flg & 0x20 == 0 && (u16::from(*cmf) << 8 | u16::from(*flg)) % 31 == 0
        }
        _ => false,
    }
}

/// Buffer size of the reader under the record reader.
const BUFFER: usize = 256 << 10;
/// How much of a stream that looks gzip- or zlib-compressed is decoded to
/// confirm it.
const CONFIRM_BYTES: usize = 64 << 10;

/// The decompressed stream, buffered. `plain_fits` says whether a stream's
/// first bytes read as records uncompressed: under `Auto` a gzip or zlib
/// header is taken when the stream decodes or when they do not.
pub(crate) fn decoder(
    name: &str,
    mut input: Box<dyn Read + Send>,
    compression: Compression,
    plain_fits: &dyn Fn(&[u8]) -> bool,
) -> Result<Box<dyn BufRead + Send>, RecordErrorKind> {
    let compression = match compression {
        Compression::Auto => {
            let (found, head) = detect(&mut input, plain_fits)?;
            input = Box::new(Cursor::new(head).chain(input));
            found
        }
        c => c,
    };
    let _ = name;
    let plain = |r: Box<dyn Read + Send>| -> Box<dyn BufRead + Send> { Box::new(BufReader::with_capacity(BUFFER, r)) };
    match compression {
        Compression::Auto | Compression::None => Ok(plain(input)),
        #[cfg(feature = "compression")]
        Compression::Zstd => {
            let d = zstd::stream::read::Decoder::new(input).map_err(RecordErrorKind::Io)?;
            Ok(plain(Box::new(d)))
        }
        #[cfg(feature = "compression")]
        Compression::Gzip => {
            let gz = flate2::read::MultiGzDecoder::new(BufReader::new(input));
            Ok(plain(Box::new(Named { inner: gz, what: "gzip" })))
        }
        #[cfg(feature = "compression")]
        Compression::Zlib => Ok(plain(Box::new(ZlibStream::new(input)))),
        #[cfg(feature = "compression")]
        Compression::Snappy => Ok(plain(Box::new(super::snappy::BlockDecoder::new(input)))),
        #[cfg(feature = "compression")]
        Compression::SnappyFramed => Ok(plain(Box::new(snap::read::FrameDecoder::new(input)))),
        #[cfg(not(feature = "compression"))]
        other => Err(RecordErrorKind::Compression(format!(
            "the stream is {}-compressed and this build reads no compressed streams (the fex library's \
             `compression` feature is off)",
            other.name()
        ))),
    }
}

/// `input` decompressed as `compression` says (for `Auto`, as its first
/// bytes say) and buffered, for streams that are not records: text sample
/// files read through the same decoders as PBDataset input. A text line does
/// not start like a gzip or zlib header, so such a header is taken even when
/// the stream does not decode (its error is then the decoder's).
pub fn decompressed(input: Box<dyn Read + Send>, compression: Compression) -> io::Result<Box<dyn BufRead + Send>> {
    decoder("", input, compression, &|_| false).map_err(|kind| match kind {
        RecordErrorKind::Io(e) => e,
        other => io::Error::other(other.to_string()),
    })
}

/// Reads up to `n` bytes (fewer only at the end of the stream).
fn peek(input: &mut Box<dyn Read + Send>, n: usize) -> Result<Vec<u8>, RecordErrorKind> {
    let mut head = Vec::with_capacity(n);
    input.take(n as u64).read_to_end(&mut head).map_err(RecordErrorKind::Io)?;
    Ok(head)
}

/// An `io::Error` a decoder raises for bad compressed data.
#[cfg_attr(not(feature = "compression"), allow(dead_code))]
pub(super) fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

/// The compression a stream's first bytes show, and those bytes (which the
/// caller puts back). A gzip or zlib header is taken when the stream decodes
/// or cannot be records uncompressed.
fn detect(
    input: &mut Box<dyn Read + Send>,
    plain_fits: &dyn Fn(&[u8]) -> bool,
) -> Result<(Compression, Vec<u8>), RecordErrorKind> {
    let mut head = peek(input, 10)?;
    let found = Compression::sniff(&head);
    if !matches!(found, Compression::Gzip | Compression::Zlib) {
        return Ok((found, head));
    }
    if head.len() == 10 {
        head.extend(peek(input, CONFIRM_BYTES - 10)?);
    }
    let taken = decodes(found, &head, head.len() < CONFIRM_BYTES).is_ok() || !plain_fits(&head);
    Ok((if taken { found } else { Compression::None }, head))
}

/// Whether `head`, a stream's first bytes (`whole`: all of it), decodes as
/// `compression` (gzip or zlib) without an error, checksums included. What
/// it says when it does not.
pub(crate) fn decodes(compression: Compression, head: &[u8], whole: bool) -> Result<(), String> {
    #[cfg(feature = "compression")]
    {
        let mut decoder: Box<dyn Read + '_> = match compression {
            Compression::Gzip => Box::new(flate2::read::GzDecoder::new(head)),
            Compression::Zlib => Box::new(flate2::read::ZlibDecoder::new(head)),
            _ => return Ok(()),
        };
        let mut buf = vec![0; 64 << 10];
        // Enough output to be sure; a stream of zeros must not be expanded
        // without end.
        let mut budget = 4usize << 20;
        loop {
            match decoder.read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(n) if n >= budget => return Ok(()),
                Ok(n) => budget -= n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // The head is cut off where the stream goes on.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof && !whole => return Ok(()),
                Err(e) => return Err(e.to_string()),
            }
        }
    }
    #[cfg(not(feature = "compression"))]
    {
        let _ = (compression, head, whole);
        Err("this build reads no compressed streams".into())
    }
}

/// A decoder whose errors say which format failed, as a compression error
/// (`InvalidData`), not as a failure to read the file.
#[cfg(feature = "compression")]
struct Named<R> {
    inner: R,
    what: &'static str,
}

#[cfg(feature = "compression")]
impl<R: Read> Read for Named<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf).map_err(|e| match e.kind() {
            io::ErrorKind::InvalidData | io::ErrorKind::InvalidInput | io::ErrorKind::UnexpectedEof => {
                invalid(format!("{} stream: {e}", self.what))
            }
            _ => e,
        })
    }
}

/// One zlib stream, as TensorFlow's `ZlibInputStream` reads Monolith's
/// compression type 4. Bytes after the stream's end are an error, not
/// silently left unread.
#[cfg(feature = "compression")]
struct ZlibStream {
    inner: Named<flate2::bufread::ZlibDecoder<BufReader<Box<dyn Read + Send>>>>,
}

#[cfg(feature = "compression")]
impl ZlibStream {
    fn new(input: Box<dyn Read + Send>) -> Self {
        Self { inner: Named { inner: flate2::bufread::ZlibDecoder::new(BufReader::new(input)), what: "zlib" } }
    }
}

#[cfg(feature = "compression")]
impl Read for ZlibStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n == 0 && !buf.is_empty() {
            let decoder = &mut self.inner.inner;
            let after = decoder.total_in();
            if !decoder.get_mut().fill_buf()?.is_empty() {
                return Err(invalid(format!(
                    "zlib stream: the stream ends at compressed byte {after} and more bytes follow \
                     (one zlib stream is read, as Monolith's reader reads it)"
                )));
            }
        }
        Ok(n)
    }
}
