//! Helpers shared by the runtime's integration tests with recording engines.

// Each test binary compiles this module and uses a part of it.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use baton::engine::{Dim, ModelSignature, TensorSpec};
use baton::{DType, Tensor};

/// The signature of a one-column stage: input `x` and output `y`, both f32 `[N, 1]`.
pub fn column_signature() -> ModelSignature {
    let spec = |name: &str| TensorSpec {
        name: name.into(),
        dtype: DType::F32,
        shape: vec![Dim::Dynamic(Some("N".into())), Dim::Fixed(1)],
    };
    ModelSignature { inputs: vec![spec("x")], outputs: vec![spec("y")] }
}

/// A pipeline of one node `n` whose stage is the registered engine `engine`:
/// input `x` in, output `y` out; `extra` lines follow the node's table.
pub fn one_node_pipeline(engine: &str, extra: &str) -> String {
    format!("[inputs.x]\nto = [\"n.x\"]\n[outputs.y]\nfrom = \"n.y\"\n[nodes.n]\nstages = [{{ engine = \"{engine}\" }}]\n{extra}\n")
}

/// A `[len, 1]` tensor of `values`.
pub fn rows(values: &[f32]) -> Tensor {
    Tensor::from_vec(vec![values.len(), 1], values.to_vec()).unwrap()
}

/// Polls `done` every millisecond; fails the test naming `what` after 10 s.
pub fn wait_until(what: &str, done: impl Fn() -> bool) {
    let until = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < until, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}
