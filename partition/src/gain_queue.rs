//! The hill-climbing pass's queue of moves: best (critical, total) gain first,
//! then the lowest vertex id, then the latest stamp — the order of a binary
//! max-heap of `((critical, total), Reverse(vertex), stamp)` tuples, with
//! cheaper steps.
//!
//! Critical gains are small integers on the task graphs (a vertex's gain is
//! at most the critical value of its relations), so the queue keeps one
//! bucket per critical gain, each a max-heap of the rest of the key packed
//! into one `u128` (total gain with its sign bit flipped, the complemented
//! vertex id, the stamp): a heap step compares and moves 16 bytes instead of
//! a four-field tuple of 24, and each bucket's heap is smaller than the
//! whole. Where the critical gains may span more than [`MAX_BUCKETS`]
//! values, the queue is the plain tuple heap.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::graph::Vertex;

/// The most buckets (distinct critical gains) the bucketed form keeps.
pub const MAX_BUCKETS: i64 = 4096;

/// A max-queue of moves; see the module documentation for the order.
pub enum GainQueue {
    /// One heap of packed keys per critical gain `lo + i`; no entry lies above
    /// bucket `top`; `len` entries in all.
    Buckets { lo: i64, heaps: Vec<BinaryHeap<u128>>, top: usize, len: usize },
    /// The tuple heap, for wide ranges of critical gain.
    Heap(BinaryHeap<((i64, i64), Reverse<Vertex>, u32)>),
}

#[inline]
fn pack(total: i64, v: Vertex, stamp: u32) -> u128 {
    (((total as u64) ^ (1 << 63)) as u128) << 64 | ((!v) as u128) << 32 | stamp as u128
}

#[inline]
fn unpack(key: u128) -> (i64, Vertex, u32) {
    ((((key >> 64) as u64) ^ (1 << 63)) as i64, !((key >> 32) as u32), key as u32)
}

/// A waiting subtask's key for a max-heap: lightest first, then the lowest
/// id, then the latest stamp (the order of `(Reverse(weight), Reverse(v),
/// stamp)` tuples) in one `u128`.
#[inline]
pub fn pack_wait(weight: i64, v: Vertex, stamp: u32) -> u128 {
    ((!((weight as u64) ^ (1 << 63))) as u128) << 64 | ((!v) as u128) << 32 | stamp as u128
}

/// The (weight, vertex, stamp) of a [`pack_wait`] key.
#[inline]
pub fn unpack_wait(key: u128) -> (i64, Vertex, u32) {
    ((!((key >> 64) as u64) ^ (1 << 63)) as i64, !((key >> 32) as u32), key as u32)
}

impl GainQueue {
    /// A queue for moves whose critical gain lies in `-bound..=bound`;
    /// `capacity` entries are expected (the tuple heap reserves them).
    pub fn new(bound: i64, capacity: usize) -> Self {
        if (0..MAX_BUCKETS / 2).contains(&bound) {
            GainQueue::Buckets {
                lo: -bound,
                heaps: (0..=2 * bound).map(|_| BinaryHeap::new()).collect(),
                top: 0,
                len: 0,
            }
        } else {
            GainQueue::Heap(BinaryHeap::with_capacity(capacity))
        }
    }

    #[inline]
    pub fn push(&mut self, gain: (i64, i64), v: Vertex, stamp: u32) {
        match self {
            GainQueue::Buckets { lo, heaps, top, len } => {
                let i = (gain.0 - *lo) as usize;
                heaps[i].push(pack(gain.1, v, stamp));
                *top = (*top).max(i);
                *len += 1;
            }
            GainQueue::Heap(h) => h.push((gain, Reverse(v), stamp)),
        }
    }

    /// The first move in the order: (gain, vertex, stamp).
    #[inline]
    pub fn pop(&mut self) -> Option<((i64, i64), Vertex, u32)> {
        match self {
            GainQueue::Buckets { lo, heaps, top, len } => {
                if *len == 0 {
                    return None;
                }
                loop {
                    if let Some(key) = heaps[*top].pop() {
                        *len -= 1;
                        let (total, v, stamp) = unpack(key);
                        return Some(((*lo + *top as i64, total), v, stamp));
                    }
                    *top -= 1;
                }
            }
            GainQueue::Heap(h) => h.pop().map(|(gain, Reverse(v), stamp)| (gain, v, stamp)),
        }
    }

    /// Empties the queue and readies it for critical gains in
    /// `-bound..=bound`, keeping the room its buckets grew.
    pub fn reset(&mut self, bound: i64, capacity: usize) {
        self.clear();
        match self {
            GainQueue::Buckets { lo, heaps, .. } if (0..MAX_BUCKETS / 2).contains(&bound) => {
                *lo = -bound;
                let want = (2 * bound + 1) as usize;
                if heaps.len() < want {
                    heaps.resize_with(want, BinaryHeap::new);
                }
            }
            GainQueue::Heap(_) if !(0..MAX_BUCKETS / 2).contains(&bound) => {}
            _ => *self = GainQueue::new(bound, capacity),
        }
    }

    pub fn clear(&mut self) {
        match self {
            GainQueue::Buckets { heaps, top, len, .. } => {
                heaps[..=*top].iter_mut().for_each(BinaryHeap::clear);
                (*top, *len) = (0, 0);
            }
            GainQueue::Heap(h) => h.clear(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    #[test]
    fn pops_in_the_order_of_the_tuple_heap() {
        let mut rng = StdRng::seed_from_u64(5);
        for (bound, total) in [(0i64, 3i64), (3, 10), (40, i64::MAX / 2), (MAX_BUCKETS, 5)] {
            let mut q = GainQueue::new(bound, 16);
            assert_eq!(matches!(q, GainQueue::Buckets { .. }), bound < MAX_BUCKETS / 2);
            let mut h = BinaryHeap::new();
            for round in 0..3 {
                for _ in 0..5000 {
                    if rng.random_bool(0.55) {
                        let gain = (rng.random_range(-bound..=bound), rng.random_range(-total..=total));
                        let (v, st) = (rng.random_range(0..50u32), rng.random_range(0..4u32));
                        q.push(gain, v, st);
                        h.push((gain, Reverse(v), st));
                    } else {
                        assert_eq!(q.pop(), h.pop().map(|(g, Reverse(v), st)| (g, v, st)), "round {round}");
                    }
                }
                q.clear();
                h.clear();
                assert_eq!(q.pop(), None);
            }
        }
        // A reset queue pops what a fresh one does, across both forms.
        let mut q = GainQueue::new(2, 4);
        for bound in [5i64, 1, MAX_BUCKETS, 3, MAX_BUCKETS + 1, 0] {
            q.push((0, 1), 1, 0);
            q.reset(bound, 4);
            assert_eq!(q.pop(), None);
            assert_eq!(matches!(q, GainQueue::Buckets { .. }), bound < MAX_BUCKETS / 2);
            let mut h = BinaryHeap::new();
            for _ in 0..500 {
                let gain = (rng.random_range(-bound..=bound), rng.random_range(-9..=9));
                let (v, st) = (rng.random_range(0..50u32), rng.random_range(0..4u32));
                q.push(gain, v, st);
                h.push((gain, Reverse(v), st));
            }
            let ours: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
            let theirs: Vec<_> = std::iter::from_fn(|| h.pop()).map(|(g, Reverse(v), st)| (g, v, st)).collect();
            assert_eq!(ours, theirs, "bound {bound}");
        }
        // Waiting keys order as their tuples do.
        let mut packed = BinaryHeap::new();
        let mut tuples = BinaryHeap::new();
        for _ in 0..2000 {
            let w = match rng.random_range(0..4) {
                0 => i64::MIN + rng.random_range(0..3),
                1 => i64::MAX - rng.random_range(0..3),
                _ => rng.random_range(-5..=5),
            };
            let (v, st) = (rng.random_range(0..u32::MAX), rng.random_range(0..u32::MAX));
            assert_eq!(unpack_wait(pack_wait(w, v, st)), (w, v, st));
            packed.push(pack_wait(w, v, st));
            tuples.push((Reverse(w), Reverse(v), st));
        }
        while let Some((Reverse(w), Reverse(v), st)) = tuples.pop() {
            assert_eq!(packed.pop().map(unpack_wait), Some((w, v, st)));
        }
        // The extremes of the packed total gain and vertex id.
        let mut q = GainQueue::new(1, 4);
        for (g, v) in [((0, i64::MIN), u32::MAX), ((0, i64::MAX), 0), ((0, -1), 7), ((0, 0), 7), ((1, i64::MIN), 3)] {
            q.push(g, v, 9);
        }
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                ((1, i64::MIN), 3, 9),
                ((0, i64::MAX), 0, 9),
                ((0, 0), 7, 9),
                ((0, -1), 7, 9),
                ((0, i64::MIN), u32::MAX, 9)
            ]
        );
    }
}
