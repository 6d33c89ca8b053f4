//! Batch durations from a `baton profile` file: per node and batch size, the
//! measured distribution, and draws from it.
//!
//! A profile (the JSON `baton profile` writes) holds per node and measured
//! batch size the timed runs' median, p10, p90, min and max, and (profiles
//! written since the simulator) every run's time (`samples_us`). A draw takes a
//! uniform `u` and returns the `u`-quantile of that batch size's distribution:
//! of the samples when the profile has them, else of the piecewise-linear
//! curve through min, p10, median, p90 and max. A batch size between two
//! measured ones takes the same quantile at both and interpolates linearly in
//! the batch size.
//!
//! A node's compute scale (`--compute-scale`, measured) multiplies its draws for
//! batches in the normal thread class; a batch in the real-time class runs at
//! the profile's times (its thread runs ahead of the runtime's and the
//! client's other threads, which a normal batch shares its core with). A
//! node's compute offset (`--compute-offset`, measured) adds a fixed time to
//! each of its normal-class batches after the scale: under a load a batch
//! stretches by a part that does not grow with its rows (its weights fetched
//! again after other nodes' batches ran on its core) and a part that does.
//! A negative offset is a stretch that grows with the rows (a large batch's
//! working set leaves the cache other jobs share); it never takes a batch
//! below the profile's own time, nor below its scaled time where the scale is
//! under 1.
//!
//! A node's sparse stretch (`--sparse-stretch`, measured) multiplies its
//! normal-class batches under an open load by a factor that follows the load's
//! density: the measured factor at a light rate (`--sparse-rate`), falling
//! linearly in the rate to 1 at a dense one (`--dense-rate`, the capacity).
//! Between sparse arrivals the cores halt, and a batch that starts on a core
//! woken from its halt runs slower (its clock and caches cold); a closed loop's
//! clients keep the cores awake, so closed-loop points take factor 1.
//!
//! Checks, each naming what is wrong: every node of the pipeline has an entry;
//! every batch size the node can form (1 to its batch rows, or its fixed
//! `batch_sizes` when it pads) lies within its measured sizes; and a profile
//! naming nodes the pipeline lacks is refused as another pipeline's.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

/// One measured batch size, as `baton profile` writes it (other fields are ignored).
#[derive(Clone, Debug, Deserialize)]
struct Timing {
    batch: usize,
    median_us: f64,
    p10_us: f64,
    p90_us: f64,
    min_us: f64,
    max_us: f64,
    #[serde(default)]
    samples_us: Vec<f64>,
}

#[derive(Clone, Debug, Deserialize)]
struct NodeEntry {
    batches: Vec<Timing>,
    #[serde(default)]
    idle_gaps: Vec<super::idle::GapEntry>,
}

#[derive(Clone, Debug, Deserialize)]
struct ProfileFile {
    pipeline: String,
    nodes: BTreeMap<String, NodeEntry>,
}

/// One batch size's distribution: sorted points of its quantile function, µs.
#[derive(Clone, Debug, PartialEq)]
struct Quantiles {
    batch: usize,
    /// (quantile in [0, 1], µs), ascending in both.
    points: Vec<(f64, f64)>,
}

impl Quantiles {
    fn of(t: &Timing) -> Quantiles {
        let points = if t.samples_us.len() >= 2 {
            let mut s = t.samples_us.clone();
            s.sort_by(f64::total_cmp);
            let last = (s.len() - 1) as f64;
            s.iter().enumerate().map(|(i, &us)| (i as f64 / last, us)).collect()
        } else {
            vec![(0.0, t.min_us), (0.1, t.p10_us), (0.5, t.median_us), (0.9, t.p90_us), (1.0, t.max_us)]
        };
        Quantiles { batch: t.batch, points }
    }

    /// The `u`-quantile, µs (linear between points).
    fn at(&self, u: f64) -> f64 {
        linear_at(&self.points, u)
    }
}

/// The value at `x` of the line through `points` (ascending in x, at least one): the
/// first point's value before it, the last's after it, linear between two points (the
/// later one's value where two share an x).
pub(super) fn linear_at(points: &[(f64, f64)], x: f64) -> f64 {
    let p = points;
    let i = p.partition_point(|&(at, _)| at < x);
    if i == 0 {
        return p[0].1;
    }
    if i >= p.len() {
        return p[p.len() - 1].1;
    }
    let ((x0, a), (x1, b)) = (p[i - 1], p[i]);
    if x1 <= x0 {
        b
    } else {
        a + (b - a) * (x - x0) / (x1 - x0)
    }
}

/// Every node's batch-duration distributions, in the pipeline's node order, and
/// its workers' wake-ups when measured ([`super::wakes`]).
#[derive(Clone, Debug)]
pub struct Durations {
    /// Per node: its measured batch sizes, ascending.
    nodes: Vec<Vec<Quantiles>>,
    /// Per node: the factor on its normal-class batches (1: the profile's times).
    scale: Vec<f64>,
    /// Per node: µs added to each normal-class batch after the scale (0: none).
    offset_us: Vec<f64>,
    /// Per node: the factor on its real-time-class batches (1: the profile's times).
    realtime_scale: Vec<f64>,
    /// The runtime's recorded wake-ups (`--wake-delays`), drawn instead of one `--wake-us`.
    pub wakes: Option<super::wakes::WakeDraws>,
    /// Recorded wake-ups the real-time workers' wake-ups alone are drawn from (`--realtime-wake-delays`).
    pub realtime_wakes: Option<super::wakes::WakeDraws>,
    /// The runtime's recorded tick lateness (`--tick-delays`); `None`: ticks on time.
    pub ticks: Option<super::wakes::TickDraws>,
    /// Per node: ns its worker takes to hand a batch's outputs on, before `--hop-us` (0: none).
    hand_on_ns: Vec<u64>,
    /// Per node: ns from its worker's hand-on (and the hop) to its outputs at the next nodes,
    /// not holding the worker (`--route-us`; 0: none).
    route_ns: Vec<u64>,
    /// Per node: the route time of its real-time-class batches, ns, where it differs
    /// (`--realtime-route-us`; `None`: `route_ns`).
    realtime_route_ns: Vec<Option<u64>>,
    /// The machine's recorded core stalls (`--core-stalls`); `None`: the cores never stall.
    pub stalls: Option<super::stalls::StallDraws>,
    /// Per node: how far its normal-class batches stretch (`--batch-times`), in place of its scale.
    stretch: Vec<Option<super::stretch::Stretch>>,
    /// Per node: the factor on its normal-class batches at the sparse rate (1: none).
    sparse_stretch: Vec<f64>,
    /// (sparse rate, dense rate), requests/s: where the sparse stretch is whole and where it is gone.
    sparse_rates: Option<(f64, f64)>,
    /// Per node: what an idle gap adds to its batches, as the profile measured it.
    idle_curves: Vec<Option<super::idle::IdleCurve>>,
    /// Whether batches pay their node's idle gap (`--idle-gaps`).
    idle_gaps: bool,
    /// Whether real-time batches pay theirs too (`--realtime-idle-gaps`).
    realtime_idle_gaps: bool,
}

impl Durations {
    /// Reads `path` and checks it against the pipeline: `nodes` (name, batch
    /// sizes it can form) in node order. With `fence`, each batch size's
    /// samples above its fence are dropped first ([`super::outliers`]).
    pub fn load(
        path: &Path,
        pipeline: &str,
        nodes: &[(String, Vec<usize>)],
        fence: Option<f64>,
    ) -> Result<Durations, String> {
        let at = path.display();
        let text = std::fs::read_to_string(path).map_err(|e| format!("{at}: cannot read: {e}"))?;
        let mut file: ProfileFile = serde_json::from_str(&text).map_err(|e| format!("{at}: not a profile: {e}"))?;
        if let Some(k) = fence {
            for t in file.nodes.values_mut().flat_map(|n| n.batches.iter_mut()) {
                super::outliers::fence(&mut t.samples_us, k);
            }
        }
        Self::check(file, &at.to_string(), pipeline, nodes)
    }

    fn check(file: ProfileFile, at: &str, pipeline: &str, nodes: &[(String, Vec<usize>)]) -> Result<Durations, String> {
        let foreign: Vec<&str> =
            file.nodes.keys().filter(|k| !nodes.iter().any(|(n, _)| n == *k)).map(String::as_str).collect();
        if !foreign.is_empty() {
            return Err(format!(
                "{at}: a profile of another pipeline (`{}`): pipeline `{pipeline}` has no node {}",
                file.pipeline,
                foreign.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
            ));
        }
        let mut out = Vec::new();
        let mut idle_curves = Vec::new();
        for (name, formable) in nodes {
            let entry = file.nodes.get(name).ok_or_else(|| {
                format!(
                    "{at}: the profile has no entry for node `{name}` (profile it: baton profile PIPELINE --out FILE)"
                )
            })?;
            let mut sizes: Vec<Quantiles> = entry.batches.iter().map(Quantiles::of).collect();
            sizes.sort_by_key(|q| q.batch);
            let measured: Vec<String> = sizes.iter().map(|q| q.batch.to_string()).collect();
            let (lo, hi) = (sizes.first().map_or(usize::MAX, |q| q.batch), sizes.last().map_or(0, |q| q.batch));
            if let Some(b) = formable.iter().find(|&&b| b < lo || b > hi) {
                return Err(format!(
                    "{at}: node `{name}` can form batches of {b} rows, outside its measured batch sizes ({}); \
                     profile it with --batches covering 1 to its max_batch",
                    if measured.is_empty() { "none".to_string() } else { measured.join(", ") }
                ));
            }
            out.push(sizes);
            idle_curves.push(super::idle::IdleCurve::of(&entry.idle_gaps));
        }
        let n = out.len();
        Ok(Durations {
            nodes: out,
            scale: vec![1.0; n],
            offset_us: vec![0.0; n],
            realtime_scale: vec![1.0; n],
            wakes: None,
            realtime_wakes: None,
            ticks: None,
            hand_on_ns: vec![0; n],
            route_ns: vec![0; n],
            realtime_route_ns: vec![None; n],
            stalls: None,
            stretch: vec![None; n],
            sparse_stretch: vec![1.0; n],
            sparse_rates: None,
            idle_curves,
            idle_gaps: false,
            realtime_idle_gaps: false,
        })
    }

    /// Batches pay their node's idle gap ([`super::idle`]), the `realtime` ones too where
    /// told; an error where the profile measured no node's.
    pub fn use_idle_gaps(&mut self, profile: &str, realtime: bool) -> Result<(), String> {
        if self.idle_curves.iter().all(Option::is_none) {
            return Err(format!(
                "--idle-gaps: {profile} measured no node's idle gaps (baton profile --idle-gaps US,..)"
            ));
        }
        self.idle_gaps = true;
        self.realtime_idle_gaps = realtime;
        Ok(())
    }

    /// Whether a batch of this class pays its node's idle gap.
    pub fn pays_idle_gap(&self, realtime: bool) -> bool {
        self.idle_gaps && (!realtime || self.realtime_idle_gaps)
    }

    /// What `node`'s idle gap of `gap_ns` adds to its batch, ns (`None`: it has not run
    /// yet); 0 without `--idle-gaps` or without the node's measurement.
    pub fn idle_extra_ns(&self, node: usize, gap_ns: Option<u64>) -> u64 {
        match (&self.idle_curves[node], self.idle_gaps) {
            (Some(curve), true) => (curve.extra_us(gap_ns.map(|ns| ns as f64 / 1000.0)) * 1000.0).round() as u64,
            _ => 0,
        }
    }

    /// A duration, ns, for a batch of `batch` rows at node `node` at quantile `u` in
    /// [0, 1): the profile's, times the node's scale plus its offset, or times its real-time
    /// scale where the batch is `realtime`; with a recorded stretch, a normal-class batch takes
    /// the profile's median times the stretch's `u`-quantile instead.
    pub fn draw_ns(&self, node: usize, batch: usize, u: f64, realtime: bool) -> u64 {
        if let (false, Some(stretch)) = (realtime, &self.stretch[node]) {
            return (self.profile_us(node, batch, 0.5).max(0.0) * stretch.at(u) * 1000.0).round() as u64;
        }
        let us = self.profile_us(node, batch, u).max(0.0);
        let us = if realtime { us * self.realtime_scale[node] } else { self.scaled_us(node, us) };
        (us * 1000.0).round() as u64
    }

    /// A normal-class batch's µs from the profile's `us`: times the node's scale plus its
    /// offset, where the offset is negative not below `us` × the smaller of the scale and 1.
    fn scaled_us(&self, node: usize, us: f64) -> f64 {
        let scale = self.scale[node];
        (us * scale + self.offset_us[node]).max(us * scale.min(1.0))
    }

    /// The profile's `u`-quantile, µs, for a batch of `batch` rows at `node` (linear between
    /// the measured sizes around it).
    fn profile_us(&self, node: usize, batch: usize, u: f64) -> f64 {
        let sizes = &self.nodes[node];
        let i = sizes.partition_point(|q| q.batch < batch).min(sizes.len() - 1);
        let hi = &sizes[i];
        if hi.batch == batch || i == 0 {
            hi.at(u)
        } else {
            let lo = &sizes[i - 1];
            let f = (batch - lo.batch) as f64 / (hi.batch - lo.batch) as f64;
            lo.at(u) + (hi.at(u) - lo.at(u)) * f
        }
    }

    /// Gives each node of `recorded` (pipeline order) the stretch of its batches over the
    /// profile's medians ([`super::stretch`]); a node without any keeps its scale.
    pub fn stretch(&mut self, recorded: &super::stretch::Recorded) {
        for (node, batches) in recorded.iter().enumerate() {
            self.stretch[node] = super::stretch::Stretch::of(batches, |b| self.profile_us(node, b, 0.5));
        }
    }

    /// Sets `node`'s scale: its normal-class batches take `factor` × the profile's times.
    pub fn scale(&mut self, node: usize, factor: f64) {
        self.scale[node] = factor;
    }

    /// Sets `node`'s sparse stretch: its normal-class batches take `factor` × their time at
    /// the sparse rate (see [`Durations::sparse_rates`]).
    pub fn sparse_stretch(&mut self, node: usize, factor: f64) {
        self.sparse_stretch[node] = factor;
    }

    /// Sets the rates, requests/s, at which the sparse stretch is whole (`sparse`) and gone (`dense`).
    pub fn sparse_rates(&mut self, sparse: f64, dense: f64) {
        self.sparse_rates = Some((sparse, dense));
    }

    /// The factor on `node`'s normal-class batches under `load`: its sparse stretch at the
    /// sparse rate and below, 1 at the dense rate and above, linear in the rate between;
    /// 1 under a closed loop, and without sparse rates.
    pub fn sparse_factor(&self, node: usize, load: &super::engine::SimLoad) -> f64 {
        let (super::engine::SimLoad::Open { rate, .. }, Some((sparse, dense))) = (load, self.sparse_rates) else {
            return 1.0;
        };
        let dense_share = ((rate - sparse) / (dense - sparse)).clamp(0.0, 1.0);
        1.0 + (self.sparse_stretch[node] - 1.0) * (1.0 - dense_share)
    }

    /// Sets `node`'s real-time scale: its real-time-class batches take `factor` × the profile's times.
    pub fn realtime_scale(&mut self, node: usize, factor: f64) {
        self.realtime_scale[node] = factor;
    }

    /// Sets `node`'s offset: each of its normal-class batches takes `us` more after the scale
    /// (less, where `us` is negative, down to the floor `scaled_us` keeps).
    pub fn offset(&mut self, node: usize, us: f64) {
        self.offset_us[node] = us;
    }

    /// Sets `node`'s hand-on time per batch, µs.
    pub fn hand_on(&mut self, node: usize, us: f64) {
        self.hand_on_ns[node] = (us * 1000.0).round() as u64;
    }

    /// `node`'s hand-on time per batch, ns.
    pub fn hand_on_ns(&self, node: usize) -> u64 {
        self.hand_on_ns[node]
    }

    /// Sets `node`'s route time per batch, µs.
    pub fn route(&mut self, node: usize, us: f64) {
        self.route_ns[node] = (us * 1000.0).round() as u64;
    }

    /// Sets `node`'s route time per real-time-class batch, µs.
    pub fn realtime_route(&mut self, node: usize, us: f64) {
        self.realtime_route_ns[node] = Some((us * 1000.0).round() as u64);
    }

    /// `node`'s route time per batch, ns: from its worker's hand-on to its outputs at the next
    /// nodes; a `realtime` batch's own where the node has one.
    pub fn route_ns(&self, node: usize, realtime: bool) -> u64 {
        match self.realtime_route_ns[node] {
            Some(ns) if realtime => ns,
            _ => self.route_ns[node],
        }
    }

    /// The median duration, µs, of a normal-class batch of `batch` rows at `node`.
    pub fn median_us(&self, node: usize, batch: usize) -> f64 {
        self.draw_ns(node, batch, 0.5, false) as f64 / 1000.0
    }
}

/// `--compute-scale`'s `NODE=FACTOR` items, each factor positive and finite.
pub fn parse_scales(items: &[String]) -> Result<Vec<(String, f64)>, String> {
    parse_node_values("--compute-scale", "FACTOR", "a positive", items, |v| v > 0.0)
}

/// `--realtime-route-us`'s `NODE=US` items, each a finite number of µs, not negative.
pub fn parse_realtime_routes(items: &[String]) -> Result<Vec<(String, f64)>, String> {
    parse_node_values("--realtime-route-us", "US", "a non-negative", items, |v| v >= 0.0)
}

/// `--sparse-stretch`'s `NODE=FACTOR` items, each factor positive and finite.
pub fn parse_sparse_stretches(items: &[String]) -> Result<Vec<(String, f64)>, String> {
    parse_node_values("--sparse-stretch", "FACTOR", "a positive", items, |v| v > 0.0)
}

/// `--realtime-scale`'s `NODE=FACTOR` items, each factor positive and finite.
pub fn parse_realtime_scales(items: &[String]) -> Result<Vec<(String, f64)>, String> {
    parse_node_values("--realtime-scale", "FACTOR", "a positive", items, |v| v > 0.0)
}

/// `--compute-offset`'s `NODE=US` items, each a finite number of µs (negative: the stretch
/// grows with the rows).
pub fn parse_offsets(items: &[String]) -> Result<Vec<(String, f64)>, String> {
    parse_node_values("--compute-offset", "US", "a finite", items, |_| true)
}

/// `--hand-on-us`'s `NODE=US` items, each a finite number of µs, not negative.
pub fn parse_hand_ons(items: &[String]) -> Result<Vec<(String, f64)>, String> {
    parse_node_values("--hand-on-us", "US", "a non-negative", items, |v| v >= 0.0)
}

/// `--route-us`'s `NODE=US` items, each a finite number of µs, not negative.
pub fn parse_routes(items: &[String]) -> Result<Vec<(String, f64)>, String> {
    parse_node_values("--route-us", "US", "a non-negative", items, |v| v >= 0.0)
}

/// `NODE=VALUE` items of `option`, each value finite and `valid`, else an error naming the item.
fn parse_node_values(
    option: &str,
    value: &str,
    kind: &str,
    items: &[String],
    valid: impl Fn(f64) -> bool,
) -> Result<Vec<(String, f64)>, String> {
    items
        .iter()
        .map(|item| {
            let bad = || format!("{option}: `{item}` is not NODE={value} with {kind} {value}");
            let (node, v) = item.split_once('=').ok_or_else(bad)?;
            let v: f64 = v.trim().parse().map_err(|_| bad())?;
            if !(v.is_finite() && valid(v)) {
                return Err(bad());
            }
            Ok((node.trim().to_string(), v))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(nodes: &[(&str, &[(usize, f64)])]) -> ProfileFile {
        let nodes = nodes
            .iter()
            .map(|(name, batches)| {
                let batches = batches
                    .iter()
                    .map(|&(batch, us)| Timing {
                        batch,
                        median_us: us,
                        p10_us: us,
                        p90_us: us,
                        min_us: us,
                        max_us: us,
                        samples_us: Vec::new(),
                    })
                    .collect();
                (name.to_string(), NodeEntry { batches, idle_gaps: Vec::new() })
            })
            .collect();
        ProfileFile { pipeline: "p.toml".into(), nodes }
    }

    fn pipeline(names: &[&str], max: usize) -> Vec<(String, Vec<usize>)> {
        names.iter().map(|n| (n.to_string(), (1..=max).collect())).collect()
    }

    #[test]
    fn a_missing_node_is_named() {
        let e = Durations::check(file(&[("a", &[(1, 10.0)])]), "f", "p", &pipeline(&["a", "b"], 1)).unwrap_err();
        assert!(e.contains("no entry for node `b`"), "{e}");
    }

    #[test]
    fn a_batch_size_outside_the_measured_ones_is_named() {
        let e = Durations::check(file(&[("a", &[(1, 10.0), (4, 20.0)])]), "f", "p", &pipeline(&["a"], 8)).unwrap_err();
        assert!(e.contains("node `a` can form batches of 5 rows") && e.contains("(1, 4)"), "{e}");
    }

    #[test]
    fn a_profile_of_another_pipeline_is_refused() {
        let e = Durations::check(file(&[("a", &[(1, 1.0)]), ("zz", &[(1, 1.0)])]), "f", "p", &pipeline(&["a"], 1))
            .unwrap_err();
        assert!(e.contains("another pipeline") && e.contains("no node `zz`"), "{e}");
    }

    #[test]
    fn sizes_between_measured_ones_interpolate_and_quantiles_follow_the_samples() {
        let d = Durations::check(file(&[("a", &[(1, 10.0), (5, 50.0)])]), "f", "p", &pipeline(&["a"], 5)).unwrap();
        assert_eq!(d.draw_ns(0, 3, 0.3, false), 30_000);
        let t = Timing {
            batch: 1,
            median_us: 0.0,
            p10_us: 0.0,
            p90_us: 0.0,
            min_us: 0.0,
            max_us: 0.0,
            samples_us: vec![30.0, 10.0, 20.0],
        };
        let q = Quantiles::of(&t);
        assert_eq!((q.at(0.0), q.at(0.25), q.at(0.5), q.at(1.0)), (10.0, 15.0, 20.0, 30.0));
    }

    #[test]
    fn a_scale_multiplies_normal_class_batches_and_leaves_real_time_ones_at_the_profile() {
        let mut d =
            Durations::check(file(&[("a", &[(1, 10.0)]), ("b", &[(1, 10.0)])]), "f", "p", &pipeline(&["a", "b"], 1))
                .unwrap();
        d.scale(0, 2.5);
        assert_eq!(d.draw_ns(0, 1, 0.5, false), 25_000, "normal class: scaled");
        assert_eq!(d.draw_ns(0, 1, 0.5, true), 10_000, "real-time class: the profile's");
        assert_eq!(d.draw_ns(1, 1, 0.5, false), 10_000, "another node: unscaled");
        assert_eq!(d.median_us(0, 1), 25.0);
    }

    #[test]
    fn an_offset_adds_to_normal_class_batches_after_the_scale_and_not_to_real_time_ones() {
        let mut d = Durations::check(file(&[("a", &[(1, 10.0), (4, 40.0)])]), "f", "p", &pipeline(&["a"], 4)).unwrap();
        d.scale(0, 2.0);
        d.offset(0, 7.0);
        assert_eq!(d.draw_ns(0, 1, 0.5, false), 27_000, "2 × 10 + 7");
        assert_eq!(d.draw_ns(0, 4, 0.5, false), 87_000, "2 × 40 + 7: the offset does not grow with the rows");
        assert_eq!(d.draw_ns(0, 4, 0.5, true), 40_000, "real-time class: the profile's");
        d.realtime_scale(0, 0.75);
        assert_eq!(d.draw_ns(0, 4, 0.5, true), 30_000, "real-time class: its own scale, no offset");
        assert_eq!(d.draw_ns(0, 4, 0.5, false), 87_000, "normal class unchanged");
        let e = parse_realtime_scales(&["a=0".into()]).unwrap_err();
        assert!(e.contains("--realtime-scale") && e.contains("`a=0`"), "{e}");
    }

    #[test]
    fn a_negative_offset_grows_the_stretch_with_the_rows_and_never_runs_a_batch_below_the_profile() {
        let mut d = Durations::check(file(&[("a", &[(1, 10.0), (4, 40.0)])]), "f", "p", &pipeline(&["a"], 4)).unwrap();
        d.scale(0, 1.5);
        d.offset(0, -3.0);
        assert_eq!(d.draw_ns(0, 1, 0.5, false), 12_000, "1.5 × 10 − 3: 1.2 × the profile at 1 row");
        assert_eq!(d.draw_ns(0, 4, 0.5, false), 57_000, "1.5 × 40 − 3: 1.425 × at 4 rows");
        d.offset(0, -8.0);
        assert_eq!(d.draw_ns(0, 1, 0.5, false), 10_000, "1.5 × 10 − 8 is below the profile's 10");
        d.scale(0, 0.5);
        assert_eq!(d.draw_ns(0, 4, 0.5, false), 20_000, "0.5 × 40 − 8 is below the scaled 20");
        assert_eq!(d.draw_ns(0, 4, 0.5, true), 40_000, "real-time class: no offset");
    }

    #[test]
    fn node_values_name_the_option_and_the_item_that_is_wrong() {
        assert_eq!(
            parse_offsets(&["a=0".into(), " b = 2.5".into()]).unwrap(),
            vec![("a".into(), 0.0), ("b".into(), 2.5)]
        );
        assert_eq!(parse_offsets(&["a=-1".into()]).unwrap(), vec![("a".into(), -1.0)]);
        let e = parse_offsets(&["a=inf".into()]).unwrap_err();
        assert!(e.contains("--compute-offset") && e.contains("`a=inf`"), "{e}");
        let e = parse_scales(&["a=0".into()]).unwrap_err();
        assert!(e.contains("--compute-scale") && e.contains("positive"), "{e}");
        assert!(parse_scales(&["a".into()]).unwrap_err().contains("NODE=FACTOR"));
    }
}
