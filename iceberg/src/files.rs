//! Data files where a table's location says: a local path (plain or
//! `file:`) is read and written in place; any other location (`s3://...`)
//! through the table's file IO, by way of a local temporary file (in
//! `TMPDIR`): a file is written whole before it is uploaded, and a file
//! read is downloaded whole before Parquet reads its footer.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use bytes::Bytes;
use iceberg::io::FileIO;

use crate::TableError;

/// How much of a file moves per request to or from an object store.
const CHUNK: u64 = 8 << 20;

/// The local path of `location`, or None for an object store's.
pub fn local_path(location: &str) -> Option<PathBuf> {
    if let Some(rest) = location.strip_prefix("file://") {
        return Some(PathBuf::from(rest));
    }
    if let Some(rest) = location.strip_prefix("file:") {
        return Some(PathBuf::from(rest));
    }
    match location.find("://") {
        // A scheme is letters, digits, '+', '-' and '.' (RFC 3986).
        Some(i) if i > 0 && location[..i].chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) => None,
        _ => Some(PathBuf::from(location)),
    }
}

/// `location` opened for reading: the local file itself, or a temporary
/// copy of the object (removed when the file is closed).
pub fn open(runtime: &tokio::runtime::Runtime, io: &FileIO, location: &str) -> Result<File, TableError> {
    if let Some(path) = local_path(location) {
        return File::open(&path)
            .map_err(|e| TableError::Io(std::io::Error::new(e.kind(), format!("{location}: {e}"))));
    }
    let failed = |e: String| TableError::Io(std::io::Error::other(format!("downloading {location}: {e}")));
    let mut copy = tempfile::tempfile().map_err(|e| failed(format!("a temporary file: {e}")))?;
    runtime.block_on(async {
        let input = io.new_input(location).map_err(|e| failed(e.to_string()))?;
        let size = input.metadata().await.map_err(|e| failed(e.to_string()))?.size;
        let reader = input.reader().await.map_err(|e| failed(e.to_string()))?;
        let mut at = 0;
        while at < size {
            let end = (at + CHUNK).min(size);
            let bytes = reader.read(at..end).await.map_err(|e| failed(e.to_string()))?;
            if bytes.is_empty() {
                return Err(failed(format!("the object ended at byte {at} of {size}")));
            }
            copy.write_all(&bytes).map_err(|e| failed(e.to_string()))?;
            at += bytes.len() as u64;
        }
        Ok(())
    })?;
    copy.rewind().map_err(|e| failed(e.to_string()))?;
    Ok(copy)
}

/// Copies the local file `from` to the object `location`.
pub fn upload(runtime: &tokio::runtime::Runtime, io: &FileIO, from: &Path, location: &str) -> Result<(), TableError> {
    let failed = |e: String| TableError::Io(std::io::Error::other(format!("uploading to {location}: {e}")));
    let mut file = File::open(from).map_err(|e| failed(format!("{}: {e}", from.display())))?;
    runtime.block_on(async {
        let output = io.new_output(location).map_err(|e| failed(e.to_string()))?;
        let mut writer = output.writer().await.map_err(|e| failed(e.to_string()))?;
        loop {
            let mut chunk = Vec::with_capacity(CHUNK as usize);
            let n = (&mut file).take(CHUNK).read_to_end(&mut chunk).map_err(|e| failed(e.to_string()))?;
            if n == 0 {
                break;
            }
            writer.write(Bytes::from(chunk)).await.map_err(|e| failed(e.to_string()))?;
        }
        writer.close().await.map_err(|e| failed(e.to_string()))
    })
}

#[cfg(test)]
mod tests {
    use super::local_path;
    use std::path::PathBuf;

    #[test]
    fn locations() {
        assert_eq!(local_path("/w/t/data/a.parquet"), Some(PathBuf::from("/w/t/data/a.parquet")));
        assert_eq!(local_path("file:///w/a"), Some(PathBuf::from("/w/a")));
        assert_eq!(local_path("file:/w/a"), Some(PathBuf::from("/w/a")));
        assert_eq!(local_path("s3://bucket/w/a"), None);
        assert_eq!(local_path("s3a://bucket/w"), None);
        assert_eq!(local_path("gs://bucket"), None);
        // Not a scheme: a relative directory with "://" further on.
        assert_eq!(local_path("a b://c"), Some(PathBuf::from("a b://c")));
    }
}
