//! The offline pipeline through the library (what the `fex` command and the
//! Python binding call): the transforms hook sees each record's rows in
//! order and may drop rows or append rows of samples it keeps itself; bad
//! records are counted under `OnError::Skip` and stop the run under `Fail`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use fex::offline::{self, Carry, CollectSink, OnError, Options, Quiet, RecordCtx, RowsHook, RunError};
use fex::records::write_record;
use fex::{Extractor, Input, Plan, Rows};

const MODEL: &str = "name: m\nfeatures:\n  - {name: ids, kind: sparse}\n";
/// The same list as a second output too (a keyed-jagged one): a table of
/// several fields, whose row groups are encoded a field at a time.
const WIDE_MODEL: &str = "name: m\nfeatures:\n  - {name: ids, kind: sparse}\n  - {name: kjt, op: kjt, inputs: [ids]}\n";

/// A batch of `rows` rows whose row r holds the one fid `base + r`.
fn batch(base: u64, rows: u64) -> Vec<u8> {
    let features: Vec<String> = (0..rows).map(|r| format!("          - fid_v2_list: [{}]\n", base + r)).collect();
    let yaml = format!(
        "batch_size: {rows}\nlists:\n  - name: ids\n    features:\n{}",
        features.join("").replace("          -", "      -")
    );
    fex::corpus::Batch::from_yaml(&yaml).unwrap().encode().unwrap()
}

fn file(records: &[Vec<u8>]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.bin");
    let mut framed = Vec::new();
    for r in records {
        write_record(&mut framed, r).unwrap();
    }
    std::fs::write(&path, framed).unwrap();
    (dir, path)
}

fn ids(sink: &CollectSink) -> Vec<Vec<i64>> {
    use arrow_array::Array;
    use arrow_array::cast::AsArray;
    let mut out = Vec::new();
    for b in &sink.batches {
        let list = b.column(0).as_list::<i64>();
        for r in 0..list.len() {
            let v = list.value(r);
            out.push(v.as_primitive::<arrow_array::types::Int64Type>().values().to_vec());
        }
    }
    out
}

/// Drops odd fids; appends, after each record's rows, a row of a sample it
/// keeps (as an item pool would).
struct DropOddAddPooled {
    /// A row of the hook's own, owned: appended after each record's rows.
    pool: Rows<'static>,
    seen: std::sync::Mutex<Vec<u64>>,
    dropped: AtomicU64,
}

impl RowsHook for DropOddAddPooled {
    fn each(&self, _record: &RecordCtx<'_>, rows: &mut Rows<'_>) -> Result<Carry, fex::ExtractError> {
        let before = rows.len();
        rows.retain(|r| r % 2 == 0);
        self.dropped.fetch_add((before - rows.len()) as u64, Ordering::Relaxed);
        // What each read for in_order: the rows it kept.
        Ok(Some(Box::new(rows.len())))
    }

    fn in_order<'a>(
        &self,
        record: &RecordCtx<'_>,
        mut rows: Rows<'a>,
        carry: Carry,
    ) -> Result<Vec<Rows<'a>>, fex::ExtractError> {
        assert_eq!(carry.and_then(|c| c.downcast::<usize>().ok()).map(|n| *n), Some(rows.len()));
        self.seen.lock().unwrap().push(record.index);
        rows.push_row(&self.pool, 0).expect("same plan, same kind");
        Ok(vec![rows])
    }

    fn counts(&self) -> Vec<(String, u64)> {
        vec![("drop_odd: dropped".into(), self.dropped.load(Ordering::Relaxed))]
    }
}

#[test]
fn the_hook_drops_and_appends_rows_in_input_order() {
    let plan = Plan::from_yaml(MODEL).unwrap();
    let (_dir, path) = file(&[batch(10, 3), batch(20, 2)]);
    let pool = bytes::Bytes::from(batch(99, 1));
    let pool =
        Extractor::new().index(&plan, Input::Batch(&pool), None).unwrap().into_owned(std::slice::from_ref(&pool));
    let hook = DropOddAddPooled { pool, seen: Default::default(), dropped: AtomicU64::new(0) };
    let mut sink = CollectSink::default();
    let options = Options { threads: 4, chunk_records: 1, ..Options::default() };
    let summary = offline::run(&plan, &[path], options, &mut sink, Some(&hook), &Quiet).unwrap();
    assert_eq!(ids(&sink), [vec![10], vec![12], vec![99], vec![20], vec![99]]);
    assert_eq!(*hook.seen.lock().unwrap(), [0, 1]);
    assert_eq!((summary.records, summary.rows_written, summary.bad_records), (2, 5, 0));
    assert_eq!(summary.transforms, [("drop_odd: dropped".to_string(), 2)]);
}

#[test]
fn bad_records_are_skipped_or_stop_the_run() {
    let plan = Plan::from_yaml(MODEL).unwrap();
    let good = batch(1, 2);
    let bad = good[..good.len() - 1].to_vec();
    let (_dir, path) = file(&[good.clone(), bad, good.clone()]);
    let mut sink = CollectSink::default();
    let skip = Options { on_error: OnError::Skip, threads: 2, chunk_records: 1, ..Options::default() };
    let summary = offline::run(&plan, std::slice::from_ref(&path), skip, &mut sink, None, &Quiet).unwrap();
    assert_eq!((summary.records, summary.bad_records, summary.rows_written), (3, 1, 4));
    assert_eq!(ids(&sink), [vec![1], vec![2], vec![1], vec![2]]);

    let mut sink = CollectSink::default();
    let fail = Options { chunk_records: 1, threads: 2, ..Options::default() };
    match offline::run(&plan, &[path], fail, &mut sink, None, &Quiet) {
        Err(RunError::Bad(bad)) => {
            assert_eq!((bad.index, bad.offset), (1, 8 + good.len() as u64));
            assert!(matches!(bad.error, offline::BadError::Extract(_)), "{bad}");
        }
        other => panic!("expected the bad record, got {other:?}"),
    }
}

/// Says stop once it has seen `after` chunks written (progress is told once
/// per chunk written, in order).
struct StopAfter {
    after: u64,
    written: std::sync::atomic::AtomicU64,
    asked: std::sync::atomic::AtomicU64,
}

impl offline::Observer for StopAfter {
    fn progress(&self, _: &offline::Summary) {
        self.written.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    fn stop(&self) -> bool {
        self.asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.written.load(std::sync::atomic::Ordering::SeqCst) >= self.after
    }
}

#[test]
fn an_observer_stops_the_run_before_the_end_of_its_input() {
    let plan = Plan::from_yaml(MODEL).unwrap();
    let records: Vec<Vec<u8>> = (0..50).map(|i| batch(i * 10, 2)).collect();
    let (_dir, path) = file(&records);
    // One thread: chunks are read, extracted and written one after another,
    // so "stop after 3 written" stops before the fourth is read.
    let observer = StopAfter { after: 3, written: 0.into(), asked: 0.into() };
    let options = Options { chunk_records: 1, ..Options::default() };
    let mut sink = CollectSink::default();
    let result = offline::run(&plan, std::slice::from_ref(&path), options, &mut sink, None, &observer);
    assert!(matches!(result, Err(RunError::Stopped)), "{result:?}");
    assert_eq!(observer.asked.load(std::sync::atomic::Ordering::SeqCst), 4, "asked before each chunk read");
    assert_eq!(ids(&sink).len(), 6, "three records of two rows were written, nothing after");
    assert!(result.unwrap_err().to_string().contains("output is incomplete"));
    // Never asked to stop: the same run reads everything.
    let observer = StopAfter { after: u64::MAX, written: 0.into(), asked: 0.into() };
    let mut sink = CollectSink::default();
    let threads = Options { threads: 2, ..options };
    let summary = offline::run(&plan, &[path], threads, &mut sink, None, &observer).unwrap();
    assert_eq!(summary.rows_written, 100);
}

/// The model's `offline:` transforms as the hook (`samples::Transforms`):
/// `batch` groups rows across records, so rows are held back between
/// records, and the short last batch is written at the end of input
/// (`RowsHook::finish`) — after everything else, in order.
#[test]
fn transforms_batch_rows_across_records_and_flush_at_the_end() {
    let text = format!("{MODEL}offline:\n  transforms:\n    - {{transform: batch, batch_size: 4}}\n");
    let plan = Plan::from_yaml(&text).unwrap();
    let (_dir, path) = file(&[batch(10, 3), batch(20, 2), batch(30, 2)]);
    let transforms = fex::samples::Transforms::new(&plan);
    let mut sink = CollectSink::default();
    let summary = offline::run(&plan, &[path], Options::default(), &mut sink, Some(&transforms), &Quiet).unwrap();
    assert_eq!(ids(&sink), [[10], [11], [12], [20], [21], [30], [31]]);
    // The first record releases nothing; the second one batch of 4; the
    // rest (3 rows) comes at the end, as one batch.
    let sizes: Vec<usize> = sink.batches.iter().map(|b| b.num_rows()).filter(|&n| n > 0).collect();
    assert_eq!(sizes, [4, 3]);
    assert_eq!(summary.rows_written, 7);
    assert_eq!(summary.transforms, [("batch: dropped".to_string(), 0)]);
}

/// A file in memory the sink writes and the test reads.
#[derive(Clone, Default)]
struct Memory(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Memory {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Memory {
    fn bytes(&self) -> Vec<u8> {
        self.0.lock().unwrap().clone()
    }
}

#[test]
fn parquet_row_groups_are_exact_whoever_encodes_them() {
    use fex::offline::{ParquetOptions, ParquetSink, Prepared, Sink};
    use parquet::file::reader::{FileReader, SerializedFileReader};
    // 30 records of 1 to 7 rows in chunks of 2 records: row groups of 10
    // rows start and end inside chunks.
    let records: Vec<Vec<u8>> = (0..30).map(|i| batch(i * 100, 1 + i % 7)).collect();
    let rows: u64 = (0..30).map(|i| 1 + i % 7).sum();
    let (_dir, path) = file(&records);
    let plan = Plan::from_yaml(WIDE_MODEL).unwrap();
    let parquet = ParquetOptions { row_group_size: 10, ..ParquetOptions::default() };
    let options = |threads| Options { threads, chunk_records: 2, ..Options::default() };
    let through_run = |threads| {
        let out = Memory::default();
        let mut sink = ParquetSink::new(Box::new(out.clone()), &plan, parquet).unwrap();
        let summary = offline::run(&plan, std::slice::from_ref(&path), options(threads), &mut sink, None, &Quiet);
        assert_eq!(summary.unwrap().rows_written, rows);
        out.bytes()
    };
    // Encoded on the run's workers (one, two or three of them).
    let one = through_run(1);
    assert!(one == through_run(2) && one == through_run(3), "the file depends on the thread count");

    // The same batches given to the sink alone (no run, nobody helps: it
    // encodes on its own thread), and to the parquet crate's ArrowWriter
    // with the same properties: the same bytes.
    let mut collect = CollectSink::default();
    offline::run(&plan, std::slice::from_ref(&path), options(1), &mut collect, None, &Quiet).unwrap();
    let alone = Memory::default();
    let mut sink = ParquetSink::new(Box::new(alone.clone()), &plan, parquet).unwrap();
    for b in &collect.batches {
        sink.write(Prepared::Batch(b.clone())).unwrap();
    }
    sink.finish().unwrap();
    assert!(alone.bytes() == one, "the sink alone wrote another file");
    let mut kv: Vec<_> = offline::table::metadata(&plan)
        .into_iter()
        .map(|(k, v)| parquet::file::metadata::KeyValue::new(k, v))
        .collect();
    kv.sort_by(|a, b| a.key.cmp(&b.key));
    let props = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(10))
        .set_compression(parquet::basic::Compression::SNAPPY)
        .set_key_value_metadata(Some(kv))
        .set_created_by(format!("fex version {}", env!("CARGO_PKG_VERSION")))
        .set_dictionary_enabled(false)
        .build();
    let mut reference = Vec::new();
    let mut writer =
        parquet::arrow::ArrowWriter::try_new(&mut reference, collect.batches[0].schema(), Some(props)).unwrap();
    for b in &collect.batches {
        writer.write(b).unwrap();
    }
    writer.close().unwrap();
    assert!(reference == one, "parquet's ArrowWriter wrote another file");

    // Row groups of exactly 10 rows, the last one what is left; the rows
    // read back are the records' rows in order.
    let reader = SerializedFileReader::new(bytes::Bytes::from(one.clone())).unwrap();
    let groups: Vec<i64> = reader.metadata().row_groups().iter().map(|g| g.num_rows()).collect();
    let mut expected = vec![10; rows as usize / 10];
    expected.push(rows as i64 % 10);
    assert_eq!(groups, expected);
    let back: Vec<_> = parquet::arrow::arrow_reader::ParquetRecordBatchReader::try_new(bytes::Bytes::from(one), 64)
        .unwrap()
        .map(|b| b.unwrap())
        .collect();
    assert_eq!(ids(&CollectSink { batches: back }), ids(&collect));
    let want: Vec<Vec<i64>> =
        (0..30u64).flat_map(|i| (0..1 + i % 7).map(move |r| vec![(i * 100 + r) as i64])).collect();
    assert_eq!(ids(&collect), want);
}

#[test]
fn arrow_ipc_streams_are_arrow_ipcs_own_bytes_whoever_encodes_them() {
    use fex::offline::{IpcSink, Prepared, Sink};
    let records: Vec<Vec<u8>> = (0..30).map(|i| batch(i * 100, 1 + i % 7)).collect();
    let (_dir, path) = file(&records);
    let plan = Plan::from_yaml(MODEL).unwrap();
    let options = |threads| Options { threads, chunk_records: 2, ..Options::default() };
    // Messages encoded on the run's workers (one, two or three of them),
    // written with vectored writes to an output that takes one slice a call.
    let through_run = |threads| {
        let out = Memory::default();
        let mut sink = IpcSink::new(Box::new(out.clone()), &plan).unwrap();
        offline::run(&plan, std::slice::from_ref(&path), options(threads), &mut sink, None, &Quiet).unwrap();
        out.bytes()
    };
    let one = through_run(1);
    assert!(one == through_run(2) && one == through_run(3), "the stream depends on the thread count");

    // arrow-ipc's StreamWriter over the same batches writes the same bytes,
    // and so does the sink given the batches themselves.
    let mut collect = CollectSink::default();
    offline::run(&plan, std::slice::from_ref(&path), options(1), &mut collect, None, &Quiet).unwrap();
    let stream_writer = |batches: &[arrow_array::RecordBatch], schema: &arrow_schema::Schema| {
        let mut reference = Vec::new();
        let mut writer = arrow_ipc::writer::StreamWriter::try_new(&mut reference, schema).unwrap();
        for b in batches {
            writer.write(b).unwrap();
        }
        writer.finish().unwrap();
        drop(writer);
        reference
    };
    assert!(
        stream_writer(&collect.batches, &collect.batches[0].schema()) == one,
        "arrow-ipc's StreamWriter wrote another stream"
    );
    let alone = Memory::default();
    let mut sink = IpcSink::new(Box::new(alone.clone()), &plan).unwrap();
    for b in &collect.batches {
        sink.write(Prepared::Batch(b.clone())).unwrap();
    }
    sink.finish().unwrap();
    assert!(alone.bytes() == one, "the sink alone wrote another stream");

    // Read back: the records' rows in order.
    let back: Vec<_> = arrow_ipc::reader::StreamReader::try_new(std::io::Cursor::new(one), None)
        .unwrap()
        .map(|b| b.unwrap())
        .collect();
    assert_eq!(ids(&CollectSink { batches: back }), ids(&collect));

    // No input: the schema and the end of the stream, as StreamWriter writes them.
    let empty = Memory::default();
    let mut sink = IpcSink::new(Box::new(empty.clone()), &plan).unwrap();
    offline::run(&plan, &[], options(2), &mut sink, None, &Quiet).unwrap();
    let schema = offline::table::empty_batch(&plan).unwrap().schema();
    assert!(empty.bytes() == stream_writer(&[], &schema), "an empty stream differs");
}

/// Every layout `fex::columns::Column` has, `rows` rows; with `values`,
/// row r holds r + 1 values (one position for a sequence), else none: the
/// batch a text reader makes when no line has a feature in a group (issue 24).
fn every_layout(rows: usize, values: bool) -> Vec<fex::columns::NamedColumn> {
    use fex::columns::{Column, Dense, KeyedJagged, NamedColumn, Ragged, Splits, Strings, Values};
    let per_row: Vec<usize> = (0..rows).map(|r| if values { r + 1 } else { 0 }).collect();
    let ends = prefix_sums(&per_row);
    let n = *ends.last().unwrap();
    let i32s = || Splits::I32(ends.iter().map(|&e| e as i32).collect());
    let i64s = || Splits::I64(ends.iter().map(|&e| e as i64).collect());
    let weights: Vec<f32> = (0..n).map(|i| i as f32 + 0.5).collect();
    let ragged = |splits, values, weighted: bool, width| {
        let weights = if weighted { weights.clone() } else { Vec::new() };
        Column::Ragged(Ragged { splits, values, weights, weighted, width })
    };
    let kjt = |weighted: bool| {
        // Two keys: key a holds every row's values, key b none.
        let lengths: Vec<i32> = per_row.iter().map(|&l| l as i32).chain((0..rows).map(|_| 0)).collect();
        let offsets = prefix_sums(&lengths.iter().map(|&l| l as usize).collect::<Vec<_>>());
        Column::KeyedJagged(KeyedJagged {
            keys: vec!["a".into(), "b".into()],
            rows,
            offsets: offsets.into_iter().map(|o| o as i64).collect(),
            lengths,
            values: Values::I64((0..n as i64).collect()),
            weights: if weighted { weights.clone() } else { Vec::new() },
            weighted,
        })
    };
    let strings = Strings {
        offsets: ends.iter().map(|&e| e as i64).collect(),
        bytes: (0..n).map(|i| b'a' + (i % 26) as u8).collect(),
        dims: vec![],
    };
    let columns = [
        ("ragged_i32_u64", ragged(i32s(), Values::U64((0..n as u64).map(|i| u64::MAX - i).collect()), false, None)),
        ("ragged_i64_weighted", ragged(i64s(), Values::U64((0..n as u64).collect()), true, None)),
        ("ragged_i32_weighted", ragged(i32s(), Values::I64((0..n as i64).collect()), true, None)),
        ("ragged_i64_f32", ragged(i64s(), Values::F32((0..n).map(|i| i as f32).collect()), false, None)),
        ("ragged_i32_i32", ragged(i32s(), Values::I32((0..n as i32).collect()), false, None)),
        ("sequence", ragged(i32s(), Values::I64((0..2 * n as i64).collect()), false, Some(2))),
        ("dense_f64", Column::Dense(Dense { rows, dims: vec![2], values: Values::F64(vec![0.25; 2 * rows]) })),
        ("dense_scalar", Column::Dense(Dense { rows, dims: vec![], values: Values::F32(vec![1.5; rows]) })),
        ("strings", Column::Strings(strings)),
        ("kjt_weighted", kjt(true)),
        ("kjt", kjt(false)),
    ];
    columns.into_iter().map(|(name, column)| NamedColumn { name: name.into(), shared: false, column }).collect()
}

fn prefix_sums(lengths: &[usize]) -> Vec<usize> {
    let mut sums = vec![0];
    for &n in lengths {
        sums.push(sums[sums.len() - 1] + n);
    }
    sums
}

fn table(rows: usize, values: bool) -> arrow_array::RecordBatch {
    let metadata = std::collections::HashMap::new();
    fex::offline::table::columns_to_batch(every_layout(rows, values), rows, metadata).unwrap()
}

/// Column by column, the same values and types (metadata aside).
fn assert_same_rows(found: &arrow_array::RecordBatch, want: &arrow_array::RecordBatch, what: &str) {
    use arrow_array::Array;
    assert_eq!(found.num_columns(), want.num_columns(), "{what}");
    for (i, field) in want.schema().fields().iter().enumerate() {
        let (f, w) = (found.column(i).to_data(), want.column(i).to_data());
        f.validate_full().unwrap_or_else(|e| panic!("{what}: {} read back invalid: {e}", field.name()));
        assert_eq!(f, w, "{what}: column {}", field.name());
    }
}

#[test]
fn a_column_with_no_values_is_written_with_its_type_and_reads_back() {
    use fex::offline::{IpcSink, ParquetOptions, ParquetSink, Prepared, Sink};
    // The first batch (which gives the file its schema) has no values in
    // any ragged or keyed-jagged column, the next has some; the last has no
    // rows, which our IPC encoder leaves to arrow-ipc's.
    let batches = [table(3, false), table(2, true), table(4, false), table(0, false)];
    let schema = batches[1].schema();
    for b in &batches {
        assert_eq!(b.schema().fields(), schema.fields(), "a batch's types do not depend on its values");
    }

    let out = Memory::default();
    let mut sink = IpcSink::for_columns(Box::new(out.clone()));
    for b in &batches {
        sink.write(Prepared::Batch(b.clone())).unwrap();
    }
    sink.finish().unwrap();
    let mut reference = Vec::new();
    let mut writer = arrow_ipc::writer::StreamWriter::try_new(&mut reference, &schema).unwrap();
    for b in &batches {
        writer.write(b).unwrap();
    }
    writer.finish().unwrap();
    drop(writer);
    assert!(out.bytes() == reference, "the IPC stream is not arrow-ipc's StreamWriter's");
    let back: Vec<_> =
        arrow_ipc::reader::StreamReader::try_new(std::io::Cursor::new(out.bytes()), None).unwrap().collect();
    assert_eq!(back.len(), batches.len());
    for (i, (found, want)) in back.into_iter().zip(&batches).enumerate() {
        assert_same_rows(&found.unwrap(), want, &format!("ipc batch {i}"));
    }

    let out = Memory::default();
    let options = ParquetOptions { row_group_size: 4, ..ParquetOptions::default() };
    let mut sink = ParquetSink::for_columns(Box::new(out.clone()), options, std::collections::HashMap::new());
    for b in &batches {
        sink.write(Prepared::Batch(b.clone())).unwrap();
    }
    sink.finish().unwrap();
    let reader =
        parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(out.bytes()))
            .unwrap()
            .with_batch_size(1)
            .build()
            .unwrap();
    let want: Vec<_> = batches.iter().flat_map(|b| (0..b.num_rows()).map(|r| b.slice(r, 1))).collect();
    let found: Vec<_> = reader.map(|b| b.unwrap()).collect();
    assert_eq!(found.len(), want.len(), "parquet rows");
    for (r, (found, want)) in found.iter().zip(&want).enumerate() {
        assert_same_rows(found, want, &format!("parquet row {r}"));
    }
}

#[test]
fn a_batch_of_other_columns_is_an_error_not_a_corrupt_file() {
    use fex::offline::{IpcSink, ParquetOptions, ParquetSink, Prepared, Sink};
    let first = table(2, true);
    let other = first.project(&[1, 0]).unwrap();
    let mut ipc = IpcSink::for_columns(Box::new(Memory::default()));
    ipc.write(Prepared::Batch(first.clone())).unwrap();
    let e = ipc.write(Prepared::Batch(other.clone())).unwrap_err().to_string();
    assert!(e.contains("column \"ragged_i64_weighted\" is LargeList"), "{e}");
    let mut parquet =
        ParquetSink::for_columns(Box::new(Memory::default()), ParquetOptions::default(), Default::default());
    parquet.write(Prepared::Batch(first)).unwrap();
    let e = parquet.write(Prepared::Batch(other)).unwrap_err().to_string();
    assert!(e.contains("but the file's column \"ragged_i32_u64\""), "{e}");
}
