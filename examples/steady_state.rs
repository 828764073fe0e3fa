//! The library's steady-state time for one ExampleBatch: the embedded
//! default model, `Extractor::extract` into an `Extracted` kept across
//! calls (no allocation after the first), median of many calls. The Rust
//! side of benches/python_fresh.py.
//!
//!   cargo run --release --example steady_state -- FILE [CALLS]
//!
//! FILE: framed ExampleBatches (`fex-client gen`); the first is timed.

use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).expect("usage: steady_state FILE [CALLS]");
    let calls: usize = args.get(2).map_or(2000, |n| n.parse().expect("CALLS is a number"));
    let data = std::fs::read(path).expect("read the file");
    let len = u64::from_le_bytes(data[..8].try_into().expect("a framed record")) as usize;
    let batch = &data[8..8 + len];
    let plan = fex::Plan::default_model();
    let mut ex = fex::Extractor::new();
    let mut out = fex::Extracted::default();
    let mut times = Vec::with_capacity(calls);
    for _ in 0..calls {
        let start = Instant::now();
        ex.extract(&plan, fex::Input::Batch(batch), fex::Policy::default(), &mut out).expect("the batch extracts");
        times.push(start.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    let median = times[calls / 2];
    println!(
        "{} rows, {} bytes: median {:.1} us over {calls} calls (buffers reused)",
        out.batch_size,
        len,
        median * 1e6
    );
}
