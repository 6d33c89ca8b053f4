//! The placement MILP on synthetic profiles: which provider and how many
//! workers each node gets, the device memory limit, infeasible machines, the
//! profile's errors, and the placed pipeline file.

use std::collections::BTreeMap;
use std::path::Path;

use baton_planners::pipeline::{self, BatchTiming, NodeGraph, NodeProfile, Profile, Provider};
use baton_planners::placed::write_placement;
use baton_planners::placement::{self, Choice, Machine, Objective, PlaceNode, Problem};

const GIB: u64 = 1 << 30;

/// A measurement at batch 1 (`latency` µs) and batch 8 (`8 × row` µs).
fn measured(provider: Provider, row: f64, latency: f64, device_memory: Option<u64>) -> NodeProfile {
    let t = |batch: usize, us: f64| BatchTiming {
        batch,
        runs: 10,
        median_us: us,
        p10_us: us,
        p90_us: us,
        min_us: us,
        max_us: us,
        samples_us: Vec::new(),
    };
    NodeProfile {
        provider,
        batches: vec![t(1, latency), t(8, 8.0 * row)],
        device_memory_bytes: device_memory,
        ..NodeProfile::default()
    }
}

/// A node measured on the CPU and, when `cuda` is given, on CUDA: `(row µs, memory)`.
fn node(name: &str, cpu_row: f64, cuda: Option<(f64, u64)>) -> PlaceNode {
    let mut choices = vec![Choice::from_profile(name, &measured(Provider::Cpu, cpu_row, 2.0 * cpu_row, None)).unwrap()];
    if let Some((row, mem)) = cuda {
        choices.push(Choice::from_profile(name, &measured(Provider::Cuda, row, 2.0 * row, Some(mem))).unwrap());
    }
    PlaceNode { name: name.into(), choices, cores_per_worker: 1 }
}

fn problem(nodes: Vec<PlaceNode>, edges: &[(usize, usize)], cores: usize, memory: Option<u64>) -> Problem {
    Problem {
        nodes,
        edges: edges.to_vec(),
        machine: Machine { cores, device_memory: memory },
        objective: Objective::Period,
    }
}

fn providers(p: &placement::Placement) -> Vec<(&str, Provider, usize)> {
    p.nodes.iter().map(|n| (n.name.as_str(), n.provider, n.workers)).collect()
}

#[test]
fn cuda_where_it_is_much_faster_cpu_where_it_is_slower() {
    // `det` takes 100 µs a row on the CPU, 5 on CUDA; `post` 10 on the CPU, 50 on CUDA.
    let p =
        problem(vec![node("det", 100.0, Some((5.0, GIB))), node("post", 10.0, Some((50.0, GIB)))], &[(0, 1)], 4, None);
    let placed = placement::solve(&p, 10.0).unwrap();
    // `post` takes every core (10 / 4 = 2.5 µs), `det` the GPU (5 µs): period 5.
    assert_eq!(providers(&placed), [("det", Provider::Cuda, 1), ("post", Provider::Cpu, 4)]);
    assert_eq!(placed.period_us, 5.0);
    assert_eq!(placed.nodes[1].cores, [0, 1, 2, 3]);
    assert!(placed.nodes[0].cores.is_empty());
    assert!(placed.optimal);
}

#[test]
fn the_gpu_is_one_resource_its_nodes_share() {
    // Both nodes are 3x faster on CUDA, but on one GPU their times add up:
    // both there is 20 µs; one there and the other on both cores is max(10, 30 / 2) = 15.
    let p = problem(vec![node("a", 30.0, Some((10.0, GIB))), node("b", 30.0, Some((10.0, GIB)))], &[], 2, None);
    let placed = placement::solve(&p, 10.0).unwrap();
    assert_eq!(placed.period_us, 15.0);
    let on_gpu = placed.nodes.iter().filter(|n| n.provider == Provider::Cuda).count();
    let cpu = placed.nodes.iter().find(|n| n.provider == Provider::Cpu).unwrap();
    assert_eq!((on_gpu, cpu.workers, cpu.cores.len()), (1, 2, 2));
}

#[test]
fn a_node_that_does_not_fit_the_device_memory_stays_on_the_cpu() {
    let nodes = || vec![node("big", 100.0, Some((1.0, 10 * GIB))), node("small", 50.0, Some((10.0, GIB)))];
    let free = placement::solve(&problem(nodes(), &[], 2, None), 10.0).unwrap();
    assert_eq!(providers(&free), [("big", Provider::Cuda, 1), ("small", Provider::Cuda, 1)]);
    assert_eq!(free.device_memory, 11 * GIB);
    // 8 GiB: `big` no longer fits; `small` goes to the GPU, `big` takes both cores (50 µs).
    let limited = placement::solve(&problem(nodes(), &[], 2, Some(8 * GIB)), 10.0).unwrap();
    assert_eq!(providers(&limited), [("big", Provider::Cpu, 2), ("small", Provider::Cuda, 1)]);
    assert_eq!((limited.device_memory, limited.period_us), (GIB, 50.0));
}

#[test]
fn latency_is_the_critical_path_of_batch_times() {
    // A diamond: src -> (left, right) -> sink; batch-1 times are 2 x the row times.
    let nodes = vec![
        node("src", 10.0, None),
        node("left", 200.0, Some((20.0, GIB))),
        node("right", 50.0, Some((100.0, GIB))),
        node("sink", 10.0, None),
    ];
    let mut p = problem(nodes, &[(0, 1), (0, 2), (1, 3), (2, 3)], 4, None);
    p.objective = Objective::Latency;
    let placed = placement::solve(&p, 10.0).unwrap();
    assert_eq!(placed.nodes[1].provider, Provider::Cuda);
    assert_eq!(placed.nodes[2].provider, Provider::Cpu);
    // 20 + max(40, 100) + 20.
    assert_eq!(placed.latency_us, 140.0);
    // Held at that latency, the period is minimised next: the spare cores go to `right` (50 / w).
    let total: usize = placed.nodes.iter().filter(|n| n.provider == Provider::Cpu).map(|n| n.workers).sum();
    assert_eq!(total, 4);
    assert!(placed.period_us <= 40.0, "{placed:?}");
}

#[test]
fn cpu_workers_get_disjoint_cores_and_intra_threads_count() {
    let mut wide = node("wide", 40.0, None);
    wide.cores_per_worker = 2;
    let p = problem(vec![wide, node("narrow", 10.0, None)], &[(0, 1)], 5, None);
    let placed = placement::solve(&p, 10.0).unwrap();
    // `wide` takes 2 workers x 2 cores (20 µs), `narrow` the last core (10 µs).
    assert_eq!(providers(&placed), [("wide", Provider::Cpu, 2), ("narrow", Provider::Cpu, 1)]);
    assert_eq!(placed.nodes[0].cores, [0, 1, 2, 3]);
    assert_eq!(placed.nodes[1].cores, [4]);
    assert_eq!((placed.period_us, placed.cores_used), (20.0, 5));
}

#[test]
fn a_machine_too_small_is_an_error_saying_which_limit() {
    let p = problem(vec![node("a", 1.0, None), node("b", 1.0, None), node("c", 1.0, None)], &[], 2, None);
    let err = placement::solve(&p, 10.0).unwrap_err();
    assert!(err.contains("at least 3 cores") && err.contains("there are 2 (--cores)"), "{err}");
    let mut gpu_only = node("g", 1.0, Some((1.0, 4 * GIB)));
    gpu_only.choices.remove(0);
    let p = problem(vec![gpu_only], &[], 2, Some(GIB));
    let err = placement::solve(&p, 10.0).unwrap_err();
    assert!(err.contains("need 4294967296 bytes") && err.contains("--device-memory"), "{err}");
}

fn graph(nodes: &[&str]) -> NodeGraph {
    NodeGraph { nodes: nodes.iter().map(|n| n.to_string()).collect(), edges: Vec::new() }
}

fn profile_of(entries: &[(&str, NodeProfile)]) -> Profile {
    let mut p = Profile { pipeline: "p.toml".into(), cores: 2, ..Profile::default() };
    for (n, m) in entries {
        p.insert(n, m.clone());
    }
    p
}

#[test]
fn profile_errors_name_the_node_or_the_provider() {
    let both = [Provider::Cpu, Provider::Cuda];
    let cpu = |row| measured(Provider::Cpu, row, row, None);
    let prof = profile_of(&[("a", cpu(1.0))]);
    let err =
        placement::nodes_from_profile(&graph(&["a", "b"]), &prof, &[Provider::Cpu], &BTreeMap::new()).unwrap_err();
    assert!(err.contains("no entry for node `b`"), "{err}");
    let err = placement::nodes_from_profile(&graph(&["a"]), &prof, &both, &BTreeMap::new()).unwrap_err();
    assert!(err.contains("measured no node on `cuda`") && err.contains("--providers cpu,cuda"), "{err}");
    let err = placement::nodes_from_profile(&graph(&["z"]), &prof, &[Provider::Cpu], &BTreeMap::new()).unwrap_err();
    assert!(err.contains("the profile has node `a`, which the pipeline has not"), "{err}");
    // `b` runs only on the GPU (say), `a` only on the CPU: planning on the CPU alone cannot place `b`.
    let prof = profile_of(&[("a", cpu(1.0)), ("b", measured(Provider::Cuda, 1.0, 1.0, Some(1)))]);
    let err =
        placement::nodes_from_profile(&graph(&["a", "b"]), &prof, &[Provider::Cpu], &BTreeMap::new()).unwrap_err();
    assert!(err.contains("node `b` was measured on cuda only"), "{err}");
    let mut empty = cpu(1.0);
    empty.batches.clear();
    let err =
        placement::nodes_from_profile(&graph(&["a"]), &profile_of(&[("a", empty)]), &[Provider::Cpu], &BTreeMap::new())
            .unwrap_err();
    assert!(err.contains("node `a` on cpu has no batch timings"), "{err}");
}

#[test]
fn a_profile_of_both_providers_gives_both_choices() {
    let prof =
        profile_of(&[("a", measured(Provider::Cpu, 4.0, 10.0, None)), ("a", measured(Provider::Cuda, 1.0, 3.0, None))]);
    assert_eq!(prof.nodes["a"].provider, Provider::Cpu);
    assert_eq!(prof.other_providers["a"].len(), 1);
    let intra: BTreeMap<String, usize> = [("a".to_string(), 3)].into_iter().collect();
    let nodes = placement::nodes_from_profile(&graph(&["a"]), &prof, &[Provider::Cpu, Provider::Cuda], &intra).unwrap();
    let c: Vec<(Provider, f64, usize, f64)> =
        nodes[0].choices.iter().map(|c| (c.provider, c.row_us, c.best_batch, c.latency_us)).collect();
    assert_eq!(c, [(Provider::Cpu, 4.0, 8, 10.0), (Provider::Cuda, 1.0, 8, 3.0)]);
    assert_eq!(nodes[0].cores_per_worker, 3);
    // Without a measured device memory the estimate counts.
    let mut est = measured(Provider::Cuda, 1.0, 1.0, None);
    est.device_memory_estimate_bytes = Some(77);
    assert_eq!(Choice::from_profile("a", &est).unwrap().device_memory, 77);
}

#[test]
fn a_profile_without_providers_reads_as_cpu_and_round_trips() {
    let old = r#"{"pipeline": "p.toml", "cores": 2, "nodes": {"a": {"batches": [{"batch": 1, "runs": 3,
        "median_us": 5.0, "p10_us": 4.0, "p90_us": 6.0, "min_us": 4.0, "max_us": 7.0}],
        "memory_bytes": 10, "model_bytes": 20}}}"#;
    let p: Profile = serde_json::from_str(old).unwrap();
    assert_eq!(p.nodes["a"].provider, Provider::Cpu);
    assert!(p.other_providers.is_empty() && p.device_memory_total_bytes.is_none());
    let both = profile_of(&[
        ("a", measured(Provider::Cpu, 1.0, 1.0, None)),
        ("a", measured(Provider::Cuda, 1.0, 1.0, Some(5))),
    ]);
    let text = serde_json::to_string(&both).unwrap();
    assert!(text.contains(r#""provider":"cuda""#) && text.contains(r#""device_memory_bytes":5"#), "{text}");
    assert_eq!(serde_json::from_str::<Profile>(&text).unwrap(), both);
    let err =
        serde_json::from_str::<Profile>(&old.replace("\"batches\"", "\"provider\": \"tpu\", \"batches\"")).unwrap_err();
    assert!(err.to_string().contains("tpu"), "{err}");
}

#[test]
fn the_placed_file_sets_provider_workers_cores_and_keeps_the_rest() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/collab.toml");
    let g = pipeline::node_graph(&src).unwrap();
    assert_eq!(g.nodes, ["recommend", "speech", "text"]);
    let p = problem(
        vec![
            node("recommend", 10.0, None),
            node("speech", 5.0, Some((50.0, GIB))),
            node("text", 4000.0, Some((300.0, GIB))),
        ],
        &[(1, 0), (2, 0)],
        8,
        None,
    );
    let placed = placement::solve(&p, 10.0).unwrap();
    assert_eq!(placed.nodes[2].provider, Provider::Cuda);
    let dir = baton_scratch::Scratch::new("placement");
    let dst = dir.join("collab.placed.toml");
    write_placement(&src, &dst, &placed, "written by a test\nsecond line").unwrap();
    let text = std::fs::read_to_string(&dst).unwrap();
    assert!(text.starts_with("# written by a test\n# second line\n"), "{text}");
    let table: toml::Table = text.parse().unwrap();
    let n = |name: &str| table["nodes"][name].as_table().unwrap().clone();
    assert_eq!(n("text")["provider"].as_str(), Some("cuda"));
    assert_eq!((n("text")["device"].as_integer(), n("text")["workers"].as_integer()), (Some(0), Some(1)));
    assert!(!n("text").contains_key("cores"));
    // Padded inputs on CUDA: the heuristic convolution search, as profiled.
    assert_eq!(n("text")["cuda"]["cudnn_conv_algo_search"].as_str(), Some("heuristic"));
    assert_eq!(n("speech")["provider"].as_str(), Some("cpu"));
    let cpu_workers: i64 = ["speech", "recommend"].iter().map(|x| n(x)["workers"].as_integer().unwrap()).sum();
    assert_eq!(cpu_workers, 8);
    // compute_budget: Σ cost × workers of the CPU nodes (both cost 0.2).
    let budget = table["scheduler"]["compute_budget"].as_float().unwrap();
    assert!((budget - 0.2 * 8.0).abs() < 1e-9, "{budget}");
    assert_eq!(n("text")["weight"].as_float(), Some(2.0)); // untouched keys stay
    let model = n("speech")["stages"][0]["model"].as_str().unwrap().to_string();
    assert!(Path::new(&model).is_absolute() && model.ends_with("vad_batched.onnx"), "{model}");
}
