//! The load's sends: a closed-loop client's next request or a session's next chunk, the
//! open loop's next request, each made one at a time by its sender (the generator's thread,
//! or the clients in turn) where the model gives sends a cost, and a request's entry.

use super::{Batch, Ev, Req, Sim};
use crate::load::open_loop_sender;
use crate::simulate::cores::Class;
use crate::simulate::cpu::{Job, Sender};
use crate::simulate::sessions::Send;

/// Sends made one at a time (one thread's, or clients' in turn): the one running, with
/// its closed-loop client, and those waiting their turn, in order.
#[derive(Default)]
pub(super) struct SendQueue {
    running: Option<(Option<usize>, Send)>,
    waiting: std::collections::VecDeque<(Option<usize>, Send)>,
    /// The generator's thread is waking from its sleep until a send was due: no send
    /// starts before [`Ev::GeneratorWakes`].
    waking: bool,
    /// When its last send ended (the generator's thread then sleeps until its next is due).
    idle_since: u64,
    /// The generator slept this long before the send it wakes for (taken by that send).
    slept_ns: Option<u64>,
    /// A stall caught the generator asleep with its timer on the stalled core: it wakes no
    /// earlier than this (`Terms::stalls_hold_idle`).
    pub(super) held_until: u64,
}

impl Sim<'_> {
    /// A client sends (a closed-loop client's next request, a session's next chunk),
    /// or the open loop's next request or session starts: the requests' inputs go to
    /// their nodes.
    pub(super) fn arrive(&mut self, client: Option<usize>) {
        let mut sends = std::mem::take(&mut self.sends);
        let now = self.now;
        let client = match client {
            Some(c) => {
                match self.streams.sessions() {
                    Some(sessions) => sessions.send_chunk(c, now, &mut sends),
                    None => {
                        let (sender, n, i) = self.client_i(c);
                        sends.push(self.streams.bench_send(sender, n, i, now));
                    }
                }
                Some(c)
            }
            None => {
                let i = self.open_i;
                self.open_i += 1;
                let gap = self.gaps.as_mut().expect("open loop").next_gap();
                self.at(now + (gap * 1e9).round() as u64, Ev::Arrive { client: None });
                match self.streams.sessions() {
                    Some(sessions) => Some(sessions.open(now, &mut sends)),
                    None => {
                        let (sender, n) = open_loop_sender(i);
                        sends.push(self.streams.bench_send(sender, n, i, now));
                        None
                    }
                }
            }
        };
        let mut wants = false;
        let from = if client.is_some() { Sender::Clients } else { Sender::Generator };
        let queued = self.streams.sessions().is_none() && self.send_ns(from) > 0;
        let asleep = queued && {
            let q = self.sends_of(from);
            q.running.is_none() && q.waiting.is_empty() && !q.waking
        };
        for send in sends.drain(..) {
            if queued {
                self.sends_of(from).waiting.push_back((client, send));
            } else {
                wants |= self.submit(send, client);
            }
        }
        self.sends = sends;
        let wake_ns = if asleep && from == Sender::Generator {
            // The generator slept from its last send's end until this one was due.
            let slept_ns = now - self.generator.idle_since;
            self.generator.slept_ns = Some(slept_ns);
            self.terms.cpu.send_wake_after(slept_ns).max(self.generator.held_until.saturating_sub(now))
        } else {
            0
        };
        if wake_ns > 0 {
            // The send starts when the generator's thread wakes.
            self.generator.waking = true;
            self.at(now + wake_ns, Ev::GeneratorWakes);
        } else if queued {
            self.next_send(from);
        }
        if wants {
            self.decide();
        }
    }

    pub(super) fn sends_of(&mut self, from: Sender) -> &mut SendQueue {
        match from {
            Sender::Generator => &mut self.generator,
            Sender::Clients => &mut self.clients,
        }
    }

    pub(super) fn send_ns(&self, from: Sender) -> u64 {
        match from {
            Sender::Generator => self.terms.cpu.send_ns,
            Sender::Clients => self.terms.cpu.client_send_ns,
        }
    }

    /// `from`'s next send starts, when none of its runs and one waits: a job on the cores,
    /// from whose start the request counts as sent (the generator's: unless latency counts
    /// from the schedule). The generator's runs in its class (`--generator-policy`), a
    /// client's at the normal one.
    ///
    /// The closed loop's clients send in turn too: a batch answers them together, and the
    /// real threads then wake and send one after another, which spreads their next requests
    /// (all at once, processor sharing would end their sends together, and every batch after
    /// the first would hold every client's). One at a time, not one per core: with a worker
    /// busy on one of two cores, that matched the real capacities at concurrency 16-32 of
    /// four pipelines of five (`docs/simulate.md`).
    pub(super) fn next_send(&mut self, from: Sender) {
        let (now, from_schedule) = (self.now, self.setup.latency_from_schedule);
        let queue = self.sends_of(from);
        if queue.running.is_some() || queue.waking {
            return;
        }
        let Some((client, mut send)) = queue.waiting.pop_front() else { return };
        // The send leaves now, this late behind its schedule (as `baton bench` records its
        // generator's sends, with the sleep before it).
        let lag_us = (now - send.sent_ns) / 1000;
        let slept_us = queue.slept_ns.take().map(|ns| ns / 1000);
        if client.is_some() || !from_schedule {
            send.sent_ns = now;
        }
        let recorded = send.recorded;
        queue.running = Some((client, send));
        if from == Sender::Generator && self.measuring && recorded {
            self.recorder.sent_after(0, lag_us, slept_us);
        }
        // A generator at a higher nice than the workers' does not preempt them: it shares.
        let holds = from == Sender::Generator && self.terms.generator_holds_core && self.setup.generator_nice <= 0;
        let class = match from {
            Sender::Generator if self.setup.generator_realtime || holds => Class::GENERATOR_REALTIME,
            Sender::Generator => Class::at_nice(self.setup.generator_nice),
            Sender::Clients => Class::PLAIN,
        };
        if holds && !self.generator_running {
            self.start_generator_run();
        }
        self.run_job(Batch::runtime(Job::Send { from }, self.send_ns(from), now, class));
    }

    /// A request arrives: the runtime's admission refuses it while `max_in_flight` requests
    /// are in flight or a bounded entry node it feeds has `max_queue` tasks waiting (answered
    /// at once with an error, as the runtime's submit is); else its entry work runs on the
    /// cores (when the model has a cost for it), then its inputs go to their nodes. Whether
    /// it wants a decision now.
    pub(super) fn submit(&mut self, send: Send, client: Option<usize>) -> bool {
        if !self.admits(send.reach) {
            self.answer_with_error(send, client);
            return false;
        }
        self.in_flight += 1;
        let reach = self.streams.reach(send.reach);
        let req = Req { send, outputs_left: reach.outputs, client, failed: false };
        let id = crate::simulate::store(&mut self.requests, &mut self.free, req);
        match self.terms.cpu.enter_ns() {
            0 => self.enter(id),
            work if self.terms.cpu.off_path => {
                self.run_job(Batch::runtime(Job::Beside, work, self.now, Class::PLAIN));
                self.enter(id)
            }
            work => {
                self.run_job(Batch::runtime(Job::Enter { request: id }, work, self.now, Class::PLAIN));
                false
            }
        }
    }

    /// Whether the runtime's admission takes a request of reach `reach` now.
    fn admits(&self, reach: usize) -> bool {
        if self.in_flight >= self.spec.max_in_flight {
            return false;
        }
        let carried = &self.streams.reach(reach).inputs;
        self.entry_limits.iter().all(|&(input, node, limit)| !carried[input] || self.nodes[node].pending() < limit)
    }

    /// Closed loop: client `c`'s sender number, its request count and the priority
    /// pattern's `i` of its next request (as `baton bench` counts: client `c`'s `i`
    /// starts at `c × 7919`).
    pub(super) fn client_i(&mut self, c: usize) -> (u64, u64, u64) {
        let i = self.client_next[c];
        self.client_next[c] = i.wrapping_add(1);
        (c as u64, i.wrapping_sub((c as u64).wrapping_mul(7919)), i)
    }

    /// Client `client`'s request `sent` was answered: a closed-loop client sends its
    /// next at once, a session its next chunk when due (an event: the answering
    /// batch's other outputs are handed on first); neither before `earliest`.
    pub(super) fn follow(&mut self, client: usize, sent: Send, earliest: u64) {
        let now = self.now;
        let next = match self.streams.sessions() {
            None => Some(now),
            Some(sessions) => sessions.answered(client, &sent, now),
        };
        if let Some(at) = next {
            self.at(at.max(earliest), Ev::Arrive { client: Some(client) });
        }
    }

    /// `from`'s send ended: its request arrives, and its next send starts.
    pub(super) fn sent(&mut self, from: Sender) {
        let (client, send) = self.sends_of(from).running.take().expect("the request being sent");
        let wants = self.submit(send, client);
        self.next_send(from);
        let now = self.now;
        let queue = self.sends_of(from);
        if queue.running.is_none() {
            queue.idle_since = now;
        }
        if from == Sender::Generator && self.generator_running && self.generator.running.is_none() {
            self.end_generator_run();
        }
        if wants {
            self.decide();
        }
    }

    /// Whether the open loop's generator, its sends queued in the model (as [`Sim::arrive`]
    /// queues them), sleeps (or wakes) until its next send: none of its sends runs.
    pub(super) fn generator_asleep(&mut self) -> bool {
        self.gaps.is_some()
            && self.streams.sessions().is_none()
            && self.send_ns(Sender::Generator) > 0
            && self.generator.running.is_none()
    }

    /// The generator's thread woke from its sleep: its sends due meanwhile start (unless a
    /// stall that caught it waking holds it longer).
    pub(super) fn generator_wakes(&mut self) {
        if self.generator.held_until > self.now {
            self.at(self.generator.held_until, Ev::GeneratorWakes);
            return;
        }
        self.generator.waking = false;
        self.next_send(Sender::Generator);
    }
}
