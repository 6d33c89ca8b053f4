//! Request-level fairness: which tenant's task fills the next slot of a batch.
//!
//! Requests carry a tenant name ([`crate::Request::tenant`]); the pipeline's
//! `[fairness]` section gives each tenant a weight. With `policy = "fifo"`
//! (the default) a node's buffer keeps one first-come-first-served queue, as it
//! always did. With `"weighted"` (seed 004) or `"stride"` (a reference policy
//! to compare with) the buffer keeps one queue per tenant, and each task it
//! takes into a batch is one *round* of a [`FairPolicy`]: the policy chooses
//! the tenant, the buffer takes that tenant's oldest task, the policy is told
//! the tenant was served. Priority tasks (seed 003) still go first, outside
//! the policy.
//!
//! A policy sees only tenant indices and job counts, never tasks, so the same
//! object drives a node's buffer and the fairness benchmark's generated traces
//! (`baton bench-fairness`), and its cost per decision can be measured alone.
//!
//! ```
//! use baton::fairness::{FairPolicy, SeedFair};
//! let mut policy = SeedFair::new(&[1, 3]);
//! for _ in 0..1000 {
//!     policy.enqueue(0);
//!     policy.enqueue(1);
//! }
//! let mut served = [0usize; 2];
//! for _ in 0..400 {
//!     served[policy.step().unwrap()] += 1;
//! }
//! // Weights 1 : 3 → 100 : 300, within a job.
//! assert!(served[0].abs_diff(100) <= 1 && served[1].abs_diff(300) <= 1, "{served:?}");
//! ```

mod fifo;
mod seed_fair;
mod stride;

pub use fifo::Fifo;
pub use seed_fair::{delay_factor, quantize, SeedFair, TargetRule, D_MAX};
pub use stride::Stride;

use serde::Deserialize;

/// The choice of the next tenant to serve, one job at a time.
///
/// Protocol: [`enqueue`](FairPolicy::enqueue) once per job that arrives for a
/// tenant; [`choose`](FairPolicy::choose) names the tenant whose job should
/// run next without changing anything (a caller that cannot use the choice,
/// say because the job does not fit the batch, simply does not serve it);
/// [`served`](FairPolicy::served) once per job taken, which ends a round.
/// A policy keeps its own per-tenant job counts; `served` for a tenant with
/// no jobs is a caller bug (it panics in debug builds).
pub trait FairPolicy: Send {
    /// A job arrived for `tenant`.
    fn enqueue(&mut self, tenant: usize);
    /// The tenant whose job should run next, or `None` when no jobs wait.
    fn choose(&mut self) -> Option<usize>;
    /// Like [`choose`](FairPolicy::choose), among the waiting tenants for which
    /// `eligible` holds (a worker group takes only the jobs it fits; the
    /// policy's order among those tenants is kept).
    fn choose_where(&mut self, eligible: &mut dyn FnMut(usize) -> bool) -> Option<usize>;
    /// A job of `tenant` was taken: the round ends.
    fn served(&mut self, tenant: usize);
    /// Jobs waiting, all tenants together.
    fn pending(&self) -> usize;
    /// Forgets every waiting job (the tenants' weights stay).
    fn clear(&mut self);
    /// One whole round: chooses a tenant and serves it; the tenant served.
    fn step(&mut self) -> Option<usize> {
        let tenant = self.choose()?;
        self.served(tenant);
        Some(tenant)
    }
}

/// `[fairness] policy`: how a node's buffer orders its tasks across tenants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum FairnessKind {
    /// One first-come-first-served queue (tenants ignored).
    #[default]
    Fifo,
    /// Seed 004's weighted-fair choice with a decaying history weight.
    Weighted,
    /// Stride scheduling (a reference policy: pass += 1/weight, least pass first).
    Stride,
}

impl FairnessKind {
    /// A fresh policy of this kind over tenants with these configured weights.
    pub fn build(self, weights: &[u32]) -> Box<dyn FairPolicy> {
        match self {
            FairnessKind::Fifo => Box::new(Fifo::new(weights.len())),
            FairnessKind::Weighted => Box::new(SeedFair::new(weights)),
            FairnessKind::Stride => Box::new(Stride::new(weights)),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            FairnessKind::Fifo => "fifo",
            FairnessKind::Weighted => "weighted",
            FairnessKind::Stride => "stride",
        }
    }
}

/// Name of the tenant a request without one belongs to.
pub const DEFAULT_TENANT: &str = "default";

/// The validated tenants of a pipeline: names and weights by index.
/// Index 0 is always [`DEFAULT_TENANT`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tenants {
    pub names: Vec<String>,
    pub weights: Vec<u32>,
}

impl Default for Tenants {
    fn default() -> Self {
        Tenants { names: vec![DEFAULT_TENANT.into()], weights: vec![1] }
    }
}

impl Tenants {
    /// From `[fairness] tenants` (name → weight). The default tenant comes first,
    /// with weight 1 unless the table names it.
    pub fn from_config(config: &FairnessConfig) -> Result<Tenants, crate::ConfigError> {
        let mut tenants = Tenants::default();
        for (name, &weight) in &config.tenants {
            if !(1..=MAX_WEIGHT).contains(&weight) {
                return Err(crate::ConfigError::new(
                    format!("fairness.tenants.{name}"),
                    format!("weight {weight} is out of range: give a whole number from 1 to {MAX_WEIGHT}"),
                ));
            }
            if name == DEFAULT_TENANT {
                tenants.weights[0] = weight;
            } else {
                tenants.names.push(name.clone());
                tenants.weights.push(weight);
            }
        }
        Ok(tenants)
    }

    /// The index of tenant `name` (`None`: the default tenant), or an error naming it.
    pub fn index(&self, name: Option<&str>) -> Result<usize, String> {
        let Some(name) = name else { return Ok(0) };
        self.names.iter().position(|n| n == name).ok_or_else(|| {
            format!("unknown tenant `{name}` (the pipeline's [fairness] tenants are: {})", self.names.join(", "))
        })
    }
}

/// Largest configured tenant weight.
pub const MAX_WEIGHT: u32 = 1 << 16;

/// `[fairness]`: request-level fairness inside each node, and decomposition of large requests.
///
/// ```toml
/// [fairness]
/// policy = "weighted"                  # "fifo" (default), "weighted" (seed 004) or "stride"
/// tenants = { alice = 1, bob = 2 }     # weights, whole numbers 1..=65536; others default to 1
/// granule = 8                          # split requests with more rows than max_batch (see `split`)
/// ```
///
/// Requests name their tenant with [`crate::Request::tenant`]; a request
/// without one belongs to tenant `default` (weight 1, or as given in
/// `tenants`). A request naming a tenant the table does not list is refused
/// as invalid input, with an error naming it: a typo should not silently
/// land in another tenant's share.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FairnessConfig {
    /// How a node's buffer orders tasks across tenants.
    pub policy: FairnessKind,
    /// Tenant name → configured weight (a whole number, 1..=65536).
    pub tenants: std::collections::BTreeMap<String, u32>,
    /// Decomposition: a request with more rows than the pipeline's smallest
    /// `max_batch` is split into 2^n jobs whose rows are multiples of
    /// `granule` (rows). Unset: such requests are refused, as before.
    pub granule: Option<usize>,
}

/// `[fairness]` validated: the policy, the tenants and the decomposition granule.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FairnessSpec {
    pub policy: FairnessKind,
    pub tenants: Tenants,
    /// Rows per job are a multiple of this; `None`: large requests are refused.
    pub granule: Option<usize>,
}

impl FairnessSpec {
    /// Checks `[fairness]` against the pipeline's nodes.
    pub fn build(config: &FairnessConfig, nodes: &[crate::graph::NodeSpec]) -> Result<Self, crate::ConfigError> {
        let tenants = Tenants::from_config(config)?;
        if let Some(granule) = config.granule {
            let smallest = nodes.iter().min_by_key(|n| n.max_batch);
            if granule == 0 {
                return Err(crate::ConfigError::new("fairness.granule", "must be at least 1 row"));
            }
            if let Some(node) = smallest.filter(|n| n.max_batch < granule) {
                return Err(crate::ConfigError::new(
                    "fairness.granule",
                    format!(
                        "{granule} rows is more than node `{}` runs per batch (max_batch = {}): a job must fit \
                         every node; use a granule of at most {}",
                        node.name, node.max_batch, node.max_batch
                    ),
                ));
            }
        }
        Ok(FairnessSpec { policy: config.policy, tenants, granule: config.granule })
    }
}

/// The tenants with waiting jobs, shared bookkeeping of the weighted policies:
/// jobs per tenant, the waiting tenants in index order, and their configured weights' sum.
#[derive(Clone, Debug, Default)]
struct Backlog {
    jobs: Vec<usize>,
    active: Vec<usize>,
    weight: u64,
    total: usize,
}

impl Backlog {
    fn new(tenants: usize) -> Self {
        Backlog { jobs: vec![0; tenants], ..Backlog::default() }
    }

    /// One more job for `tenant` (of configured `weight`); true when it just entered the set.
    fn push(&mut self, tenant: usize, weight: u64) -> bool {
        self.total += 1;
        self.jobs[tenant] += 1;
        if self.jobs[tenant] > 1 {
            return false;
        }
        self.weight += weight;
        let at = self.active.partition_point(|&i| i < tenant);
        self.active.insert(at, tenant);
        true
    }

    /// One job of `tenant` fewer; true when it just left the set.
    fn pop(&mut self, tenant: usize, weight: u64) -> bool {
        debug_assert!(self.jobs[tenant] > 0, "served a tenant with no jobs");
        self.total -= 1;
        self.jobs[tenant] -= 1;
        if self.jobs[tenant] > 0 {
            return false;
        }
        self.weight -= weight;
        self.active.retain(|&i| i != tenant);
        true
    }

    fn clear(&mut self) {
        self.jobs.iter_mut().for_each(|j| *j = 0);
        self.active.clear();
        self.weight = 0;
        self.total = 0;
    }
}
