//! Shared by the bench binaries: a counting global allocator, so each bench
//! can report allocations per extraction in steady state.

use std::alloc::{GlobalAlloc, Layout, System};
use std::backtrace::Backtrace;
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// System allocator that counts allocation calls and bytes requested
/// (alloc, alloc_zeroed and realloc; frees are not counted).
struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);
/// Backtraces still to print (set only around fex's steady-state runs).
#[allow(dead_code)] // only `extract` prints backtraces
pub static TRACES: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static IN_TRACE: Cell<bool> = const { Cell::new(false) };
}

#[inline]
fn count(size: usize) {
    ALLOCS.fetch_add(1, Ordering::Relaxed);
    BYTES.fetch_add(size as u64, Ordering::Relaxed);
    if TRACES.load(Ordering::Relaxed) > 0 {
        trace(size);
    }
}

#[cold]
fn trace(size: usize) {
    // Capturing and printing allocate: guard against recursion.
    if IN_TRACE.with(|t| t.replace(true)) {
        return;
    }
    if TRACES.fetch_sub(1, Ordering::Relaxed) > 0 {
        eprintln!("steady-state allocation of {size} bytes:\n{}", Backtrace::force_capture());
    }
    IN_TRACE.with(|t| t.set(false));
}

// SAFETY: every call is forwarded unchanged to `System`.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocation calls and bytes per call of `f`, averaged over `iters` calls.
pub fn allocs_per_call(iters: u64, mut f: impl FnMut()) -> (f64, f64) {
    let (a0, b0) = (ALLOCS.load(Ordering::Relaxed), BYTES.load(Ordering::Relaxed));
    for _ in 0..iters {
        f();
    }
    let (a1, b1) = (ALLOCS.load(Ordering::Relaxed), BYTES.load(Ordering::Relaxed));
    ((a1 - a0) as f64 / iters as f64, (b1 - b0) as f64 / iters as f64)
}
