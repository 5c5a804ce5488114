//! The heap counter as the `arena` binary installs it: this test binary's global allocator
//! is the counting wrapper, and its one test runs alone (no other test allocates meanwhile).

#![allow(clippy::expect_used)]

use arena::heap_count::{heap_in_use_bytes, CountingAllocator};

#[global_allocator]
static COUNTED: CountingAllocator<std::alloc::System> = CountingAllocator(std::alloc::System);

const MIB: u64 = 1 << 20;

fn in_use() -> u64 {
    heap_in_use_bytes().expect("the counting allocator is installed")
}

/// `after - before`, signed.
fn change(before: u64, after: u64) -> i64 {
    i64::try_from(after).unwrap_or(i64::MAX) - i64::try_from(before).unwrap_or(i64::MAX)
}

/// Whether `got` is `want` give or take what the test harness's own bookkeeping might allocate
/// meanwhile (a few KiB at most).
fn about(got: i64, want: i64) -> bool {
    (got - want).abs() < 64 * 1024
}

#[test]
fn the_heap_in_use_follows_allocations_reallocations_and_frees_on_any_thread() {
    let start = in_use();
    let block = vec![7u8; MIB as usize];
    let grown_by = change(start, in_use());
    assert!(
        about(grown_by, MIB as i64),
        "allocated 1 MiB, counted {grown_by}"
    );

    let mut block = block;
    block.reserve_exact(3 * MIB as usize - block.len());
    let grown_by = change(start, in_use());
    assert!(
        about(grown_by, 3 * MIB as i64),
        "grown to 3 MiB, counted {grown_by}"
    );

    // Freed by another thread than the one that allocated it: the total comes back down.
    std::thread::spawn(move || drop(block))
        .join()
        .expect("freeing thread");
    let left = change(start, in_use());
    assert!(
        about(left, 0),
        "freed on another thread, {left} left counted"
    );

    let zeroed = vec![0u64; (MIB / 8) as usize];
    let grown_by = change(start, in_use());
    assert!(
        about(grown_by, MIB as i64),
        "zeroed 1 MiB, counted {grown_by}"
    );
    drop(zeroed);
    assert!(about(change(start, in_use()), 0));
}
