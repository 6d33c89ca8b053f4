//! Pipelines as planning inputs (node graph + profile) and placements written
//! back as a pipeline file.

use std::collections::BTreeMap;
use std::path::Path;

use baton_planners::ilp::{self, Options};
use baton_planners::pipeline::{self, BatchTiming, NodeProfile, Profile};
use baton_planners::platform::Platform;

fn diamond() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/diamond.toml")
}

fn profile(costs: &[(&str, f64)]) -> Profile {
    let nodes = costs
        .iter()
        .map(|&(n, c)| {
            let t = BatchTiming {
                batch: 8,
                runs: 10,
                median_us: c,
                p10_us: c,
                p90_us: c,
                min_us: c,
                max_us: c,
                samples_us: Vec::new(),
            };
            (n.to_string(), NodeProfile { batches: vec![t], memory_bytes: 1 << 20, ..NodeProfile::default() })
        })
        .collect();
    Profile { pipeline: "diamond".into(), cores: 2, nodes, ..Profile::default() }
}

#[test]
fn pipeline_graph_and_profile_make_a_dag() {
    let g = pipeline::node_graph(&diamond()).unwrap();
    assert_eq!(g.nodes, ["branch_a", "branch_b", "embed", "join"]);
    let pairs: Vec<(&str, &str)> = g.edges.iter().map(|(f, t, _)| (f.as_str(), t.as_str())).collect();
    assert_eq!(pairs, [("embed", "branch_a"), ("embed", "branch_b"), ("branch_a", "join"), ("branch_b", "join")]);
    let prof = profile(&[("embed", 100.0), ("branch_a", 300.0), ("branch_b", 200.0), ("join", 50.0)]);
    let dag = pipeline::dag_from_pipeline(&g, &prof, 8).unwrap();
    assert_eq!(dag.critical_path(), 450.0);
    // The bottleneck split on 2 units: branch_a alone against the other three (350).
    let r = ilp::solve_period(&dag, &Platform::identical(2), Options::default()).unwrap();
    assert_eq!(r.period, 350.0);
    assert_ne!(r.unit[0], r.unit[1]); // branch_a and branch_b apart
}

#[test]
fn missing_profile_entries_name_the_node() {
    let g = pipeline::node_graph(&diamond()).unwrap();
    let prof = profile(&[("embed", 1.0), ("branch_a", 1.0), ("branch_b", 1.0)]);
    let err = pipeline::dag_from_pipeline(&g, &prof, 8).unwrap_err();
    assert_eq!(err, "the profile has no entry for node `join`");
    let prof = profile(&[("embed", 1.0), ("branch_a", 1.0), ("branch_b", 1.0), ("join", 1.0)]);
    let err = pipeline::dag_from_pipeline(&g, &prof, 4).unwrap_err();
    assert!(err.contains("node `branch_a` has no batch size 4"), "{err}");
}

#[test]
fn placed_pipeline_keeps_everything_and_sets_cores() {
    let dir = baton_scratch::Scratch::new("placed");
    let dst = dir.join("diamond.placed.toml");
    let placement: BTreeMap<String, Vec<usize>> =
        [("embed", vec![0]), ("branch_a", vec![1]), ("branch_b", vec![0, 1]), ("join", vec![0])]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
    pipeline::write_placed(&diamond(), &dst, &placement, "test").unwrap();
    let text = std::fs::read_to_string(&dst).unwrap();
    assert!(text.starts_with("# test\n"));
    let table: toml::Table = text.parse().unwrap();
    let node = |n: &str| table["nodes"][n].as_table().unwrap().clone();
    assert_eq!(node("branch_b")["cores"].as_array().unwrap().len(), 2);
    assert_eq!(node("branch_b")["workers"].as_integer(), Some(2));
    assert_eq!(node("join")["cores"].as_array().unwrap()[0].as_integer(), Some(0));
    assert_eq!(node("join")["weight"].as_float(), Some(1.5)); // untouched keys stay
                                                              // Written to another folder: model paths become absolute and still point at the models.
    let model = node("embed")["stages"].as_array().unwrap()[0]["model"].as_str().unwrap().to_string();
    assert!(Path::new(&model).is_absolute() && model.ends_with("embed.onnx"), "{model}");
    let missing: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let err = pipeline::write_placed(&diamond(), &dst, &missing, "").unwrap_err();
    assert!(err.contains("places no node"), "{err}");
}
