//! The allocator's one setting that serving needs: freed memory is kept for
//! reuse, never purged (returned to the OS and faulted back in).
//!
//! Responses are 100 KB buffers allocated on an extraction thread and freed
//! on an I/O thread. Under a steady open-loop load the number alive swings
//! with the queue, and mimalloc purges pages that stay free past its
//! `purge_delay`; the next swing faults them back in, thousands of page
//! faults in one second, during which extraction stalls, the queue fills and
//! calls are shed (issue 27; benches/README.md, "Tail latency at half load").
//! Memory stays at its high-water mark instead, which the admission limits
//! bound (`--max-concurrency`, `--max-queue`). `MIMALLOC_PURGE_DELAY` in the
//! environment still wins: operators can trade the stalls back for RSS.

use std::ffi::c_long;

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

#[cfg(test)]
mod tests {
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
