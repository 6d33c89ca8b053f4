//! Resolution: a request's outputs are gathered and it is answered exactly once.
//!
//! `resolve` may be called for the same request from several threads (a
//! worker's error, a cancelled ticket, a shutdown drain, the last output);
//! the request's claim (taking its in-flight permit, see
//! [`crate::request::in_flight`]) lets exactly one through, and only that
//! call does the bookkeeping: metrics, the latency average, giving the
//! in-flight slot back (which wakes a shutdown waiting for the count to
//! drain), and forgetting the request at join nodes.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::Router;
use crate::metrics::Outcome;
use crate::request::{Outputs, RequestResult, RequestState};
use crate::tensor::Tensor;

impl Router {
    /// Stores pipeline output `index` of `request`; resolves it when it was the last.
    pub(crate) fn output(&self, request: &Arc<RequestState>, index: usize, tensor: Tensor) {
        let Some(all) = request.set_output(index, tensor) else { return };
        let outputs = if request.expected().is_none() {
            Outputs::new(
                Arc::clone(&self.output_names),
                all.into_iter().map(|t| t.expect("every output set")).collect(),
            )
        } else {
            // Only the outputs this request's inputs lead to.
            let (names, tensors): (Vec<String>, Vec<Tensor>) =
                self.output_names.iter().zip(all).filter_map(|(name, t)| Some((name.clone(), t?))).unzip();
            Outputs::new(Arc::from(names), tensors)
        };
        self.resolve(request, Ok(outputs));
    }

    /// Resolves `request` if nothing resolved it yet, and does the bookkeeping once.
    pub(crate) fn resolve(&self, request: &RequestState, result: RequestResult) {
        let Some(permit) = request.claim() else { return };
        let latency = request.submitted.elapsed();
        self.metrics.request_seconds.record(latency.as_secs_f64());
        if result.is_ok() {
            let ema = self.latency_ema_ns.load(Ordering::Relaxed);
            let sample = latency.as_nanos().min(u64::MAX as u128) as u64;
            self.latency_ema_ns.store(if ema == 0 { sample } else { ema - ema / 8 + sample / 8 }, Ordering::Relaxed);
        }
        self.metrics.request_done(Outcome::of(&result));
        let failed = result.is_err();
        // The slot goes back before the requester wakes, so it sees the count without its request.
        drop(permit);
        request.completion.resolve(result);
        if failed {
            // After `resolve` marked it finished: see the join table's protocol.
            for &n in &self.join_nodes {
                self.nodes[n].joins.forget(request.id);
            }
        }
    }
}
