//! A server-wide bound on gRPC inferences received but not yet answered,
//! decided from a call's headers, before its message is read.
//!
//! tonic reads a unary call's whole message before the handler runs, so the
//! in-flight place the shared flow takes ([`crate::models::Models::reserve_in_flight`])
//! comes after the bytes are in memory: under a flood of HTTP/2 streams,
//! requests would pile up, received and buffered, ahead of that check. This
//! layer counts ModelInfer calls from their headers to their answer and
//! refuses one with RESOURCE_EXHAUSTED at once when as many as the in-flight
//! bound are already under way, so the bytes buffered ahead of admission are
//! bounded by the in-flight bound × the message limit. (ModelStreamInfer is
//! one long call whose requests each take their place in the flow.)
//!
//! Concurrency: the count is one atomic; a call increments it when its
//! headers arrive (undone at once on refusal), and the guard carried by its
//! response future decrements it when the future completes or is dropped.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::grpc_gate::{Gated, GrpcRequest, GrpcResponse};
use crate::metrics::count;
use crate::models::Models;

const MODEL_INFER: &str = "/inference.GRPCInferenceService/ModelInfer";

/// The service behind the bound.
#[derive(Clone)]
pub(crate) struct GrpcAdmission<S> {
    pub inner: S,
    pub models: Arc<Models>,
    /// ModelInfer calls from their headers to their answer.
    pub under_way: Arc<AtomicUsize>,
}

impl<S: tonic::server::NamedService> tonic::server::NamedService for GrpcAdmission<S> {
    const NAME: &'static str = S::NAME;
}

/// Gives a call's place back when dropped.
pub(crate) struct UnderWay(Arc<AtomicUsize>);

impl Drop for UnderWay {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl<S> tonic::codegen::Service<GrpcRequest> for GrpcAdmission<S>
where
    S: tonic::codegen::Service<GrpcRequest, Response = GrpcResponse>,
    S::Future: Unpin,
{
    type Response = GrpcResponse;
    type Error = S::Error;
    type Future = Gated<S::Future, UnderWay>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: GrpcRequest) -> Self::Future {
        if request.uri().path() != MODEL_INFER {
            return Gated::Run(self.inner.call(request), None);
        }
        let limit = self.models.in_flight_limit();
        if self.under_way.fetch_add(1, Ordering::AcqRel) >= limit {
            self.under_way.fetch_sub(1, Ordering::AcqRel);
            count("grpc", "infer", "", "RESOURCE_EXHAUSTED");
            let message = format!("server busy: {limit} inferences already under way (the in-flight bound)");
            return Gated::refuse(tonic::Status::resource_exhausted(message));
        }
        let place = UnderWay(Arc::clone(&self.under_way));
        Gated::Run(self.inner.call(request), Some(place))
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;
    use std::future::Future;
    use std::pin::Pin;

    use tonic::codegen::http;

    use tonic::codegen::Service;

    use super::*;

    type Pending = Pin<Box<dyn Future<Output = Result<GrpcResponse, Infallible>> + Send>>;

    /// A service whose calls never finish (each stays under way until dropped), counting its calls.
    #[derive(Clone, Default)]
    struct Stalled(Arc<AtomicUsize>);

    impl Service<GrpcRequest> for Stalled {
        type Response = GrpcResponse;
        type Error = Infallible;
        type Future = Pending;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, _: GrpcRequest) -> Pending {
            self.0.fetch_add(1, Ordering::Relaxed);
            Box::pin(std::future::pending())
        }
    }

    fn call(path: &str) -> GrpcRequest {
        http::Request::builder().uri(path).body(tonic::body::Body::empty()).unwrap()
    }

    fn poll_once<F: Future + Unpin>(future: &mut F) -> Poll<F::Output> {
        Pin::new(future).poll(&mut Context::from_waker(std::task::Waker::noop()))
    }

    #[test]
    fn infer_calls_past_the_bound_are_refused_from_their_headers_and_places_come_back() {
        let models = Arc::new(Models::new(Vec::new(), Some(2)).unwrap());
        let inner = Stalled::default();
        let mut layer = GrpcAdmission { inner: inner.clone(), models, under_way: Default::default() };
        let mut first = layer.call(call(MODEL_INFER));
        let mut second = layer.call(call(MODEL_INFER));
        assert!(poll_once(&mut first).is_pending() && poll_once(&mut second).is_pending());
        let mut third = layer.call(call(MODEL_INFER));
        let Poll::Ready(Ok(refusal)) = poll_once(&mut third) else { panic!("the third call was not refused at once") };
        let status = tonic::Status::from_header_map(refusal.headers()).expect("a gRPC status");
        assert_eq!(status.code(), tonic::Code::ResourceExhausted);
        assert!(status.message().contains("2 inferences already under way"), "{}", status.message());
        assert_eq!(inner.0.load(Ordering::Relaxed), 2, "the refused call reached the service");
        // Other calls are not counted; a finished (dropped) call gives its place back.
        let mut metadata = layer.call(call("/inference.GRPCInferenceService/ServerMetadata"));
        assert!(poll_once(&mut metadata).is_pending());
        drop(first);
        let mut fourth = layer.call(call(MODEL_INFER));
        assert!(poll_once(&mut fourth).is_pending(), "a place given back is taken again");
        assert_eq!(layer.under_way.load(Ordering::Relaxed), 2);
        drop((second, fourth));
        assert_eq!(layer.under_way.load(Ordering::Relaxed), 0);
    }
}
