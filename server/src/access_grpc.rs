//! The gRPC side of [`crate::access`]: a layer over the inference service
//! that refuses a call to a restricted group without its key metadata entry
//! with PERMISSION_DENIED, before the call's messages are read and before
//! the service sees it. The group comes from the call's method path.

use std::sync::Arc;
use std::task::{Context, Poll};

use crate::access::{Group, Restrictions};
use crate::grpc_gate::{Gated, GrpcRequest, GrpcResponse};
use crate::metrics::count;

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
    type Future = Gated<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: GrpcRequest) -> Self::Future {
        if let Some(group) = Group::of_grpc_path(request.uri().path()) {
            let headers = request.headers();
            if let Err(message) = self.restrictions.check(group, |key| headers.get(key).map(|v| v.as_bytes())) {
                count("grpc", group.name(), "", "PERMISSION_DENIED");
                return Gated::refuse(tonic::Status::permission_denied(message));
            }
        }
        Gated::Run(self.inner.call(request), None)
    }
}
