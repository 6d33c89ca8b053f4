//! A worker's start: its thread, its core, its engines, and the state it keeps between batches.

use std::sync::Arc;

use crossbeam_channel::Sender;

use super::efficient::EfficientRows;
use super::{Handoff, Worker, WorkerSettings, INPUT_BUFFERS_KEPT};
use crate::batch_cpu::Sampler;
use crate::engine::{Engine, StageRequest, WarmUp};
use crate::node::fault::FaultDraws;
use crate::node::niceness::BatchNice;
use crate::node::NodeState;
use crate::spec::{NodeSpec, PadSpec};
use crate::tensor::TensorPool;

/// Starts a worker of node `settings.node` on its own thread. It reports on
/// `ready` once its engines exist (with what they warmed up), or why they could not be made.
pub(crate) fn spawn(
    handoff: Arc<dyn Handoff>,
    state: Arc<NodeState>,
    settings: WorkerSettings,
    ready: Sender<Result<Vec<WarmUp>, String>>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let name = format!("baton-{}-{}", settings.spec.name, settings.index);
    std::thread::Builder::new().name(name).spawn(move || {
        let group = settings.spec.group_of(settings.index);
        pin_to_core(&settings.spec, group, settings.index);
        let requests = stage_requests(&settings.spec, group);
        let engines = match create_engines(&settings.spec, &requests) {
            Ok(engines) => {
                let _ = ready.send(Ok(warm_ups(&settings.spec, settings.index, &engines, &requests)));
                engines
            }
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        };
        drop(ready);
        let receiver = state.receiver(group).clone();
        let mut worker = Worker::new(handoff, state, settings, group, engines, requests);
        worker.register_stop_handles();
        worker.serve(&receiver);
    })
}

/// Pins the thread to its core: a group's own cores, by the worker's index in
/// the group; else the node's, by its index in the node. Unpinned if neither lists cores.
fn pin_to_core(spec: &NodeSpec, group: Option<usize>, index: usize) {
    let cores = match group.map(|g| &spec.groups[g]) {
        Some(g) if !g.cores.is_empty() => Some((&g.cores, index - g.first_worker)),
        _ => (!spec.cores.is_empty()).then_some((&spec.cores, index)),
    };
    if let Some((cores, i)) = cores {
        let core = cores[i % cores.len()];
        if !core_affinity::set_for_current(core_affinity::CoreId { id: core }) {
            tracing::warn!(node = %spec.name, worker = index, core, "could not pin worker to core");
        }
    }
}

/// Per stage: what its engine is created from, with the threads the worker's group says.
fn stage_requests(spec: &NodeSpec, group: Option<usize>) -> Vec<StageRequest> {
    spec.stages
        .iter()
        .map(|stage| match group.map(|g| &spec.groups[g]) {
            Some(g) => {
                StageRequest { intra_threads: g.intra_threads, inter_threads: g.inter_threads, ..stage.request.clone() }
            }
            None => stage.request.clone(),
        })
        .collect()
}

/// One engine per stage, or the first stage's error (naming where it is configured).
fn create_engines(spec: &NodeSpec, requests: &[StageRequest]) -> Result<Vec<Box<dyn Engine>>, String> {
    spec.stages
        .iter()
        .zip(requests)
        .map(|(stage, request)| stage.provider.create(request).map_err(|e| format!("{}: {e}", request.location)))
        .collect()
}

/// What the engines ran when they were created (their fixed batch sizes, each timed).
fn warm_ups(spec: &NodeSpec, index: usize, engines: &[Box<dyn Engine>], requests: &[StageRequest]) -> Vec<WarmUp> {
    engines
        .iter()
        .zip(requests)
        .filter(|(engine, _)| !engine.warmed_sizes().is_empty())
        .map(|(engine, request)| WarmUp {
            node: spec.name.clone(),
            worker: index,
            stage: request.location.clone(),
            sizes: engine.warmed_sizes().to_vec(),
        })
        .collect()
}

impl Worker {
    fn new(
        handoff: Arc<dyn Handoff>,
        state: Arc<NodeState>,
        settings: WorkerSettings,
        group: Option<usize>,
        engines: Vec<Box<dyn Engine>>,
        requests: Vec<StageRequest>,
    ) -> Worker {
        let spec = &settings.spec;
        let index = settings.index;
        let host_memory = engines.first().and_then(|engine| engine.host_memory());
        let device_memory = engines.first().and_then(|engine| engine.device_memory());
        let inputs = spec.inputs.len();
        let batch_rows = group.map_or(settings.batch_rows, |g| settings.batch_rows.min(spec.groups[g].max_rows));
        Worker {
            faults: spec.faults.as_ref().map(|f| FaultDraws::new(f, settings.node, index)),
            tasks: Vec::new(),
            input_pools: (0..inputs).map(|_| TensorPool::in_memory(INPUT_BUFFERS_KEPT, host_memory.clone())).collect(),
            device_pools: device_memory
                .map(|memory| (0..inputs).map(|_| TensorPool::on_device(INPUT_BUFFERS_KEPT, memory.clone())).collect()),
            state_outputs: state_outputs(spec),
            cuts: cuts(spec),
            pad_axes: spec.pad_axes(),
            batch_rows,
            efficient: spec.efficient_batches.then(|| EfficientRows::new(batch_rows)),
            group,
            nice: BatchNice::new(&state.nice, index, settings.thread_classes),
            stoppable: false,
            batch_samples: Sampler::default(),
            spin_samples: Sampler::default(),
            engines,
            requests,
            handoff,
            state,
            settings,
        }
    }
}

/// (stage, output index) of each write-back output, in state order.
fn state_outputs(spec: &NodeSpec) -> Vec<(usize, usize)> {
    spec.state
        .iter()
        .map(|st| {
            let route = spec.routes.iter().find(|r| r.name == st.output).expect("validated write-back output");
            (route.stage, route.index)
        })
        .collect()
}

/// Per route: the pad rule and output axes to cut it back along, if it is a padded input's cut output.
fn cuts(spec: &NodeSpec) -> Vec<Option<(PadSpec, Vec<usize>)>> {
    spec.routes
        .iter()
        .map(|route| {
            spec.pad.iter().find_map(|pad| {
                let (_, axes) = pad.cuts.iter().find(|(name, _)| *name == route.name)?;
                Some((pad.clone(), axes.clone()))
            })
        })
        .collect()
}
