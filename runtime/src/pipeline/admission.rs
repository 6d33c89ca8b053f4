//! Admission: a submitted request passes every check or is refused at once.
//!
//! The checks run in order (shutdown, oversized split, tenant, worker kind,
//! inputs, reach, streams, entry queues, the in-flight limit) and the first
//! that fails names the refusal. Only the last takes something (an in-flight
//! permit, which the request then owns), so a refusal leaves nothing to undo.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::Router;
use crate::metrics::Outcome;
use crate::request::in_flight::InFlightPermit;
use crate::request::{Completion, Request, RequestError, RequestState, Ticket};
use crate::spec::Target;
use crate::tensor::Tensor;

/// A per-request subset of outputs or nodes; `None` means all of them.
pub(super) type Mask = Option<Box<[bool]>>;

/// What admission learned of a request that passed every check, and its in-flight slot.
struct Admitted {
    permit: InFlightPermit,
    tenant: usize,
    worker_kind: Option<usize>,
    /// The inputs in pipeline-input order (`None`: an optional input left out).
    inputs: Vec<Option<Tensor>>,
    expected: Mask,
    runs: Mask,
}

/// Where a request goes after the checks.
enum Admission {
    Admitted(Admitted),
    /// Larger than a node's batch: split into jobs of `granule` rows, each admitted on its own.
    Split {
        granule: usize,
    },
}

impl Router {
    /// Submits a request; the ticket resolves exactly once.
    pub fn submit(&self, request: Request) -> Ticket {
        let expected = Duration::from_nanos(2 * self.latency_ema_ns.load(Ordering::Relaxed));
        let completion = Arc::new(Completion::expecting(expected));
        let ticket = Ticket::new(Arc::clone(&completion));
        self.admit(request, completion);
        ticket
    }

    /// Validates and admits a request, or resolves its completion at once with the reason it was refused.
    pub fn admit(&self, request: Request, completion: Arc<Completion>) {
        match self.check(&request) {
            Ok(Admission::Admitted(admitted)) => self.enter(&request, admitted, completion),
            Ok(Admission::Split { granule }) => {
                let submit = |job, completion| self.admit(job, completion);
                crate::split::submit_jobs(request, completion, self.row_limit.0, granule, self.metrics.clone(), submit);
            }
            Err(error) => {
                self.metrics.request_done(Outcome::of(&Err(error.clone())));
                completion.resolve(Err(error));
            }
        }
    }

    /// Runs the admission checks in order; on success the request holds an in-flight slot.
    fn check(&self, request: &Request) -> Result<Admission, RequestError> {
        if !self.accepting.load(Ordering::Acquire) {
            return Err(RequestError::ShuttingDown);
        }
        if let Some(granule) = self.split_granule(request)? {
            return Ok(Admission::Split { granule });
        }
        let tenant = self.spec.fairness.tenants.index(request.tenant.as_deref()).map_err(RequestError::InvalidInput)?;
        let worker_kind = request.worker_kind.as_deref().map(|kind| self.worker_kind(kind)).transpose()?;
        let inputs = self.validate(request).map_err(RequestError::InvalidInput)?;
        let (expected, runs) = self.reach(&inputs);
        if expected.as_ref().is_some_and(|e| !e.contains(&true)) {
            let given: Vec<&str> = request.inputs.iter().map(|(n, _)| n.as_str()).collect();
            let message = format!("the inputs given ({}) lead to no pipeline output", given.join(", "));
            return Err(RequestError::InvalidInput(message));
        }
        if request.stream.is_none() {
            self.check_stateless(&runs)?;
        }
        self.check_entry_queues(&inputs)?;
        let limit = self.in_flight.limit();
        let permit = self.in_flight.acquire().ok_or(RequestError::QueueFull { limit })?;
        Ok(Admission::Admitted(Admitted { permit, tenant, worker_kind, inputs, expected, runs }))
    }

    /// With fairness granules, a request with more rows than a node's batch is
    /// split: its granule, or `QueueFull` when its jobs would not all fit under
    /// `max_in_flight` (each job is admitted and counted on its own; see `split`).
    fn split_granule(&self, request: &Request) -> Result<Option<usize>, RequestError> {
        let Some(granule) = self.spec.fairness.granule else { return Ok(None) };
        if !crate::split::is_oversized(request, self.row_limit.0) {
            return Ok(None);
        }
        let jobs = crate::split::job_count(request, self.row_limit.0, granule);
        if !self.in_flight.has_room_for(jobs) {
            return Err(RequestError::QueueFull { limit: self.in_flight.limit() });
        }
        Ok(Some(granule))
    }

    /// A request that is not a stream chunk may not run any node keeping per-stream state.
    fn check_stateless(&self, runs: &Mask) -> Result<(), RequestError> {
        let nodes = self.spec.nodes.iter().enumerate();
        let mut stateful = nodes.filter(|(n, node)| node.keeps_streams() && runs.as_ref().is_none_or(|r| r[*n]));
        match stateful.next() {
            None => Ok(()),
            Some((_, node)) => Err(RequestError::InvalidInput(format!(
                "node `{}` keeps per-stream state: the request must be a chunk of a stream (id, start, end)",
                node.name
            ))),
        }
    }

    /// Bounded entries: refused at once while the node has `max_queue` tasks waiting.
    /// Check-then-enqueue is not atomic: concurrent submitters may each pass the
    /// check, so a node holds at most `max_queue` + (submitters - 1) entering tasks.
    fn check_entry_queues(&self, inputs: &[Option<Tensor>]) -> Result<(), RequestError> {
        for &(input, node, limit) in &self.entry_limits {
            if inputs[input].is_some() && self.nodes[node].buffer.pending() >= limit {
                self.nodes[node].metrics.refusals.increment(1);
                return Err(RequestError::NodeQueueFull { node: self.spec.nodes[node].name.clone(), limit });
            }
        }
        Ok(())
    }

    /// Registers an admitted request and delivers its inputs to the nodes they feed.
    fn enter(&self, request: &Request, admitted: Admitted, completion: Arc<Completion>) {
        let Admitted { permit, tenant, worker_kind, inputs, expected, runs } = admitted;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let outputs = self.spec.outputs.len();
        let mut state = RequestState::new(id, request, outputs, expected, runs, completion, permit);
        state.tenant = tenant;
        state.worker_kind = worker_kind;
        let state = Arc::new(state);
        let mut poke = None;
        for (input, tensor) in self.spec.inputs.iter().zip(inputs) {
            let Some(tensor) = tensor else { continue };
            for target in &input.targets {
                if let Target::Node { node, slot } = *target {
                    if let Some(reason) = self.deliver(node, slot, &state, tensor.clone()) {
                        poke = Some(reason);
                    }
                }
            }
        }
        if let Some(reason) = poke {
            self.scheduler.poke(reason, &self.nodes);
        }
    }

    /// The index of worker kind `kind` in the pipeline's kinds, or an error naming it.
    fn worker_kind(&self, kind: &str) -> Result<usize, RequestError> {
        let kinds = &self.spec.worker_kinds;
        kinds.binary_search_by(|k| k.as_str().cmp(kind)).map_err(|_| {
            RequestError::InvalidInput(if kinds.is_empty() {
                format!("unknown worker kind `{kind}`: no node of this pipeline has worker_groups")
            } else {
                format!("unknown worker kind `{kind}` (the pipeline's worker groups are: {})", kinds.join(", "))
            })
        })
    }

    /// For a request leaving optional inputs out: which outputs it gets and which
    /// nodes run for it (`None`s when it carries every input).
    fn reach(&self, inputs: &[Option<Tensor>]) -> (Mask, Mask) {
        if inputs.iter().all(Option::is_some) {
            return (None, None);
        }
        let present: Vec<bool> = inputs.iter().map(Option::is_some).collect();
        let runs = self.spec.running_nodes(&present);
        let expected: Vec<bool> = self.spec.outputs.iter().map(|o| runs[o.node]).collect();
        (Some(expected.into()), Some(runs.into()))
    }

    /// Checks a request's inputs against the pipeline; returns them in pipeline-input order.
    fn validate(&self, request: &Request) -> Result<Vec<Option<Tensor>>, String> {
        let inputs = &self.spec.inputs;
        let mut ordered: Vec<Option<&Tensor>> = vec![None; inputs.len()];
        for (name, tensor) in &request.inputs {
            let Some(&i) = self.input_index.get(name) else {
                let known: Vec<&str> = inputs.iter().map(|i| i.spec.name.as_str()).collect();
                return Err(format!("unknown input `{name}` (the pipeline takes: {})", known.join(", ")));
            };
            if ordered[i].replace(tensor).is_some() {
                return Err(format!("input `{name}` is given twice"));
            }
            let spec = &inputs[i].spec;
            if tensor.dtype() != spec.dtype {
                return Err(format!("input `{name}` is {} but the pipeline takes {}", tensor.dtype(), spec.dtype));
            }
            if !spec.accepts(tensor.shape()) {
                return Err(format!(
                    "input `{name}` has shape {:?} but the pipeline takes {}",
                    tensor.shape(),
                    spec.shape_string()
                ));
            }
        }
        let mut rows = None;
        let mut result = Vec::with_capacity(inputs.len());
        for (slot, input) in ordered.into_iter().zip(inputs) {
            let name = &input.spec.name;
            let Some(tensor) = slot else {
                if input.optional {
                    result.push(None);
                    continue;
                }
                return Err(format!("missing input `{name}`"));
            };
            let r = tensor.batch_rows();
            match rows {
                None => rows = Some((r, name)),
                Some((first, first_name)) if first != r => {
                    return Err(format!(
                        "inputs disagree on rows (dim 0): `{first_name}` has {first}, `{name}` has {r}"
                    ));
                }
                _ => {}
            }
            result.push(Some(tensor.clone()));
        }
        let rows = rows.map_or(0, |(r, _)| r);
        if rows == 0 {
            return Err("the request has 0 rows (dim 0)".into());
        }
        let (limit, node) = &self.row_limit;
        if rows > *limit {
            return Err(format!(
                "the request has {rows} rows but node `{node}` runs at most {limit} per batch (max_batch)"
            ));
        }
        Ok(result)
    }
}
