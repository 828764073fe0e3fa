//! Framed request files, read and written through the library's PBDataset
//! record reader (`fex::records`): each record is a u64 little-endian length
//! and that many bytes, optionally compressed as a whole. `fex-client gen`
//! writes serialized ExampleBatches this way; `bench --file` and `extract`
//! replay them.

use std::path::Path;

use fex::records::{ReadOptions, RecordReader};

pub use fex::records::write_record;

/// Reads every record of a framed file (or `-`, standard input). The
/// requests are kept in memory to be replayed, so the whole file is.
pub fn read_file(path: &Path) -> anyhow::Result<Vec<bytes::Bytes>> {
    let mut reader = RecordReader::open(path, ReadOptions::default(), None)?;
    let mut records = Vec::new();
    let mut buf = Vec::new();
    while reader.next_into(&mut buf)?.is_some() {
        records.push(bytes::Bytes::copy_from_slice(&buf));
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("requests.bin");
        let mut buf = Vec::new();
        write_record(&mut buf, b"abc").unwrap();
        write_record(&mut buf, b"").unwrap();
        std::fs::write(&path, &buf).unwrap();
        assert_eq!(read_file(&path).unwrap(), [&b"abc"[..], b""]);
        std::fs::write(&path, &buf[..10]).unwrap();
        let err = read_file(&path).unwrap_err().to_string();
        assert!(err.ends_with("record 0 at byte 0: truncated record: expected 3 bytes, found 2"), "{err}");
        std::fs::write(&path, 0xfefe_fefeu64.to_le_bytes()).unwrap();
        assert!(read_file(&path).unwrap_err().to_string().contains("0xfefefefe"));
    }
}
