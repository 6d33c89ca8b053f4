//! `baton profile --idle-gaps`: each node's batch after each idle gap lands in
//! the profile, `baton simulate --idle-gaps` takes that profile, and a gap that
//! is not a positive number of µs is refused by name.

use std::path::Path;
use std::process::{Command, Output};

use baton_scratch::Scratch;

fn mlp() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/mlp.toml").display().to_string()
}

fn baton(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_baton")).args(args).output().unwrap()
}

/// `baton profile configs/mlp.toml --out OUT --idle-gaps GAPS`, at batch sizes 1 and 32, briefly.
fn profile(out: &Path, gaps: &str) -> Output {
    let out = out.to_str().unwrap();
    let sizes = ["--runs", "4", "--warmup", "1", "--batches", "1,32"];
    baton(&[&["profile", &mlp(), "--out", out][..], &sizes, &["--idle-gaps", gaps, "--idle-gap-rounds", "3"]].concat())
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn each_gap_asked_for_is_measured_and_the_simulator_takes_the_profile() {
    let dir = Scratch::new("profile-idle-gaps-ok");
    let out = dir.join("p.json");
    let run = profile(&out, "200,2000");
    assert!(run.status.success(), "{}", stderr(&run));
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let gaps = json["nodes"]["mlp"]["idle_gaps"].as_array().expect("idle_gaps in the profile");
    let at: Vec<f64> = gaps.iter().map(|g| g["gap_us"].as_f64().unwrap()).collect();
    assert_eq!(at, [200.0, 2000.0]);
    for g in gaps {
        assert!(g["median_us"].as_f64().unwrap() > 0.0, "{g}");
        assert!(g["extra_us"].as_f64().unwrap() >= 0.0, "{g}");
    }
    let sim = baton(&["simulate", &mlp(), "--profile", out.to_str().unwrap(), "--rate", "100", "--duration", "2s"]);
    assert!(sim.status.success(), "{}", stderr(&sim));
    let sim = baton(&["simulate", &mlp(), "--profile", out.to_str().unwrap(), "--rate", "100", "--idle-gaps"]);
    assert!(sim.status.success(), "{}", stderr(&sim));
}

#[test]
fn a_gap_that_is_not_a_positive_number_of_microseconds_is_refused() {
    let dir = Scratch::new("profile-idle-gaps-bad");
    let out = dir.join("p.json");
    let err = stderr(&profile(&out, "0"));
    assert!(err.contains("--idle-gaps: 0 is not a positive number of µs"), "{err}");
    let err = stderr(&profile(&out, "300,300"));
    assert!(err.contains("--idle-gaps: 300 µs is given twice"), "{err}");
    assert!(!out.exists());
}
