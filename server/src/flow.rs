//! The inference flow both protocols share: find the model, take a place
//! under the server's in-flight bound, decode and check the request (the
//! protocol's codec), select the outputs it asks for, run it, pick the selected outputs
//! out of the answer, encode them (the codec again), and record the model's
//! statistics and the request's time. [`crate::http`] and [`crate::grpc`]
//! only translate between their wire format and this flow.
//!
//! Ownership and concurrency: a request's flow runs on the task that serves
//! it (an HTTP connection's task, a gRPC call's task, or one task per request
//! of a ModelStreamInfer stream), and owns everything it uses. It takes its
//! own `Arc<Model>` out of [`Models`] and holds it until the answer is
//! encoded, so a model reloaded or unloaded meanwhile still finishes what it
//! accepted. The in-flight place ([`Models::reserve_in_flight`]) is taken
//! before decoding (a request refused for load costs no decoding; a malformed
//! one gives its place back with its error) and held until the answer is encoded; the pipeline's own bounds (`max_in_flight`) apply
//! inside the runtime. Dropping the flow's future (the client went away)
//! drops the runtime's future, which cancels the request, and releases the
//! place. The model's statistics are atomic counters, updated once when the
//! flow ends; the runtime's are read when a report is made.

use std::time::Instant;

use baton::Tensor;

use crate::metrics::infer_time;
use crate::model::{CallOptions, Model, ServeError};
use crate::models::Models;
use crate::stats::RequestTimes;

/// A protocol's request, before it is read.
pub(crate) trait Decode {
    /// What decoding leaves for encoding the answer (the request's id, how it
    /// wants its outputs written).
    type Reply: Encode;

    /// Reads the request into tensors for `model`, checked against its inputs;
    /// every protocol-level field is checked here, before anything runs.
    fn decode(self, model: &Model) -> Result<Decoded<Self::Reply>, ServeError>;
}

/// How a protocol writes its answer.
pub(crate) trait Encode {
    type Answer;

    /// The answer of `model` with `outputs`, in the order the request selected them.
    fn encode(self, model: &Model, outputs: Vec<PickedOutput>) -> Self::Answer;
}

/// A decoded request.
pub(crate) struct Decoded<R> {
    /// What its parameters ask of the runtime.
    pub options: CallOptions,
    /// Its inputs, by name, in request order.
    pub inputs: Vec<(String, Tensor)>,
    /// The outputs it names, in its order (none: all of the model's).
    pub requested: Vec<String>,
    /// What encoding its answer needs.
    pub reply: R,
}

/// One output of an answer.
pub struct PickedOutput {
    /// Its index among the model's outputs.
    pub output: usize,
    /// Its place among the outputs the request selected (the request's
    /// order when it names outputs, else the model's).
    pub position: usize,
    pub tensor: Tensor,
}

/// Runs one infer request for model `name` at `version` over `protocol`
/// (`http`, `grpc`: the metrics label) through the whole flow.
pub(crate) async fn infer<D: Decode>(
    models: &Models,
    protocol: &'static str,
    name: &str,
    version: &str,
    request: D,
) -> Result<<D::Reply as Encode>::Answer, ServeError> {
    let started = Instant::now();
    let result = match models.find(name, version) {
        Ok(model) => {
            let mut times = RequestTimes::default();
            let result = run(models, &model, request, &mut times).await;
            match &result {
                Ok(_) => model.stats.success(started.elapsed(), times),
                Err(_) => model.stats.fail(started.elapsed()),
            }
            result
        }
        Err(e) => Err(e),
    };
    if models.knows(name) {
        infer_time(protocol, name, started.elapsed());
    }
    result
}

/// The flow on a found model, noting its decode and encode times in `times`.
async fn run<D: Decode>(
    models: &Models,
    model: &Model,
    request: D,
    times: &mut RequestTimes,
) -> Result<<D::Reply as Encode>::Answer, ServeError> {
    // First, so that under a flood a refusal costs no decoding.
    let _in_flight = models.reserve_in_flight()?;
    let decoding = Instant::now();
    let Decoded { options, inputs, requested, reply } = request.decode(model)?;
    let selected = model.select_outputs(requested.iter().map(String::as_str))?;
    times.rows = model.rows(&inputs);
    times.input = decoding.elapsed();

    let answer = model.infer(inputs, &options).await?;
    let encoding = Instant::now();
    let picked = model.pick_outputs(&answer, &selected, !requested.is_empty())?;
    drop(answer);
    let encoded = reply.encode(model, picked);
    times.output = encoding.elapsed();
    Ok(encoded)
}
