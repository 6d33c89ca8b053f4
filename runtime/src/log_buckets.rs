//! Log-spaced histogram buckets of nanoseconds: exact below 8 ns, then eight
//! buckets a doubling, so a bucket spans at most 12.5% of its lower bound and
//! every `u64` has one. The runtime's wake-up and batch-time records count in
//! them ([`crate::wake_delays`], [`crate::stats`]); readers get the non-empty
//! buckets as `(lower ns, upper ns, count)`.

/// Buckets per doubling (as a power of two).
const SUB_BITS: u32 = 3;
const SUB: u64 = 1 << SUB_BITS;
/// Buckets in all: every `u64` of nanoseconds has one.
pub const BUCKETS: usize = ((64 - SUB_BITS as usize) + 1) * SUB as usize;

/// The bucket holding `ns`: exact below `SUB` ns, then `SUB` buckets a doubling.
pub fn bucket(ns: u64) -> usize {
    if ns < SUB {
        return ns as usize;
    }
    let exponent = 63 - ns.leading_zeros(); // >= SUB_BITS
    let mantissa = (ns >> (exponent - SUB_BITS)) & (SUB - 1);
    ((exponent - SUB_BITS + 1) as u64 * SUB + mantissa) as usize
}

/// The smallest value of bucket `i` (ns); bucket `i` holds `[lower(i), lower(i + 1))`.
pub fn bucket_lower_ns(i: usize) -> u64 {
    let i = i as u64;
    if i < SUB {
        return i;
    }
    let exponent = i / SUB - 1 + SUB_BITS as u64;
    let mantissa = i % SUB;
    (SUB | mantissa) << (exponent - SUB_BITS as u64)
}

/// The bound above bucket `i` (ns, exclusive; `u64::MAX` for the last).
pub fn bucket_upper_ns(i: usize) -> u64 {
    if i + 1 >= BUCKETS {
        u64::MAX
    } else {
        bucket_lower_ns(i + 1)
    }
}

/// Non-empty buckets as `(lower ns, upper ns, count)`, by increasing time.
pub type Buckets = Vec<(u64, u64, u64)>;

/// The non-empty buckets of dense `counts` (index = bucket).
pub fn sparse(counts: &[u64]) -> Buckets {
    counts
        .iter()
        .enumerate()
        .filter(|(_, &c)| c > 0)
        .map(|(i, &c)| (bucket_lower_ns(i), bucket_upper_ns(i), c))
        .collect()
}

/// `now` less `then` (two readings of one record), bucket by bucket; buckets left empty go.
pub fn minus(now: &[(u64, u64, u64)], then: &[(u64, u64, u64)]) -> Buckets {
    now.iter()
        .filter_map(|&(lower, upper, count)| {
            let before = then.iter().find(|b| b.0 == lower).map_or(0, |b| b.2);
            let left = count.saturating_sub(before);
            (left > 0).then_some((lower, upper, left))
        })
        .collect()
}

/// Dense counts by bucket, recorded by many threads at once (a relaxed atomic `fetch_add`
/// each); a reader's copy may hold some of the records made while it reads and not others,
/// never a torn count.
pub struct AtomicCounts(Box<[std::sync::atomic::AtomicU64]>);

impl Default for AtomicCounts {
    fn default() -> Self {
        AtomicCounts((0..BUCKETS).map(|_| std::sync::atomic::AtomicU64::new(0)).collect())
    }
}

impl AtomicCounts {
    /// Counts one value of `ns`.
    pub fn record(&self, ns: u64) {
        self.0[bucket(ns)].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// The dense counts so far.
    pub fn snapshot(&self) -> Vec<u64> {
        self.0.iter().map(|c| c.load(std::sync::atomic::Ordering::Relaxed)).collect()
    }
}

/// Counts one value of `ns` into dense `counts` (empty, or [`BUCKETS`] long).
pub fn record(counts: &mut Vec<u64>, ns: u64) {
    if counts.is_empty() {
        counts.resize(BUCKETS, 0);
    }
    counts[bucket(ns)] += 1;
}

/// Dense `now` less `then` (two readings of one record; either may be empty).
pub fn since(now: &[u64], then: &[u64]) -> Vec<u64> {
    now.iter().enumerate().map(|(i, &c)| c.saturating_sub(then.get(i).copied().unwrap_or(0))).collect()
}

/// The `q` quantile (0..=1) of the dense counts of `records` added together, as its
/// bucket's lower bound, ns (`None` when they hold nothing).
pub fn quantile_ns(records: &[&[u64]], q: f64) -> Option<u64> {
    let total: u64 = records.iter().flat_map(|r| r.iter()).sum();
    if total == 0 {
        return None;
    }
    let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
    let mut seen = 0;
    for i in 0..BUCKETS {
        seen += records.iter().map(|r| r.get(i).copied().unwrap_or(0)).sum::<u64>();
        if seen >= rank {
            return Some(bucket_lower_ns(i));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_falls_in_the_bucket_whose_bounds_hold_it() {
        let mut values: Vec<u64> = (0..2000).collect();
        values.extend([4095, 4096, 4097, 1_000_000, 123_456_789, u64::MAX / 3, u64::MAX - 1, u64::MAX]);
        for v in values {
            let i = bucket(v);
            assert!(i < BUCKETS, "{v} -> bucket {i}");
            assert!(bucket_lower_ns(i) <= v, "{v}: lower bound {} of bucket {i}", bucket_lower_ns(i));
            assert!(v < bucket_upper_ns(i) || i == BUCKETS - 1, "{v}: upper bound {}", bucket_upper_ns(i));
        }
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn buckets_are_exact_below_eight_and_an_eighth_of_a_doubling_wide_above() {
        assert_eq!((0..8).map(bucket).collect::<Vec<_>>(), (0..8).collect::<Vec<_>>());
        assert_eq!((bucket_lower_ns(bucket(1000)), bucket_upper_ns(bucket(1000))), (960, 1024));
        for i in 8..BUCKETS - 1 {
            let (lo, hi) = (bucket_lower_ns(i), bucket_upper_ns(i));
            assert!(hi > lo && (hi - lo) * 8 <= lo, "bucket {i}: [{lo}, {hi})");
        }
    }

    #[test]
    fn sparse_readings_subtract_bucket_by_bucket() {
        let mut counts = vec![0u64; BUCKETS];
        counts[bucket(1000)] = 5;
        counts[bucket(9000)] = 2;
        let now = sparse(&counts);
        assert_eq!(now, vec![(960, 1024, 5), (8192, 9216, 2)]);
        assert_eq!(minus(&now, &[(960, 1024, 5), (8192, 9216, 1)]), vec![(8192, 9216, 1)]);
        assert_eq!(minus(&now, &[]), now);
    }
}
