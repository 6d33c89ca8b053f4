//! The scheduler thread ("baton-scheduler"): ticks, retries of unplaced tasks, stream expiry.
//!
//! The thread parks until the next tick (or earlier, when the dynamic
//! batcher says a node falls due sooner, or when shutdown unparks it),
//! records how late a sleep that ran its full time ended (the OS's timer
//! slack and the wait for a core: [`crate::scheduler::Scheduler::record_tick`])
//! and each round's CPU time on its thread (read from the thread's CPU clock once a
//! round, [`crate::scheduler::Scheduler::record_tick_cpu`]), then
//! pokes the scheduler with [`Reason::Tick`], moves tasks past their
//! placement timeout to the back of their queues, and every quarter of the
//! stream idle timeout (1 to 100 ms) closes idle streams. It stops when
//! `stop_ticker` is set (Release here, Acquire in the loop) and it is unparked.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::Router;
use crate::scheduler::Reason;

/// Starts the scheduler thread of `router`.
pub(crate) fn spawn(router: Arc<Router>) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new().name("baton-scheduler".into()).spawn(move || {
        router.scheduler.set_ticker(std::thread::current());
        crate::node::niceness::enter_foreground(router.scheduler.thread_classes.foreground);
        let sweep_every = Duration::from_millis((router.spec.streams.idle_timeout_ms / 4).clamp(1, 100));
        let mut last_sweep = Instant::now();
        let mut cpu_before = crate::batch_cpu::thread_cpu_ns();
        while !router.stop_ticker.load(Ordering::Acquire) {
            let sleep = router.scheduler.sleep_before_next_tick();
            let due = crate::clock::now_ns() + sleep.as_nanos() as u64;
            std::thread::park_timeout(sleep);
            let woke = crate::clock::now_ns();
            // Earlier than due: an unpark (a node falls due sooner, or shutdown), not a timed end.
            if woke >= due {
                router.scheduler.record_tick(woke - due);
            }
            router.scheduler.poke(Reason::Tick, &router.nodes);
            router.retry_unplaced();
            if last_sweep.elapsed() >= sweep_every {
                last_sweep = Instant::now();
                let closed = router.expire_streams();
                if closed > 0 {
                    tracing::debug!(closed, "idle streams expired");
                }
            }
            let cpu_now = crate::batch_cpu::thread_cpu_ns();
            if let (Some(before), Some(now)) = (cpu_before, cpu_now) {
                router.scheduler.record_tick_cpu(now.saturating_sub(before));
            }
            cpu_before = cpu_now;
        }
    })
}

/// Stops the scheduler thread started by [`spawn`] and waits for it.
pub(crate) fn stop(router: &Router, ticker: JoinHandle<()>) {
    router.stop_ticker.store(true, Ordering::Release);
    ticker.thread().unpark();
    let _ = ticker.join();
}

impl Router {
    /// Placement timeout, every tick: at each node with `placement_timeout_us`, tasks
    /// whose round ran out go to the back of their queues, each counted as a retry.
    pub(crate) fn retry_unplaced(&self) {
        let now_ns = crate::clock::now_ns();
        for (state, spec) in self.nodes.iter().zip(&self.spec.nodes) {
            let Some(timeout) = spec.placement_timeout_ns else { continue };
            // A round begins at or after its task arrived: none is overdue while the oldest task is younger.
            if state.buffer.oldest_wait_ns(now_ns) < timeout {
                continue;
            }
            let retried = state.buffer.requeue_overdue(now_ns - timeout, now_ns) as u64;
            if retried > 0 {
                state.counters.placement_retries.fetch_add(retried, Ordering::Relaxed);
                state.metrics.placement_retries.increment(retried);
                tracing::debug!(node = %spec.name, retried, "tasks not placed within the placement timeout: retried");
            }
        }
    }

    /// Closes streams idle past the timeout at every stateful node; returns how many.
    pub(crate) fn expire_streams(&self) -> usize {
        let timeout = Duration::from_millis(self.spec.streams.idle_timeout_ms);
        self.nodes.iter().filter_map(|n| n.streams.as_ref()).map(|s| s.expire(timeout)).sum()
    }
}
