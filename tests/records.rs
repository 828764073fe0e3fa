//! The PBDataset record reader against streams built by hand, byte by byte,
//! as Monolith's reader expects them. The framing rules come from
//! bytedance/monolith `monolith/native_training/data/training_instance/cc/
//! data_reader.h` (`ReadPBBytes` lines 77-87, `ReadDataHeader` lines 92-129)
//! and `data_reader.cc` (`ReadNBytes` lines 486-501: no bytes at all is the
//! end, some bytes a truncated record).

use std::io::Write;

use fex::records::{
    Compression, Framing, ReadOptions, RecordError, RecordErrorKind, RecordMeta, RecordReader, write_record,
};

fn u64le(v: u64) -> [u8; 8] {
    v.to_le_bytes()
}

fn options(framing: Framing) -> ReadOptions {
    ReadOptions { framing, ..ReadOptions::default() }
}

/// Every record of a stream, or the first error with the records before it.
fn read_all(bytes: Vec<u8>, options: ReadOptions) -> (Vec<(RecordMeta, Vec<u8>)>, Option<RecordError>) {
    let mut reader = RecordReader::new("test.bin", std::io::Cursor::new(bytes), options).unwrap();
    let mut out = Vec::new();
    loop {
        let mut buf = Vec::new();
        match reader.next_into(&mut buf) {
            Ok(Some(meta)) => out.push((meta, buf)),
            Ok(None) => return (out, None),
            Err(e) => return (out, Some(e)),
        }
    }
}

fn payloads(records: &[(RecordMeta, Vec<u8>)]) -> Vec<&[u8]> {
    records.iter().map(|(_, p)| p.as_slice()).collect()
}

fn plain(records: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for r in records {
        write_record(&mut out, r).unwrap();
    }
    out
}

#[test]
fn plain_records_carry_index_offset_and_length() {
    let (records, err) = read_all(plain(&[b"abc", b"", b"de"]), ReadOptions::default());
    assert!(err.is_none());
    assert_eq!(payloads(&records), [&b"abc"[..], b"", b"de"]);
    let metas: Vec<(u64, u64, usize)> = records.iter().map(|(m, _)| (m.index, m.offset, m.len)).collect();
    assert_eq!(metas, [(0, 0, 3), (1, 11, 0), (2, 19, 2)]);
}

#[test]
fn lagrangex_header_gives_pb_type_and_data_source_key() {
    // data_reader.h lines 97-103: pb_type is the low byte; the data source
    // key is the low 32 bits with the low byte cleared.
    let header = 0x1234_5678_9abc_de07u64;
    let mut bytes = u64le(header).to_vec();
    bytes.extend(plain(&[b"xyz"]));
    let (records, err) = read_all(bytes, options(Framing { lagrangex_header: true, ..Framing::default() }));
    assert!(err.is_none(), "{err:?}");
    let (meta, payload) = &records[0];
    assert_eq!((meta.pb_type, meta.data_source_key, payload.as_slice()), (0x07, 0x9abc_de00, &b"xyz"[..]));
}

#[test]
fn lagrangex_header_ignores_the_other_options() {
    // data_reader.h line 97: the other options sit in the `else` branch.
    let framing = Framing { lagrangex_header: true, has_sort_id: true, kafka_dump: true, kafka_dump_prefix: true };
    let mut bytes = u64le(1).to_vec();
    bytes.extend(plain(&[b"p"]));
    let (records, err) = read_all(bytes, options(framing));
    assert!(err.is_none());
    assert_eq!(payloads(&records), [b"p"]);
}

#[test]
fn has_sort_id_skips_a_length_and_its_bytes() {
    // data_reader.h lines 114-122.
    let mut bytes = Vec::new();
    for (sort_id, payload) in [(&b"sort-1"[..], &b"one"[..]), (b"", b"two")] {
        bytes.extend(u64le(sort_id.len() as u64));
        bytes.extend(sort_id);
        bytes.extend(plain(&[payload]));
    }
    let (records, err) = read_all(bytes, options(Framing { has_sort_id: true, ..Framing::default() }));
    assert!(err.is_none(), "{err:?}");
    assert_eq!(payloads(&records), [&b"one"[..], b"two"]);
    assert_eq!(records[1].0.offset, 8 + 6 + 8 + 3);
}

#[test]
fn kafka_dump_prefix_zero_skips_one_word_nonzero_is_the_sort_id_length() {
    // data_reader.h lines 106-113 and 114-119: a nonzero prefix is the
    // sort_id's length, so has_sort_id reads no length of its own.
    let framing = Framing { kafka_dump_prefix: true, has_sort_id: true, ..Framing::default() };
    let mut bytes = Vec::new();
    // Prefix 0: one more u64 skipped, then has_sort_id reads its length (2).
    bytes.extend(u64le(0));
    bytes.extend(u64le(0xdead));
    bytes.extend(u64le(2));
    bytes.extend(b"id");
    bytes.extend(plain(&[b"first"]));
    // Prefix 3: the sort_id is 3 bytes, no length word.
    bytes.extend(u64le(3));
    bytes.extend(b"abc");
    bytes.extend(plain(&[b"second"]));
    let (records, err) = read_all(bytes, options(framing));
    assert!(err.is_none(), "{err:?}");
    assert_eq!(payloads(&records), [&b"first"[..], b"second"]);
}

#[test]
fn kafka_dump_prefix_alone_and_kafka_dump_skip_words() {
    let mut bytes = Vec::new();
    bytes.extend(u64le(5)); // prefix (a sort_id length nobody reads)
    bytes.extend(u64le(99)); // kafka_dump word, data_reader.h lines 123-125
    bytes.extend(plain(&[b"rec"]));
    let framing = Framing { kafka_dump_prefix: true, kafka_dump: true, ..Framing::default() };
    let (records, err) = read_all(bytes, options(framing));
    assert!(err.is_none(), "{err:?}");
    assert_eq!(payloads(&records), [b"rec"]);
}

#[test]
fn corrupt_length_is_an_error_naming_the_record() {
    // data_reader.h lines 81-84: "DEADBEEF value found".
    let mut bytes = plain(&[b"ok"]);
    bytes.extend(u64le(0xfefe_fefe));
    bytes.extend([0u8; 16]);
    let (records, err) = read_all(bytes, ReadOptions::default());
    assert_eq!(records.len(), 1);
    let err = err.expect("an error");
    assert!(matches!(err.kind(), RecordErrorKind::CorruptLength));
    assert_eq!((err.index(), err.offset()), (1, 10));
    assert_eq!(err.to_string(), "test.bin: record 1 at byte 10: corrupt record: length is 0xfefefefe");
}

#[test]
fn truncated_last_record_and_truncated_length_are_errors() {
    let mut bytes = plain(&[b"ok", b"cut short"]);
    bytes.truncate(bytes.len() - 4);
    let (records, err) = read_all(bytes, ReadOptions::default());
    assert_eq!(records.len(), 1);
    assert_eq!(err.unwrap().to_string(), "test.bin: record 1 at byte 10: truncated record: expected 9 bytes, found 5");

    let mut bytes = plain(&[b"ok"]);
    bytes.extend([1, 0, 0]);
    let (_, err) = read_all(bytes, ReadOptions::default());
    assert_eq!(err.unwrap().to_string(), "test.bin: record 1 at byte 10: truncated header: expected 8 bytes, found 3");
}

#[test]
fn a_header_then_nothing_is_truncated_not_the_end() {
    let mut bytes = u64le(4).to_vec();
    bytes.extend(b"sort");
    let (records, err) = read_all(bytes, options(Framing { has_sort_id: true, ..Framing::default() }));
    assert!(records.is_empty());
    assert_eq!(err.unwrap().to_string(), "test.bin: record 0 at byte 0: truncated length: expected 8 bytes, found 0");
}

#[test]
fn lengths_over_the_limit_are_refused_before_anything_is_allocated() {
    let mut bytes = u64le(2 << 20).to_vec();
    bytes.extend(b"tiny");
    let (_, err) = read_all(bytes, ReadOptions { max_record_bytes: 1 << 20, ..ReadOptions::default() });
    let err = err.unwrap();
    assert!(matches!(err.kind(), RecordErrorKind::TooLarge { .. }));
    assert!(err.to_string().contains("over the limit of 1048576 bytes (raise it with --max-record-bytes)"), "{err}");

    let mut bytes = u64le(200 << 20).to_vec();
    bytes.extend(plain(&[b"x"]));
    let options =
        ReadOptions { max_record_bytes: 1 << 20, ..options(Framing { has_sort_id: true, ..Framing::default() }) };
    let (_, err) = read_all(bytes, options);
    assert!(err.unwrap().to_string().contains("sort_id of 209715200 bytes is over the limit"));
}

/// Issue 21: a length no protobuf message can have (over 2 GiB) is not a
/// record to raise the limit for: the stream is compressed or framed
/// otherwise than it is read, and the error says so.
#[test]
fn a_length_no_message_can_have_points_at_framing_and_compression() {
    for (bytes, framing, what) in [
        (u64le(15_000_000_000_000_000_000).to_vec(), Framing::default(), "record of 15000000000000000000 bytes"),
        (
            [u64le(1 << 40), u64le(1)].concat(),
            Framing { has_sort_id: true, ..Framing::default() },
            "sort_id of 1099511627776 bytes",
        ),
    ] {
        let (_, err) = read_all(bytes, options(framing));
        let err = err.unwrap();
        assert!(matches!(err.kind(), RecordErrorKind::NotALength { .. }), "{err}");
        let message = err.to_string();
        assert!(message.contains(&format!("{what} cannot be right (a protobuf message is under 2 GiB)")), "{message}");
        assert!(message.contains("check --compression and the header flags"), "{message}");
        assert!(!message.contains("--max-record-bytes"), "raising the limit cannot help: {message}");
    }
}

#[test]
fn after_an_error_the_stream_is_done() {
    let mut bytes = u64le(0xfefe_fefe).to_vec();
    bytes.extend(plain(&[b"after"]));
    let mut reader = RecordReader::new("s", std::io::Cursor::new(bytes), ReadOptions::default()).unwrap();
    let mut buf = Vec::new();
    assert!(reader.next_into(&mut buf).is_err());
    assert!(reader.next_into(&mut buf).unwrap().is_none());
}

fn records_for_compression() -> (Vec<u8>, Vec<Vec<u8>>) {
    let payloads: Vec<Vec<u8>> = (0..50u8).map(|i| vec![i; usize::from(i) * 37]).collect();
    let refs: Vec<&[u8]> = payloads.iter().map(Vec::as_slice).collect();
    (plain(&refs), payloads)
}

fn check_compressed(compressed: Vec<u8>, compression: Compression, expected: &[Vec<u8>]) {
    let (records, err) = read_all(compressed, ReadOptions { compression, ..ReadOptions::default() });
    assert!(err.is_none(), "{compression:?}: {err:?}");
    assert_eq!(records.iter().map(|(_, p)| p.clone()).collect::<Vec<_>>(), expected, "{compression:?}");
}

#[test]
fn zstd_gzip_and_snappy_streams_by_flag_and_by_magic() {
    let (raw, expected) = records_for_compression();
    let zstd = zstd::encode_all(raw.as_slice(), 3).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&raw).unwrap();
    let gzip = gz.finish().unwrap();
    let mut framed = snap::write::FrameEncoder::new(Vec::new());
    framed.write_all(&raw).unwrap();
    let framed = framed.into_inner().unwrap();
    for (bytes, flag) in [(zstd, Compression::Zstd), (gzip, Compression::Gzip), (framed, Compression::SnappyFramed)] {
        check_compressed(bytes.clone(), flag, &expected);
        check_compressed(bytes, Compression::Auto, &expected);
    }
    check_compressed(raw.clone(), Compression::Auto, &expected);
    // Monolith's own snappy has no magic number: by flag (or `.snappy` name).
    check_compressed(fex::records::encode_snappy_blocks(&raw, 1000), Compression::Snappy, &expected);
}

#[test]
fn concatenated_gzip_members_are_one_stream() {
    let (raw, expected) = records_for_compression();
    let (a, b) = raw.split_at(raw.len() / 2);
    let mut bytes = Vec::new();
    for part in [a, b] {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(part).unwrap();
        bytes.extend(gz.finish().unwrap());
    }
    check_compressed(bytes, Compression::Auto, &expected);
}

#[test]
fn a_dot_snappy_file_is_monolith_snappy_and_offsets_are_decompressed_bytes() {
    let (raw, expected) = records_for_compression();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("part-0.snappy");
    std::fs::write(&path, fex::records::encode_snappy_blocks(&raw, 4096)).unwrap();
    let mut reader = RecordReader::open(&path, ReadOptions::default(), None).unwrap();
    let mut buf = Vec::new();
    let mut n = 0;
    let mut offset = 0;
    while let Some(meta) = reader.next_into(&mut buf).unwrap() {
        assert_eq!((buf.as_slice(), meta.offset), (expected[n].as_slice(), offset));
        offset += 8 + buf.len() as u64;
        n += 1;
    }
    assert_eq!(n, expected.len());
}

#[test]
fn corrupt_compressed_data_is_an_error_with_the_record() {
    let (raw, _) = records_for_compression();
    let mut zstd = zstd::encode_all(raw.as_slice(), 3).unwrap();
    let half = zstd.len() / 2;
    zstd.truncate(half);
    let (records, err) = read_all(zstd, ReadOptions::default());
    let err = err.expect("an error");
    assert_eq!(err.index(), records.len() as u64, "the error names the record it stopped in");

    let mut blocks = fex::records::encode_snappy_blocks(&raw, 1000);
    blocks[0..4].copy_from_slice(&u32::MAX.to_be_bytes());
    let (_, err) = read_all(blocks, ReadOptions { compression: Compression::Snappy, ..ReadOptions::default() });
    assert!(err.unwrap().to_string().contains("snappy block of 4294967295 bytes is over the limit"));
}

fn zlib(bytes: &[u8]) -> Vec<u8> {
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(bytes).unwrap();
    z.finish().unwrap()
}

/// Issue 21: Monolith's compression type 4 is one zlib stream, read by
/// TensorFlow's `ZlibInputStream` with `ZlibCompressionOptions::DEFAULT()`
/// (monolith/native_training/data/training_instance/cc/data_reader.cc lines
/// 459-468; `InputCompressType::ZLIB = 4`, data_reader.h line 186). By flag,
/// and by its header when the stream decodes.
#[test]
fn zlib_streams_by_flag_and_by_header() {
    let (raw, expected) = records_for_compression();
    let compressed = zlib(&raw);
    assert_eq!(compressed[0], 0x78);
    check_compressed(compressed.clone(), Compression::Zlib, &expected);
    check_compressed(compressed.clone(), Compression::Auto, &expected);
    assert_eq!(Compression::parse("zlib"), Some(Compression::Zlib));

    // A truncated stream, and one followed by more bytes (a second stream,
    // which Monolith's reader does not read), are zlib errors.
    for (bytes, says) in [
        (compressed[..compressed.len() - 9].to_vec(), "zlib stream: incomplete deflate stream"),
        ([compressed.clone(), compressed.clone()].concat(), "zlib stream: the stream ends at compressed byte"),
    ] {
        for compression in [Compression::Zlib, Compression::Auto] {
            let (_, err) = read_all(bytes.clone(), ReadOptions { compression, ..ReadOptions::default() });
            let err = err.expect("an error");
            assert!(matches!(err.kind(), RecordErrorKind::Compression(_)), "{err}");
            assert!(err.to_string().contains(says), "{err}");
        }
    }
}

/// A record of 376, 24184, 40056 or 55928 bytes starts its length with a
/// valid zlib header (78 01, 78 5e, 78 9c, 78 da): `auto` must read such a
/// stream uncompressed, since it does not decode as zlib.
#[test]
fn a_length_that_looks_like_a_zlib_header_is_read_uncompressed() {
    for len in [0x0178usize, 0x5e78, 0x9c78, 0xda78] {
        let payloads = [vec![0x0a; len], b"next".to_vec()];
        let bytes = plain(&[&payloads[0], &payloads[1]]);
        assert_eq!(Compression::sniff(&bytes), Compression::Zlib, "{len:#x} looks like zlib");
        let (records, err) = read_all(bytes, ReadOptions::default());
        assert!(err.is_none(), "{len:#x}: {err:?}");
        assert_eq!(payloads.to_vec(), records.into_iter().map(|(_, p)| p).collect::<Vec<_>>());
    }
}

/// Issue 21: a lagrangex header of pb type 0x1f and data source key 0x088b00
/// starts `1f 8b 08`, gzip's magic number; `auto` reads it uncompressed
/// (data_reader.h lines 97-103 read the header).
#[test]
fn a_lagrangex_header_that_starts_like_gzip_is_not_gzip() {
    let payload = fex::proto::monolith_pb::ExampleBatch { batch_size: 1, ..Default::default() };
    let payload = prost::Message::encode_to_vec(&payload);
    let mut bytes = Vec::new();
    for _ in 0..2 {
        bytes.extend(u64le(0x0008_8b1f));
        write_record(&mut bytes, &payload).unwrap();
    }
    assert!(bytes.starts_with(&[0x1f, 0x8b, 0x08, 0x00]));
    let (records, err) = read_all(bytes, options(Framing { lagrangex_header: true, ..Framing::default() }));
    assert!(err.is_none(), "{err:?}");
    assert_eq!(records.len(), 2);
    assert_eq!((records[0].0.pb_type, records[0].0.data_source_key), (0x1f, 0x0008_8b00));
    assert_eq!(records[1].1, payload);
}

/// Issue 21: a gzip file whose deflate data is corrupt is a gzip error (it
/// was a failure to read the file, or a record of 1.5e19 bytes).
#[test]
fn a_corrupt_gzip_stream_is_a_gzip_error() {
    let (raw, _) = records_for_compression();
    let mut gz = flate2::GzBuilder::new().mtime(1_700_000_000).write(Vec::new(), flate2::Compression::default());
    gz.write_all(&raw).unwrap();
    let mut gzip = gz.finish().unwrap();
    for b in &mut gzip[10..40] {
        *b = 0xff;
    }
    for compression in [Compression::Gzip, Compression::Auto] {
        let (_, err) = read_all(gzip.clone(), ReadOptions { compression, ..ReadOptions::default() });
        let err = err.expect("an error");
        assert!(matches!(err.kind(), RecordErrorKind::Compression(_)), "{compression:?}: {err}");
        assert!(err.to_string().contains("gzip stream: "), "{err}");
    }
}

/// Issue 21: a file with Monolith's default sort_id header (FilePBDataset's
/// `has_sort_id` defaults to True, monolith/native_training/data/datasets.py
/// line 525) is found to read with --has-sort-id and no other way but the
/// kafka prefix's equivalent.
#[test]
fn framings_that_read_find_the_sort_id_header() {
    let payload = fex::proto::monolith_pb::ExampleBatch { batch_size: 2, ..Default::default() };
    let payload = prost::Message::encode_to_vec(&payload);
    let mut bytes = Vec::new();
    for i in 0..4 {
        let sort_id = format!("sort-{i:04}");
        bytes.extend(u64le(sort_id.len() as u64));
        bytes.extend(sort_id.as_bytes());
        write_record(&mut bytes, &payload).unwrap();
    }
    let sort_id = Framing { has_sort_id: true, ..Framing::default() };
    let found = fex::offline::framings_that_read(&bytes, true, 1 << 20);
    assert_eq!(found, [sort_id, Framing { kafka_dump_prefix: true, ..sort_id }]);
    assert_eq!(found[0].flags(), "--has-sort-id");
    // Plain records read with no header flags first (an even number of them
    // also reads as sort_ids and records, taken in turns).
    let found = fex::offline::framings_that_read(&plain(&[&payload, &payload]), true, 1 << 20);
    assert_eq!(found[0], Framing::default());
}

#[test]
fn sources_expand_globs_directories_and_stdin_in_order() {
    let dir = tempfile::tempdir().unwrap();
    // Hidden files are files being written: never read.
    for name in ["b.bin", "a.bin", "c.txt", ".d.bin", ".part-0.inprogress"] {
        std::fs::write(dir.path().join(name), b"").unwrap();
    }
    let d = dir.path().display().to_string();
    let found = fex::records::sources::expand(&[format!("{d}/*.bin"), "-".into(), d.clone()]).unwrap();
    let names: Vec<String> =
        found.iter().map(|p| p.file_name().map_or("-".into(), |n| n.to_string_lossy().into_owned())).collect();
    assert_eq!(names, ["a.bin", "b.bin", "-", "a.bin", "b.bin", "c.txt"]);
    let err = fex::records::sources::expand(&[format!("{d}/*.zst")]).unwrap_err();
    assert!(err.ends_with("no file matches this pattern"), "{err}");
}
