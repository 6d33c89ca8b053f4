//! How running batches share the cores: as the OS shares the workers' threads
//! under the thread classes the collaborative rule sets
//! (`runtime/src/node/niceness.rs`, `ThreadClasses::of` and `set_for_batch`).
//!
//! Under the collaborative rule, a batch is *foreground* when it holds a
//! priority task, when priority work waits at its node as it starts, or (with
//! `background_scope = "node"`) when a priority task has reached its node
//! before; the others are *background*. Foreground batches run at the real-time
//! policy with `foreground_realtime` and at the thread's own nice otherwise;
//! background batches at the normal policy with `background_nice` added to
//! their nice. The baselines leave every thread alone: all share equally.
//!
//! The sharing: real-time jobs first, by their real-time priority, a core each
//! (where more of one priority want cores than are left, an equal share of what
//! is left; the real-time jobs together take at most 95% of the cores where a
//! normal one runs: the kernel's real-time throttling leaves the rest to normal
//! threads); the load generator's sends at priority 2, the workers' real-time
//! batches at 1. The cores left go to the normal batches
//! in proportion to their nice weights (CFS: 1024 / 1.25^nice), none faster
//! than one core. With no classes set, every batch runs at `cores / running`
//! (at most 1), the plain processor sharing.
//!
//! Not modelled: a background worker lifted to the foreground while its batch
//! runs (when a priority task reaches its node), `foreground_slice_us`, and
//! the other threads of the process beyond the load generator's (hand-offs).

use baton::config::BackgroundScope;
use baton::{BatchingPolicy, PipelineSpec};

/// A running job's thread class.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Class {
    /// Its FIFO real-time priority (0: the normal policy).
    pub realtime_priority: u8,
    /// Its CFS weight (1024 at nice 0), under the normal policy.
    pub weight: f64,
}

impl Class {
    pub const PLAIN: Class = Class { realtime_priority: 0, weight: 1024.0 };
    /// A worker's batch in the real-time foreground (`foreground_realtime`).
    pub const REALTIME: Class = Class { realtime_priority: 1, weight: 1024.0 };
    /// The load generator's sends at the real-time policy, above the workers'
    /// (`baton bench --generator-policy realtime`).
    pub const GENERATOR_REALTIME: Class = Class { realtime_priority: 2, weight: 1024.0 };

    /// A thread at the normal policy and nice value `nice`.
    pub fn at_nice(nice: i32) -> Class {
        Class { realtime_priority: 0, weight: weight(nice) }
    }

    pub fn is_realtime(&self) -> bool {
        self.realtime_priority > 0
    }
}

/// The pipeline's thread classes.
#[derive(Clone, Debug)]
pub struct Classes {
    on: bool,
    realtime: bool,
    background_weight: f64,
    by_node: bool,
    /// Per node: a priority task ran there (`background_scope = "node"`).
    seen_priority: Vec<bool>,
}

/// The CFS weight of `nice` (1024 at 0, each step about 1.25 ×).
fn weight(nice: i32) -> f64 {
    1024.0 / 1.25f64.powi(nice)
}

impl Classes {
    pub fn new(spec: &PipelineSpec) -> Classes {
        let s = &spec.scheduler;
        let collaborative = s.policy == BatchingPolicy::Collaborative;
        Classes {
            on: collaborative && (s.foreground_realtime || s.background_nice > 0),
            realtime: s.foreground_realtime,
            background_weight: weight(s.background_nice.min(19)),
            by_node: s.background_scope == BackgroundScope::Node,
            seen_priority: vec![false; spec.nodes.len()],
        }
    }

    /// Whether the workers' threads run at the real-time policy outside the background
    /// (`foreground_realtime` under the collaborative rule): such a worker never spins for work.
    pub fn realtime_workers(&self) -> bool {
        self.on && self.realtime
    }

    /// Whether a batch starting at `node` would run at the real-time policy (`urgent`:
    /// it would take a priority task).
    pub fn is_realtime(&self, node: usize, urgent: bool) -> bool {
        self.on && self.realtime && (urgent || (self.by_node && self.seen_priority[node]))
    }

    /// The class of a batch starting at `node`: whether it holds a priority task, and
    /// whether priority work still waits at the node.
    pub fn of(&mut self, node: usize, holds_priority: bool, priority_waits: bool) -> Class {
        if !self.on {
            return Class::PLAIN;
        }
        self.seen_priority[node] |= holds_priority;
        if holds_priority || priority_waits || (self.by_node && self.seen_priority[node]) {
            if self.realtime {
                Class::REALTIME
            } else {
                Class::PLAIN
            }
        } else {
            Class { realtime_priority: 0, weight: self.background_weight }
        }
    }
}

/// Each running batch's speed (the cores it gets, at most 1) on `cores` cores; see the module docs.
pub fn speeds(cores: f64, classes: &[Class], out: &mut Vec<f64>) {
    out.clear();
    out.resize(classes.len(), 0.0);
    let realtime = classes.iter().filter(|c| c.is_realtime()).count();
    let normal = classes.len() - realtime;
    if realtime == 0 && classes.windows(2).all(|w| w[0].weight == w[1].weight) {
        // Equal weights: `cores / running` each, at most one core.
        out.fill((cores / classes.len() as f64).min(1.0));
        return;
    }
    // Real-time jobs, the highest priority first, each level sharing what the ones above left.
    let realtime_cores = if normal > 0 { cores * 0.95 } else { cores };
    let mut left = realtime_cores;
    let mut priorities: Vec<u8> = classes.iter().map(|c| c.realtime_priority).filter(|&p| p > 0).collect();
    priorities.sort_unstable_by(|a, b| b.cmp(a));
    priorities.dedup();
    for priority in priorities {
        let at = classes.iter().filter(|c| c.realtime_priority == priority).count() as f64;
        let each = (left / at).min(1.0);
        for (k, c) in classes.iter().enumerate() {
            if c.realtime_priority == priority {
                out[k] = each;
            }
        }
        left -= each * at;
    }
    let mut left = cores - (realtime_cores - left);
    let mut open: Vec<usize> = (0..classes.len()).filter(|&k| !classes[k].is_realtime()).collect();
    // Water-filling: shares by weight, none above one core; what a capped batch leaves goes to the others.
    while !open.is_empty() {
        let total: f64 = open.iter().map(|&k| classes[k].weight).sum();
        let capped: Vec<usize> = open.iter().copied().filter(|&k| left * classes[k].weight / total >= 1.0).collect();
        if capped.is_empty() {
            for &k in &open {
                out[k] = left * classes[k].weight / total;
            }
            return;
        }
        for &k in &capped {
            out[k] = 1.0;
            left -= 1.0;
        }
        open.retain(|k| !capped.contains(k));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BG: Class = Class { realtime_priority: 0, weight: 110.0 };
    const RT: Class = Class::REALTIME;
    const GEN: Class = Class::GENERATOR_REALTIME;

    fn run(cores: f64, classes: &[Class]) -> Vec<f64> {
        let mut out = Vec::new();
        speeds(cores, classes, &mut out);
        out
    }

    #[test]
    fn plain_batches_share_the_cores_equally_and_none_runs_faster_than_one_core() {
        assert_eq!(run(2.0, &[Class::PLAIN; 4]), [0.5; 4]);
        assert_eq!(run(2.0, &[Class::PLAIN; 1]), [1.0]);
    }

    #[test]
    fn real_time_batches_take_their_cores_first_and_nice_weights_split_the_rest() {
        assert_eq!(run(2.0, &[RT, Class::PLAIN, Class::PLAIN]), [1.0, 0.5, 0.5]);
        // Nice 0 against nice 10 (weights 1024 and 110) on one core.
        let s = run(1.0, &[Class::PLAIN, BG]);
        assert!((s[0] - 1024.0 / 1134.0).abs() < 1e-9 && (s[1] - 110.0 / 1134.0).abs() < 1e-9, "{s:?}");
        // On two cores the nice-0 batch is capped at one core, the other gets the rest.
        assert_eq!(run(2.0, &[Class::PLAIN, BG]), [1.0, 1.0]);
        // Three real-time batches on two cores leave 5% to the normal one.
        let s = run(2.0, &[RT, RT, RT, Class::PLAIN]);
        assert!((s[0] - 1.9 / 3.0).abs() < 1e-9 && (s[3] - 0.1).abs() < 1e-9, "{s:?}");
    }

    #[test]
    fn the_generators_real_time_sends_take_a_core_before_the_real_time_batches() {
        // Two real-time batches and the generator's send on two cores, a normal batch beside:
        // the send a core, the batches the rest of 95% of the cores between them.
        let s = run(2.0, &[RT, GEN, RT, Class::PLAIN]);
        assert!((s[1] - 1.0).abs() < 1e-9, "{s:?}");
        assert!((s[0] - 0.45).abs() < 1e-9 && (s[2] - 0.45).abs() < 1e-9, "{s:?}");
        assert!((s[3] - 0.1).abs() < 1e-9, "{s:?}");
        // Without a normal job the real-time ones may take every core.
        assert_eq!(run(2.0, &[GEN, RT]), [1.0, 1.0]);
        assert_eq!(run(1.0, &[RT, GEN]), [0.0, 1.0]);
    }
}
