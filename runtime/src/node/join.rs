//! Join points: a node with several inputs runs a request only when all of them arrived.
//!
//! Inputs of one request arrive from different parents at different times;
//! the table keeps the partial set per request id until it is complete.
//!
//! Protocol against leaks: when a request fails, the runtime first marks it
//! finished and then removes its partial from every join table. An arrival
//! checks whether the request is finished *after* inserting, under the same
//! lock, and removes its own entry if so. Whichever order the two take the
//! lock in, no partial of a finished request stays behind.

use std::collections::HashMap;

use parking_lot::Mutex;

use crate::request::Completion;
use crate::tensor::Tensor;

struct Partial {
    inputs: Vec<Option<Tensor>>,
    filled: usize,
}

#[derive(Default)]
pub(crate) struct JoinTable {
    partials: Mutex<HashMap<u64, Partial>>,
}

impl JoinTable {
    /// Records input `slot` of request `id`, which needs `needed` of its `total` slots
    /// from parents (the others are state slots, filled later). Returns all `total`
    /// inputs, placeholders in the unfilled slots, once the last needed one arrives.
    /// Returns `None` while inputs are missing, or if the request finished meanwhile.
    pub fn arrive(
        &self,
        id: u64,
        completion: &Completion,
        needed: usize,
        total: usize,
        slot: usize,
        tensor: Tensor,
    ) -> Option<Vec<Tensor>> {
        let mut partials = self.partials.lock();
        let partial = partials.entry(id).or_insert_with(|| Partial { inputs: vec![None; total], filled: 0 });
        if partial.inputs[slot].replace(tensor).is_none() {
            partial.filled += 1;
        }
        if completion.is_finished() {
            partials.remove(&id);
            return None;
        }
        if partial.filled < needed {
            return None;
        }
        let partial = partials.remove(&id).expect("present");
        Some(partial.inputs.into_iter().map(|t| t.unwrap_or_else(super::placeholder)).collect())
    }

    /// Forgets request `id` (it failed elsewhere).
    pub fn forget(&self, id: u64) {
        self.partials.lock().remove(&id);
    }

    /// Forgets everything (shutdown); returns how many partials there were.
    pub fn clear(&self) -> usize {
        let mut partials = self.partials.lock();
        let n = partials.len();
        partials.clear();
        n
    }

    /// Requests waiting here for more inputs.
    pub fn len(&self) -> usize {
        self.partials.lock().len()
    }
}
