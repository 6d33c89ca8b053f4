//! The weighted-fair choice with a decaying history weight.
//!
//! Among the tenants with waiting jobs (the *set*), every round:
//! - **expected weight** `W = configured / Σ configured over the set`,
//!   quantized to 1..=256 ([`quantize`]);
//! - **delay factor** `d` from `W` by the delay-factor table ([`delay_factor`]):
//!   1 → 256, 2 → 128, 3–4 → 64, 5–8 → 32, 9–256 → 16;
//! - **history weight** `H`, after the round: `H − H/d` for a tenant not
//!   chosen, `H − H/d + d_max/d` for the one chosen (`d_max` = 256);
//! - **target weight** `T`, which "grows with `W − H`": the largest `T`
//!   wins (under the integral rule below, the largest `T + W`), ties go to
//!   the larger `W` (then to the lower tenant index, so runs are reproducible).
//!
//! `H` is an exponential average of `256 × (share of rounds served)` over
//! about `d` rounds and `W` is `256 × (share configured)`, so a tenant served
//! less than its share has `W > H`.
//!
//! ## Two readings, and the one the runtime uses
//! - [`TargetRule::Difference`]: `T = W − H`. This is a proportional
//!   controller on an average, and it keeps a steady-state error: a tenant
//!   served rarely has a saw-tooth `H` that sits lower, just before each of
//!   its turns, than a tenant served often, so shares drift from the weights
//!   (1:3 gets about 1.07:2.93, and the lag behind the ideal share grows
//!   without bound). With literal integers (no fraction bits) there is worse: `H/d`
//!   truncates, a history below `d` never decays, and a tenant of expected
//!   weight 1 served once keeps `H = 2 > W` for ever; against a tenant of
//!   weight 255 (whose `H` settles at 256) the tie then always goes to the
//!   heavier one and the light one starves (tested below).
//! - [`TargetRule::Integral`] **(choice, the default)**: `T = S + d·(W − H)`
//!   where `S` grows by `W − H` every round, `H` taken as the round finds
//!   it. The sum of an exponential average over time equals the sum of what
//!   it averages less `d` times its change (`d·(H' − H) = 256·served − H`
//!   each round), so `S = 256·lag + d·(H − H₀)` and `T = 256·lag + d·(W − H₀)`:
//!   with `H₀ = W` when a tenant enters, `T` is exactly the tenant's lag
//!   behind its share (in 1/256 jobs) built from the rule's own `W`, `d` and
//!   `H` — a proportional-plus-integral reading of "T grows with W − H".
//!   The choice takes the largest `T + W`: the lag the tenant will have after
//!   the round if it is not served, so the tenant that would fall furthest
//!   behind goes first (with `T` alone, a tenant sitting just below the
//!   leader's lag waits one round too many; the bursts of `baton
//!   bench-fairness` showed it as a worst lag of 1.22 jobs, 1.00 with `T + W`).
//!   Shares then follow the weights exactly and the lag stays within about a
//!   job. A tenant that leaves the set ahead of its share keeps that debt,
//!   shrinking by `W` per round it is away (as stride scheduling's pass does
//!   against its virtual time); one that leaves behind is not owed anything
//!   on return.
//!
//!   Adding `W − H` *after* the round's update instead (an earlier form of
//!   this rule) leaves `T = 256·lag + W − H`: an error of up to a job that
//!   restarts at every change of the set, so with light tenants coming and
//!   going beside a flooding one it added up (worst lag 8 jobs in the
//!   flood trace, 1.33 — stride scheduling's figure — once `H` is taken
//!   before the round).
//!
//! Arithmetic is integer. The runtime keeps `H`, `W` and `T` in fixed point
//! with [`WeightedFair::DEFAULT_FRAC_BITS`] fraction bits **(choice)** so that
//! `H/d` does not stall; the integer part of `W`, clamped to 1..=256, still
//! picks `d` from the table. [`WeightedFair::literal`] is the rule in plain integers
//! with `T = W − H`; the tests check both by hand-computed rounds.
//!
//! **(choice)** When the set changes, each member's `T` is kept as it was
//! (its `S` absorbs the change of `d·(W − H)`): the identity above holds for
//! a constant `W`, and without this every arrival or departure of another
//! tenant would shift a member's target by `d·ΔW·(W − H)/W`, a drift that
//! adds up when light tenants come and go every batch. Kept, `T` moves by
//! `W − 256` when the tenant is served and by `W` when not (less `H mod d`,
//! the truncation of `H/d`) — its lag against the generalized processor
//! sharing of the set, as stride scheduling's pass measures against virtual time.
//!
//! **(choice)** `H` starts at `W` when a tenant enters the set (the rule as
//! written starts `H` at the configured weight; on the 1..256 scale that is `W`),
//! and `S` at 0 or at what is left of its debt, so a newcomer is not owed
//! anything, and in debt only as above; when the set changes,
//! each member's `H` is rescaled by its new `W` over its old one, so a
//! tenant that used capacity nobody else wanted is not punished for it when
//! others arrive (the rule stride scheduling follows with its virtual time).

use super::{Backlog, TenantOrder};

/// `d_max`: the largest delay factor.
pub const D_MAX: u64 = 256;

/// The delay-factor table, for a quantized expected weight (1..=256).
pub fn delay_factor(w: u64) -> u64 {
    match w {
        0..=1 => 256,
        2 => 128,
        3..=4 => 64,
        5..=8 => 32,
        _ => 16,
    }
}

/// `configured / total` on the 1..=256 scale, truncated and clamped.
pub fn quantize(configured: u64, total: u64) -> u64 {
    (configured * D_MAX / total.max(1)).clamp(1, D_MAX)
}

/// How the target weight `T` follows `W − H` (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetRule {
    /// `T = W − H`.
    Difference,
    /// `T = S + d·(W − H)`, `S` the running sum of `W − H` (the runtime's rule).
    Integral,
}

#[derive(Clone, Debug, Default)]
struct Tenant {
    configured: u64,
    /// `S`: the integral rule's running sum of `W − H`, fixed point.
    t: i64,
    /// Integral rule: the target it left the set with, if negative (served ahead of its share).
    /// (Fixed point, like `t`.)
    debt: i64,
    /// The round it left the set.
    left_at: u64,
    /// Expected weight, fixed point.
    w: u64,
    /// Delay factor.
    d: u64,
    /// History weight, fixed point.
    h: u64,
}

/// The weighted-fair choice. See the module docs.
pub struct WeightedFair {
    tenants: Vec<Tenant>,
    /// The set: tenants with waiting jobs.
    backlog: Backlog,
    frac_bits: u32,
    rule: TargetRule,
    /// Rounds so far.
    rounds: u64,
}

impl WeightedFair {
    /// Fraction bits of `H` and `W` in the runtime.
    pub const DEFAULT_FRAC_BITS: u32 = 16;

    /// Over tenants with these configured weights (each ≥ 1): the runtime's form.
    pub fn new(weights: &[u32]) -> Self {
        Self::with_options(weights, Self::DEFAULT_FRAC_BITS, TargetRule::Integral)
    }

    /// The rule in plain integers (no fraction bits) with `T = W − H`.
    pub fn literal(weights: &[u32]) -> Self {
        Self::with_options(weights, 0, TargetRule::Difference)
    }

    /// With `frac_bits` fraction bits in `H`, `W` and `T` (0: integers) and the given target rule.
    pub fn with_options(weights: &[u32], frac_bits: u32, rule: TargetRule) -> Self {
        assert!(frac_bits <= 24, "at most 24 fraction bits");
        WeightedFair {
            tenants: weights.iter().map(|&w| Tenant { configured: u64::from(w.max(1)), ..Tenant::default() }).collect(),
            backlog: Backlog::new(weights.len()),
            frac_bits,
            rule,
            rounds: 0,
        }
    }

    /// The target weight `T` of `tenant`, in fixed point.
    pub fn target(&self, tenant: usize) -> i64 {
        let t = &self.tenants[tenant];
        match self.rule {
            TargetRule::Difference => t.w as i64 - t.h as i64,
            TargetRule::Integral => t.t + t.d as i64 * (t.w as i64 - t.h as i64),
        }
    }

    /// `(W, d, H)` of `tenant`, on the integer scale (fraction bits dropped), for tests and traces.
    pub fn state(&self, tenant: usize) -> (u64, u64, u64) {
        let t = &self.tenants[tenant];
        (t.w >> self.frac_bits, t.d, t.h >> self.frac_bits)
    }

    /// `(W, H)` of `tenant` in fixed point (with the fraction bits).
    pub fn raw_state(&self, tenant: usize) -> (u64, u64) {
        let t = &self.tenants[tenant];
        (t.w, t.h)
    }

    /// What the choice compares: under the integral rule `T + W`, the lag the
    /// tenant will have after this round if it is not served (so the tenant
    /// that would fall furthest behind goes first); under the difference rule
    /// `T` itself, as the rule's text says.
    fn selection_key(&self, tenant: usize) -> i64 {
        match self.rule {
            TargetRule::Difference => self.target(tenant),
            TargetRule::Integral => self.target(tenant) + self.tenants[tenant].w as i64,
        }
    }

    /// The eligible waiting tenant with the largest selection key (ties: larger `W`, then lower index).
    fn best(&self, mut eligible: impl FnMut(usize) -> bool) -> Option<usize> {
        let mut best: Option<(i64, u64, usize)> = None;
        for &i in &self.backlog.active {
            if !eligible(i) {
                continue;
            }
            let t = &self.tenants[i];
            let target = self.selection_key(i);
            // Largest key, then larger W; the lower index wins what is left (iteration order).
            if best.is_none_or(|(bt, bw, _)| target > bt || (target == bt && t.w > bw)) {
                best = Some((target, t.w, i));
            }
        }
        best.map(|(_, _, i)| i)
    }

    /// Recomputes every member's `W` and `d` after the set changed, and
    /// rescales each member's `H` by its new `W` over its old one (a newcomer,
    /// whose old `W` is 0, starts at `H = W`).
    fn reweigh(&mut self) {
        let total = self.backlog.weight;
        let frac = self.frac_bits;
        let integral = self.rule == TargetRule::Integral;
        for &i in &self.backlog.active {
            let t = &mut self.tenants[i];
            // Integral rule: a member's target (its lag) before the change, kept through it.
            let kept = (t.w != 0).then(|| t.t + t.d as i64 * (t.w as i64 - t.h as i64));
            let w = if frac == 0 {
                quantize(t.configured, total)
            } else {
                ((t.configured << frac) * D_MAX / total).clamp(1 << frac, D_MAX << frac)
            };
            if let Some(h) = (t.h * w).checked_div(t.w) {
                t.h = h;
            } else {
                // A newcomer (old W = 0); its debt shrinks by its expected weight for every round it was away.
                let repaid = (self.rounds - t.left_at).saturating_mul(w) as i64;
                (t.h, t.t) = (w, t.debt.saturating_add(repaid).min(0));
            }
            t.w = w;
            t.d = delay_factor(w >> frac);
            if let Some(target) = kept.filter(|_| integral) {
                t.t = target - t.d as i64 * (t.w as i64 - t.h as i64);
            }
        }
    }
}

impl TenantOrder for WeightedFair {
    fn enqueue(&mut self, tenant: usize) {
        if self.backlog.push(tenant, self.tenants[tenant].configured) {
            self.reweigh();
        }
    }

    fn choose(&mut self) -> Option<usize> {
        self.best(|_| true)
    }

    fn choose_where(&mut self, eligible: &mut dyn FnMut(usize) -> bool) -> Option<usize> {
        self.best(eligible)
    }

    fn served(&mut self, tenant: usize) {
        let frac = self.frac_bits;
        let integral = self.rule == TargetRule::Integral;
        for &i in &self.backlog.active {
            let t = &mut self.tenants[i];
            // S adds the round's W − H with H as the round found it: the sum of
            // the average then equals the sum of what it averages less d times
            // its change, exactly, so T stays the lag (module docs).
            if integral {
                t.t += t.w as i64 - t.h as i64;
            }
            t.h -= t.h / t.d;
            if i == tenant {
                t.h += (D_MAX / t.d) << frac;
            }
        }
        self.rounds += 1;
        let target = self.target(tenant);
        if self.backlog.pop(tenant, self.tenants[tenant].configured) {
            let t = &mut self.tenants[tenant];
            (t.w, t.debt, t.left_at) = (0, target.min(0), self.rounds);
            self.reweigh();
        }
    }

    fn pending(&self) -> usize {
        self.backlog.total
    }

    fn clear(&mut self) {
        self.backlog.clear();
        for t in &mut self.tenants {
            (t.w, t.debt) = (0, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delay_table_at_its_boundaries() {
        let table: Vec<(u64, u64)> = [1, 2, 3, 4, 5, 8, 9, 256].iter().map(|&w| (w, delay_factor(w))).collect();
        assert_eq!(table, [(1, 256), (2, 128), (3, 64), (4, 64), (5, 32), (8, 32), (9, 16), (256, 16)]);
    }

    #[test]
    fn quantization_truncates_and_clamps_to_1_256() {
        assert_eq!(quantize(1, 7), 36);
        assert_eq!(quantize(2, 7), 73);
        assert_eq!(quantize(4, 7), 146);
        assert_eq!(quantize(1, 1000), 1);
        assert_eq!(quantize(5, 5), 256);
    }

    fn backlogged(weights: &[u32], frac_bits: u32, rule: TargetRule) -> WeightedFair {
        let mut p = WeightedFair::with_options(weights, frac_bits, rule);
        for t in 0..weights.len() {
            for _ in 0..100_000 {
                p.enqueue(t);
            }
        }
        p
    }

    /// One round: the choice, then `(W, d, H)` of every tenant after it.
    fn round(p: &mut WeightedFair) -> (usize, Vec<(u64, u64, u64)>) {
        let t = p.step().unwrap();
        (t, (0..p.tenants.len()).map(|i| p.state(i)).collect())
    }

    #[test]
    fn literal_history_arithmetic_by_hand_weights_1_3() {
        // W = 64, 192; d = 16, 16; H starts at W, so T = 0, 0: the tie goes to the larger W.
        let mut p = backlogged(&[1, 3], 0, TargetRule::Difference);
        assert_eq!(p.state(0), (64, 16, 64));
        assert_eq!(p.state(1), (192, 16, 192));
        // Round 1: tenant 1. H0 = 64 − 4 = 60; H1 = 192 − 12 + 16 = 196.
        assert_eq!(round(&mut p), (1, vec![(64, 16, 60), (192, 16, 196)]));
        // Round 2: T = 4, −4 → tenant 0. H0 = 60 − 3 + 16 = 73; H1 = 196 − 12 = 184.
        assert_eq!(round(&mut p), (0, vec![(64, 16, 73), (192, 16, 184)]));
        // Round 3: T = −9, 8 → tenant 1. H0 = 73 − 4 = 69; H1 = 184 − 11 + 16 = 189.
        assert_eq!(round(&mut p), (1, vec![(64, 16, 69), (192, 16, 189)]));
        // Round 4: T = −5, 3 → tenant 1. H0 = 69 − 4 = 65; H1 = 189 − 11 + 16 = 194.
        assert_eq!(round(&mut p), (1, vec![(64, 16, 65), (192, 16, 194)]));
        // Round 5: T = −1, −2 → tenant 0. H0 = 65 − 4 + 16 = 77; H1 = 194 − 12 = 182.
        assert_eq!(round(&mut p), (0, vec![(64, 16, 77), (192, 16, 182)]));
    }

    #[test]
    fn literal_arithmetic_starves_a_weight_1_tenant_against_255() {
        // W = 1, 255; d = 256, 16.
        let mut p = backlogged(&[1, 255], 0, TargetRule::Difference);
        assert_eq!((p.state(0), p.state(1)), ((1, 256, 1), (255, 16, 255)));
        // Round 1: tie at T = 0 → larger W. H0 = 1 − 0 = 1; H1 = 255 − 15 + 16 = 256.
        assert_eq!(round(&mut p), (1, vec![(1, 256, 1), (255, 16, 256)]));
        // Round 2: T = 0, −1 → tenant 0. H0 = 1 − 0 + 1 = 2; H1 = 256 − 16 = 240.
        assert_eq!(round(&mut p), (0, vec![(1, 256, 2), (255, 16, 240)]));
        // Round 3: T = −1, 15 → tenant 1. H1 = 240 − 15 + 16 = 241.
        assert_eq!(round(&mut p), (1, vec![(1, 256, 2), (255, 16, 241)]));
        // H0 = 2 never decays (2/256 = 0) and H1 settles at 256: T = −1, −1, the tie
        // always goes to tenant 1 and tenant 0 is never served again.
        let served0 = (0..2000).filter(|_| round(&mut p).0 == 0).count();
        assert_eq!(served0, 0);
        assert_eq!(p.state(1).2, 256);
    }

    #[test]
    fn integral_target_by_hand_weights_1_3() {
        let mut p = backlogged(&[1, 3], 0, TargetRule::Integral);
        let mut rounds = Vec::new();
        for _ in 0..7 {
            let t = p.step().unwrap();
            rounds.push((t, p.state(0).2, p.state(1).2, p.target(0), p.target(1)));
        }
        // (chosen, H0, H1, T0, T1) after each round; T = S + 16·(W − H), S adding the
        // round's W − H with H before the round; the choice takes the largest T + W.
        // W = 64, 192.
        // Round 1: T + W = 64, 192 → 1. S = 0, 0; H = 60, 196; T = 16·4, 16·(−4).
        // Round 2: T + W = 128, 128: a tie → the larger W, 1. S = 4, −4; H = 57, 200;
        //          T = 4 + 16·7, −4 − 16·8.
        // Round 3: T + W = 180, 60 → 0. S = 11, −12; H = 70, 188; T = 11 − 16·6, −12 + 16·4.
        // Round 4: T + W = −21, 244 → 1. S = 5, −8; H = 66, 193; T = 5 − 16·2, −8 − 16.
        // Round 5: T + W = 37, 168 → 1. S = 3, −9; H = 62, 197; T = 3 + 32, −9 − 80.
        // Round 6: T + W = 99, 103 → 1. S = 5, −14; H = 59, 201; T = 5 + 80, −14 − 144.
        // Round 7: T + W = 149, 34 → 0. S = 10, −23; H = 72, 189; T = 10 − 128, −23 + 48.
        assert_eq!(
            rounds,
            [
                (1, 60, 196, 64, -64),
                (1, 57, 200, 116, -132),
                (0, 70, 188, -85, 52),
                (1, 66, 193, -27, -24),
                (1, 62, 197, 35, -89),
                (1, 59, 201, 85, -158),
                (0, 72, 189, -118, 25),
            ]
        );
    }

    #[test]
    fn difference_rule_drifts_from_the_weights() {
        // The proportional reading keeps a steady-state error (1:3 served about 1.07:2.93).
        let mut p = backlogged(&[1, 3], 16, TargetRule::Difference);
        let served0 = (0..28_000).filter(|_| p.step() == Some(0)).count();
        assert!(served0 > 7_300, "{served0}");
        let mut p = backlogged(&[1, 3], 16, TargetRule::Integral);
        let served0 = (0..28_000).filter(|_| p.step() == Some(0)).count();
        assert!((6_998..=7_002).contains(&served0), "{served0}");
    }

    #[test]
    fn fixed_point_history_by_hand_and_no_starvation() {
        let f = 1u64 << 16;
        // Weights 1, 255 → W = 1, 255 exactly, in fixed point.
        let mut p = backlogged(&[1, 255], 16, TargetRule::Integral);
        assert_eq!((p.raw_state(0), p.raw_state(1)), ((f, f), (255 * f, 255 * f)));
        // Round 1: T + W = f, 255f → tenant 1. H0 = f − f/256 = 65280; H1 = 255f − 255f/16 + 16f.
        assert_eq!(p.step(), Some(1));
        assert_eq!(p.raw_state(0).1, 65_280);
        assert_eq!(p.raw_state(1).1, 255 * f - 255 * f / 16 + 16 * f);
        // S = 0, 0 (W − H before the round); T0 = 256·(f − 65280) = f, a 1/256 job behind;
        // T1 = 16·(255f − H1) = 16·(−4096) = −f, a 1/256 job ahead.
        assert_eq!((p.target(0), p.target(1)), (f as i64, -(f as i64)));
        // Round 2: T + W = 2f, 254f → tenant 1 again. H0 = 65280 − 255 = 65025.
        assert_eq!((p.step(), p.raw_state(0).1), (Some(1), 65_025));
        // Over many rounds tenant 0 gets about its 1/256 share.
        let served0 = (0..25_600).filter(|_| round(&mut p).0 == 0).count();
        assert!((95..=105).contains(&served0), "{served0}");
    }

    #[test]
    fn backlogged_shares_follow_weights() {
        for bits in [0, 16] {
            let mut p = backlogged(&[1, 2, 4], bits, TargetRule::Integral);
            let mut served = [0usize; 3];
            for _ in 0..2800 {
                served[round(&mut p).0] += 1;
            }
            // 400, 800, 1600 ± 1%.
            for (s, ideal) in served.iter().zip([400.0, 800.0, 1600.0]) {
                assert!((*s as f64 - ideal).abs() <= ideal * 0.01, "bits {bits}: {served:?}");
            }
        }
    }

    #[test]
    fn a_tenant_leaving_ahead_keeps_its_debt_until_repaid() {
        let f = 1i64 << 16;
        let mut p = WeightedFair::new(&[1, 1]);
        p.enqueue(0);
        for _ in 0..100 {
            p.enqueue(1);
        }
        // W = 128 each; tie → tenant 0, which leaves. S0 = 0, H0 = 128 − 8 + 16 = 136,
        // T0 = 16·(−8) = −128: the debt (half a job ahead). H1 = 120, T1 = 128.
        assert_eq!(p.step(), Some(0));
        p.enqueue(0);
        assert_eq!((p.target(0), p.target(1)), (-128 * f, 128 * f));
        // Tenant 1 runs (T + W = 0, 256), which evens both at T = 0; the tie goes to tenant 0.
        assert_eq!(p.step(), Some(1));
        assert_eq!((p.target(0), p.target(1)), (0, 0));
        assert_eq!(p.step(), Some(0));
        // Leaving ahead again (T0 = −128), then away 3 rounds: repaid by 3·W = 384 > its debt,
        // so it comes back even.
        for _ in 0..3 {
            assert_eq!(p.step(), Some(1));
        }
        p.enqueue(0);
        assert_eq!(p.target(0), 0);
    }

    #[test]
    fn set_changes_keep_members_targets() {
        let mut p = WeightedFair::new(&[1, 2, 4]);
        for _ in 0..50 {
            p.enqueue(0);
            p.enqueue(1);
        }
        for _ in 0..7 {
            p.step();
        }
        let before = (p.target(0), p.target(1));
        // Tenant 2 arrives: W of 0 and 1 fall from 1/3, 2/3 to 1/7, 2/7, their targets stay.
        p.enqueue(2);
        assert_eq!((p.target(0), p.target(1), p.target(2)), (before.0, before.1, 0));
        // A second job keeps tenant 2 in the set through the round below, whoever it serves.
        p.enqueue(2);
        // One round: T moves by W − 256 for the served tenant and by W for the others,
        // exactly but for H/d's truncation (less than d in fixed point).
        let raw = |p: &WeightedFair| (0..3).map(|i| (p.raw_state(i), p.target(i))).collect::<Vec<_>>();
        let before = raw(&p);
        let served = p.step().unwrap();
        let after = raw(&p);
        for i in 0..3 {
            let ((w, _), t0) = before[i];
            let (_, t1) = after[i];
            let step = w as i64 - if i == served { 256 << 16 } else { 0 };
            assert!((t1 - t0 - step).abs() < 256, "tenant {i}: T moved {} for {step}", t1 - t0);
        }
    }

    #[test]
    fn set_changes_reweigh_and_newcomers_start_even() {
        let mut p = WeightedFair::literal(&[1, 3]);
        p.enqueue(0);
        assert_eq!(p.state(0), (256, 16, 256));
        p.enqueue(1);
        // Tenant 0's W drops to 64 and its H with it (256 · 64/256); tenant 1 starts at H = W.
        assert_eq!(p.state(0), (64, 16, 64));
        assert_eq!(p.state(1), (192, 16, 192));
        // Tie at T = 0 → the larger W. H0 = 64 − 4 = 60, H1 = 192 − 12 + 16 = 196.
        assert_eq!(p.step(), Some(1));
        // Tenant 1 left the set: tenant 0 alone again has W = 256, and H = 60 · 256/64.
        assert_eq!(p.state(0), (256, 16, 240));
        assert_eq!(p.choose(), Some(0));
        p.served(0);
        assert_eq!((p.choose(), p.pending()), (None, 0));
    }
}
