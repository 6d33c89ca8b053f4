//! A submitted request's claim on its answer: wait for it, poll it, or drop it to cancel.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use super::{Completion, RequestResult};

/// A submitted request's claim on its answer.
///
/// Resolves exactly once. Dropping it before the answer cancels the request
/// (tasks not yet run are skipped; work already running finishes and its
/// result is discarded).
#[must_use = "a ticket resolves to the request's outputs; dropping it cancels the request"]
pub struct Ticket {
    completion: Arc<Completion>,
    /// Taken by a successful wait, so drop knows not to cancel.
    taken: bool,
}

/// A wait that ran out of time; the ticket is still live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("timed out waiting for the answer")]
pub struct WaitTimeout;

impl Ticket {
    pub(crate) fn new(completion: Arc<Completion>) -> Self {
        Ticket { completion, taken: false }
    }

    /// Blocks until the answer arrives.
    pub fn wait(mut self) -> RequestResult {
        let result = self.completion.wait(None).expect("a wait without deadline returns a result");
        self.taken = true;
        result
    }

    /// Blocks up to `timeout`; on time-out the ticket is handed back, still live.
    pub fn wait_timeout(mut self, timeout: Duration) -> Result<RequestResult, (Ticket, WaitTimeout)> {
        match self.completion.wait(Some(Instant::now() + timeout)) {
            Some(result) => {
                self.taken = true;
                Ok(result)
            }
            None => Err((self, WaitTimeout)),
        }
    }

    /// The answer if it has arrived, without blocking.
    pub fn try_take(&mut self) -> Option<RequestResult> {
        let result = self.completion.take();
        self.taken |= result.is_some();
        result
    }

    /// Whether the answer has arrived.
    pub fn is_ready(&self) -> bool {
        self.completion.is_resolved()
    }
}

impl Future for Ticket {
    type Output = RequestResult;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<RequestResult> {
        let result = self.completion.take().or_else(|| self.completion.take_or_register(cx.waker()));
        match result {
            Some(result) => {
                self.taken = true;
                Poll::Ready(result)
            }
            None => Poll::Pending,
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if !self.taken && !self.completion.is_resolved() {
            self.completion.cancel();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{Outputs, RequestError};
    use crate::tensor::Tensor;
    use std::task::Waker;

    fn outputs() -> Outputs {
        Outputs::new(Arc::from(vec!["y".to_string()]), vec![Tensor::from_vec(vec![1], vec![1.0f32]).unwrap()])
    }

    #[test]
    fn resolves_exactly_once() {
        let c = Arc::new(Completion::default());
        assert!(c.resolve(Err(RequestError::ShuttingDown)));
        assert!(!c.resolve(Ok(outputs())));
        assert_eq!(Ticket::new(c).wait().unwrap_err(), RequestError::ShuttingDown);
    }

    #[test]
    fn wait_timeout_hands_the_ticket_back() {
        let c = Arc::new(Completion::default());
        let (ticket, _) = Ticket::new(c.clone()).wait_timeout(Duration::from_millis(5)).err().unwrap();
        c.resolve(Ok(outputs()));
        assert!(ticket.wait().unwrap().get("y").is_some());
    }

    #[test]
    fn resolution_from_another_thread_wakes_the_waiter() {
        let c = Arc::new(Completion::default());
        let c2 = c.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(10));
            c2.resolve(Ok(outputs()))
        });
        assert!(Ticket::new(c).wait().is_ok());
        assert!(t.join().unwrap());
    }

    #[test]
    fn dropping_an_unresolved_ticket_cancels() {
        let c = Arc::new(Completion::default());
        drop(Ticket::new(c.clone()));
        assert!(c.is_cancelled() && c.is_finished());
        let c = Arc::new(Completion::default());
        c.resolve(Ok(outputs()));
        drop(Ticket::new(c.clone()));
        assert!(!c.is_cancelled());
    }

    #[test]
    fn ticket_is_a_future() {
        let c = Arc::new(Completion::default());
        let c2 = c.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(5));
            c2.resolve(Ok(outputs()));
        });
        let result = block_on(Ticket::new(c));
        assert!(result.is_ok());
    }

    /// A minimal executor: polls, parking the thread between wake-ups.
    fn block_on<F: Future>(future: F) -> F::Output {
        struct ThreadWaker(std::thread::Thread);
        impl std::task::Wake for ThreadWaker {
            fn wake(self: Arc<Self>) {
                self.0.unpark();
            }
        }
        let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
        let mut cx = Context::from_waker(&waker);
        let mut future = std::pin::pin!(future);
        loop {
            if let Poll::Ready(v) = future.as_mut().poll(&mut cx) {
                return v;
            }
            std::thread::park();
        }
    }
}
