//! `baton profile --input NODE.INPUT=FILE[,FILE..]`: the samples reach the
//! node's engine (a sample of the wrong width fails there, naming the node and
//! the batch), the runs take them in turn, and a node or input the pipeline
//! lacks is named.

use std::path::Path;
use std::process::{Command, Output};

use baton_scratch::Scratch;

fn mlp() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/mlp.toml").display().to_string()
}

/// A JSON tensor sample of `rows` × `width` floats, each `value`.
fn sample(dir: &Path, name: &str, rows: usize, width: usize, value: f64) -> String {
    let data = vec![value; rows * width];
    let path = dir.join(name);
    std::fs::write(&path, serde_json::json!({"shape": [rows, width], "data": data}).to_string()).unwrap();
    path.display().to_string()
}

/// `baton profile configs/mlp.toml --out OUT --runs 4 --warmup 1 --batches 1,3 --input ITEM`.
fn profile(out: &Path, item: &str) -> Output {
    let args = ["profile", &mlp(), "--out", out.to_str().unwrap(), "--runs", "4", "--warmup", "1", "--batches", "1,3"];
    Command::new(env!("CARGO_BIN_EXE_baton")).args(args).args(["--input", item]).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn samples_of_the_models_width_are_profiled_at_every_batch_size() {
    let dir = Scratch::new("profile-inputs-ok");
    let (a, b) = (sample(&dir, "a.json", 1, 256, 0.5), sample(&dir, "b.json", 2, 256, -0.25));
    let out = dir.join("p.json");
    let run = profile(&out, &format!("mlp.input={a},{b}"));
    assert!(run.status.success(), "{}", stderr(&run));
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let batches = json["nodes"]["mlp"]["batches"].as_array().unwrap();
    let measured: Vec<u64> = batches.iter().map(|b| b["batch"].as_u64().unwrap()).collect();
    assert_eq!(measured, vec![1, 3]);
    assert!(batches.iter().all(|b| b["samples_us"].as_array().unwrap().len() == 4));
}

#[test]
fn a_sample_the_model_refuses_fails_at_the_node_so_it_was_fed() {
    let dir = Scratch::new("profile-inputs-wide");
    let narrow = sample(&dir, "narrow.json", 1, 3, 1.0);
    let out = dir.join("p.json");
    let run = profile(&out, &format!("mlp.input={narrow}"));
    assert!(!run.status.success());
    let err = stderr(&run);
    assert!(err.contains("nodes.mlp on cpu at batch 1"), "{err}");
    assert!(!out.exists());
    // The second of two samples is taken by run 2: a bad second sample fails too.
    let good = sample(&dir, "good.json", 1, 256, 1.0);
    let run = profile(&out, &format!("mlp.input={good},{narrow}"));
    assert!(stderr(&run).contains("nodes.mlp on cpu at batch 1"), "{}", stderr(&run));
}

#[test]
fn a_node_or_input_the_pipeline_lacks_is_named() {
    let dir = Scratch::new("profile-inputs-names");
    let good = sample(&dir, "good.json", 1, 256, 1.0);
    let out = dir.join("p.json");
    let err = stderr(&profile(&out, &format!("zz.input={good}")));
    assert!(err.contains("the pipeline has no node `zz`"), "{err}");
    let err = stderr(&profile(&out, &format!("mlp.nope={good}")));
    assert!(err.contains("node `mlp` has no input `nope`") && err.contains("input"), "{err}");
    let err = stderr(&profile(&out, "mlp.input"));
    assert!(err.contains("not NODE.INPUT=FILE"), "{err}");
    let err = stderr(&profile(&out, &format!("mlp.input={}", dir.join("missing.json").display())));
    assert!(err.contains("--input mlp.input") && err.contains("missing.json"), "{err}");
}
