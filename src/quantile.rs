//! Quantiles by the nearest-rank rule, the one rule behind the bench's percentiles and
//! `arena match`'s move times.

/// The value at quantile `q` (0..=1) of `total` values given in ascending order, each with
/// how many times it occurs: the first value by which at least `ceil(q · total)` of them
/// (and at least one) have been counted. `None` when there is none.
pub fn nearest_rank<T>(
    counted: impl IntoIterator<Item = (T, u64)>,
    total: u64,
    q: f64,
) -> Option<T> {
    let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
    let mut seen = 0u64;
    for (value, count) in counted {
        seen += count;
        if seen >= rank {
            return Some(value);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rank_is_rounded_up_and_at_least_one() {
        let ones = |n: u64| (1..=n).map(|v| (v, 1));
        assert_eq!(nearest_rank(ones(20), 20, 0.9), Some(18));
        assert_eq!(nearest_rank(ones(100), 100, 0.99), Some(99));
        assert_eq!(nearest_rank(ones(3), 3, 0.5), Some(2));
        assert_eq!(nearest_rank(ones(3), 3, 0.0), Some(1));
        assert_eq!(nearest_rank([(5, 9), (100, 1)], 10, 0.9), Some(5));
        assert_eq!(nearest_rank([(5, 9), (100, 1)], 10, 1.0), Some(100));
        assert_eq!(nearest_rank(ones(0), 0, 0.5), None);
    }
}
