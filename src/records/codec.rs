//! Whole-stream compression: chosen by flag, or by the stream's first bytes
//! (zstd, gzip and framed-snappy magic numbers). Monolith's own snappy
//! (`snappy_inputbuffer.cc`: Hadoop's block format, no magic number) is
//! chosen by flag or by a `.snappy` file name. The decoders need the
//! `compression` feature; without it a compressed stream is a clear error.

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
            Compression::Snappy => "snappy",
            Compression::SnappyFramed => "snappy-framed",
        }
    }

    /// Parses a flag value (`auto`, `none`, `zstd`, `gzip`, `snappy`, `snappy-framed`).
    pub fn parse(s: &str) -> Option<Self> {
        [Self::Auto, Self::None, Self::Zstd, Self::Gzip, Self::Snappy, Self::SnappyFramed]
            .into_iter()
            .find(|c| c.name() == s)
    }

    /// The compression the first bytes of a stream show, if any.
    pub fn sniff(head: &[u8]) -> Compression {
        const ZSTD: &[u8] = &[0x28, 0xb5, 0x2f, 0xfd];
        const GZIP: &[u8] = &[0x1f, 0x8b, 0x08];
        const SNAPPY_FRAMED: &[u8] = b"\xff\x06\x00\x00sNaPpY";
        if head.starts_with(ZSTD) {
            Compression::Zstd
        } else if head.starts_with(GZIP) {
            Compression::Gzip
        } else if head.starts_with(SNAPPY_FRAMED) {
            Compression::SnappyFramed
        } else {
            Compression::None
        }
    }
}

/// Buffer size of the reader under the record reader.
const BUFFER: usize = 256 << 10;

/// The decompressed stream, buffered.
pub(super) fn decoder(
    name: &str,
    mut input: Box<dyn Read + Send>,
    compression: Compression,
) -> Result<Box<dyn BufRead + Send>, RecordErrorKind> {
    let compression = match compression {
        Compression::Auto => {
            let head = peek(&mut input, 10)?;
            let found = Compression::sniff(&head);
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
        Compression::Gzip => Ok(plain(Box::new(flate2::read::MultiGzDecoder::new(BufReader::new(input))))),
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
/// files read through the same decoders as PBDataset input.
pub fn decompressed(input: Box<dyn Read + Send>, compression: Compression) -> io::Result<Box<dyn BufRead + Send>> {
    decoder("", input, compression).map_err(|kind| match kind {
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
