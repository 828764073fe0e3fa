//! Framed record files, Monolith PBDataset style without headers: each record
//! is a u64 little-endian length followed by that many bytes. `fex-client gen`
//! writes serialized ExampleBatches this way; `bench --file` replays them.

use std::io::{self, Read, Write};

/// 0xfefefefe marks a corrupt record in Monolith's framing.
const CORRUPT: u64 = 0xfefe_fefe;
/// Largest record accepted (a request above this could never be sent).
pub const MAX_RECORD: u64 = 1 << 30;

pub fn write_record(out: &mut impl Write, payload: &[u8]) -> io::Result<()> {
    out.write_all(&(payload.len() as u64).to_le_bytes())?;
    out.write_all(payload)
}

/// Splits a whole framed file into records, checking every length against what
/// remains before taking it.
pub fn parse_records(data: &[u8]) -> Result<Vec<&[u8]>, String> {
    let mut records = Vec::new();
    let mut at = 0usize;
    while at < data.len() {
        let Some(header) = data.get(at..at + 8) else {
            return Err(format!("record {} at byte {at}: truncated length header", records.len()));
        };
        let len = u64::from_le_bytes(header.try_into().expect("8 bytes"));
        if len == CORRUPT || len > MAX_RECORD {
            return Err(format!("record {} at byte {at}: bad length {len:#x}", records.len()));
        }
        let start = at + 8;
        let remaining = data.len() - start;
        if len as usize > remaining {
            return Err(format!(
                "record {} at byte {at}: length {len} but only {remaining} bytes remain",
                records.len()
            ));
        }
        records.push(&data[start..start + len as usize]);
        at = start + len as usize;
    }
    Ok(records)
}

/// Reads every record of a framed file.
pub fn read_file(path: &std::path::Path) -> anyhow::Result<Vec<bytes::Bytes>> {
    let mut data = Vec::new();
    std::fs::File::open(path)?.read_to_end(&mut data)?;
    let records = parse_records(&data).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    Ok(records.into_iter().map(bytes::Bytes::copy_from_slice).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_errors() {
        let mut buf = Vec::new();
        write_record(&mut buf, b"abc").unwrap();
        write_record(&mut buf, b"").unwrap();
        assert_eq!(parse_records(&buf).unwrap(), [&b"abc"[..], b""]);
        assert_eq!(parse_records(&buf[..5]).unwrap_err(), "record 0 at byte 0: truncated length header");
        assert_eq!(parse_records(&buf[..10]).unwrap_err(), "record 0 at byte 0: length 3 but only 2 bytes remain");
        let corrupt = CORRUPT.to_le_bytes();
        assert!(parse_records(&corrupt).unwrap_err().contains("bad length 0xfefefefe"));
    }
}
