//! What a point's simulation derives from the pipeline before it starts: the nodes'
//! buffers, padded batch sizes, entry nodes, pinned cores and idle workers' spins.

use baton::scheduler::select::NodeSelector;
use baton::spec::Target;
use baton::PipelineSpec;

use crate::simulate::cores::Classes;
use crate::simulate::durations::Durations;
use crate::simulate::nodes::{SimNode, TenantQueues};

/// Per node: how long its idle workers spin for work before they park, ns; workers at
/// the real-time policy never spin.
pub(super) fn spin_ns(spec: &PipelineSpec) -> Vec<u64> {
    let spins = !Classes::new(spec).realtime_workers();
    spec.nodes.iter().map(|n| if spins { n.idle_spin_us * 1000 } else { 0 }).collect()
}

/// Each node's buffer state at the start, batching as the runtime's selector and policy say.
pub(super) fn sim_nodes(spec: &PipelineSpec, selector: &dyn NodeSelector) -> Vec<SimNode> {
    let collaborative = spec.scheduler.policy == baton::BatchingPolicy::Collaborative;
    spec.nodes
        .iter()
        .map(|n| {
            let slots = n.inputs.len() - n.state.len();
            SimNode {
                batch_rows: selector.batch_rows(n.max_batch),
                priority_rows: if collaborative { n.priority_max_batch } else { usize::MAX },
                priority_alone: collaborative && spec.scheduler.separate_priority_batches,
                waiting: vec![0; n.inputs.len()],
                full_mask: if slots > 1 { (1u64 << n.inputs.len()) - 1 } else { 0 },
                fair: TenantQueues::new(&spec.fairness),
                ..SimNode::default()
            }
        })
        .collect()
}

/// The cap an `efficient_batches` node's workers settle on: of their size classes
/// ([`baton::spec::NodeSpec::efficient_batch_classes`]), the size whose median batch (the
/// profile's, with the node's compute terms) costs least per row. The runtime's workers
/// measure it on their own batches and take the other sizes now and then to see them again;
/// the model takes the size they settle on from the start.
pub(super) fn efficient_rows(durations: &Durations, node: usize, batch_rows: usize) -> usize {
    let per_row = |rows: usize| durations.median_us(node, rows) / rows as f64;
    baton::spec::NodeSpec::efficient_batch_classes(batch_rows)
        .into_iter()
        .min_by(|&a, &b| per_row(a).total_cmp(&per_row(b)))
        .unwrap_or(batch_rows)
}

/// Per node: the batch size each row count (0 to its batch rows, at least `rows`) is padded to.
pub(super) fn padded_sizes(spec: &PipelineSpec, nodes: &[SimNode], rows: usize) -> Vec<Vec<usize>> {
    spec.nodes
        .iter()
        .zip(nodes)
        .map(|(n, s)| {
            let sizes = n.stages.iter().find(|st| !st.is_function()).map(|st| st.request.batch_sizes.clone());
            (0..=s.batch_rows.max(rows)).map(|r| sizes.as_ref().map_or(r, |b| b.padded(r))).collect()
        })
        .collect()
}

/// Per node: whether a pipeline input feeds it.
pub(super) fn entry_nodes(spec: &PipelineSpec) -> Vec<bool> {
    let mut entry = vec![false; spec.nodes.len()];
    for input in &spec.inputs {
        for t in &input.targets {
            if let Target::Node { node, .. } = *t {
                entry[node] = true;
            }
        }
    }
    entry
}

/// Per node: the core all its workers are pinned to (`cores = [..]` naming one, or every
/// worker's the same), as the model's core of `cores` (the id modulo their count); `None`
/// where they are not pinned, or pinned to different cores.
pub(super) fn pinned_cores(spec: &PipelineSpec, cores: f64) -> Vec<Option<usize>> {
    let count = cores.ceil().max(1.0) as usize;
    spec.nodes
        .iter()
        .map(|n| {
            let first = *n.cores.first()?;
            let one = (0..n.workers.max(1)).all(|i| n.cores[i % n.cores.len()] == first);
            one.then_some(first % count)
        })
        .collect()
}
