//! Cost-model pipelines the test files share.

use std::path::{Path, PathBuf};

/// A cost-model node `name` taking `input`, giving `output` ([N, 4] f32), 100 µs a batch.
pub fn node(name: &str, input: &str, output: &str, max_batch: usize) -> String {
    format!(
        r#"
[nodes.{name}]
max_batch = {max_batch}
[[nodes.{name}.stages]]
engine = "cost_model"
params.inputs = [{{ name = "{input}", dtype = "f32", shape = [-1, 4] }}]
params.outputs = [{{ name = "{output}", dtype = "f32", shape = [-1, 4] }}]
params.latency_us = 100
"#
    )
}

/// One node `a`: x -> a -> y, written to `dir`.
pub fn one_node(dir: &Path, max_batch: usize) -> PathBuf {
    let text = format!(
        "[pipeline]\nname = \"one\"\n[inputs.x]\nto = [\"a.x\"]\n[outputs.y]\nfrom = \"a.y\"\n{}",
        node("a", "x", "y", max_batch)
    );
    let path = dir.join("one.toml");
    std::fs::write(&path, text).unwrap();
    path
}
