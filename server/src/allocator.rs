//! The allocator's settings for serving: freed memory is kept for reuse,
//! never purged (returned to the OS and faulted back in), and a heap is
//! touched at start so that the first calls do not fault theirs in.
//!
//! Responses are 100 KB buffers allocated on an extraction thread and freed
//! on an I/O thread. Under a steady open-loop load the number alive swings
//! with the queue, and mimalloc purges pages that stay free past its
//! `purge_delay`; the next swing faults them back in, thousands of page
//! faults in one second, during which extraction stalls, the queue fills and
//! calls are shed (issue 27; benches/README.md, "Tail latency at half load").
//! Memory stays at its high-water mark instead: the prefaulted heap plus what
//! the requests (`--max-in-flight-bytes`) and the responses in flight
//! (`--max-concurrency` of them) took beyond it. `MIMALLOC_PURGE_DELAY` in the
//! environment still wins: operators can trade the stalls back for RSS.

use std::ffi::c_long;
use std::time::{Duration, Instant};

/// Bytes touched per step: the smallest page the kernel maps.
const PAGE: usize = 4096;

/// Blocks the warm heap is touched in: large enough that mimalloc serves
/// each from its arena directly, so that freeing one returns its memory to
/// the arena, where any thread's next pages are carved from it.
const BLOCK: usize = 1 << 20;

/// `mi_option_purge_delay` in mimalloc v3's `mimalloc.h` (`mi_option_e`).
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Turns purging off unless `MIMALLOC_PURGE_DELAY` is set; returns the
/// delay in force (-1: never).
pub fn keep_freed_memory() -> c_long {
    // SAFETY: mi_option_set and mi_option_get only read and write an
    // option's word; any option number and value is accepted.
    unsafe {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            libmimalloc_sys::mi_option_set(PURGE_DELAY, -1);
        }
        libmimalloc_sys::mi_option_get(PURGE_DELAY)
    }
}

/// Touches `bytes` of heap and frees it again, so that the memory is
/// resident and kept (purging is off) for the calls to come.
///
/// A server starts with a heap of a few MB; its first calls at full rate grow
/// it to its working set, and every new page is a fault that zeroes it (on a
/// VM whose host backs guest memory lazily, a host fault as well: about 2 ms
/// per MiB here, half of the I/O thread's time in the first second). Calls
/// wait behind those faults, more are admitted meanwhile, each holding more
/// new memory: a cold server at half load built a backlog of a thousand
/// calls and shed (issue 27; benches/README.md, "Tail latency at half
/// load"). Touching the heap before the listener opens moves that cost to
/// start-up, where no call waits on it.
///
/// Returns the bytes touched (fewer when the allocator refuses a block: the
/// rest is skipped rather than aborting the process) and the time it took.
pub fn prefault(bytes: usize) -> (usize, Duration) {
    let started = Instant::now();
    let mut blocks: Vec<Vec<u8>> = Vec::new();
    let mut left = bytes;
    while left > 0 {
        let len = left.min(BLOCK);
        let mut block: Vec<u8> = Vec::new();
        if blocks.try_reserve(1).is_err() || block.try_reserve_exact(len).is_err() {
            break;
        }
        let base = block.as_mut_ptr();
        for offset in (0..len).step_by(PAGE) {
            // SAFETY: offset < len <= the block's capacity; a volatile write
            // is kept even though the block is freed unread.
            unsafe { base.add(offset).write_volatile(0) };
        }
        blocks.push(block);
        left -= len;
    }
    // Held until every block is touched, so that none is reused for the next.
    drop(blocks);
    (bytes - left, started.elapsed())
}

#[cfg(test)]
mod tests {
    /// Every byte asked for is touched, in whole blocks and a partial last one.
    #[test]
    fn prefault_touches_what_it_is_asked() {
        let bytes = 3 * super::BLOCK + 5;
        assert_eq!(super::prefault(bytes).0, bytes);
        assert_eq!(super::prefault(0).0, 0);
    }

    /// Option 15 is the purge delay: mimalloc v3's default for it is 1000
    /// ms (options.c), and setting it reads back.
    #[test]
    fn option_15_is_the_purge_delay() {
        // SAFETY: as above.
        let default = unsafe { libmimalloc_sys::mi_option_get(super::PURGE_DELAY) };
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(default, 1000);
            assert_eq!(super::keep_freed_memory(), -1);
        }
    }
}
