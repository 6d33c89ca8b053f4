//! Decisions and the workers they tell: the runtime's [`Decider`](baton::scheduler::decision::Decider)
//! picks nodes, a told worker wakes and takes its batch, whose work is a draw from the
//! profile; a job's end hands its outputs on.

use baton::scheduler::decision::NodeView;
use baton::wake_delays::WakeClass;
use rand::Rng;

use super::{Batch, Ev, Sim};
use crate::simulate::cpu::Job;

impl Sim<'_> {
    /// A scheduling decision through the runtime's [`Decider`]: each pick marks a
    /// worker busy and starts its batch `wake` later.
    pub(super) fn decide(&mut self) {
        let now = self.now;
        let nodes = &self.nodes;
        let decision = self.decider.decide(
            now,
            |n| {
                let s = &nodes[n];
                NodeView {
                    busy: s.busy,
                    pending: s.pending(),
                    priority_pending: s.priority.len(),
                    waited_ns: now.saturating_sub(s.oldest_ns()),
                    group_can_start: None,
                    executions: s.totals.executions,
                    compute_ns: s.totals.compute_ns,
                }
            },
            |join, slot| nodes[join].waiting[slot],
        );
        let due = decision.due_ns;
        let picked: Vec<usize> = decision.picked.to_vec();
        let running = decision.running.nodes;
        self.cores_taken = (running + picked.len()) as f64 >= self.terms.cores;
        // Each told worker is contended when as many workers are busy as there are cores
        // (those told before it in this decision included), as the runtime's scheduler counts.
        for (busy, n) in (running..).zip(picked) {
            let contended = busy as f64 >= self.terms.cores;
            // A spinning worker yields its core: with every core taken it waits for one as a
            // parked worker does.
            let (spinning, held_until) = self.tell_idle_worker(n);
            let class = WakeClass::of(self.classes.is_realtime(n, self.priority_waits(n)), contended);
            let wake = if spinning && !contended { 0 } else { self.wake_ns(n, class) };
            let wake = wake.max(held_until.saturating_sub(now));
            self.nodes[n].totals.wakes.record(wake, class);
            self.nodes[n].busy += 1;
            self.at(now + wake, Ev::Start { node: n, told_ns: now });
        }
        if due != u64::MAX && due != self.last_due {
            self.last_due = due;
            self.at(due.max(now), Ev::Due);
        }
    }

    /// How late the next tick comes after its period: drawn from the runtime's record
    /// (`--tick-delays`) in the class of the last decision (every core busy or not), else 0.
    pub(super) fn tick_late_ns(&mut self) -> u64 {
        match &self.durations.ticks {
            Some(ticks) => {
                let (u, v) = (self.rng.random::<f64>(), self.rng.random::<f64>());
                ticks.draw_ns(self.cores_taken, u, v)
            }
            None => 0,
        }
    }

    /// Tells the worker of `node` idle the shortest time: whether it takes the instruction
    /// spinning for work (`spin_wakes`; a node with recorded wake-ups draws from them, which
    /// hold both kinds), and until when a stall holds it (0: none does).
    pub(super) fn tell_idle_worker(&mut self, node: usize) -> (bool, u64) {
        let worker = self.idle_workers[node].pop().unwrap_or_default();
        let recorded = self.durations.wakes.as_ref().is_some_and(|w| w.has(node));
        (self.terms.spin_wakes && !recorded && self.spins(node, worker.since), worker.held_until)
    }

    /// Whether a worker of `node` idle since `since` still spins for work now.
    pub(super) fn spins(&self, node: usize, since: u64) -> bool {
        self.spin_ns[node] > 0 && since > 0 && self.now - since <= self.spin_ns[node]
    }

    /// A worker of `node` goes idle: it spins for work, then parks.
    pub(super) fn worker_idle(&mut self, node: usize) {
        self.nodes[node].busy -= 1;
        self.idle_workers[node].push(super::IdleWorker { since: self.now, held_until: 0 });
        if self.spin_ns[node] > 0 {
            self.parks_at[node] = Some(self.now + self.spin_ns[node]);
        }
    }

    /// How long a worker of `node` told now takes to wake: drawn from the runtime's
    /// record of its class (real-time where its batch will run at that policy, else
    /// contended where as many workers are busy as cores, as the runtime's scheduler
    /// counts), or the wake term of its class for a node the record lacks.
    pub(super) fn wake_ns(&mut self, node: usize, class: WakeClass) -> u64 {
        let term = if class == WakeClass::Realtime { self.terms.realtime_wake_ns } else { self.terms.wake_ns };
        if let (WakeClass::Realtime, Some(wakes)) = (class, &self.durations.realtime_wakes) {
            let (u, v) = (self.rng.random::<f64>(), self.rng.random::<f64>());
            return wakes.draw_class_ns(node, class, u, v).unwrap_or(term);
        }
        match &self.durations.wakes {
            Some(wakes) if wakes.has(node) => {
                let (u, v) = (self.rng.random::<f64>(), self.rng.random::<f64>());
                wakes.draw_ns(node, class, u, v).unwrap_or(term)
            }
            _ => term,
        }
    }

    /// A told worker wakes: with every core taken, a worker of the normal class waits for
    /// a core, until the running thread's slice ends (a uniform draw up to `slice_ns`: how
    /// much of its slice it has left) or, sooner, the first running job ends and its
    /// thread sleeps; a real-time one takes a core at once.
    pub(super) fn start(&mut self, node: usize, told_ns: u64) {
        let slice = self.terms.slice_ns;
        if slice > 0
            && self.running.len() as f64 >= self.terms.cores
            && !self.classes.is_realtime(node, self.priority_waits(node))
        {
            let slice_left = (self.rng.random::<f64>() * slice as f64) as u64;
            let first_end = self.earliest_end().map_or(u64::MAX, |((end, _), _)| end.saturating_sub(self.now));
            self.at(self.now + slice_left.min(first_end), Ev::Woken { node, told_ns });
            return;
        }
        self.take_and_run(node, told_ns);
    }

    /// Whether priority work waits at `node`: in its buffer, or parked behind an earlier
    /// chunk of its stream (as the runtime's worker asks before it sets its batch's class).
    pub(super) fn priority_waits(&self, node: usize) -> bool {
        !self.nodes[node].priority.is_empty() || self.streams.priority_parked(node) > 0
    }

    /// A worker told at `told_ns` takes its batch and starts it (or, finding nothing, is
    /// idle again).
    pub(super) fn take_and_run(&mut self, node: usize, told_ns: u64) {
        let mut tasks = std::mem::take(&mut self.take_buffer);
        self.nodes[node].take(&mut tasks);
        if tasks.is_empty() {
            self.take_buffer = tasks;
            self.worker_idle(node);
            self.decide();
            return;
        }
        if self.streams.gated(node) {
            for t in &tasks {
                let chunk = self.requests[t.request].as_ref().and_then(|r| r.send.stream).expect("a chunk");
                self.streams.started(node, chunk, self.now);
            }
        }
        let rows: usize = tasks.iter().map(|t| t.rows).sum();
        let totals = &mut self.nodes[node].totals;
        for t in &tasks {
            totals.queue_ns += self.now - t.enqueued_ns;
            totals.queue_times.record(self.now - t.enqueued_ns, self.now - told_ns);
        }
        let class = self.classes.of(node, tasks.iter().any(|t| t.priority), self.priority_waits(node));
        let work = self.work_ns(node, rows, class.is_realtime()) + self.idle_extra_ns(node, class.is_realtime());
        self.computing[node] += 1;
        self.parks_at[node] = None;
        let batch = Batch {
            node,
            tasks: tasks.clone(),
            rows,
            core: self.pins[node],
            ..Batch::runtime(Job::Compute, work, self.now, class)
        };
        tasks.clear();
        self.take_buffer = tasks;
        self.run_job(batch);
    }

    /// A batch's work at full speed: one draw from the profile at its padded size, or with
    /// `piece_rows` one draw per piece (the runtime runs the pieces one after another);
    /// a normal-class batch's times the node's sparse factor at this load.
    pub(super) fn work_ns(&mut self, node: usize, rows: usize, realtime: bool) -> u64 {
        let piece = self.pieces[node].filter(|&p| rows > p).unwrap_or(rows.max(1));
        let mut work = 0;
        for start in (0..rows.max(1)).step_by(piece) {
            let n = (rows - start).min(piece);
            let size = self.padded[node].get(n).copied().unwrap_or(n);
            work += self.durations.draw_ns(node, size, self.rng.random::<f64>(), realtime);
        }
        if realtime || self.sparse[node] == 1.0 {
            work
        } else {
            (work as f64 * self.sparse[node]).round() as u64
        }
    }

    /// A job ended: it frees its share of the cores. A batch's outputs go on
    /// `hop` after its hand-on work (if any); an enter job delivers its request.
    pub(super) fn done(&mut self, id: usize) {
        self.share();
        self.running.retain(|&b| b != id);
        self.reschedule();
        let b = self.batches[id].as_ref().expect("a running batch");
        match b.job {
            Job::Compute => {
                let (node, rows, tasks, took) = (b.node, b.rows, b.tasks.len(), self.now - b.started_ns);
                let class = b.class;
                self.computing[node] -= 1;
                self.halted_ns_at_end[node] = Some(self.halted_ns);
                self.nodes[node].record_batch(rows, tasks, took, b.work_ns, class.is_realtime());
                let hand_on_ns = self.durations.hand_on_ns(node);
                let totals = &mut self.nodes[node].totals;
                totals.hand_on_ns += hand_on_ns;
                baton::log_buckets::record(&mut totals.hand_on_times, hand_on_ns);
                // The hand-on runs on the batch's worker thread, in its class.
                match self.terms.cpu.hand_on_ns(tasks) {
                    0 => self.at(self.now + self.hop_ns(node), Ev::Handoff { batch: id }),
                    work if self.terms.cpu.off_path => {
                        self.run_job(Batch::runtime(Job::Beside, work, self.now, class).on(self.pins[node]));
                        self.at(self.now + self.hop_ns(node), Ev::Handoff { batch: id });
                    }
                    work => {
                        let hand_on = Batch::runtime(Job::HandOn { batch: id }, work, self.now, class);
                        self.run_job(hand_on.on(self.pins[node]))
                    }
                }
            }
            Job::Enter { request } => {
                self.batches[id] = None;
                self.free_batches.push(id);
                if self.enter(request) {
                    self.decide();
                }
            }
            Job::HandOn { batch } => {
                self.batches[id] = None;
                self.free_batches.push(id);
                let node = self.batches[batch].as_ref().expect("a finished batch").node;
                self.at(self.now + self.hop_ns(node), Ev::Handoff { batch });
            }
            Job::Beside => {
                self.batches[id] = None;
                self.free_batches.push(id);
            }
            Job::Send { from } => {
                self.batches[id] = None;
                self.free_batches.push(id);
                self.sent(from);
            }
        }
    }

    /// From a batch of `node`'s end (and its hand-on job's, with CPU costs) to its handoff,
    /// where its worker goes idle: the node's hand-on time and the hop (with
    /// `hop_frees_worker`, the hop comes after the handoff, on the outputs' way alone).
    pub(super) fn hop_ns(&self, node: usize) -> u64 {
        self.durations.hand_on_ns(node) + self.terms.hop_split_ns().0
    }
}
