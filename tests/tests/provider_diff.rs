//! `examples/provider_diff` (docs/gpu.md, "Finding where CUDA and the CPU differ") run on the
//! CPU only: `--cpu-reference-only` compares the CPU provider with itself, so every difference
//! is ~0, and the report must still name every node, write its traces and its two files.
//!
//! The example runs through cargo (`PROVIDER_DIFF_BIN` names a built binary instead); the
//! all-outputs copy of the MLP is made with the project's Python (`.venv`, scripts/setup.sh).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use baton_e2e::{model, repo_root, Scratch};
use serde_json::Value;

/// Runs the example with `args`, from the repository root.
fn provider_diff(args: &[&str]) -> Output {
    let mut command = match std::env::var_os("PROVIDER_DIFF_BIN") {
        Some(bin) => Command::new(bin),
        None => {
            let mut cargo = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
            cargo.args(["run", "-q", "-p", "baton-examples", "--example", "provider_diff", "--"]);
            cargo
        }
    };
    command.current_dir(repo_root()).args(args).output().expect("provider_diff runs")
}

/// `models/mlp.onnx` with every intermediate tensor as an output, and its node list, in `dir`.
fn mlp_all_outputs(dir: &Path) -> PathBuf {
    let python = repo_root().join(".venv/bin/python");
    assert!(python.is_file(), "{} is missing: run scripts/setup.sh", python.display());
    let out = dir.join("mlp_all.onnx");
    let result = Command::new(python)
        .arg(repo_root().join("scripts/make_all_outputs.py"))
        .arg(model("mlp.onnx"))
        .arg(&out)
        .output()
        .expect("python runs");
    assert!(result.status.success(), "make_all_outputs.py failed:\n{}", String::from_utf8_lossy(&result.stderr));
    assert!(dir.join("mlp_all.nodes.json").is_file());
    out
}

#[test]
fn cpu_reference_only_on_the_mlp_reports_zero_differences_node_by_node() {
    let dir = Scratch::new("provider-diff-mlp");
    let all = mlp_all_outputs(&dir);
    let out = dir.join("report");
    let (mlp, all, out_s) = (model("mlp.onnx"), all.display().to_string(), out.display().to_string());
    let result = provider_diff(&[
        "--model",
        mlp.to_str().unwrap(),
        "--all-outputs",
        &all,
        "--batch",
        "4",
        "--variants",
        "default,no_graph_opt,ref_no_opt,on_cpu+cuda_no_opt",
        "--trace-sizes",
        "1,2",
        "--cpu-reference-only",
        "--out",
        &out_s,
    ]);
    let stdout = String::from_utf8_lossy(&result.stdout);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(result.status.success(), "exit {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}", result.status.code());
    assert!(stdout.contains("CPU-REFERENCE-ONLY"), "{stdout}");

    let text = std::fs::read_to_string(out.join("provider-diff.txt")).unwrap();
    assert_eq!(text.trim_end(), stdout.trim_end(), "the text file is what was printed");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("provider-diff.json")).unwrap()).unwrap();
    assert_eq!(report["setup"]["gpu"], false);
    assert_eq!(report["inputs"][0]["shape"], serde_json::json!([4, 256]));

    let sidecar: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("mlp_all.nodes.json")).unwrap()).unwrap();
    let node_names: Vec<&str> =
        sidecar["nodes"].as_array().unwrap().iter().map(|n| n["name"].as_str().unwrap()).collect();
    assert!(!node_names.is_empty());

    let variants = report["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 4);
    for v in variants {
        let name = v["name"].as_str().unwrap();
        assert!(v.get("error").is_none(), "{name}: {v}");
        let rel = v["outputs"][0]["diff"]["rel"].as_f64().unwrap_or(f64::INFINITY);
        assert!(rel.is_finite() && rel < 1e-5, "{name}: final output differs by {rel}");
        let all_outputs = &v["all_outputs"];
        assert!(all_outputs["first_divergent"].is_null(), "{name}: {}", all_outputs["first_divergent"]);
        let compared: Vec<&str> =
            all_outputs["nodes"].as_array().unwrap().iter().map(|n| n["name"].as_str().unwrap()).collect();
        assert_eq!(compared, node_names, "{name}: every node of the MLP is compared, in order");
        for n in all_outputs["nodes"].as_array().unwrap() {
            let rel = n["rel"].as_f64().unwrap_or(f64::INFINITY);
            assert!(rel.is_finite() && rel < 1e-5, "{name}: node {n}");
        }
        let top = all_outputs["top_by_diff"].as_array().unwrap();
        assert_eq!(top.len(), node_names.len().min(10));
        assert!(node_names.contains(&top[0]["name"].as_str().unwrap()));
        assert!(out.join(v["trace"].as_str().unwrap()).is_file(), "{name}: its trace");
    }

    let traces = report["traces"].as_array().unwrap();
    assert_eq!(traces.iter().map(|t| t["batch"].as_u64().unwrap()).collect::<Vec<_>>(), [1, 2]);
    for t in traces {
        assert_eq!(t["model_run_us"].as_array().unwrap().len(), 4, "3 warm-up runs and the profiled one: {t}");
        assert!(!t["last_run_top_ops"].as_array().unwrap().is_empty(), "{t}");
    }
    assert!(out.join("trace-mlp-b1.json").is_file() && out.join("trace-mlp-b2.json").is_file());
}

#[test]
fn an_unknown_variant_is_an_error_naming_it() {
    let dir = Scratch::new("provider-diff-unknown");
    let mlp = model("mlp.onnx");
    let result = provider_diff(&[
        "--model",
        mlp.to_str().unwrap(),
        "--variants",
        "default,tf32_off+winograd_off",
        "--cpu-reference-only",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("unknown variant `winograd_off`") && stderr.contains("tf32_off"), "{stderr}");
}
