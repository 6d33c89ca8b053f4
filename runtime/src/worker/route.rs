//! After a batch: each task's rows of each output are cut out and handed on.

use super::execute::Executed;
use super::Worker;
use crate::node::Task;
use crate::scheduler::Reason;
use crate::spec::Target;
use crate::tensor::Tensor;

impl Worker {
    /// Splits routed outputs per task (cutting padded ones back) and hands them
    /// on. Pokes the scheduler at most once.
    pub(super) fn route(&self, tasks: &[Task], executed: &Executed) {
        let outputs = &executed.outputs;
        let mut poke: Option<Reason> = None;
        // Requesters answered by this batch are woken after it, by fan-out (see `wakeup`).
        let _deferred = crate::wakeup::Deferred::begin();
        // Row offset of each task in each stage's outputs.
        let mut offsets: Vec<usize> = vec![0; executed.rows.len()];
        for (t, task) in tasks.iter().enumerate() {
            let range = |stage: usize, offsets: &[usize]| offsets[stage]..offsets[stage] + executed.rows[stage][t];
            if let (Some(chunk), Some(_)) = (task.request.stream, &self.state.streams) {
                // Commit before answering, so the stream's next chunk finds its state.
                let new_state = self
                    .state_outputs
                    .iter()
                    .map(|&(stage, index)| outputs[stage][index].rows(range(stage, &offsets)).compact())
                    .collect();
                if let Some(reason) = self.release_stream(chunk, Some(new_state)) {
                    poke = Some(merge(poke, reason));
                }
            }
            for (r, route) in self.spec().routes.iter().enumerate() {
                if route.targets.iter().all(|t| matches!(t, Target::State(_))) {
                    continue; // written back above
                }
                let part =
                    self.cut_back(r, task, tasks, outputs[route.stage][route.index].rows(range(route.stage, &offsets)));
                for target in &route.targets {
                    match *target {
                        Target::Node { node, slot } => {
                            if let Some(reason) = self.handoff.deliver(node, slot, &task.request, part.clone()) {
                                poke = Some(merge(poke, reason));
                            }
                        }
                        Target::Output(index) => self.handoff.output(&task.request, index, part.clone()),
                        Target::State(_) => {}
                    }
                }
            }
            for (stage, offset) in offsets.iter_mut().enumerate() {
                *offset += executed.rows[stage][t];
            }
        }
        // The node-finished poke that follows covers arrivals too; poke here only for
        // priority arrivals, which should not wait for this worker's bookkeeping.
        if let Some(Reason::PriorityArrival) = poke {
            self.handoff.poke(Reason::PriorityArrival);
        }
    }

    /// Route `r`'s `part` for `task`, cut back to the task's own size where the
    /// route is a padded input's cut output (else `part` itself).
    fn cut_back(&self, r: usize, task: &Task, tasks: &[Task], part: Tensor) -> Tensor {
        let Some(shape) = self.cut_shape(r, task, &part, tasks) else { return part };
        match part.crop_to(&shape) {
            Ok(cut) => cut,
            Err(e) => {
                let route = &self.spec().routes[r];
                tracing::error!(node = %self.spec().name, output = %route.name, error = %e, "cannot cut back a padded output");
                part
            }
        }
    }

    /// The shape route `r`'s part for `task` is cut back to, if the route is a
    /// padded input's cut output: each cut axis scaled by the task's share of the padded size.
    fn cut_shape(&self, r: usize, task: &Task, part: &Tensor, tasks: &[Task]) -> Option<Vec<usize>> {
        let (pad, axes) = self.cuts[r].as_ref()?;
        let slot = pad.slot;
        let mut shape = part.shape().to_vec();
        for (i, (&in_axis, &out_axis)) in pad.axes.iter().zip(axes).enumerate() {
            let padded = pad.extent(i, tasks.iter().map(|t| t.inputs[slot].shape()[in_axis]).max()?);
            let own = task.inputs[slot].shape()[in_axis];
            let out = shape[out_axis];
            shape[out_axis] = if padded == 0 { out } else { (out * own).div_ceil(padded) };
        }
        Some(shape)
    }
}

/// Keeps the more urgent of two poke reasons.
fn merge(current: Option<Reason>, new: Reason) -> Reason {
    match current {
        Some(Reason::PriorityArrival) => Reason::PriorityArrival,
        _ => new,
    }
}
