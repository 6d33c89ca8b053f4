//! Request-level fairness: which tenant's task fills the next slot of a batch.
//!
//! Requests carry a tenant name ([`crate::Request::tenant`]); the pipeline's
//! `[fairness]` section gives each tenant a weight. With `order = "fifo"`
//! (the default) a node's buffer keeps one first-come-first-served queue, as it
//! always did. With `"weighted"` (the weighted-fair rule, docs/scheduling.md) or `"stride"` (a reference order
//! to compare with) the buffer keeps one queue per tenant, and each task it
//! takes into a batch is one *round* of a [`TenantOrder`]: the order chooses
//! the tenant, the buffer takes that tenant's oldest task, the order is told
//! the tenant was served. Priority tasks (docs/scheduling.md) still go first, outside
//! the order.
//!
//! An order sees only tenant indices and job counts, never tasks, so the same
//! object drives a node's buffer and the fairness benchmark's generated traces
//! (`baton bench-fairness`), and its cost per decision can be measured alone.
//!
//! ```
//! use baton::fairness::{TenantOrder, WeightedFair};
//! let mut order = WeightedFair::new(&[1, 3]);
//! for _ in 0..1000 {
//!     order.enqueue(0);
//!     order.enqueue(1);
//! }
//! let mut served = [0usize; 2];
//! for _ in 0..400 {
//!     served[order.step().unwrap()] += 1;
//! }
//! // Weights 1 : 3 → 100 : 300, within a job.
//! assert!(served[0].abs_diff(100) <= 1 && served[1].abs_diff(300) <= 1, "{served:?}");
//! ```

mod fifo;
mod stride;
mod weighted;

pub use fifo::Fifo;
pub use stride::Stride;
/// The weighted-fair choice with a decaying history weight (`[fairness] order = "weighted"`).
pub use weighted::WeightedFair;
pub use weighted::{delay_factor, quantize, TargetRule, D_MAX};

pub use crate::config::{FairnessConfig, FairnessKind};
pub use crate::spec::fairness::{FairnessSpec, Tenants, DEFAULT_TENANT, MAX_WEIGHT};

/// The choice of the next tenant to serve, one job at a time.
///
/// Protocol: [`enqueue`](TenantOrder::enqueue) once per job that arrives for a
/// tenant; [`choose`](TenantOrder::choose) names the tenant whose job should
/// run next without changing anything (a caller that cannot use the choice,
/// say because the job does not fit the batch, simply does not serve it);
/// [`served`](TenantOrder::served) once per job taken, which ends a round.
/// An order keeps its own per-tenant job counts; `served` for a tenant with
/// no jobs is a caller bug (it panics in debug builds).
pub trait TenantOrder: Send {
    /// A job arrived for `tenant`.
    fn enqueue(&mut self, tenant: usize);
    /// The tenant whose job should run next, or `None` when no jobs wait.
    fn choose(&mut self) -> Option<usize>;
    /// Like [`choose`](TenantOrder::choose), among the waiting tenants for which
    /// `eligible` holds (a worker group takes only the jobs it fits; the
    /// order's ranking among those tenants is kept).
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

impl FairnessKind {
    /// A fresh order of this kind over tenants with these configured weights.
    pub fn build(self, weights: &[u32]) -> Box<dyn TenantOrder> {
        match self {
            FairnessKind::Fifo => Box::new(Fifo::new(weights.len())),
            FairnessKind::Weighted => Box::new(WeightedFair::new(weights)),
            FairnessKind::Stride => Box::new(Stride::new(weights)),
        }
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
