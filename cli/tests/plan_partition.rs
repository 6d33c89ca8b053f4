//! `baton plan --method partition` end to end: a METIS-format graph in, both
//! partitioners' results out (text and JSON), and a malformed file named with
//! its line.

use std::process::Command;

use baton_scratch::Scratch;

/// Two triangles joined by one edge: the best bisection cuts only that edge.
const TWO_TRIANGLES: &str = "6 7\n2 3\n1 3\n1 2 4\n3 5 6\n4 6\n4 5\n";

#[test]
fn partitions_a_graph_file_and_compares_with_metis() {
    let dir = Scratch::new("plan-partition");
    let (graph, out) = (dir.join("two.graph"), dir.join("plan.json"));
    std::fs::write(&graph, TWO_TRIANGLES).unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["plan", "--method", "partition", "-k", "2", "--compare-metis", "--critical", "top:100"])
        .arg("--graph")
        .arg(&graph)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&run.stderr));
    assert!(stdout.contains("multilevel k=2 critical cut 1 (1 relations)"), "{stdout}");
    assert!(stdout.contains("metis      k=2 critical cut 1 (1 relations)"), "{stdout}");
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for r in runs {
        assert_eq!(r["result"]["balanced"], true);
        assert_eq!(r["result"]["loads"], serde_json::json!([3, 3]));
        let a = &r["assignment"];
        // Vertices are named by their 1-based METIS ids.
        assert_eq!(a["1"], a["2"]);
        assert_eq!(a["1"], a["3"]);
        assert_ne!(a["3"], a["4"]);
    }
}

#[test]
fn a_malformed_graph_file_is_named_with_its_line() {
    let dir = Scratch::new("plan-partition");
    let graph = dir.join("bad.graph");
    std::fs::write(&graph, "3 2\n2\n1 4\n2\n").unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["plan", "--method", "partition", "-k", "2", "--graph"])
        .arg(&graph)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains(&format!("{}:3: neighbour 4 out of range 1..=3", graph.display())), "{stderr}");
}

fn plan_graph(name: &str, text: &str, args: &[&str]) -> (bool, String) {
    let dir = Scratch::new("plan-partition");
    let graph = dir.join(name);
    std::fs::write(&graph, text).unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["plan", "--method", "partition"])
        .args(args)
        .arg("--graph")
        .arg(&graph)
        .output()
        .unwrap();
    let out = format!("{}{}", String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    (run.status.success(), out)
}

/// `--epsilon 0` on 7 vertices: the limit is 4 (the best balance), and
/// neither partitioner is flagged over it.
#[test]
fn zero_epsilon_with_an_odd_total_uses_the_tightest_limit() {
    let path = "7 6\n2\n1 3\n2 4\n3 5\n4 6\n5 7\n6\n";
    let (ok, out) = plan_graph("path7.graph", path, &["-k", "2", "--epsilon", "0", "--compare-metis"]);
    assert!(ok, "{out}");
    assert!(out.contains("balance limit: each part <= 4 of 7 total"), "{out}");
    assert!(!out.contains("over the limit"), "{out}");
}

/// The strong mode on the plain cut: the two triangles' single bridge.
#[test]
fn strong_quality_on_the_plain_cut() {
    let args = ["-k", "2", "--quality", "strong", "--critical", "none", "--restarts", "4"];
    let (ok, out) = plan_graph("two-strong.graph", TWO_TRIANGLES, &args);
    assert!(ok, "{out}");
    assert!(out.contains("strong     k=2 critical cut 0 (0 relations)  total cut 1 (1 relations)"), "{out}");
    let (ok, out) = plan_graph("two-bad.graph", TWO_TRIANGLES, &["--quality", "best"]);
    assert!(!ok && out.contains("unknown quality `best`"), "{out}");
}

/// A METIS graph carries no flow order: without `--critical` it gets the
/// plain edge cut, and the output says so; the path rule asked for on it is
/// run with a warning that names the reason.
#[test]
fn a_metis_graph_defaults_to_the_plain_cut_and_the_path_rule_is_warned() {
    let (ok, out) = plan_graph("two-default.graph", TWO_TRIANGLES, &["-k", "2"]);
    assert!(ok, "{out}");
    assert!(out.contains("0 critical (none, Unit)"), "{out}");
    assert!(out.contains("objective: the plain edge cut (--critical none)"), "{out}");
    assert!(out.contains("total cut 1 (1 relations)"), "{out}");
    assert!(!out.contains("warning"), "{out}");
    let (ok, out) = plan_graph("two-path.graph", TWO_TRIANGLES, &["-k", "2", "--critical", "path:0.1"]);
    assert!(ok, "{out}");
    assert!(
        out.contains("warning: ") && out.contains("--critical path:0.1: this graph's edges are undirected"),
        "{out}"
    );
    assert!(
        out.contains("objective: the critical cut (--critical path:0.1, Unit values), then the total cut"),
        "{out}"
    );
}
