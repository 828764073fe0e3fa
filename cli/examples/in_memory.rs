//! The baseline of `fex extract`'s benchmark (benches/README.md): the
//! library's in-memory speed on the same records. Reads the first
//! `RECORDS` records of a framed file into memory, then extracts each one
//! as `fex extract` does for a table (SHARED features broadcast, columns moved
//! into Arrow record batches), on one thread, and prints records/s and MB/s
//! of payload.
//!
//! With `parquet` (or `parquet-none`: uncompressed) as a fourth argument,
//! each batch also goes through the library's Parquet sink, writing to
//! nowhere, on the same thread: what encoding Parquet costs on its own, with
//! no file read and no pipeline, the ceiling of `fex extract`'s Parquet
//! speed.
//!
//! `cargo run --release -p fex-cli --example in_memory -- MODEL FILE RECORDS [parquet|parquet-none]`

use std::time::Instant;

use fex::offline::{ParquetCodec, ParquetOptions, ParquetSink, Prepared, Sink};
use fex::records::{ReadOptions, RecordReader};
use fex::{Extracted, Extractor, Input, Plan, Policy, SharedRows};

/// The allocator `fex` runs with (cli/src/main.rs), so the ratio compares
/// the pipeline, not two allocators.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    anyhow::ensure!(args.len() == 4 || args.len() == 5, "usage: in_memory MODEL FILE RECORDS [parquet|parquet-none]");
    let plan = Plan::from_file(std::path::Path::new(&args[1]))?;
    let limit: usize = args[3].parse()?;
    let parquet = match args.get(4).map(String::as_str) {
        None => None,
        Some("parquet") => Some(ParquetCodec::Snappy),
        Some("parquet-none") => Some(ParquetCodec::None),
        Some(other) => anyhow::bail!("unknown mode {other:?}: parquet or parquet-none"),
    };
    let mut reader = RecordReader::open(std::path::Path::new(&args[2]), ReadOptions::default(), None)?;
    let mut records = Vec::new();
    let mut buf = Vec::new();
    while records.len() < limit && reader.next_into(&mut buf)?.is_some() {
        records.push(buf.clone());
    }
    let bytes: usize = records.iter().map(Vec::len).sum();
    let mut ex = Extractor::new();
    let policy = Policy { shared: SharedRows::Broadcast, ..Policy::default() };
    let mut best = f64::MAX;
    let mut rows = 0;
    for _ in 0..3 {
        let mut sink = match parquet {
            Some(codec) => {
                let options = ParquetOptions { codec, ..ParquetOptions::default() };
                Some(ParquetSink::new(Box::new(std::io::sink()), &plan, options)?)
            }
            None => None,
        };
        let start = Instant::now();
        rows = 0;
        for r in &records {
            let mut out = Extracted::default();
            ex.extract(&plan, Input::Batch(r), policy, &mut out)?;
            rows += out.batch_size;
            let batch = fex::offline::table::to_batch(out, &plan)?;
            match &mut sink {
                Some(sink) => sink.write(Prepared::Batch(batch))?,
                None => drop(std::hint::black_box(batch)),
            }
        }
        if let Some(mut sink) = sink {
            sink.finish()?;
        }
        best = best.min(start.elapsed().as_secs_f64());
    }
    let what = match parquet {
        None => "in memory",
        Some(ParquetCodec::None) => "in memory to uncompressed Parquet",
        Some(_) => "in memory to Parquet",
    };
    println!(
        "{} records ({:.1} MB, {rows} rows) {what}: {:.0} records/s, {:.1} MB/s (best of 3: {best:.3} s)",
        records.len(),
        bytes as f64 / 1e6,
        records.len() as f64 / best,
        bytes as f64 / 1e6 / best
    );
    Ok(())
}
