//! What to try when a stream's first record does not read: the header flags
//! under which its first records are well-formed protobuf messages, and the
//! compression its first bytes show. The common case is a file written for
//! Monolith's FilePBDataset, which reads a sort_id before each record unless
//! told otherwise (monolith/native_training/data/datasets.py line 525:
//! `has_sort_id` defaults to `_get_params('sort_id', True)`), read with no
//! header flags: the sort_id's bytes are then taken for the first record and
//! fail to decode ("truncated varint") with nothing to say why.

use std::io::{Cursor, Read};
use std::path::Path;

use crate::records::{self, Compression, Framing, ReadOptions, RecordErrorKind, RecordReader, codec};
use crate::wire::Reader;

/// Every distinct set of header options, fewest flags first: a lagrangex
/// header makes Monolith ignore the others, so it stands alone.
pub const FRAMINGS: [Framing; 9] = {
    const fn f(lagrangex_header: bool, kafka_dump_prefix: bool, has_sort_id: bool, kafka_dump: bool) -> Framing {
        Framing { lagrangex_header, kafka_dump_prefix, has_sort_id, kafka_dump }
    }
    [
        f(false, false, false, false),
        f(false, false, true, false),
        f(false, false, false, true),
        f(false, true, false, false),
        f(true, false, false, false),
        f(false, false, true, true),
        f(false, true, true, false),
        f(false, true, false, true),
        f(false, true, true, true),
    ]
};

/// Records read per framing to call it a fit.
const RECORDS: usize = 3;
/// Decompressed bytes read for the hint.
const DATA_BYTES: usize = 4 << 20;
/// Raw bytes read to look at the compression.
const HEAD_BYTES: usize = 64 << 10;

impl Framing {
    /// The `fex extract` flags that ask for this framing.
    pub fn flags(&self) -> String {
        let flags: Vec<&str> = [
            (self.lagrangex_header, "--lagrangex-header"),
            (self.kafka_dump_prefix, "--kafka-dump-prefix"),
            (self.has_sort_id, "--has-sort-id"),
            (self.kafka_dump, "--kafka-dump"),
        ]
        .into_iter()
        .filter_map(|(on, flag)| on.then_some(flag))
        .collect();
        if flags.is_empty() { "no header flags".into() } else { flags.join(" ") }
    }
}

/// The framings (of [`FRAMINGS`], in its order) under which `data`, a
/// stream's first bytes decompressed (`whole`: all of it), starts with
/// records that are well-formed protobuf messages, at least one not empty:
/// its first three, or all of them up to the end (of the stream, or of
/// `data` when the stream goes on).
pub fn framings_that_read(data: &[u8], whole: bool, max_record_bytes: u64) -> Vec<Framing> {
    FRAMINGS.into_iter().filter(|&framing| reads(data, whole, framing, max_record_bytes)).collect()
}

fn reads(data: &[u8], whole: bool, framing: Framing, max_record_bytes: u64) -> bool {
    let options = ReadOptions { framing, compression: Compression::None, max_record_bytes };
    let Ok(mut reader) = RecordReader::new("", Cursor::new(data.to_vec()), options) else {
        return false;
    };
    let (mut records, mut filled) = (0, false);
    let mut payload = Vec::new();
    while records < RECORDS {
        match reader.next_into(&mut payload) {
            Ok(Some(_)) if well_formed(&payload) => {
                records += 1;
                filled |= !payload.is_empty();
            }
            Ok(Some(_)) => return false,
            Ok(None) => break,
            // Where `data` was cut off, not where the stream ends.
            Err(e) if !whole && matches!(e.kind(), RecordErrorKind::Truncated { .. }) => break,
            Err(_) => return false,
        }
    }
    records > 0 && filled
}

/// Whether `payload` is a sequence of protobuf fields, each whole.
fn well_formed(payload: &[u8]) -> bool {
    let mut r = Reader::new(payload, 0);
    while !r.is_empty() {
        match r.key() {
            Ok((field, wire)) if r.skip(field, wire).is_ok() => {}
            _ => return false,
        }
    }
    true
}

/// What to try for `path`, whose first record did not read or decode with
/// `options`: the compression its first bytes show, when it is not the one
/// used; otherwise the header flags that read its first records, when the
/// given ones do not. `None` when there is nothing to suggest (or `path` is
/// standard input, which cannot be read again).
pub fn hint(path: &Path, options: ReadOptions) -> Option<String> {
    if path.as_os_str() == "-" {
        return None;
    }
    let name = path.display().to_string();
    let options = records::for_name(&name, options);
    let mut raw = Vec::new();
    std::fs::File::open(path).ok()?.take(HEAD_BYTES as u64).read_to_end(&mut raw).ok()?;
    // Under another compression than the file's, what the records look
    // like says nothing about their framing.
    if let Some(note) = compression_note(&raw, raw.len() < HEAD_BYTES, options.compression) {
        return Some(note);
    }
    // A gzip or zlib header that does not decode was named above: here one
    // is taken only when it decodes.
    let file = std::fs::File::open(path).ok()?;
    let stream = codec::decoder(&name, Box::new(file), options.compression, &|_| true).ok()?;
    let mut data = Vec::new();
    let whole = stream.take(DATA_BYTES as u64).read_to_end(&mut data).is_ok() && data.len() < DATA_BYTES;
    framing_note(&data, whole, options)
}

/// The compression the first bytes show, when it is not the one in use.
fn compression_note(raw: &[u8], whole: bool, given: Compression) -> Option<String> {
    let found = Compression::sniff(raw);
    let decoded = codec::decodes(found, raw, whole);
    match (given, found) {
        (_, Compression::None) => None,
        (Compression::Auto, Compression::Gzip | Compression::Zlib) => decoded
            .err()
            .map(|e| format!("the file starts with a {} header but does not decompress as {0} ({e})", found.name())),
        (Compression::Auto, _) => None,
        (given, found) if given != found && decoded.is_ok() => {
            Some(format!("the file starts like a {} stream: try --compression {0}", found.name()))
        }
        _ => None,
    }
}

/// The header flags that read the first records, when the given ones do not.
fn framing_note(data: &[u8], whole: bool, options: ReadOptions) -> Option<String> {
    if data.is_empty() {
        return None;
    }
    let fits = framings_that_read(data, whole, options.max_record_bytes);
    if fits.contains(&options.framing) {
        return None;
    }
    let Some((first, rest)) = fits.split_first() else {
        return Some(format!(
            "its first records are not protobuf messages under any header flags (read here with {})",
            options.framing.flags()
        ));
    };
    let mut note =
        format!("its first records read with {} (read here with {})", first.flags(), options.framing.flags());
    if !rest.is_empty() {
        let others: Vec<String> = rest.iter().map(Framing::flags).collect();
        note += &format!(", or with {}", others.join(", or "));
    }
    if first.has_sort_id && !options.framing.has_sort_id {
        note += "; Monolith's FilePBDataset reads a sort_id unless told has_sort_id=False (datasets.py line 525)";
    }
    Some(note)
}
