//! A request's way through the nodes: its inputs delivered to their buffers (through join
//! tables and the streams' gates), its outputs routed on or answered, a stateful node's
//! write-back, and a refused chunk's error.

use baton::spec::Target;

use super::{Batch, Ev, Sim};
use crate::load::Sent;
use crate::simulate::cpu::Job;
use crate::simulate::nodes::SimTask;
use crate::simulate::sessions::Send;
use crate::simulate::streams::Entry;

/// The least time from an error's answer to its client's next send, ns: a client whose
/// requests are refused at once (a bounded entry full) sends again, and virtual time moves on.
const ERROR_TURNAROUND_NS: u64 = 1000;

impl Sim<'_> {
    /// A request's inputs go to their nodes. Whether an arrival wants a decision.
    pub(super) fn enter(&mut self, id: usize) -> bool {
        let reach = self.requests[id].as_ref().expect("a live request").send.reach;
        let carried = self.streams.reach(reach).inputs.clone();
        let mut wants = false;
        for input in (0..self.spec.inputs.len()).filter(|&k| carried[k]) {
            for t in 0..self.spec.inputs[input].targets.len() {
                wants |= self.send(id, self.spec.inputs[input].targets[t]);
            }
        }
        wants
    }

    /// Sends one output (or input) of `request` to `target`; whether the arrival wants a decision.
    pub(super) fn send(&mut self, request: usize, target: Target) -> bool {
        match target {
            Target::Node { node, slot } => self.deliver(node, slot, request),
            Target::Output(_) => {
                self.output(request);
                false
            }
            Target::State(_) => false,
        }
    }

    pub(super) fn deliver(&mut self, node: usize, slot: usize, request: usize) -> bool {
        // Answered already (its outputs came before this route's): nothing runs for it.
        let Some(req) = self.requests[request].as_ref() else { return false };
        let (priority, stream) = (req.send.priority, req.send.stream);
        let tenant = self.streams.pipeline_tenant(req.send.tenant);
        if req.failed || !self.streams.reach(req.send.reach).runs[node] {
            return false;
        }
        let n = &mut self.nodes[node];
        if n.full_mask != 0 && !n.join(request, slot) {
            return false;
        }
        let priority = priority && (self.spec.scheduler.priority_follows_dag || self.entry[node]);
        let mut task = SimTask { request, rows: self.setup.rows, priority, enqueued_ns: self.now, tenant };
        if self.streams.gated(node) {
            match stream.map(|chunk| self.streams.enter(node, chunk, task)) {
                Some(Entry::Now(t)) => task = t,
                Some(Entry::Later) => return false,
                Some(Entry::Refused) | None => {
                    self.fail(request);
                    return false;
                }
            }
        }
        self.queue(node, task);
        priority || (self.decide_on_arrival && self.nodes[node].busy < self.spec.nodes[node].workers)
    }

    /// Puts `task` in `node`'s buffer. The ticks, parked while no task waited (a
    /// tick then decides nothing), resume on their grid: at the next multiple
    /// of the period after the parked one (now, if now is on the grid).
    pub(super) fn queue(&mut self, node: usize, task: SimTask) {
        self.nodes[node].push(task);
        if let Some(parked) = self.tick_parked.take() {
            let tick = self.tick_ns;
            let next = if self.now > parked && self.now.is_multiple_of(tick) {
                self.now
            } else {
                (self.now / tick + 1) * tick
            };
            let late = self.tick_late_ns();
            self.at(next + late, Ev::Tick);
        }
    }

    /// Answers `request` with an error (a chunk its stateful node refused).
    pub(super) fn fail(&mut self, request: usize) {
        let req = self.requests[request].as_mut().expect("a live request");
        if std::mem::replace(&mut req.failed, true) {
            return;
        }
        let (send, client) = (req.send, req.client);
        self.in_flight -= 1;
        self.answer_with_error(send, client);
    }

    /// Counts `send` as answered with an error now, and its client sends what follows.
    pub(super) fn answer_with_error(&mut self, send: Send, client: Option<usize>) {
        if self.measuring && send.recorded {
            let sent = Sent { priority: send.priority, tenant: send.tenant };
            self.recorder.record_sent(0, (self.now - send.sent_ns) / 1000, sent, false);
        }
        if let Some(c) = client {
            self.follow(c, send, self.now + ERROR_TURNAROUND_NS);
        }
    }

    /// One pipeline output of `request` is ready; the last answers it.
    pub(super) fn output(&mut self, request: usize) {
        let req = self.requests[request].as_mut().expect("a live request");
        if req.failed {
            return;
        }
        req.outputs_left -= 1;
        if req.outputs_left > 0 {
            return;
        }
        let req = self.requests[request].take().expect("a live request");
        self.free.push(request);
        self.in_flight -= 1;
        if self.measuring && req.send.recorded {
            let sent = Sent { priority: req.send.priority, tenant: req.send.tenant };
            self.recorder.record_sent(0, (self.now - req.send.sent_ns) / 1000, sent, true);
        }
        if let Some(c) = req.client {
            self.follow(c, req.send, self.now);
        }
    }

    /// A batch is handed off: its worker is idle again and the scheduler decides (the
    /// runtime's node-finished poke); its outputs reach the next nodes (and answer their
    /// clients) now, or with a route time (`--route-us`, for a real-time batch
    /// `--realtime-route-us` where the node has one; with `--hop-frees-worker` the hop
    /// too) that much later.
    pub(super) fn handoff(&mut self, id: usize) {
        let batch = self.batches[id].as_ref().expect("a finished batch");
        let (node, class) = (batch.node, batch.class);
        let realtime = class.is_realtime();
        match self.durations.route_ns(node, realtime) + self.terms.hop_split_ns().1 {
            0 => self.route(id),
            route => self.at(self.now + route, Ev::Route { batch: id }),
        }
        self.worker_idle(node);
        if self.terms.cpu.decision_ns > 0 {
            let decision = Batch::runtime(Job::Beside, self.terms.cpu.decision_ns, self.now, class);
            self.run_job(decision.on(self.pins[node]));
        }
        self.decide();
    }

    /// A handed-off batch's outputs reach the next nodes and answer their clients.
    pub(super) fn route(&mut self, id: usize) {
        let batch = self.batches[id].take().expect("a finished batch");
        self.free_batches.push(id);
        let node = batch.node;
        let spec = self.spec;
        for task in &batch.tasks {
            if self.streams.gated(node) {
                self.write_back(node, task.request);
            }
            for route in &spec.nodes[node].routes {
                for &target in &route.targets {
                    self.send(task.request, target);
                }
            }
        }
    }

    /// `request`'s chunk ran at stateful node `node`: its state is written back (before
    /// its outputs are handed on, as the runtime commits before answering); the
    /// stream's next chunk enters the buffer, chunks behind a final one are refused.
    pub(super) fn write_back(&mut self, node: usize, request: usize) {
        let chunk = self.requests[request].as_ref().and_then(|r| r.send.stream).expect("a chunk");
        let (next, refused) = self.streams.release(node, chunk, self.now);
        if let Some(task) = next {
            self.queue(node, task);
        }
        for r in refused {
            self.fail(r);
        }
    }
}
