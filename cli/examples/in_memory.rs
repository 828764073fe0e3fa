//! The baseline of `fex extract`'s benchmark (benches/README.md): the
//! library's in-memory speed on the same records. Reads the first
//! `--records` records of a framed file into memory, then extracts each one
//! as `fex extract` does for a table (SHARED features broadcast, columns moved
//! into Arrow record batches), on one thread, and prints records/s and MB/s
//! of payload.
//!
//! `cargo run --release -p fex-cli --example in_memory -- MODEL FILE RECORDS`

use std::time::Instant;

use fex::records::{ReadOptions, RecordReader};
use fex::{Extracted, Extractor, Input, Plan, Policy, SharedRows};

/// The allocator `fex` runs with (cli/src/main.rs), so the ratio compares
/// the pipeline, not two allocators.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    anyhow::ensure!(args.len() == 4, "usage: in_memory MODEL FILE RECORDS");
    let plan = Plan::from_file(std::path::Path::new(&args[1]))?;
    let limit: usize = args[3].parse()?;
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
        let start = Instant::now();
        rows = 0;
        for r in &records {
            let mut out = Extracted::default();
            ex.extract(&plan, Input::Batch(r), policy, &mut out)?;
            rows += out.batch_size;
            std::hint::black_box(fex::offline::table::to_batch(out, &plan)?);
        }
        best = best.min(start.elapsed().as_secs_f64());
    }
    println!(
        "{} records ({:.1} MB, {rows} rows) in memory: {:.0} records/s, {:.1} MB/s (best of 3: {best:.3} s)",
        records.len(),
        bytes as f64 / 1e6,
        records.len() as f64 / best,
        bytes as f64 / 1e6 / best
    );
    Ok(())
}
