//! The graph file parsers: the compact text format's worked example, STG
//! files, and errors that name the file and line.

use std::path::Path;

use baton_planners::{stg, text};

#[test]
fn text_format_worked_example() {
    // 4 operations, 4 edges; `012a` = operation 0 sends `a` of size 2 to operation 1.
    let dag = text::parse("44;0A1;1B2;2C1;3D2;012a;021b;131c;231d", Path::new("ex.txt")).unwrap();
    let names: Vec<&str> = dag.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["A", "B", "C", "D"]);
    let costs: Vec<f64> = dag.tasks.iter().map(|t| t.cost).collect();
    assert_eq!(costs, [1.0, 2.0, 1.0, 2.0]);
    let edges: Vec<(usize, usize, f64, &str)> =
        dag.edges.iter().map(|e| (e.from, e.to, e.transfer, e.data.as_str())).collect();
    assert_eq!(edges, [(0, 1, 2.0, "a"), (0, 2, 1.0, "b"), (1, 3, 1.0, "c"), (2, 3, 1.0, "d")]);
    assert_eq!(dag.total_cost(), 6.0);
    assert_eq!(dag.critical_path(), 5.0); // A -> B -> D
}

#[test]
fn text_format_long_form_and_newlines() {
    let src = "12,1\n0Load10;1Work2.5;2W3;3W4;4W5;5W6;6W7;7W8;8W9;9W10;10W11;11Last1\n0,11,3,x\n";
    let dag = text::parse(src, Path::new("long.txt")).unwrap();
    assert_eq!(dag.len(), 12);
    assert_eq!(dag.tasks[0].name, "Load");
    assert_eq!(dag.tasks[1].cost, 2.5);
    assert_eq!((dag.edges[0].from, dag.edges[0].to, dag.edges[0].transfer), (0, 11, 3.0));
}

#[test]
fn text_format_errors_name_file_line_and_token() {
    let err = text::parse("22\n0A1;1B\n01a", Path::new("bad.txt")).unwrap_err().to_string();
    assert!(err.starts_with("bad.txt:2:"), "{err}");
    assert!(err.contains("`1B`"), "{err}");
    let err = text::parse("21;0A1;1B1;051a", Path::new("f.txt")).unwrap_err().to_string();
    assert!(err.contains("operation index out of range"), "{err}");
    let err = text::parse("21;0A1;1B1;002a", Path::new("loop.txt")).unwrap_err().to_string();
    assert_eq!(err, "loop.txt: edge 0 -> 0 is a self-loop");
    let err = text::parse("22;0A1;1B1;012a;103b", Path::new("cyc.txt")).unwrap_err().to_string();
    assert!(err.contains("cycle"), "{err}");
    let err = text::parse("21;0A1;1B1", Path::new("short.txt")).unwrap_err().to_string();
    assert!(err.contains("expected 1 edges, found 0"), "{err}");
}

const SMALL_STG: &str = "\
3
0 0 0
1 4 1 0
2 3 1 1
3 5 2 0 1
4 0 2 2 3
# comment lines are ignored
";

#[test]
fn stg_drops_dummy_tasks() {
    let dag = stg::parse(SMALL_STG, Path::new("small.stg")).unwrap();
    assert_eq!(dag.len(), 3);
    assert_eq!(dag.tasks.iter().map(|t| t.cost).collect::<Vec<_>>(), [4.0, 3.0, 5.0]);
    let edges: Vec<(usize, usize)> = dag.edges.iter().map(|e| (e.from, e.to)).collect();
    assert_eq!(edges, [(0, 1), (0, 2)]);
    assert_eq!(dag.critical_path(), 9.0);
}

#[test]
fn stg_errors_name_line() {
    let bad = SMALL_STG.replace("3 5 2 0 1", "3 5 3 0 1");
    let err = stg::parse(&bad, Path::new("x.stg")).unwrap_err().to_string();
    assert_eq!(err, "x.stg:5: task 3 declares 3 predecessors but lists 2");
    let bad = SMALL_STG.replace("2 3 1 1", "2 3 1 x");
    let err = stg::parse(&bad, Path::new("x.stg")).unwrap_err().to_string();
    assert_eq!(err, "x.stg:4: `x` is not a non-negative integer");
    let bad = SMALL_STG.replace("2 3 1 1", "2 3 1 2");
    let err = stg::parse(&bad, Path::new("x.stg")).unwrap_err().to_string();
    assert!(err.contains("x.stg:4: predecessor 2 of task 2"), "{err}");
}

#[test]
fn stg_subset_files_parse_with_their_optima() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/stg");
    let optima = stg::load_optima(&dir.join("Case50_2_OPT.csv")).unwrap();
    assert!(optima.len() >= 4);
    for key in optima.keys() {
        let dag = stg::load(&dir.join(key)).unwrap();
        assert_eq!(dag.len(), 50, "{key}");
    }
}
