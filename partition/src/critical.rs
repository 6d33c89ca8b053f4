//! Which relations are critical, and what each one is worth.
//!
//! Three rules, chosen with `--critical`:
//! - `path[:SLACK]` (default, slack 0.1): a relation u→v is critical when the
//!   longest flow path through it — vertex weights plus edge weights, in flow
//!   order — is at least `(1 - SLACK)` times the longest path of the graph. Slack 0
//!   keeps only the relations on a longest path.
//! - `top:PERCENT`: a relation is critical when its weight (tensor bytes) is
//!   among the heaviest PERCENT percent (the size threshold); relations tied
//!   with the threshold count too, unless the threshold is the smallest weight.
//! - `none`: no relation is critical; the objective is the plain (weighted)
//!   edge cut, as on the partitioning benchmarks (Walshaw archive).
//!
//! The value of a critical relation is 1 (`unit`, counting each cut relation once) or its
//! weight (`weighted`: critical traffic in bytes).
//!
//! Inputs without a data-flow order (METIS graphs: undirected edges, vertex
//! ids that say nothing about flow) default to `none` ([`default_rule`]); the
//! path rule on them reads vertex order as flow order, which [`misfit`] says.

use std::str::FromStr;

use crate::graph::Graph;

/// How relations are marked critical.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CriticalRule {
    /// Near-longest flow paths, with a relative slack in [0, 1].
    Path { slack: f64 },
    /// The heaviest `percent` percent of relations.
    Top { percent: f64 },
    /// None: the plain edge cut.
    None,
}

impl Default for CriticalRule {
    fn default() -> Self {
        CriticalRule::Path { slack: 0.1 }
    }
}

impl std::fmt::Display for CriticalRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CriticalRule::Path { slack } => write!(f, "path:{slack}"),
            CriticalRule::Top { percent } => write!(f, "top:{percent}"),
            CriticalRule::None => write!(f, "none"),
        }
    }
}

/// The rule when none is asked for: near-longest paths where the relations
/// carry a data-flow direction (pipelines, ONNX graphs), the plain edge cut
/// where they do not (METIS graphs).
pub fn default_rule(has_flow: bool) -> CriticalRule {
    if has_flow {
        CriticalRule::default()
    } else {
        CriticalRule::None
    }
}

/// Why `rule` does not fit a graph whose relations carry no data-flow
/// direction (`None` when it fits): the path rule would take vertex order as
/// flow order.
pub fn misfit(rule: CriticalRule, has_flow: bool) -> Option<String> {
    match rule {
        CriticalRule::Path { .. } if !has_flow => Some(format!(
            "--critical {rule}: this graph's edges are undirected and carry no data-flow order, so the path \
             rule takes vertex id order as flow order; its critical relations are arbitrary (`--critical none` \
             is the plain edge cut)"
        )),
        _ => None,
    }
}

/// What a partition under `rule` minimizes, in words.
pub fn objective(rule: CriticalRule, value: CriticalValue) -> String {
    match rule {
        CriticalRule::None => "the plain edge cut (--critical none)".into(),
        _ => format!("the critical cut (--critical {rule}, {value:?} values), then the total cut"),
    }
}

impl FromStr for CriticalRule {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (head, arg) = s.split_once(':').map_or((s, None), |(h, a)| (h, Some(a)));
        let num = |a: Option<&str>, default: f64| -> Result<f64, String> {
            a.map_or(Ok(default), |a| a.parse::<f64>().map_err(|e| format!("bad number `{a}` in `{s}`: {e}")))
        };
        match head {
            "path" => {
                let slack = num(arg, 0.1)?;
                if !(0.0..=1.0).contains(&slack) {
                    return Err(format!("path slack must be in [0, 1], got {slack}"));
                }
                Ok(CriticalRule::Path { slack })
            }
            "top" => {
                let percent = num(arg, 10.0)?;
                if !(0.0..=100.0).contains(&percent) {
                    return Err(format!("top percent must be in [0, 100], got {percent}"));
                }
                Ok(CriticalRule::Top { percent })
            }
            "none" if arg.is_none() => Ok(CriticalRule::None),
            _ => Err(format!("unknown critical rule `{s}` (expected path[:SLACK], top:PERCENT or none)")),
        }
    }
}

/// What a critical relation is worth in the critical cut.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CriticalValue {
    /// Each critical relation counts 1 (the first value of the rule).
    #[default]
    Unit,
    /// Each critical relation counts its weight.
    Weighted,
}

impl FromStr for CriticalValue {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "unit" => Ok(CriticalValue::Unit),
            "weighted" => Ok(CriticalValue::Weighted),
            _ => Err(format!("unknown critical value `{s}` (expected unit or weighted)")),
        }
    }
}

/// Marks the critical relations of `g` (overwriting any marks it had).
pub fn mark(g: &mut Graph, rule: CriticalRule, value: CriticalValue) {
    let crit: Vec<bool> = match rule {
        CriticalRule::Path { slack } => on_long_paths(g, slack),
        CriticalRule::Top { percent } => heaviest(g, percent),
        CriticalRule::None => vec![false; g.adj.len()],
    };
    for ((c, &w), &is_crit) in g.ec.iter_mut().zip(&g.ew).zip(&crit) {
        *c = match (is_crit, value) {
            (false, _) => 0,
            (true, CriticalValue::Unit) => 1,
            (true, CriticalValue::Weighted) => w,
        };
    }
}

/// Longest path lengths: `head[v]` = longest path ending just before v's work,
/// `tail[v]` = longest path starting with v's work.
fn on_long_paths(g: &Graph, slack: f64) -> Vec<bool> {
    let n = g.n();
    let order = g.flow_order();
    let mut head = vec![0i64; n];
    for &v in &order {
        let hv = head[v as usize] + g.node_w[v as usize];
        for i in g.range(v) {
            let u = g.adj[i] as usize;
            if g.rank[u] > g.rank[v as usize] {
                head[u] = head[u].max(hv + g.ew[i]);
            }
        }
    }
    let mut tail = vec![0i64; n];
    for &v in order.iter().rev() {
        let mut best = 0;
        for i in g.range(v) {
            let u = g.adj[i] as usize;
            if g.rank[u] > g.rank[v as usize] {
                best = best.max(g.ew[i] + tail[u]);
            }
        }
        tail[v as usize] = g.node_w[v as usize] + best;
    }
    let longest = (0..n).map(|v| head[v] + tail[v]).max().unwrap_or(0);
    let bar = ((1.0 - slack) * longest as f64).ceil() as i64;
    let mut crit = vec![false; g.adj.len()];
    for v in 0..n as u32 {
        for i in g.range(v) {
            let u = g.adj[i];
            let (a, b) = if g.rank[v as usize] < g.rank[u as usize] { (v, u) } else { (u, v) };
            let through = head[a as usize] + g.node_w[a as usize] + g.ew[i] + tail[b as usize];
            crit[i] = through >= bar;
        }
    }
    crit
}

fn heaviest(g: &Graph, percent: f64) -> Vec<bool> {
    let mut weights: Vec<i64> = g.relations().map(|(_, _, w, _)| w).collect();
    if weights.is_empty() || percent <= 0.0 {
        return vec![false; g.adj.len()];
    }
    weights.sort_unstable_by(|a, b| b.cmp(a));
    let keep = ((weights.len() as f64 * percent / 100.0).ceil() as usize).clamp(1, weights.len());
    let bar = weights[keep - 1];
    // Ties at the threshold count, except ties at the smallest weight (else a
    // graph of mostly minimal tensors would be all critical) unless all are kept.
    let min = *weights.last().expect("not empty");
    let ties = bar > min || keep == weights.len();
    g.ew.iter().map(|&w| if ties { w >= bar } else { w > bar }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graphs_without_flow_order_default_to_the_plain_cut_and_flag_the_path_rule() {
        assert_eq!(default_rule(true), CriticalRule::Path { slack: 0.1 });
        assert_eq!(default_rule(false), CriticalRule::None);
        let path: CriticalRule = "path:0.2".parse().unwrap();
        assert!(misfit(path, false).unwrap().contains("--critical path:0.2: this graph's edges are undirected"));
        assert_eq!(misfit(path, true), None);
        assert_eq!(misfit(CriticalRule::Top { percent: 10.0 }, false), None);
        assert_eq!(misfit(CriticalRule::None, false), None);
        assert_eq!(objective(CriticalRule::None, CriticalValue::Unit), "the plain edge cut (--critical none)");
    }
    use crate::graph::GraphBuilder;

    /// a→b→d is longer than a→c→d; with slack 0 only the long path is critical.
    #[test]
    fn longest_path_rule_marks_only_the_long_branch() {
        let mut b = GraphBuilder::new();
        let a = b.add_vertex("a", 1);
        let x = b.add_vertex("b", 5);
        let c = b.add_vertex("c", 1);
        let d = b.add_vertex("d", 1);
        b.add_edge(a, x, 1, 0);
        b.add_edge(x, d, 1, 0);
        b.add_edge(a, c, 1, 0);
        b.add_edge(c, d, 1, 0);
        let mut g = b.build();
        mark(&mut g, CriticalRule::Path { slack: 0.0 }, CriticalValue::Unit);
        let crit: Vec<(u32, u32)> = g.relations().filter(|r| r.3 > 0).map(|r| (r.0, r.1)).collect();
        assert_eq!(crit, vec![(a, x), (x, d)]);
        // A slack wide enough takes the short branch too.
        mark(&mut g, CriticalRule::Path { slack: 0.5 }, CriticalValue::Unit);
        assert_eq!(g.critical_edges(), 4);
    }

    #[test]
    fn top_rule_takes_heaviest_relations_and_weighted_values() {
        let mut b = GraphBuilder::new();
        let v: Vec<u32> = (0..5).map(|i| b.add_vertex(format!("v{i}"), 1)).collect();
        for (i, w) in [10, 400, 30, 200].iter().enumerate() {
            b.add_edge(v[i], v[i + 1], *w, 0);
        }
        let mut g = b.build();
        mark(&mut g, CriticalRule::Top { percent: 50.0 }, CriticalValue::Weighted);
        let crit: Vec<i64> = g.relations().map(|r| r.3).collect();
        assert_eq!(crit, vec![0, 400, 0, 200]);
        assert!("top:x".parse::<CriticalRule>().is_err());
        // Mostly minimal weights: only the heavier ones, not the tied floor.
        let mut b = GraphBuilder::new();
        let v: Vec<u32> = (0..6).map(|i| b.add_vertex(format!("v{i}"), 1)).collect();
        for (i, w) in [1, 1, 1, 1, 8].iter().enumerate() {
            b.add_edge(v[i], v[i + 1], *w, 0);
        }
        let mut g = b.build();
        mark(&mut g, CriticalRule::Top { percent: 50.0 }, CriticalValue::Unit);
        assert_eq!(g.critical_edges(), 1);
        mark(&mut g, CriticalRule::Top { percent: 100.0 }, CriticalValue::Unit);
        assert_eq!(g.critical_edges(), 5);
        assert_eq!("path:0.2".parse::<CriticalRule>(), Ok(CriticalRule::Path { slack: 0.2 }));
    }
}
