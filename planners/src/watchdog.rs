//! A deadline that holds whatever the work does: the work runs on its own
//! thread and the caller waits for it only until the deadline (plus a short
//! grace for a solver that honours its own time limit to return its answer).
//! Past that the caller goes on without it and the thread is left to finish
//! in the background; nothing waits for it, so a process can exit at once.
//!
//! HiGHS checks its time limit between phases, not inside every cut
//! separator of its root node, so one run can go on long past the limit it
//! was given; this is what keeps the planners' `--time-limit`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long past the deadline the caller still waits for the work's own
/// answer (a solver given the time left returns within milliseconds of it).
pub const GRACE: Duration = Duration::from_millis(250);

static ABANDONED: AtomicUsize = AtomicUsize::new(0);

/// How many threads [`run_until`] has left running past their deadline in
/// this process.
pub fn abandoned() -> usize {
    ABANDONED.load(Ordering::SeqCst)
}

/// Runs `work` on its own thread and returns its result, or `None` when the
/// deadline plus [`GRACE`] passes first (the thread is then abandoned). With
/// no deadline it waits as long as the work takes. A panic in the work is
/// raised again in the caller.
pub fn run_until<T, F>(deadline: Option<Instant>, work: F) -> Option<T>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let (tx, rx) = mpsc::channel();
    let handle = std::thread::Builder::new()
        .name("planner-solve".into())
        .spawn(move || {
            // The receiver is gone when the caller stopped waiting.
            let _ = tx.send(work());
        })
        .expect("spawning the solver thread");
    let got = match deadline {
        None => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
        Some(d) => rx.recv_timeout(d.saturating_duration_since(Instant::now()) + GRACE),
    };
    match got {
        Ok(value) => {
            let _ = handle.join();
            Some(value)
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {
            ABANDONED.fetch_add(1, Ordering::SeqCst);
            None
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => match handle.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => unreachable!("the worker sends before it ends"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Barrier};

    #[test]
    fn work_done_in_time_returns_its_value() {
        let deadline = Instant::now() + Duration::from_secs(30);
        assert_eq!(run_until(Some(deadline), || 6 * 7), Some(42));
        assert_eq!(run_until(None, || "no limit"), Some("no limit"));
    }

    /// The work blocks on a barrier the test releases only after the caller
    /// gave up: the caller cannot have waited for it.
    #[test]
    fn work_past_the_deadline_is_abandoned() {
        let release = Arc::new(Barrier::new(2));
        let held = release.clone();
        let t0 = Instant::now();
        let got = run_until(Some(t0), move || {
            held.wait();
            1
        });
        assert_eq!(got, None);
        assert!(t0.elapsed() < GRACE + Duration::from_secs(2), "waited {:?}", t0.elapsed());
        release.wait();
    }

    #[test]
    #[should_panic(expected = "solver bug")]
    fn a_panic_in_the_work_reaches_the_caller() {
        run_until(None, || -> u8 { panic!("solver bug") });
    }
}
