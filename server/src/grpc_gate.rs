//! What the gRPC layers in front of the inference service share: the
//! request and response types, and the answer of a gate that either lets a
//! call through (holding a guard, if any, until the call completes) or
//! refuses it at once.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tonic::codegen::http;

pub(crate) type GrpcRequest = http::Request<tonic::body::Body>;
pub(crate) type GrpcResponse = http::Response<tonic::body::Body>;

/// A gated call's answer: the service's, with `G` dropped once it completes, or the refusal.
pub(crate) enum Gated<F, G = ()> {
    Run(F, Option<G>),
    Refused(Option<GrpcResponse>),
}

impl<F, G> Gated<F, G> {
    /// A refusal answered with `status` at once.
    pub fn refuse(status: tonic::Status) -> Self {
        Gated::Refused(Some(status.into_http()))
    }
}

impl<F, G, E> Future for Gated<F, G>
where
    F: Future<Output = Result<GrpcResponse, E>> + Unpin,
    G: Unpin,
{
    type Output = Result<GrpcResponse, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            Gated::Run(future, guard) => {
                let answer = std::task::ready!(Pin::new(future).poll(cx));
                drop(guard.take());
                Poll::Ready(answer)
            }
            Gated::Refused(response) => Poll::Ready(Ok(response.take().expect("a refusal is polled to its end once"))),
        }
    }
}
