//! Keeping the process's cores awake between sparse requests
//! (`[scheduler] keep_cores_awake = true`).
//!
//! A core with nothing to run halts (on a virtual machine its virtual CPU
//! leaves for the host), and the next batch on it runs slower: on the 2-vCPU
//! development VM, at 30-50% of `collab_early`'s capacity the OCR's batches
//! took up to a third longer than with the cores kept busy (docs/scheduling.md,
//! "Cores kept awake"). A light load pays that on nearly every batch; a
//! saturated one never halts.
//!
//! One *keeper* thread per core of the process's CPU set spins at the idle
//! scheduling policy (`SCHED_IDLE`): the kernel runs it only while no thread
//! of any other policy wants that core, and a thread that wakes there
//! preempts it at once. So the core never halts, and no batch waits for a
//! keeper. A keeper spins on a relaxed load of the stop flag with the CPU's
//! pause hint and makes no system call.
//!
//! Protocol: [`Keepers::start`] spawns the keepers and returns once each has
//! pinned itself to its core and taken the idle policy (each reports on a
//! channel: ready, or why not; a keeper that cannot stops and the start
//! fails naming it). [`Keepers::stop`] sets the flag and joins them. Their
//! CPU time is read from each thread's CPU clock ([`Keepers::cpu_ns`]), so a
//! measurement of the process's CPU can leave it out.

use std::os::unix::thread::JoinHandleExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// The keeper threads, one per core; see the module docs.
pub(crate) struct Keepers {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Keepers {
    /// Starts a keeper on each of `cores`, each pinned there at the idle policy.
    pub(crate) fn start(cores: &[usize]) -> Result<Keepers, String> {
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = crossbeam_channel::unbounded();
        let mut keepers = Keepers { stop: Arc::clone(&stop), threads: Vec::with_capacity(cores.len()) };
        for &core in cores {
            let (stop, ready) = (Arc::clone(&stop), ready_tx.clone());
            let spawned = std::thread::Builder::new().name(format!("baton-awake-{core}")).spawn(move || {
                let taken = take_core(core);
                let failed = taken.is_err();
                let _ = ready.send(taken);
                if !failed {
                    while !stop.load(Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                }
            });
            match spawned {
                Ok(thread) => keepers.threads.push(thread),
                Err(e) => {
                    keepers.stop();
                    return Err(format!("could not start a keeper for core {core}: {e}"));
                }
            }
        }
        drop(ready_tx);
        let mut failure = None;
        for _ in 0..keepers.threads.len() {
            match ready_rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(message)) => failure = failure.or(Some(message)),
                Err(_) => failure = failure.or(Some("keep_cores_awake: a keeper died while starting".into())),
            }
        }
        match failure {
            Some(message) => {
                keepers.stop();
                Err(message)
            }
            None => Ok(keepers),
        }
    }

    /// CPU time the keepers have run so far, ns (a keeper whose clock cannot be read counts 0).
    pub(crate) fn cpu_ns(&self) -> u64 {
        self.threads.iter().map(|t| other_thread_cpu_ns(t.as_pthread_t()).unwrap_or(0)).sum()
    }

    /// Stops the keepers and waits for them.
    pub(crate) fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

impl Drop for Keepers {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Pins the calling thread to `core` and gives it the idle scheduling policy.
fn take_core(core: usize) -> Result<(), String> {
    if !core_affinity::set_for_current(core_affinity::CoreId { id: core }) {
        return Err(format!("keep_cores_awake: could not pin a keeper to core {core}"));
    }
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: sets the calling thread's own policy from a valid parameter.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(format!("keep_cores_awake: could not give core {core}'s keeper the idle policy: {e}"));
    }
    Ok(())
}

/// The CPU time thread `thread` (another than the caller) has run, ns, from its CPU clock.
fn other_thread_cpu_ns(thread: libc::pthread_t) -> Option<u64> {
    let mut clock: libc::clockid_t = 0;
    // SAFETY: `thread` is a live thread (its handle is held), and `clock` a valid out-pointer.
    if unsafe { libc::pthread_getcpuclockid(thread, &mut clock) } != 0 {
        return None;
    }
    crate::batch_cpu::clock_ns(clock)
}

/// The cores keepers run on: every core of the calling thread's CPU set (the process's,
/// unless the thread that starts the runtime was pinned).
pub(crate) fn process_cores() -> Vec<usize> {
    core_affinity::get_core_ids().unwrap_or_default().into_iter().map(|c| c.id).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// The tests count this process's keepers: one test at a time starts them.
    static SERIAL: Mutex<()> = Mutex::new(());

    /// Each keeper thread of this process (named `baton-awake-CORE`): its core and policy.
    fn keeper_threads() -> Vec<(String, i32, Vec<usize>)> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
            let tid: libc::pid_t = entry.file_name().to_string_lossy().parse().unwrap();
            let name = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default().trim().to_string();
            if !name.starts_with("baton-awake-") {
                continue;
            }
            // SAFETY: reads another thread's policy; a thread that ended returns -1.
            let policy = unsafe { libc::sched_getscheduler(tid) };
            let status = std::fs::read_to_string(entry.path().join("status")).unwrap_or_default();
            let allowed = status
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .map(|list| list.trim().split(',').flat_map(cpu_range).collect())
                .unwrap_or_default();
            out.push((name, policy, allowed));
        }
        out.sort();
        out
    }

    /// `3` or `2-5` of a CPU list.
    fn cpu_range(part: &str) -> Vec<usize> {
        match part.split_once('-') {
            Some((a, b)) => (a.parse().unwrap()..=b.parse().unwrap()).collect(),
            None => vec![part.parse().unwrap()],
        }
    }

    #[test]
    fn a_keeper_per_core_runs_pinned_at_the_idle_policy_until_stopped() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let cores = process_cores();
        assert!(!cores.is_empty());
        let mut keepers = Keepers::start(&cores).unwrap();
        let threads = keeper_threads();
        let mut want: Vec<(String, i32, Vec<usize>)> =
            cores.iter().map(|&c| (format!("baton-awake-{c}"), libc::SCHED_IDLE, vec![c])).collect();
        want.sort();
        assert_eq!(threads, want, "one keeper per core, pinned there, at SCHED_IDLE");
        keepers.stop();
        assert!(keeper_threads().is_empty(), "stopped keepers are gone");
    }

    #[test]
    fn the_keepers_cpu_time_is_read_from_their_clocks() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let mut keepers = Keepers::start(&process_cores()[..1]).unwrap();
        let first = keepers.cpu_ns();
        // A spinning keeper's clock advances whenever it runs; wait until it has.
        while keepers.cpu_ns() <= first {
            std::thread::yield_now();
        }
        keepers.stop();
    }

    #[test]
    fn a_core_outside_the_machine_is_refused_naming_it() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let e = Keepers::start(&[1000]).err().expect("no such core");
        assert!(e.contains("core 1000"), "{e}");
        assert!(keeper_threads().is_empty(), "a failed start leaves no keeper");
    }
}
