//! FNV-1a, the one stable 64-bit hash of the crate: the same value on every build and platform
//! (unlike `DefaultHasher`), for the journal's config fingerprint and engine seeds; and
//! SplitMix64, from which the engines draw their fixed Zobrist keys.

/// The 64-bit FNV-1a hash of `bytes`.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// SplitMix64's output after adding its increment to `x`: a fixed, well-mixed 64-bit value for
/// each input (the engines' Zobrist keys come from it, so every build hashes alike).
pub const fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Zobrist keys of a piece of each of two colours on each of `N` points:
/// `splitmix64(colour × N + point + 1)`.
pub const fn zobrist_keys<const N: usize>() -> [[u64; N]; 2] {
    let mut keys = [[0; N]; 2];
    let mut colour = 0;
    while colour < 2 {
        let mut point = 0;
        while point < N {
            keys[colour][point] = splitmix64((colour * N + point) as u64 + 1);
            point += 1;
        }
        colour += 1;
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::fnv1a64;

    #[test]
    fn matches_the_published_test_vectors() {
        // From the FNV reference test suite.
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn zobrist_keys_are_distinct_and_follow_the_splitmix_stream() {
        let keys = super::zobrist_keys::<37>();
        let mut all: Vec<u64> = keys.iter().flatten().copied().collect();
        assert_eq!(keys[1][3], super::splitmix64(37 + 3 + 1));
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 74, "no two keys are equal");
        // SplitMix64's published first output for seed 0.
        assert_eq!(super::splitmix64(0), 0xE220_A839_7B1D_CDAF);
    }
}
