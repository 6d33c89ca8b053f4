//! Prometheus metrics: installs metrics-exporter-prometheus's recorder (so the
//! runtime's `baton_*` series, recorded through the `metrics` facade, are
//! collected), renders them on `/metrics`, and counts the server's own
//! requests by protocol, endpoint, model and status code.
//!
//! The recorder must be installed before the runtimes start: a runtime
//! registers its metric handles when it starts, and handles registered with no
//! recorder installed go nowhere. [`install_recorder`] is idempotent.

use std::sync::OnceLock;
use std::time::Duration;

use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use metrics::{counter, histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// Requests the server answered, by `protocol` (`http`, `grpc`), `endpoint`
/// (`infer`, `metadata`, `config`, `ready`, `health`, `stats`,
/// `repository`, `unsupported`, `connection` (refused or timed-out connections), `other`), `model` (empty
/// when none or unknown) and `code` (HTTP status, or gRPC code name).
pub const SERVER_REQUESTS: &str = "baton_server_requests_total";
/// Seconds from an infer request's arrival (body read) to its answer, by `protocol` and `model`.
pub const SERVER_INFER_SECONDS: &str = "baton_server_infer_seconds";

/// Histogram buckets of every `*_seconds` series: 25 µs to 10 s.
const SECONDS_BUCKETS: [f64; 19] = [
    25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2e-3, 5e-3, 10e-3, 20e-3, 50e-3, 100e-3, 200e-3, 500e-3, 1.0, 2.0, 5.0,
    10.0, 30.0,
];
/// Histogram buckets of `baton_batch_size`.
const BATCH_BUCKETS: [f64; 10] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0];

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs the Prometheus recorder as the process's `metrics` recorder (once;
/// later calls return the same handle). If another recorder was installed
/// first, the handle renders only an empty page and a warning is logged.
pub fn install_recorder() -> PrometheusHandle {
    HANDLE
        .get_or_init(|| {
            let builder = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &SECONDS_BUCKETS)
                .and_then(|b| {
                    b.set_buckets_for_metric(Matcher::Full(baton::metrics::BATCH_SIZE.into()), &BATCH_BUCKETS)
                })
                .expect("bucket lists are not empty");
            let recorder = builder.build_recorder();
            let handle = recorder.handle();
            if metrics::set_global_recorder(recorder).is_err() {
                tracing::warn!("another metrics recorder is installed: /metrics will not show Baton's metrics");
            }
            handle
        })
        .clone()
}

/// Counts one answered request.
pub(crate) fn count(protocol: &'static str, endpoint: &'static str, model: &str, code: &'static str) {
    counter!(SERVER_REQUESTS, "protocol" => protocol, "endpoint" => endpoint, "model" => model.to_string(), "code" => code)
        .increment(1);
}

/// Records one infer request's time in the server.
pub(crate) fn infer_time(protocol: &'static str, model: &str, elapsed: Duration) {
    histogram!(SERVER_INFER_SECONDS, "protocol" => protocol, "model" => model.to_string())
        .record(elapsed.as_secs_f64());
}

/// The `/metrics` endpoint (Prometheus text format).
pub(crate) fn router(handle: PrometheusHandle) -> Router {
    Router::new().route(
        "/metrics",
        get(move || {
            let handle = handle.clone();
            async move {
                (StatusCode::OK, [(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], handle.render())
                    .into_response()
            }
        }),
    )
}

/// The status code as a `'static` label value.
pub(crate) fn http_code(status: StatusCode) -> &'static str {
    match status.as_u16() {
        200 => "200",
        400 => "400",
        404 => "404",
        405 => "405",
        413 => "413",
        429 => "429",
        500 => "500",
        501 => "501",
        503 => "503",
        504 => "504",
        408 => "408",
        431 => "431",
        _ => "other",
    }
}
