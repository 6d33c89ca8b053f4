//! The process's CPU time over a measured interval, and the runtime's share of
//! it per request: what `baton simulate`'s CPU terms (`--request-cpu-us`,
//! `--batch-cpu-us`, `--task-cpu-us`) are fitted from (docs/simulate.md,
//! "Measured terms").
//!
//! The in-process runtime, its workers, the scheduler thread and the load
//! generator all run in this process, so the process's CPU time less the
//! nodes' compute is the CPU the runtime and the client spend around the
//! batches: submitting, delivering, deciding, waking workers, handing outputs
//! on, answering. The nodes' compute is their batches' CPU time: the wall
//! time of their batches times the share of it their threads ran
//! (`NodeDelta::cpu_per_wall`, sampled by the runtime), or the wall time where
//! nothing was sampled. Wall time alone would count a batch's waits for a core
//! as compute, more than the process ran where more threads than cores are
//! busy.

use serde::Serialize;

use crate::measure::NodeDelta;

/// CPU time all threads of this process have run, ns (`utime + stime` of
/// `/proc/self/stat`, in the kernel's fixed 100 ticks a second); `None` where
/// unreadable.
pub fn process_cpu_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    parse_stat_cpu_ns(&stat)
}

/// `utime + stime` of a `/proc/PID/stat` line, ns. The command name (field 2)
/// may hold spaces and parentheses, so fields are counted after its last `)`.
fn parse_stat_cpu_ns(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    // After the name: state (3), ppid (4), ..., utime (14), stime (15).
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some((utime + stime) * 10_000_000)
}

/// The process's CPU over one measured interval, per answered request.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RuntimeCpu {
    /// Process CPU time per answered request, µs.
    pub process_us_per_request: f64,
    /// The nodes' compute (their batches' CPU time, see the module docs) per answered request, µs.
    pub compute_us_per_request: f64,
    /// Process CPU less compute per answered request, µs: the runtime's and the client's own work.
    pub runtime_us_per_request: f64,
    /// Of that, the CPU idle workers spent spinning for their next batch, µs per answered
    /// request (estimated from the runtime's samples, `baton::spin_cpu`).
    pub spin_us_per_request: f64,
    /// Batches run per answered request (all nodes).
    pub batches_per_request: f64,
    /// Tasks run per answered request (all nodes).
    pub tasks_per_request: f64,
    /// Process CPU time ÷ the interval: cores the process kept busy.
    pub busy_cores: f64,
    /// Cores the keepers spun on over the interval (`keep_cores_awake`), CPU left out of
    /// every figure above (see [`RuntimeCpu::less_keepers`]).
    #[serde(skip_serializing_if = "is_zero")]
    pub keepers_cores: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl RuntimeCpu {
    /// From the process CPU spent in an interval of `seconds`, the nodes' deltas
    /// over it and the requests answered; `None` without requests.
    pub fn of(cpu_ns: u64, seconds: f64, nodes: &[NodeDelta], requests: u64) -> Option<RuntimeCpu> {
        if requests == 0 || seconds <= 0.0 {
            return None;
        }
        let per = |x: f64| x / requests as f64;
        let compute_us: f64 =
            nodes.iter().map(|n| n.mean_compute_us * n.executions as f64 * n.cpu_per_wall.unwrap_or(1.0)).sum();
        let process_us = cpu_ns as f64 / 1000.0;
        Some(RuntimeCpu {
            process_us_per_request: per(process_us),
            compute_us_per_request: per(compute_us),
            runtime_us_per_request: per(process_us - compute_us),
            spin_us_per_request: per(nodes.iter().map(|n| n.spin_cpu_us).sum()),
            batches_per_request: per(nodes.iter().map(|n| n.executions as f64).sum()),
            tasks_per_request: per(nodes.iter().map(|n| n.tasks as f64).sum()),
            busy_cores: cpu_ns as f64 / 1e9 / seconds,
            keepers_cores: 0.0,
        })
    }

    /// Like [`RuntimeCpu::of`], from a process CPU time that holds `keepers_ns` of the cores'
    /// keepers (`keep_cores_awake`): their spinning, which yields to every other thread, is
    /// neither the runtime's work nor its requests', so it is taken out and reported apart.
    pub fn less_keepers(
        cpu_ns: u64,
        keepers_ns: u64,
        seconds: f64,
        nodes: &[NodeDelta],
        requests: u64,
    ) -> Option<RuntimeCpu> {
        let mut cpu = Self::of(cpu_ns.saturating_sub(keepers_ns), seconds, nodes, requests)?;
        cpu.keepers_cores = keepers_ns as f64 / 1e9 / seconds;
        Some(cpu)
    }
}

/// One line per point with a CPU reading: policy, load, and the [`RuntimeCpu`] figures.
pub fn cpu_table(points: &[crate::measure::PointResult]) -> String {
    let mut out = String::from(
        "process CPU per request (µs): policy, load, process, compute, runtime (= process − compute), of it idle spins, batches/request, tasks/request, busy cores\n",
    );
    for p in points {
        if let Some(c) = &p.cpu {
            out += &format!(
                "  {} {} {}: {:.1} {:.1} {:.1} {:.1} {:.3} {:.3} {:.2}\n",
                p.policy,
                p.mode,
                p.load,
                c.process_us_per_request,
                c.compute_us_per_request,
                c.runtime_us_per_request,
                c.spin_us_per_request,
                c.batches_per_request,
                c.tasks_per_request,
                c.busy_cores
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_cpu_is_utime_plus_stime_after_a_name_with_spaces() {
        let line = "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 100 1000 50";
        assert_eq!(parse_stat_cpu_ns(line), Some(300 * 10_000_000));
        assert_eq!(parse_stat_cpu_ns("42 (x) S 1"), None);
    }

    #[test]
    fn this_process_has_a_cpu_time() {
        assert!(process_cpu_ns().is_some());
    }

    #[test]
    fn runtime_cpu_is_process_cpu_less_compute_per_request() {
        let node = NodeDelta {
            name: "a".into(),
            executions: 100,
            rows: 400,
            tasks: 400,
            failed_batches: 0,
            stopped_batches: 0,
            stopped_us: 0.0,
            mean_batch: 4.0,
            mean_queue_us: 0.0,
            mean_compute_us: 50.0,
            mean_hand_on_us: 0.0,
            hand_on_p99_us: 0.0,
            hand_on_p999_us: 0.0,
            hand_on_buckets: Vec::new(),
            host_device_bytes: 0,
            wakes: Default::default(),
            queue: Default::default(),
            compute_p99_us: 0.0,
            batch_times: Vec::new(),
            realtime_batch_times: Vec::new(),
            cpu_per_wall: None,
            spin_cpu_us: 0.0,
        };
        // 400 requests; 20 ms of CPU over 0.01 s; compute 100 × 50 µs = 5 ms.
        let cpu = RuntimeCpu::of(20_000_000, 0.01, std::slice::from_ref(&node), 400).unwrap();
        assert_eq!(cpu.process_us_per_request, 50.0);
        assert_eq!(cpu.compute_us_per_request, 12.5);
        assert_eq!(cpu.runtime_us_per_request, 37.5);
        assert_eq!(cpu.batches_per_request, 0.25);
        assert_eq!(cpu.tasks_per_request, 1.0);
        assert_eq!(cpu.busy_cores, 2.0);
        assert_eq!(RuntimeCpu::of(1, 1.0, &[], 0), None);
        // Sampled batches ran 40% of their wall time: compute 2 ms of CPU, not 5.
        let ran_less = NodeDelta { cpu_per_wall: Some(0.4), ..node };
        let cpu = RuntimeCpu::of(20_000_000, 0.01, std::slice::from_ref(&ran_less), 400).unwrap();
        assert_eq!(cpu.compute_us_per_request, 5.0);
        assert_eq!(cpu.runtime_us_per_request, 45.0);
        assert_eq!(cpu.spin_us_per_request, 0.0);
        // Its idle workers spun 2 ms: 5 µs a request of the runtime's 45.
        let spun = NodeDelta { spin_cpu_us: 2_000.0, ..ran_less };
        let cpu = RuntimeCpu::of(20_000_000, 0.01, &[spun], 400).unwrap();
        assert_eq!((cpu.runtime_us_per_request, cpu.spin_us_per_request), (45.0, 5.0));
    }
}
