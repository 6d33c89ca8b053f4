//! The search over candidates: coordinate descent from the shipped file, then
//! random restarts around the best found, until the budget is spent.
//!
//! Descent: the knobs in an order shuffled by the seed; for each, every other
//! choice is scored with the rest held, and the best one kept if it beats the
//! current goodput strictly. A pass that changes nothing ends the descent; a
//! restart then changes `RESTART_KNOBS` knobs of the best candidate at random
//! and descends again. Every candidate is scored once (a memo by choice).
//! With an evaluation budget the whole search is a function of the seed; a
//! time budget stops wherever the clock says.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use toml::Table;

use super::goodput::{Evaluator, Score};
use super::knobs::{apply, Knob};

/// How long the search runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Budget {
    /// Candidates scored (deterministic).
    Evaluations(usize),
    /// Wall-clock time (stops where the clock says: not deterministic).
    Time(Duration),
}

/// A scored candidate: one choice per knob.
#[derive(Clone, Debug, PartialEq)]
pub struct Found {
    pub choice: Vec<usize>,
    pub score: Score,
}

/// Knobs a restart changes.
const RESTART_KNOBS: usize = 3;
/// Restarts in a row that land on scored candidates before the search gives up.
const STALE_RESTARTS: usize = 200;

pub struct Search<'a> {
    pub knobs: &'a [Knob],
    pub table: &'a Table,
    pub evaluator: &'a Evaluator<'a>,
    pub budget: Budget,
    pub seed: u64,
    /// Called after each candidate is scored (progress).
    pub on_scored: &'a dyn Fn(usize, &Found),
}

struct State {
    started: Instant,
    seen: HashMap<Vec<usize>, usize>,
    found: Vec<Found>,
    rng: StdRng,
}

impl Search<'_> {
    /// Runs the search; every candidate scored, in order (the shipped file first).
    pub fn run(&self) -> Vec<Found> {
        let mut st = State {
            started: Instant::now(),
            seen: HashMap::new(),
            found: Vec::new(),
            rng: StdRng::seed_from_u64(self.seed ^ 0x7u64.rotate_left(61)),
        };
        let shipped: Vec<usize> = self.knobs.iter().map(|k| k.shipped).collect();
        if self.score(&mut st, &shipped).is_none() {
            return st.found;
        }
        let mut current = shipped;
        let mut stale = 0;
        while self.descend(&mut st, current).is_some() {
            let best = best(&st.found).choice.clone();
            current = self.perturb(&mut st, &best);
            if st.seen.contains_key(&current) {
                stale += 1;
                if stale >= STALE_RESTARTS {
                    break;
                }
            } else {
                stale = 0;
            }
        }
        st.found
    }

    /// Whether another candidate may be scored.
    fn left(&self, st: &State) -> bool {
        match self.budget {
            Budget::Evaluations(n) => st.found.len() < n,
            Budget::Time(d) => st.started.elapsed() < d,
        }
    }

    /// The goodput of `choice` (scored now, or from the memo); `None` when the budget is spent.
    fn score(&self, st: &mut State, choice: &[usize]) -> Option<f64> {
        if let Some(&i) = st.seen.get(choice) {
            return Some(st.found[i].score.goodput);
        }
        if !self.left(st) {
            return None;
        }
        let score = self.evaluator.evaluate(&apply(self.table, self.knobs, choice));
        let goodput = score.goodput;
        st.seen.insert(choice.to_vec(), st.found.len());
        st.found.push(Found { choice: choice.to_vec(), score });
        (self.on_scored)(st.found.len(), st.found.last().expect("just pushed"));
        Some(goodput)
    }

    /// Coordinate descent from `current` to a candidate no single knob improves;
    /// `None` when the budget ran out on the way.
    fn descend(&self, st: &mut State, mut current: Vec<usize>) -> Option<Vec<usize>> {
        loop {
            let mut improved = false;
            let mut order: Vec<usize> = (0..self.knobs.len()).collect();
            order.shuffle(&mut st.rng);
            for k in order {
                let mut best_goodput = self.score(st, &current)?;
                let mut best_choice = current[k];
                for c in 0..self.knobs[k].choices.len() {
                    let mut candidate = current.clone();
                    candidate[k] = c;
                    let goodput = self.score(st, &candidate)?;
                    if goodput > best_goodput {
                        (best_goodput, best_choice) = (goodput, c);
                    }
                }
                improved |= best_choice != current[k];
                current[k] = best_choice;
            }
            if !improved {
                return Some(current);
            }
        }
    }

    /// `from` with `RESTART_KNOBS` knobs set to random choices.
    fn perturb(&self, st: &mut State, from: &[usize]) -> Vec<usize> {
        let mut out = from.to_vec();
        for _ in 0..RESTART_KNOBS.min(self.knobs.len()) {
            let k = st.rng.random_range(0..self.knobs.len());
            out[k] = st.rng.random_range(0..self.knobs[k].choices.len());
        }
        out
    }
}

/// The best scored candidate: the highest goodput, the earliest scored among equals.
pub fn best(found: &[Found]) -> &Found {
    let mut best = &found[0];
    for f in &found[1..] {
        if f.score.goodput > best.score.goodput {
            best = f;
        }
    }
    best
}
