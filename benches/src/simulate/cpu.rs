//! The runtime's own CPU per request and per batch, as work on the shared cores.
//!
//! Around the batches the runtime spends CPU of its own: the submitter
//! admitting a request and delivering its inputs, the client generating and
//! waiting, a worker handing a batch's outputs on (one part per task), the
//! scheduler's decisions and pokes, the wake-ups. On a machine with few cores
//! this competes with the batches: a core busy with hand-offs is not running a
//! batch. The model charges it as jobs of their own in the engine's processor
//! sharing (each wants one core, as a batch does):
//!
//! - an **enter** job of `request_ns` when a request arrives: its inputs reach
//!   their nodes when it ends;
//! - a **hand-on** job of `batch_ns + task_ns × tasks` when a batch's work
//!   ends: its outputs go on (after the `hop` delay) when it ends, and its
//!   worker stays busy until then, as the runtime's worker routes its own
//!   outputs.
//!
//! - a **send** job for each request of a bench load, one send at a time: of
//!   `send_ns` for the open loop's, on the load generator's one thread, of
//!   `client_send_ns` for the closed loop's clients' (answered together by one
//!   batch, they wake and send in turn); requests wait their turn, and a
//!   request reaches the runtime (its enter job, or its nodes) when its send
//!   ends; the clients' threads are normal-class threads like any other, so
//!   real-time batches push them off the cores as they do the runtime's (the
//!   generator's runs above the real-time workers with `--generator-policy
//!   realtime`); the generator sleeps until its next send is due, and a send
//!   due while it sleeps starts `send_wake_ns` late (its thread's wake-up from
//!   a timed sleep);
//! - a **decision** job of `decision_ns` on a batch's worker when it hands the
//!   batch off (the worker's node-finished poke, whose decision runs on its
//!   thread), off the requests' way: the model's decision itself takes no time;
//! - a **tick** job of `tick_ns` each time the scheduler thread ticks, off the
//!   requests' way (it delays no request, as the thread's wake-up and decision
//!   run beside the workers); the ticks then go on while nothing waits, as the
//!   runtime's do.
//!
//! With `off_path` the same jobs compete for the cores but delay nothing: the
//! request's inputs go to their nodes at its arrival and a batch's outputs go
//! on (after the `hop` delay) at its end, its worker free. That is CPU spent
//! beside the requests' way (idle workers spinning before they sleep, the
//! client), whose on-path part the `wake` and `hop` terms hold.
//!
//! The costs are measured: `baton bench` reports the process's CPU per
//! request less the nodes' compute (`benches/src/cpu.rs`); docs/simulate.md
//! ("Measured terms") says how the three costs are fitted from it.

use crate::send_lags::SLEEP_CLASSES;

/// The runtime's CPU costs, ns; all zero leaves the model as without them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CpuCosts {
    /// Per request, at its arrival.
    pub request_ns: u64,
    /// Per batch, at its end.
    pub batch_ns: u64,
    /// Per task of a batch, at its end.
    pub task_ns: u64,
    /// Per scheduler tick, beside the requests' way.
    pub tick_ns: u64,
    /// Per batch, the worker's decision as it hands the batch off, beside the requests' way.
    pub decision_ns: u64,
    /// Per open-loop request, on the load generator's one thread (on the requests' way).
    pub send_ns: u64,
    /// Per closed-loop request, the clients' sends one at a time (on the requests' way).
    pub client_send_ns: u64,
    /// The generator's lateness waking from its sleep until a send is due (with `send_ns`).
    pub send_wake_ns: u64,
    /// In place of `send_wake_ns` where given: the lateness by the sleep's length, one per
    /// class of [`crate::send_lags::SLEPT_BELOW_US`] and one for the longer sleeps.
    pub send_wake_by_sleep_ns: Option<[u64; SLEEP_CLASSES]>,
    /// The jobs take their share of the cores without delaying requests or workers.
    pub off_path: bool,
}

/// The costs as the command line gives them (`--request-cpu-us`, `--batch-cpu-us`, `--task-cpu-us`), µs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CpuUs {
    pub request_us: f64,
    pub batch_us: f64,
    pub task_us: f64,
    /// `--tick-cpu-us`: the scheduler thread's CPU per tick.
    pub tick_us: f64,
    /// `--decision-cpu-us`: a worker's decision as its batch ends.
    pub decision_us: f64,
    /// `--send-cpu-us`: the load generator's CPU per open-loop send.
    pub send_us: f64,
    /// `--client-send-us`: a closed-loop client's CPU per send.
    pub client_send_us: f64,
    /// `--send-wake-us`: the generator's lateness waking from a timed sleep.
    pub send_wake_us: f64,
    /// `--send-wake-by-sleep`: that lateness per class of the sleep's length (empty: none).
    pub send_wake_by_sleep_us: Vec<f64>,
    /// `--cpu-off-path`: see [`CpuCosts::off_path`].
    pub off_path: bool,
}

impl CpuUs {
    /// In ns; each must be finite and non-negative (else an error naming the option).
    pub fn costs(&self) -> Result<CpuCosts, String> {
        let base = CpuCosts::from_us(self.request_us, self.batch_us, self.task_us)?;
        Ok(CpuCosts {
            off_path: self.off_path,
            tick_ns: non_negative_ns("--tick-cpu-us", self.tick_us)?,
            decision_ns: non_negative_ns("--decision-cpu-us", self.decision_us)?,
            send_ns: non_negative_ns("--send-cpu-us", self.send_us)?,
            client_send_ns: non_negative_ns("--client-send-us", self.client_send_us)?,
            send_wake_ns: non_negative_ns("--send-wake-us", self.send_wake_us)?,
            send_wake_by_sleep_ns: self.send_wake_by_sleep()?,
            ..base
        })
    }

    fn send_wake_by_sleep(&self) -> Result<Option<[u64; SLEEP_CLASSES]>, String> {
        let us = &self.send_wake_by_sleep_us;
        if us.is_empty() {
            return Ok(None);
        }
        if us.len() != SLEEP_CLASSES {
            return Err(format!(
                "--send-wake-by-sleep takes {SLEEP_CLASSES} values (sleeps below {:?} µs and longer), not {}",
                crate::send_lags::SLEPT_BELOW_US,
                us.len()
            ));
        }
        let mut ns = [0; SLEEP_CLASSES];
        for (class, &value) in us.iter().enumerate() {
            ns[class] = non_negative_ns("--send-wake-by-sleep", value)?;
        }
        Ok(Some(ns))
    }
}

impl CpuCosts {
    /// From µs; each must be finite and non-negative.
    pub fn from_us(request_us: f64, batch_us: f64, task_us: f64) -> Result<CpuCosts, String> {
        let ns = non_negative_ns;
        Ok(CpuCosts {
            request_ns: ns("--request-cpu-us", request_us)?,
            batch_ns: ns("--batch-cpu-us", batch_us)?,
            task_ns: ns("--task-cpu-us", task_us)?,
            tick_ns: 0,
            decision_ns: 0,
            send_ns: 0,
            client_send_ns: 0,
            send_wake_ns: 0,
            send_wake_by_sleep_ns: None,
            off_path: false,
        })
    }

    /// How late the generator wakes from a sleep of `slept_ns` (asked), ns.
    pub fn send_wake_after(&self, slept_ns: u64) -> u64 {
        match self.send_wake_by_sleep_ns {
            Some(by_sleep) => by_sleep[crate::send_lags::sleep_class(slept_ns / 1000)],
            None => self.send_wake_ns,
        }
    }

    /// The enter job's work for one request, ns (0: no job).
    pub fn enter_ns(&self) -> u64 {
        self.request_ns
    }

    /// The hand-on job's work for a batch of `tasks` tasks, ns (0: no job).
    pub fn hand_on_ns(&self, tasks: usize) -> u64 {
        self.batch_ns + self.task_ns * tasks as u64
    }
}

/// `us` in ns, when it is a finite non-negative number (else an error naming the option `name`).
fn non_negative_ns(name: &str, us: f64) -> Result<u64, String> {
    if us.is_finite() && us >= 0.0 {
        Ok((us * 1000.0).round() as u64)
    } else {
        Err(format!("{name} must be a non-negative number of µs, not {us}"))
    }
}

/// What a job on the shared cores is, and what its end does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Job {
    /// A node's batch: its end starts the hand-on.
    Compute,
    /// A request's arrival work: its end delivers the request's inputs.
    Enter { request: usize },
    /// A batch's hand-on work: its end hands the batch's outputs on (after the hop delay).
    HandOn { batch: usize },
    /// Runtime CPU off the requests' way: its end only frees its share of the cores.
    Beside,
    /// The send now running of `from`'s queue: its end submits the request.
    Send { from: Sender },
}

/// Whose sends a send job runs (each sends one request at a time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sender {
    /// The open loop's load generator thread.
    Generator,
    /// The closed loop's clients, in turn.
    Clients,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_convert_from_us_and_refuse_bad_values_by_name() {
        let c = CpuCosts::from_us(10.0, 2.5, 0.25).unwrap();
        assert_eq!(
            c,
            CpuCosts {
                request_ns: 10_000,
                batch_ns: 2_500,
                task_ns: 250,
                tick_ns: 0,
                decision_ns: 0,
                send_ns: 0,
                client_send_ns: 0,
                send_wake_ns: 0,
                send_wake_by_sleep_ns: None,
                off_path: false
            }
        );
        assert_eq!(c.enter_ns(), 10_000);
        assert_eq!(c.hand_on_ns(4), 3_500);
        assert!(CpuCosts::from_us(-1.0, 0.0, 0.0).unwrap_err().contains("--request-cpu-us"));
        assert!(CpuCosts::from_us(0.0, f64::NAN, 0.0).unwrap_err().contains("--batch-cpu-us"));
        assert!(CpuCosts::from_us(0.0, 0.0, f64::INFINITY).unwrap_err().contains("--task-cpu-us"));
    }
}
