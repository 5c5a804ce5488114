//! Asking the processor to bring a match's memory into its cache before a move needs it.
//!
//! Among a thousand matches every block a move touches (the referee's state, the board, both
//! players' write stamps and outgoing queues, the move log) is a cache miss, and they came one
//! after the other, each waiting for the last (about 130 ns apiece on the bench's machine).
//! Asked for together, ahead of use, they arrive together. A prefetch is only a hint: it never
//! faults, reads nothing into the program and changes nothing, whatever the address.

/// The processor's cache line.
const LINE: usize = 64;

/// Most lines one request asks for (a hint for a block, not for whole buffers).
const MAX_LINES: usize = 16;

/// Asks for the cache lines holding the `bytes` bytes from `start`.
#[inline]
pub fn bytes(start: *const u8, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let first = start.wrapping_sub(start as usize % LINE);
        let span = (start as usize % LINE).saturating_add(bytes);
        for line in 0..span.div_ceil(LINE).min(MAX_LINES) {
            // SAFETY: `_mm_prefetch` only hints the cache: it never faults, whatever the
            // address, and neither reads into the program nor writes. `wrapping_add` keeps the
            // address arithmetic defined for any pointer.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(first.wrapping_add(line * LINE).cast()) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (start, bytes);
}

/// Asks for the cache lines of `value`.
#[inline]
pub fn value<T: ?Sized>(value: &T) {
    bytes(
        (value as *const T).cast::<u8>(),
        std::mem::size_of_val(value),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hint changes nothing, whatever it is asked for: a value, a range across lines, an
    /// empty range, a dangling or null address.
    #[test]
    fn prefetching_changes_nothing() {
        let data: Vec<u64> = (0..1024).collect();
        value(&data[..]);
        bytes(data.as_ptr().cast::<u8>().wrapping_add(3), 200);
        bytes(std::ptr::null(), 0);
        bytes(std::ptr::null(), 4096);
        bytes(usize::MAX as *const u8, 64);
        assert_eq!(data, (0..1024).collect::<Vec<u64>>());
    }
}
