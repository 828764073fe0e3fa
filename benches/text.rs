//! Text reader benches: deepx `libsvm` and Criteo TSV (with vocabularies)
//! read from memory into batches, one reader on the whole input (1 thread)
//! and two readers on its halves, split at a line (2 threads: how an
//! offline run shards files). Throughput is input bytes; lines/s is the
//! line count over the median time (benches/README.md). Inputs are seeded.
//! `lines_only`, in the same group, only splits the input into lines with
//! the readers' shared line source: the floor the parsing is measured against.
//!
//! Before criterion runs (only under `cargo bench`), the fit pass's memory:
//! live heap bytes, from a counting allocator, after fitting 1 M distinct
//! values into one column and 1 M spread over 26 columns, against
//! `Fit::bytes()`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::io::Cursor;
use std::sync::atomic::{AtomicIsize, Ordering};

use criterion::{Criterion, Throughput};
use fex::text::criteo::{CriteoReader, Fit, FitOptions, RawRow};
use fex::text::deepx::{self, ReadOptions};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Counts live heap bytes.
struct Live;
static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is forwarded unchanged to `System`; only a counter is added.
unsafe impl GlobalAlloc for Live {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size as isize - layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Live = Live;

const BATCH: usize = 256;

/// libsvm lines: label, uuid, 10..=60 features `id:value` or `id`.
fn libsvm_input(lines: usize) -> Vec<u8> {
    let mut rng = ChaCha8Rng::seed_from_u64(14);
    let mut s = String::new();
    for i in 0..lines {
        s.push_str(if rng.random_bool(0.3) { "1 " } else { "0 " });
        s.push_str(&format!("uuid:u{i}"));
        for _ in 0..rng.random_range(10..=60) {
            let id: u64 = rng.random_range(0..1 << 40);
            if rng.random_bool(0.5) {
                s.push_str(&format!(" {id}:{:.3}", rng.random_range(-1.0..1.0f32)));
            } else {
                s.push_str(&format!(" {id}"));
            }
        }
        s.push('\n');
    }
    s.into_bytes()
}

/// Criteo lines: 13 integers (10 % empty), 26 hex values from skewed pools.
fn criteo_input(lines: usize) -> Vec<u8> {
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let mut s = String::new();
    for _ in 0..lines {
        s.push_str(if rng.random_bool(0.25) { "1" } else { "0" });
        for _ in 0..13 {
            s.push('\t');
            if !rng.random_bool(0.1) {
                s.push_str(&rng.random_range(-3..5000i64).to_string());
            }
        }
        for c in 0..26u64 {
            s.push('\t');
            let pool = 10 + 2000 * (c % 7);
            let x = (rng.random_range(0..pool) as f64 * rng.random_range(0.0..1.0f64)) as u64;
            s.push_str(&format!("{:08x}", x.wrapping_mul(0x9e37_79b9) as u32));
        }
        s.push('\n');
    }
    s.into_bytes()
}

/// The input cut in two at a line boundary.
fn halves(input: &[u8]) -> (&[u8], &[u8]) {
    let mid = input.len() / 2;
    let cut = input[mid..].iter().position(|&b| b == b'\n').map_or(input.len(), |i| mid + i + 1);
    input.split_at(cut)
}

fn read_libsvm(input: &[u8]) -> usize {
    let mut r = deepx::open("libsvm", "batch=256;w=1;uuid=1", Cursor::new(input), "bench", ReadOptions::default())
        .expect("config");
    let mut rows = 0;
    while let Some(b) = r.next_batch().expect("valid input") {
        rows += black_box(b)[0].column.rows();
    }
    rows
}

fn read_criteo(input: &[u8], vocabs: &std::sync::Arc<[fex::ops::Vocab]>) -> usize {
    let mut r = CriteoReader::new(Cursor::new(input), "bench", Some(vocabs.clone()), BATCH, ReadOptions::default());
    let mut rows = 0;
    while let Some(b) = r.next_batch().expect("valid input") {
        rows += black_box(b)[0].column.rows();
    }
    rows
}

/// The floor: the same bytes split into lines by the shared line source.
fn lines_only(input: &[u8]) -> usize {
    let mut lines = fex::text::LineSource::new(Cursor::new(input), "bench", fex::text::DEFAULT_MAX_LINE_BYTES);
    let mut n = 0;
    while lines.advance().expect("in memory") {
        n += black_box(lines.line()).len().min(1);
    }
    n
}

fn two_threads(input: &[u8], f: impl Fn(&[u8]) -> usize + Sync) -> usize {
    let (a, b) = halves(input);
    std::thread::scope(|s| {
        let h = s.spawn(|| f(a));
        f(b) + h.join().expect("reader thread")
    })
}

fn fit_memory() {
    for (label, columns) in [("1 column", 1usize), ("26 columns", 26)] {
        let before = LIVE.load(Ordering::Relaxed);
        let mut fit = Fit::new(FitOptions::default());
        let mut row = RawRow::default();
        let per_column = 1_000_000 / columns as u64;
        for i in 0..per_column {
            for c in 0..columns {
                row.cats[c] = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ c as u64;
            }
            for c in columns..26 {
                row.cats[c] = 0;
            }
            fit.add(&row);
        }
        let live = LIVE.load(Ordering::Relaxed) - before;
        let distinct: usize = (0..26).map(|c| fit.distinct(c)).sum();
        println!(
            "fit memory, {label}: {distinct} distinct values, {:.1} MB live ({:.1} B/value), Fit::bytes {:.1} MB",
            live as f64 / 1e6,
            live as f64 / distinct as f64,
            fit.bytes() as f64 / 1e6
        );
        black_box(fit);
    }
}

fn main() {
    let benching = std::env::args().any(|a| a == "--bench");
    let lines = if benching { 20_000 } else { 200 };
    let libsvm = libsvm_input(lines);
    let criteo = criteo_input(lines);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut fit = Fit::new(FitOptions::default());
    fit.add_input(Cursor::new(&criteo), "bench", ReadOptions::default()).expect("valid input");
    fit.write(dir.path()).expect("vocabularies");
    let vocabs = fex::text::criteo::load_vocabs(dir.path()).expect("vocabularies");
    assert_eq!(read_libsvm(&libsvm), lines);
    assert_eq!(two_threads(&criteo, |i| read_criteo(i, &vocabs)), lines);
    println!("text: {lines} lines; libsvm {} bytes, criteo {} bytes", libsvm.len(), criteo.len());
    if benching {
        fit_memory();
    }
    let mut c = Criterion::default().configure_from_args();
    for (name, input) in [("libsvm", &libsvm), ("criteo", &criteo)] {
        let mut g = c.benchmark_group(format!("text/{name}"));
        g.throughput(Throughput::Bytes(input.len() as u64));
        let read = |i: &[u8]| if name == "libsvm" { read_libsvm(i) } else { read_criteo(i, &vocabs) };
        g.bench_function("lines_only", |b| b.iter(|| lines_only(black_box(input))));
        g.bench_function("1_thread", |b| b.iter(|| read(black_box(input))));
        g.bench_function("2_threads", |b| b.iter(|| two_threads(black_box(input), read)));
        g.finish();
    }
    c.final_summary();
}
