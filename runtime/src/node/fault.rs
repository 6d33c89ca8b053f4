//! Fault injection: the drills of `[nodes.NAME.faults]`.
//!
//! Each worker of a node with faults configured owns one [`FaultDraws`]; before
//! every stage run it draws once whether that run fails with an error, panics,
//! runs slowly, or runs normally. The worker applies the draw inside the same
//! `catch_unwind` that guards real engine runs, so an injected panic takes the
//! exact path a real one does (the batch's requests get an error naming node and
//! stage, the stage's engine is recreated). Draws come from a small
//! deterministic generator seeded by the configured seed, the node and the
//! worker: a drill repeats, and workers do not share state.

use crate::config::FaultConfig;

/// What one stage run is made to do.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Fault {
    /// Return an error instead of running.
    Error,
    /// Panic instead of running.
    Panic,
    /// Run, then wait so the run takes this many times as long.
    Slow(f64),
}

impl Fault {
    /// Label for metrics and logs.
    pub fn kind(self) -> &'static str {
        match self {
            Fault::Error => "error",
            Fault::Panic => "panic",
            Fault::Slow(_) => "slow",
        }
    }
}

/// One worker's stream of fault draws.
pub(crate) struct FaultDraws {
    config: FaultConfig,
    state: u64,
}

impl FaultDraws {
    pub fn new(config: &FaultConfig, node: usize, worker: usize) -> Self {
        let mut state = config.seed ^ (node as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (worker as u64) << 32;
        // Warm the generator so nearby seeds do not start with nearby draws.
        splitmix(&mut state);
        FaultDraws { config: config.clone(), state }
    }

    /// Draws the fate of the next stage run: `None` runs it normally.
    pub fn draw(&mut self) -> Option<Fault> {
        // 53 random bits as a uniform share in [0, 1).
        let u = (splitmix(&mut self.state) >> 11) as f64 / (1u64 << 53) as f64;
        let c = &self.config;
        if u < c.error {
            Some(Fault::Error)
        } else if u < c.error + c.panic {
            Some(Fault::Panic)
        } else if u < c.error + c.panic + c.slow {
            Some(Fault::Slow(c.slow_factor))
        } else {
            None
        }
    }
}

/// SplitMix64: advances `state` and returns the next output.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shares(config: FaultConfig, n: usize) -> [f64; 4] {
        let mut draws = FaultDraws::new(&config, 3, 1);
        let mut counts = [0usize; 4];
        for _ in 0..n {
            let i = match draws.draw() {
                Some(Fault::Error) => 0,
                Some(Fault::Panic) => 1,
                Some(Fault::Slow(f)) => {
                    assert_eq!(f, config.slow_factor);
                    2
                }
                None => 3,
            };
            counts[i] += 1;
        }
        counts.map(|c| c as f64 / n as f64)
    }

    #[test]
    fn draws_follow_the_configured_rates() {
        let config = FaultConfig { error: 0.05, panic: 0.01, slow: 0.1, slow_factor: 10.0, seed: 7 };
        let [error, panic, slow, none] = shares(config, 200_000);
        assert!((error - 0.05).abs() < 0.003, "error share {error}");
        assert!((panic - 0.01).abs() < 0.0015, "panic share {panic}");
        assert!((slow - 0.1).abs() < 0.004, "slow share {slow}");
        assert!((none - 0.84).abs() < 0.005, "normal share {none}");
    }

    #[test]
    fn no_rates_never_fault_and_full_rate_always_does() {
        assert_eq!(shares(FaultConfig::default(), 10_000)[3], 1.0);
        let always = FaultConfig { error: 1.0, ..FaultConfig::default() };
        assert_eq!(shares(always, 1_000)[0], 1.0);
    }

    #[test]
    fn the_same_seed_node_and_worker_repeat_the_same_draws() {
        let config = FaultConfig { error: 0.3, panic: 0.3, seed: 11, ..FaultConfig::default() };
        let run = |node, worker| {
            let mut d = FaultDraws::new(&config, node, worker);
            (0..64).map(|_| d.draw()).collect::<Vec<_>>()
        };
        assert_eq!(run(0, 0), run(0, 0));
        assert_ne!(run(0, 0), run(0, 1), "workers draw differently");
        assert_ne!(run(0, 0), run(1, 0), "nodes draw differently");
    }
}
