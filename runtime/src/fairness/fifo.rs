//! First come, first served across tenants: the baseline (and the runtime's default,
//! where the buffer keeps its single queue instead of asking this order).

use std::collections::VecDeque;

use super::TenantOrder;

/// Serves jobs in arrival order, whatever their tenant.
pub struct Fifo {
    order: VecDeque<usize>,
}

impl Fifo {
    pub fn new(_tenants: usize) -> Self {
        Fifo { order: VecDeque::new() }
    }
}

impl TenantOrder for Fifo {
    fn enqueue(&mut self, tenant: usize) {
        self.order.push_back(tenant);
    }

    fn choose(&mut self) -> Option<usize> {
        self.order.front().copied()
    }

    fn choose_where(&mut self, eligible: &mut dyn FnMut(usize) -> bool) -> Option<usize> {
        self.order.iter().copied().find(|&t| eligible(t))
    }

    fn served(&mut self, tenant: usize) {
        // The oldest job of `tenant` (the front, unless a choice skipped ineligible tenants).
        let at = self.order.iter().position(|&t| t == tenant);
        debug_assert!(at.is_some(), "served a tenant with no jobs");
        if let Some(at) = at {
            self.order.remove(at);
        }
    }

    fn pending(&self) -> usize {
        self.order.len()
    }

    fn clear(&mut self) {
        self.order.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serves_in_arrival_order() {
        let mut p = Fifo::new(3);
        for t in [2, 0, 2, 1] {
            p.enqueue(t);
        }
        let order: Vec<usize> = (0..4).map(|_| p.step().unwrap()).collect();
        assert_eq!(order, [2, 0, 2, 1]);
        assert_eq!(p.choose(), None);
    }
}
