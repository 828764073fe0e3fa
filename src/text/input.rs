//! Opening a text sample file: a path, or `-` for standard input,
//! decompressed by the same decoders as PBDataset input
//! (`records::codec`). deepx opens a file whose name ends in `.gz` through
//! zlib (src/common/stream.cc:2022-2023); fex looks at the first bytes
//! instead (gzip, zstd, framed snappy), so a compressed standard input or a
//! file named otherwise reads too, and a caller may force a compression.
//! A name ending in `.snappy` is Monolith's snappy, as for records.

use std::io::{self, BufRead, Read};
use std::path::Path;

use crate::records::Compression;
use crate::records::codec::decompressed;

/// `path` (or standard input for `-`) as lines' bytes, decompressed as
/// `compression` says (`Compression::Auto`: as the stream's first bytes or
/// a `.snappy` name say).
pub fn open(path: &Path, compression: Compression) -> io::Result<Box<dyn BufRead + Send>> {
    let compression = match compression {
        Compression::Auto if path.extension().is_some_and(|e| e == "snappy") => Compression::Snappy,
        c => c,
    };
    let input: Box<dyn Read + Send> =
        if path.as_os_str() == "-" { Box::new(io::stdin()) } else { Box::new(std::fs::File::open(path)?) };
    decompressed(input, compression)
}
