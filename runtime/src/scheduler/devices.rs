//! Device budgets: how many batches may run on each GPU at once, all its nodes together.
//!
//! A GPU node ([`Resource::Device`]) holds one slot of its device from the
//! decision that sends it a batch until its worker ends that batch (the same
//! busy count that holds a CPU node's cost against the compute budget). It
//! holds none of the compute budget: its `cost` is 0 to the selector, so a busy
//! GPU never holds CPU nodes back, and CPU nodes never hold a GPU back.
//!
//! ## The protocol
//! Each decision, under the decision lock, starts from every device's budget
//! and takes away the busy counts of its nodes ([`DeviceSlots::begin`],
//! [`DeviceSlots::hold`]). Nodes on a device with no slot left cannot start
//! this round; the selector then picks as it always does, and its picks are
//! kept in pick order while their device has a slot ([`DeviceSlots::take`]),
//! so under the collaborative rule a priority node gets the device first.
//! Busy counts rise only under the decision lock and fall only when a worker
//! ends a batch, so a count read without the lock is never below the true one:
//! a device never runs more batches than its budget.

use crate::spec::PipelineSpec;
use crate::spec::Resource;

/// Per node, its device; per device, its budget and the slots left this round.
pub(crate) struct DeviceSlots {
    device_of: Vec<Option<usize>>,
    budgets: Vec<usize>,
    free: Vec<usize>,
}

impl DeviceSlots {
    pub fn new(spec: &PipelineSpec) -> Self {
        let device_of = spec
            .nodes
            .iter()
            .map(|n| match n.resource {
                Resource::Device(d) => Some(d),
                Resource::Cores { .. } | Resource::Remote { .. } => None,
            })
            .collect();
        let budgets: Vec<usize> = spec.devices.iter().map(|d| d.budget).collect();
        DeviceSlots { device_of, free: budgets.clone(), budgets }
    }

    /// Starts a round: every device's whole budget is free.
    pub fn begin(&mut self) {
        self.free.copy_from_slice(&self.budgets);
    }

    /// `node` has `busy` batches in flight: they hold slots of its device.
    pub fn hold(&mut self, node: usize, busy: usize) {
        if let Some(d) = self.device_of[node] {
            self.free[d] = self.free[d].saturating_sub(busy);
        }
    }

    /// Whether `node` could start on its device now (always, for a CPU node).
    pub fn has_room(&self, node: usize) -> bool {
        self.device_of[node].is_none_or(|d| self.free[d] > 0)
    }

    /// Takes a slot of `node`'s device for one batch; `false` when none is left (then it must not run).
    pub fn take(&mut self, node: usize) -> bool {
        match self.device_of[node] {
            None => true,
            Some(d) if self.free[d] > 0 => {
                self.free[d] -= 1;
                true
            }
            Some(_) => false,
        }
    }
}
