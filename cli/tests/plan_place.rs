//! `baton plan --method ilp --pipeline P --profile F --out PLACED.toml` end to
//! end: the placed pipeline loads (config loader, `baton check`), errors name
//! the node or the provider; and `baton profile` records the provider it measured on.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use baton::execution::ProviderKind;
use baton::PipelineConfig;
use baton_scratch::Scratch;

fn config(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs").join(name)
}

fn baton(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_baton")).args(args).output().unwrap()
}

/// `baton plan --method ilp --pipeline PIPELINE --profile PROFILE EXTRA.. --out OUT`.
fn plan_ilp(pipeline: &str, profile: &str, out: &str, extra: &[&str]) -> Output {
    let mut args = vec!["plan", "--method", "ilp", "--pipeline", pipeline, "--profile", profile];
    args.extend_from_slice(extra);
    args.extend(["--out", out]);
    baton(&args)
}

fn text(o: &Output) -> String {
    format!("{}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// One measurement in the profile format: batch 1 at `2 × row` µs, batch 8 at `8 × row`.
fn measured(provider: &str, row: f64) -> String {
    let t = |b: usize, us: f64| {
        format!(
            r#"{{"batch": {b}, "runs": 10, "median_us": {us}, "p10_us": {us}, "p90_us": {us}, "min_us": {us}, "max_us": {us}}}"#
        )
    };
    let memory = if provider == "cuda" { r#", "device_memory_bytes": 1000000"# } else { "" };
    format!(
        r#"{{"provider": "{provider}", "batches": [{}, {}], "memory_bytes": 0, "model_bytes": 0{memory}}}"#,
        t(1, 2.0 * row),
        t(8, 8.0 * row)
    )
}

/// A profile of `configs/diamond.toml`: every node on the CPU (`cpu` µs a row), some on CUDA too.
fn diamond_profile(dir: &Path, file: &str, cpu: &[(&str, f64)], cuda: &[(&str, f64)]) -> PathBuf {
    let nodes: Vec<String> = cpu.iter().map(|(n, r)| format!(r#""{n}": {}"#, measured("cpu", *r))).collect();
    let others: Vec<String> = cuda.iter().map(|(n, r)| format!(r#""{n}": [{}]"#, measured("cuda", *r))).collect();
    let json = format!(
        r#"{{"pipeline": "diamond.toml", "cores": 8, "nodes": {{{}}}, "other_providers": {{{}}}}}"#,
        nodes.join(", "),
        others.join(", ")
    );
    let path = dir.join(file);
    std::fs::write(&path, json).unwrap();
    path
}

const ALL_CPU: [(&str, f64); 4] = [("embed", 10.0), ("branch_a", 400.0), ("branch_b", 20.0), ("join", 10.0)];

#[test]
fn the_placed_pipeline_puts_the_slow_node_on_cuda_and_parses() {
    let dir = Scratch::new("plan-place");
    // branch_a: 400 µs a row on the CPU, 4 on CUDA; join: 10 on the CPU, 100 on CUDA.
    let prof = diamond_profile(&dir, "both.json", &ALL_CPU, &[("branch_a", 4.0), ("join", 100.0)]);
    let out = dir.join("diamond.both.toml");
    let run = plan_ilp(
        config("diamond.toml").to_str().unwrap(),
        prof.to_str().unwrap(),
        out.to_str().unwrap(),
        &["--objective", "period", "--cores", "6"],
    );
    assert!(run.status.success(), "{}", text(&run));
    let cfg = PipelineConfig::read(&out).unwrap();
    assert_eq!(cfg.nodes["branch_a"].provider, ProviderKind::Cuda);
    assert_eq!(cfg.nodes["branch_a"].device, Some(0));
    assert_eq!(cfg.nodes["join"].provider, ProviderKind::Cpu);
    let cores: Vec<usize> = ["embed", "branch_b", "join"].iter().flat_map(|n| cfg.nodes[*n].cores.clone()).collect();
    let mut distinct = cores.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!((cores.len(), distinct.len()), (6, 6), "{cores:?}"); // every core, none twice
    let header = std::fs::read_to_string(&out).unwrap();
    assert!(header.starts_with("# Written by `baton plan --method ilp --objective period`"), "{header}");
    assert!(header.contains(&prof.display().to_string()) && header.contains("Predicted: period"), "{header}");
}

#[test]
fn a_cpu_only_placement_gives_every_node_its_cores() {
    let dir = Scratch::new("plan-place");
    let prof = diamond_profile(&dir, "cpu.json", &ALL_CPU, &[("branch_a", 4.0)]);
    let out = dir.join("diamond.cpu.toml");
    let run = plan_ilp(
        config("diamond.toml").to_str().unwrap(),
        prof.to_str().unwrap(),
        out.to_str().unwrap(),
        &["--objective", "latency", "--providers", "cpu", "--cores", "4"],
    );
    assert!(run.status.success(), "{}", text(&run));
    let cfg = PipelineConfig::read(&out).unwrap();
    assert!(cfg.nodes.values().all(|n| n.provider == ProviderKind::Cpu && n.workers == Some(1)));
    let mut cores: Vec<usize> = cfg.nodes.values().flat_map(|n| n.cores.clone()).collect();
    cores.sort();
    assert_eq!(cores, [0, 1, 2, 3]);
    // compute_budget (2.0 in the file) becomes Σ cost × workers.
    assert_eq!(cfg.scheduler.compute_budget, Some(4.0));
}

#[test]
fn bad_input_names_the_node_or_the_provider() {
    let dir = Scratch::new("plan-place");
    let pipeline = config("diamond.toml");
    let out = dir.join("never.toml");
    let plan = |prof: &Path, extra: &[&str]| {
        let mut args = vec!["--cores", "4"];
        args.extend_from_slice(extra);
        plan_ilp(pipeline.to_str().unwrap(), prof.to_str().unwrap(), out.to_str().unwrap(), &args)
    };
    let missing = diamond_profile(&dir, "missing.json", &ALL_CPU[..3], &[]);
    let run = plan(&missing, &["--objective", "period"]);
    assert!(!run.status.success());
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("missing.json") && err.contains("no entry for node `join`"), "{err}");
    let cpu_only = diamond_profile(&dir, "cpu-only.json", &ALL_CPU, &[]);
    let run = plan(&cpu_only, &["--objective", "latency", "--providers", "cpu,cuda"]);
    assert!(!run.status.success());
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("measured no node on `cuda`") && err.contains("--providers cpu,cuda"), "{err}");
    let run = plan(&cpu_only, &["--objective", "period", "--providers", "tpu"]);
    assert!(String::from_utf8_lossy(&run.stderr).contains("unknown provider `tpu`"), "{}", text(&run));
    let run = plan(&cpu_only, &["--objective", "makespan"]);
    assert!(String::from_utf8_lossy(&run.stderr).contains("--objective period or latency"), "{}", text(&run));
    assert!(!out.exists());
}

#[test]
fn profile_records_the_provider_and_the_placement_from_it_loads_with_baton_check() {
    let dir = Scratch::new("plan-place");
    let prof = dir.join("mlp.profile.json");
    let run = baton(&[
        "profile",
        config("mlp.toml").to_str().unwrap(),
        "--providers",
        "cpu",
        "--out",
        prof.to_str().unwrap(),
        "--runs",
        "5",
        "--warmup",
        "1",
        "--batches",
        "1,8",
    ]);
    assert!(run.status.success(), "{}", text(&run));
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&prof).unwrap()).unwrap();
    assert_eq!(json["nodes"]["mlp"]["provider"], "cpu");
    assert_eq!(json["nodes"]["mlp"]["batches"].as_array().unwrap().len(), 2);
    let out = dir.join("mlp.placed.toml");
    let run = plan_ilp(
        config("mlp.toml").to_str().unwrap(),
        prof.to_str().unwrap(),
        out.to_str().unwrap(),
        &["--objective", "period", "--cores", "2"],
    );
    assert!(run.status.success(), "{}", text(&run));
    let cfg = PipelineConfig::read(&out).unwrap();
    assert_eq!((cfg.nodes["mlp"].workers, cfg.nodes["mlp"].cores.clone()), (Some(2), vec![0, 1]));
}

#[test]
fn profiling_on_cuda_without_a_gpu_says_what_is_missing() {
    if Path::new("/dev/nvidia0").exists() {
        eprintln!("skipped: this machine has a GPU");
        return;
    }
    let dir = Scratch::new("plan-place");
    let prof = dir.join("never.profile.json");
    let run = baton(&[
        "profile",
        config("mlp.toml").to_str().unwrap(),
        "--providers",
        "cpu,cuda",
        "--out",
        prof.to_str().unwrap(),
        "--runs",
        "1",
        "--warmup",
        "0",
    ]);
    assert!(!run.status.success());
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("nodes.mlp: cannot measure it on cuda"), "{err}");
    assert!(err.contains("scripts/setup.sh --gpu") || err.contains("/dev/nvidia0"), "{err}");
    assert!(!prof.exists());
}
