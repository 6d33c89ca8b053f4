//! The gRPC side of [`crate::access`]: a layer over the inference service
//! that refuses a call to a restricted group without its key metadata entry
//! with PERMISSION_DENIED, before the call's messages are read and before
//! the service sees it. The group comes from the call's method path.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tonic::codegen::http;

use crate::access::{Group, Restrictions};
use crate::metrics::count;

type GrpcRequest = http::Request<tonic::body::Body>;
type GrpcResponse = http::Response<tonic::body::Body>;

/// The service behind the key check of `restrictions`.
#[derive(Clone)]
pub(crate) struct GrpcAccess<S> {
    pub inner: S,
    pub restrictions: Arc<Restrictions>,
}

impl<S: tonic::server::NamedService> tonic::server::NamedService for GrpcAccess<S> {
    const NAME: &'static str = S::NAME;
}

impl<S> tonic::codegen::Service<GrpcRequest> for GrpcAccess<S>
where
    S: tonic::codegen::Service<GrpcRequest, Response = GrpcResponse>,
    S::Future: Unpin,
{
    type Response = GrpcResponse;
    type Error = S::Error;
    type Future = Checked<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: GrpcRequest) -> Self::Future {
        if let Some(group) = Group::of_grpc_path(request.uri().path()) {
            let headers = request.headers();
            if let Err(message) = self.restrictions.check(group, |key| headers.get(key).map(|v| v.as_bytes())) {
                count("grpc", group.name(), "", "PERMISSION_DENIED");
                return Checked::Refused(Some(tonic::Status::permission_denied(message).into_http()));
            }
        }
        Checked::Run(self.inner.call(request))
    }
}

/// A call's answer: the service's, or the refusal.
pub(crate) enum Checked<F> {
    Run(F),
    Refused(Option<GrpcResponse>),
}

impl<F, E> Future for Checked<F>
where
    F: Future<Output = Result<GrpcResponse, E>> + Unpin,
{
    type Output = Result<GrpcResponse, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            Checked::Run(future) => Pin::new(future).poll(cx),
            Checked::Refused(response) => {
                Poll::Ready(Ok(response.take().expect("a refusal is polled to its end once")))
            }
        }
    }
}
