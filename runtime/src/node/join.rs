//! Join points: a node with several inputs runs a request only when all of them arrived.
//!
//! Inputs of one request arrive from different parents at different times;
//! the table keeps the partial set per request id until it is complete. It
//! also counts, per input slot, how many partials still wait for that slot:
//! the scheduler reads these counts (without the lock) to raise the priority
//! of the parent that a join is waiting on.
//!
//! Protocol against leaks: when a request fails, the runtime first marks it
//! finished and then removes its partial from every join table. An arrival
//! checks whether the request is finished *after* inserting, under the same
//! lock, and removes its own entry if so. Whichever order the two take the
//! lock in, no partial of a finished request stays behind. The waiting
//! counts change only under the lock, with the partials they count.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;

use crate::request::Completion;
use crate::tensor::Tensor;

struct Partial {
    inputs: Vec<Option<Tensor>>,
    filled: usize,
}

pub(crate) struct JoinTable {
    partials: Mutex<HashMap<u64, Partial>>,
    /// Slots fed by parents (the others are state slots, filled later).
    external: Vec<bool>,
    /// How many of them: a partial is complete when this many are filled.
    needed: usize,
    /// Per slot: partials still waiting for it.
    waiting: Vec<AtomicUsize>,
}

impl JoinTable {
    pub fn new(external: Vec<bool>) -> Self {
        let waiting = external.iter().map(|_| AtomicUsize::new(0)).collect();
        let needed = external.iter().filter(|&&e| e).count();
        JoinTable { partials: Mutex::new(HashMap::new()), external, needed, waiting }
    }

    /// Lowers the waiting counts of the slots `partial` still misses (it is leaving the table).
    fn unwait(&self, partial: &Partial) {
        for (slot, input) in partial.inputs.iter().enumerate() {
            if self.external[slot] && input.is_none() {
                self.waiting[slot].fetch_sub(1, Ordering::Relaxed);
            }
        }
    }

    /// Records input `slot` of request `id`. Returns all inputs (placeholders in
    /// the state slots) once the last one from a parent arrives; `None` while
    /// inputs are missing, or if the request finished meanwhile.
    pub fn arrive(&self, id: u64, completion: &Completion, slot: usize, tensor: Tensor) -> Option<Vec<Tensor>> {
        let mut partials = self.partials.lock();
        let partial = partials.entry(id).or_insert_with(|| {
            for (s, &external) in self.external.iter().enumerate() {
                if external {
                    self.waiting[s].fetch_add(1, Ordering::Relaxed);
                }
            }
            Partial { inputs: vec![None; self.external.len()], filled: 0 }
        });
        if partial.inputs[slot].replace(tensor).is_none() {
            partial.filled += 1;
            self.waiting[slot].fetch_sub(1, Ordering::Relaxed);
        }
        if completion.is_finished() {
            let partial = partials.remove(&id).expect("present");
            self.unwait(&partial);
            return None;
        }
        if partial.filled < self.needed {
            return None;
        }
        let partial = partials.remove(&id).expect("present");
        Some(partial.inputs.into_iter().map(|t| t.unwrap_or_else(super::placeholder)).collect())
    }

    /// Forgets request `id` (it failed elsewhere).
    pub fn forget(&self, id: u64) {
        let mut partials = self.partials.lock();
        if let Some(partial) = partials.remove(&id) {
            self.unwait(&partial);
        }
    }

    /// Forgets everything (shutdown); returns how many partials there were.
    pub fn clear(&self) -> usize {
        let mut partials = self.partials.lock();
        let n = partials.len();
        for (_, partial) in partials.drain() {
            self.unwait(&partial);
        }
        n
    }

    /// Requests waiting here for more inputs.
    pub fn len(&self) -> usize {
        self.partials.lock().len()
    }

    /// Partials waiting for input `slot` (read without the lock).
    pub fn waiting_for(&self, slot: usize) -> usize {
        self.waiting[slot].load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t() -> Tensor {
        Tensor::zeros(crate::tensor::DType::F32, vec![1, 1]).unwrap()
    }

    #[test]
    fn waiting_counts_follow_the_partials() {
        // Slots 0 and 1 come from parents, slot 2 is a state slot.
        let table = JoinTable::new(vec![true, true, false]);
        let done = Completion::default();
        assert!(table.arrive(1, &done, 0, t()).is_none());
        assert!(table.arrive(2, &done, 0, t()).is_none());
        assert!(table.arrive(3, &done, 1, t()).is_none());
        assert_eq!((table.waiting_for(0), table.waiting_for(1), table.waiting_for(2)), (1, 2, 0));
        let inputs = table.arrive(1, &done, 1, t()).expect("complete: both parent slots");
        assert_eq!(inputs.len(), 3, "the state slot holds a placeholder");
        assert_eq!((table.waiting_for(0), table.waiting_for(1)), (1, 1));
        table.forget(2);
        table.forget(3);
        assert_eq!((table.waiting_for(0), table.waiting_for(1), table.len()), (0, 0, 0));
    }
}
