//! Stride scheduling: the reference order the weighted-fair rule is compared with.
//!
//! Each tenant has a *stride* `S / weight` and a *pass*; the tenant with the
//! smallest pass is served and its pass grows by its stride (ties: larger
//! weight, then lower index). A global virtual time grows by `S / Σ weights
//! of the waiting tenants` each round; a tenant that starts waiting again
//! resumes at `max(its pass, virtual time)`, so idling earns no credit.

use super::{Backlog, TenantOrder};

/// `S`, the stride of a weight-1 tenant (large, so strides of heavy tenants stay exact enough).
const STRIDE1: u64 = 1 << 40;

#[derive(Clone, Debug, Default)]
struct Tenant {
    weight: u64,
    stride: u64,
    pass: u64,
}

/// Stride scheduling over tenants. See the module docs.
pub struct Stride {
    tenants: Vec<Tenant>,
    backlog: Backlog,
    vtime: u64,
}

impl Stride {
    pub fn new(weights: &[u32]) -> Self {
        Stride {
            tenants: weights
                .iter()
                .map(|&w| {
                    let weight = u64::from(w.max(1));
                    Tenant { weight, stride: STRIDE1 / weight, ..Tenant::default() }
                })
                .collect(),
            backlog: Backlog::new(weights.len()),
            vtime: 0,
        }
    }
}

impl TenantOrder for Stride {
    fn enqueue(&mut self, tenant: usize) {
        let t = &mut self.tenants[tenant];
        if self.backlog.push(tenant, t.weight) {
            t.pass = t.pass.max(self.vtime);
        }
    }

    fn choose(&mut self) -> Option<usize> {
        self.best(|_| true)
    }

    fn choose_where(&mut self, eligible: &mut dyn FnMut(usize) -> bool) -> Option<usize> {
        self.best(eligible)
    }

    fn served(&mut self, tenant: usize) {
        self.vtime += STRIDE1 / self.backlog.weight.max(1);
        let t = &mut self.tenants[tenant];
        t.pass += t.stride;
        self.backlog.pop(tenant, t.weight);
    }

    fn pending(&self) -> usize {
        self.backlog.total
    }

    fn clear(&mut self) {
        self.backlog.clear();
    }
}

impl Stride {
    /// The eligible waiting tenant with the least pass (ties: larger weight, then lower index).
    fn best(&self, mut eligible: impl FnMut(usize) -> bool) -> Option<usize> {
        let mut best: Option<(u64, u64, usize)> = None;
        for &i in self.backlog.active.iter().filter(|&&i| eligible(i)) {
            let t = &self.tenants[i];
            if best.is_none_or(|(bp, bw, _)| t.pass < bp || (t.pass == bp && t.weight > bw)) {
                best = Some((t.pass, t.weight, i));
            }
        }
        best.map(|(_, _, i)| i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backlogged_1_2_4_is_exact_every_7_rounds() {
        let mut p = Stride::new(&[1, 2, 4]);
        for t in 0..3 {
            for _ in 0..100 {
                p.enqueue(t);
            }
        }
        for _ in 0..10 {
            let mut served = [0; 3];
            for _ in 0..7 {
                served[p.step().unwrap()] += 1;
            }
            assert_eq!(served, [1, 2, 4]);
        }
    }

    #[test]
    fn an_idle_tenant_earns_no_credit() {
        let mut p = Stride::new(&[1, 1]);
        for _ in 0..50 {
            p.enqueue(0);
        }
        for _ in 0..40 {
            p.step();
        }
        // Tenant 1 arrives late: it shares from now on, it does not get 40 rounds in a row.
        for _ in 0..10 {
            p.enqueue(1);
        }
        let firsts: Vec<usize> = (0..6).map(|_| p.step().unwrap()).collect();
        assert_eq!(firsts.iter().filter(|&&t| t == 1).count(), 3, "{firsts:?}");
    }
}
