//! The heap in use (bytes allocated and not yet freed), counted by a wrapper around the global
//! allocator the binary chooses; the bench's memory figures read it.
//!
//! Each thread counts into a slot of its own (a plain load and store on memory no other
//! thread writes: no locked instruction, no cache line passed between cores), so counting
//! costs an allocation about a nanosecond. Memory freed by another thread than the one that
//! allocated it is taken off the freeing thread's slot: the sum over the slots is still the
//! heap in use. Threads beyond `SLOTS` (a blocking pool that came and went many times) share
//! one slot with atomic adds. Sizes are those asked for, without the allocator's rounding.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering};

/// Slots owned by one thread each.
const SLOTS: usize = 128;

/// One slot on a cache line of its own (no two threads' counts share a line).
#[repr(align(128))]
struct Slot(AtomicIsize);

static OWNED: [Slot; SLOTS] = [const { Slot(AtomicIsize::new(0)) }; SLOTS];
/// The slot of the threads that came after every owned slot was taken.
static SHARED: Slot = Slot(AtomicIsize::new(0));
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);
/// Set at the first allocation counted: the wrapper is the global allocator.
static COUNTING: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// This thread's slot (`usize::MAX` until its first allocation). A constant initialiser
    /// and no destructor: reading it never allocates, even as the thread ends.
    static MY_SLOT: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// A global allocator that counts the heap in use and leaves the work to `A`.
pub struct CountingAllocator<A>(pub A);

fn count(delta: isize) {
    let slot = MY_SLOT
        .try_with(|mine| {
            let mut slot = mine.get();
            if slot == usize::MAX {
                slot = NEXT_SLOT.fetch_add(1, Ordering::Relaxed);
                mine.set(slot);
                COUNTING.store(true, Ordering::Relaxed);
            }
            slot
        })
        .unwrap_or(usize::MAX);
    match OWNED.get(slot) {
        // Only this thread writes its slot: a load and a store, not a locked add.
        Some(own) => own
            .0
            .store(own.0.load(Ordering::Relaxed) + delta, Ordering::Relaxed),
        None => {
            SHARED.0.fetch_add(delta, Ordering::Relaxed);
        }
    }
}

fn signed(size: usize) -> isize {
    isize::try_from(size).unwrap_or(isize::MAX)
}

// SAFETY: every call is passed to `A` unchanged (a `GlobalAlloc` itself); the counting around
// it touches only thread-local and static atomics and never allocates.
unsafe impl<A: GlobalAlloc> GlobalAlloc for CountingAllocator<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc`, passed on.
        let p = unsafe { self.0.alloc(layout) };
        if !p.is_null() {
            count(signed(layout.size()));
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        let p = unsafe { self.0.alloc_zeroed(layout) };
        if !p.is_null() {
            count(signed(layout.size()));
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-signed(layout.size()));
        // SAFETY: the caller's contract for `dealloc`, passed on.
        unsafe { self.0.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract for `realloc`, passed on.
        let p = unsafe { self.0.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(signed(new_size) - signed(layout.size()));
        }
        p
    }
}

/// Bytes allocated and not yet freed, in the whole process; `None` when the global allocator
/// is not a [`CountingAllocator`] (a test binary, say).
pub fn heap_in_use_bytes() -> Option<u64> {
    if !COUNTING.load(Ordering::Relaxed) {
        return None;
    }
    let total = OWNED
        .iter()
        .chain(std::iter::once(&SHARED))
        .fold(0isize, |sum, slot| {
            sum.saturating_add(slot.0.load(Ordering::Relaxed))
        });
    Some(u64::try_from(total).unwrap_or(0))
}
