//! One test per pipeline-file mistake: each writes a small TOML file to a
//! temp folder and checks the error names the file, the place in it (node,
//! field, edge or line) and the culprit. Plus the `baton check` command's
//! exit codes.

use std::path::Path;

use baton::{PipelineSpec, Runtime, StartError};
use baton_e2e::{config, registry, repo_root, TestFile};

/// Writes `text` (with `@MODELS@` replaced by the repository's models folder) to a
/// `pipeline.toml` of the test's own (removed when the returned file is dropped).
fn write(test: &str, text: &str) -> TestFile {
    let models = repo_root().join("models");
    TestFile::write(
        &format!("config-errors-{test}"),
        "pipeline.toml",
        &text.replace("@MODELS@", &models.display().to_string()),
    )
}

/// The error that validating `text` gives, displayed; asserts it starts with the file and holds every `part`.
fn error(test: &str, text: &str, parts: &[&str]) -> String {
    let path = write(test, text);
    let err = match PipelineSpec::from_file(&path, &registry()) {
        Ok(_) => panic!("{test}: the pipeline was accepted:\n{text}"),
        Err(e) => e,
    };
    assert_eq!(err.file.as_deref(), Some(path.path()), "{test}: the error carries the file");
    let shown = err.to_string();
    assert!(shown.starts_with(&format!("{}: ", path.display())), "{test}: the message starts with the file: {shown}");
    for part in parts {
        assert!(shown.contains(part), "{test}: the message should contain {part:?}:\n{shown}");
    }
    eprintln!("{test}: {shown}");
    shown
}

/// The embed model as one valid node `embed` fed by input `x`, answering output `h`.
const EMBED: &str = r#"
[inputs.x]
to = ["embed.x"]

[outputs.h]
from = "embed.h"

[nodes.embed]
stages = [{ model = "@MODELS@/embed.onnx" }]
"#;

/// A cost_model node: `inputs` and `outputs` as `(name, dtype, shape)`.
fn cost_node(name: &str, inputs: &[(&str, &str, &str)], outputs: &[(&str, &str, &str)]) -> String {
    let specs = |list: &[(&str, &str, &str)]| {
        let items: Vec<String> =
            list.iter().map(|(n, d, s)| format!(r#"{{ name = "{n}", dtype = "{d}", shape = {s} }}"#)).collect();
        format!("[{}]", items.join(", "))
    };
    format!(
        "\n[[nodes.{name}.stages]]\nengine = \"cost_model\"\nparams.inputs = {}\nparams.outputs = {}\n",
        specs(inputs),
        specs(outputs)
    )
}

const F32_4: &str = "[-1, 4]";

#[test]
fn the_embed_base_config_is_valid() {
    // Guards the tests below: each breaks exactly one thing of a valid file.
    let path = write("valid", EMBED);
    PipelineSpec::from_file(&path, &registry()).unwrap_or_else(|e| panic!("{e}"));
    let chain = format!(
        "[inputs.x]\nto = [\"a.x\"]\n[outputs.z]\nfrom = \"b.z\"\n[[edges]]\nfrom = \"a.y\"\nto = \"b.y\"\n{}{}",
        cost_node("a", &[("x", "f32", F32_4)], &[("y", "f32", F32_4)]),
        cost_node("b", &[("y", "f32", F32_4)], &[("z", "f32", F32_4)])
    );
    let path = write("valid_cost", &chain);
    PipelineSpec::from_file(&path, &registry()).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn unknown_top_level_key_is_named_with_its_line() {
    // Before any table header, so it is a top-level key.
    let text = format!("# a pipeline\nbatching = true\n{EMBED}");
    let shown = error("unknown_top_level_key", &text, &["`batching`", "line 2"]);
    // The list of expected keys shows it was read as a top-level key.
    assert!(shown.contains("`pipeline`") && shown.contains("`edges`"), "{shown}");
}

#[test]
fn unknown_node_key_is_named_with_its_line() {
    let text = EMBED.replace("[nodes.embed]\n", "[nodes.embed]\nmax_batc = 8\n");
    let line = text.lines().position(|l| l.starts_with("max_batc")).unwrap() + 1;
    // The parser names the key and its line (and lists a node's keys); not the node's name.
    error("unknown_node_key", &text, &["`max_batc`", &format!("line {line}"), "`max_batch`"]);
}

#[test]
fn edge_from_an_unknown_node_names_the_edge_and_node() {
    let text = format!("{EMBED}\n[[edges]]\nfrom = \"ghost.h\"\nto = \"embed.x\"\n");
    error("edge_from_unknown_node", &text, &["edges[0].from", "no node named `ghost`"]);
}

#[test]
fn edge_to_an_unknown_node_names_the_edge_and_node() {
    let text = format!("{EMBED}\n[[edges]]\nfrom = \"embed.h\"\nto = \"ghost.x\"\n");
    error("edge_to_unknown_node", &text, &["edges[0].to", "no node named `ghost`"]);
}

#[test]
fn edge_to_a_nonexistent_input_names_the_node_and_tensor() {
    let text = format!(
        "{EMBED}{}\n[[edges]]\nfrom = \"embed.h\"\nto = \"sink.nope\"\n[outputs.z]\nfrom = \"sink.z\"\n",
        cost_node("sink", &[("h", "f32", "[-1, 64]")], &[("z", "f32", F32_4)])
    );
    error("edge_to_unknown_input", &text, &["edges[0].to", "node `sink` has no input `nope`", "its inputs: h"]);
}

#[test]
fn edge_from_a_nonexistent_output_names_the_node_and_tensor() {
    let text = format!(
        "{EMBED}{}\n[[edges]]\nfrom = \"embed.hh\"\nto = \"sink.h\"\n[outputs.z]\nfrom = \"sink.z\"\n",
        cost_node("sink", &[("h", "f32", "[-1, 64]")], &[("z", "f32", F32_4)])
    );
    error("edge_from_unknown_output", &text, &["edges[0].from", "node `embed` has no output `hh`", "its outputs: h"]);
}

#[test]
fn pipeline_output_from_a_nonexistent_output_names_it() {
    let text = EMBED.replace("from = \"embed.h\"", "from = \"embed.y\"");
    error("output_from_unknown_output", &text, &["outputs.h.from", "node `embed` has no output `y`"]);
}

#[test]
fn pipeline_input_to_a_nonexistent_input_names_it() {
    let text = EMBED.replace("to = [\"embed.x\"]", "to = [\"embed.input\"]");
    error("input_to_unknown_input", &text, &["inputs.x.to[0]", "node `embed` has no input `input`"]);
}

#[test]
fn missing_model_file_names_the_stage_and_path() {
    let text = EMBED.replace("embed.onnx", "embedd.onnx");
    error("missing_model", &text, &["nodes.embed.stages[0].model", "embedd.onnx", "not found"]);
}

#[test]
fn cycle_names_the_nodes_on_it() {
    // p takes x and q's `back`; q takes p's `y` and gives `back` and `z`: p -> q -> p.
    let text = format!(
        "[inputs.x]\nto = [\"p.x\"]\n[outputs.z]\nfrom = \"q.z\"\n{}{}\n[[edges]]\nfrom = \"p.y\"\nto = \"q.y\"\n[[edges]]\nfrom = \"q.back\"\nto = \"p.back\"\n",
        cost_node("p", &[("x", "f32", F32_4), ("back", "f32", F32_4)], &[("y", "f32", F32_4)]),
        cost_node("q", &[("y", "f32", F32_4)], &[("back", "f32", F32_4), ("z", "f32", F32_4)])
    );
    let shown = error("cycle", &text, &["edges: ", "cycle"]);
    assert!(shown.contains("p -> q -> p") || shown.contains("q -> p -> q"), "{shown}");
}

#[test]
fn dtype_mismatch_along_an_edge_names_both_ends_and_dtypes() {
    let text = format!(
        "[inputs.x]\nto = [\"a.x\"]\n[outputs.z]\nfrom = \"b.z\"\n[[edges]]\nfrom = \"a.y\"\nto = \"b.y\"\n{}{}",
        cost_node("a", &[("x", "f32", F32_4)], &[("y", "i64", F32_4)]),
        cost_node("b", &[("y", "f32", F32_4)], &[("z", "f32", F32_4)])
    );
    error("dtype_mismatch", &text, &["edges[0]", "dtype mismatch", "`a.y` is i64", "`b.y` takes f32"]);
}

#[test]
fn dtype_mismatch_into_an_onnx_model_names_both_ends() {
    // A cost_model stage declaring i64 feeding embed's f32 input.
    let text = format!(
        "[inputs.x]\nto = [\"a.x\"]\n[outputs.h]\nfrom = \"embed.h\"\n[nodes.embed]\nstages = [{{ model = \"@MODELS@/embed.onnx\" }}]\n[[edges]]\nfrom = \"a.x_ids\"\nto = \"embed.x\"\n{}",
        cost_node("a", &[("x", "i64", "[-1, 32]")], &[("x_ids", "i64", "[-1, 32]")])
    );
    error("dtype_mismatch_onnx", &text, &["edges[0]", "dtype mismatch", "`a.x_ids` is i64", "`embed.x` takes f32"]);
}

#[test]
fn rank_mismatch_along_an_edge_names_both_shapes() {
    let text = format!(
        "[inputs.x]\nto = [\"a.x\"]\n[outputs.z]\nfrom = \"b.z\"\n[[edges]]\nfrom = \"a.y\"\nto = \"b.y\"\n{}{}",
        cost_node("a", &[("x", "f32", F32_4)], &[("y", "f32", F32_4)]),
        cost_node("b", &[("y", "f32", "[-1, 4, 2]")], &[("z", "f32", F32_4)])
    );
    error("rank_mismatch", &text, &["edges[0]", "rank mismatch", "`a.y`", "rank 2", "`b.y`", "rank 3"]);
}

#[test]
fn input_fed_twice_names_the_input_and_first_source() {
    // `b.y` is fed by a's edge and by the pipeline input `w`.
    let text = format!(
        "[inputs.x]\nto = [\"a.x\"]\n[inputs.w]\nto = [\"b.y\"]\n[outputs.z]\nfrom = \"b.z\"\n[[edges]]\nfrom = \"a.y\"\nto = \"b.y\"\n{}{}",
        cost_node("a", &[("x", "f32", F32_4)], &[("y", "f32", F32_4)]),
        cost_node("b", &[("y", "f32", F32_4)], &[("z", "f32", F32_4)])
    );
    error("input_fed_twice", &text, &["inputs.w", "`b.y` is already fed by edges[0]"]);
}

#[test]
fn input_fed_by_two_edges_names_the_second_edge() {
    let text = format!(
        "[inputs.x]\nto = [\"a.x\"]\n[outputs.z]\nfrom = \"b.z\"\n[[edges]]\nfrom = \"a.y\"\nto = \"b.y\"\n[[edges]]\nfrom = \"a.y2\"\nto = \"b.y\"\n{}{}",
        cost_node("a", &[("x", "f32", F32_4)], &[("y", "f32", F32_4), ("y2", "f32", F32_4)]),
        cost_node("b", &[("y", "f32", F32_4)], &[("z", "f32", F32_4)])
    );
    error("input_fed_by_two_edges", &text, &["edges[1]: ", "`b.y` is already fed by edges[0]"]);
}

#[test]
fn input_fed_by_nothing_names_the_node_and_input() {
    let text = format!(
        "[inputs.x]\nto = [\"a.x\"]\n[outputs.y]\nfrom = \"a.y\"\n{}",
        cost_node("a", &[("x", "f32", F32_4), ("mask", "f32", F32_4)], &[("y", "f32", F32_4)])
    );
    error("input_fed_by_nothing", &text, &["nodes.a: ", "input `mask` is fed by nothing"]);
}

#[test]
fn node_whose_outputs_go_nowhere_is_named() {
    let text = format!(
        "{EMBED}{}\n[[edges]]\nfrom = \"embed.h\"\nto = \"dead_end.h\"\n",
        cost_node("dead_end", &[("h", "f32", "[-1, 64]")], &[("z", "f32", F32_4)])
    );
    error("outputs_go_nowhere", &text, &["nodes.dead_end: ", "none of its outputs goes anywhere"]);
}

#[test]
fn unknown_engine_kind_names_the_stage_and_kinds() {
    let text = EMBED.replace(
        "stages = [{ model = \"@MODELS@/embed.onnx\" }]",
        "stages = [{ model = \"@MODELS@/embed.onnx\", engine = \"tensorrt\" }]",
    );
    error("unknown_engine", &text, &["nodes.embed.stages[0].engine", "unknown engine `tensorrt`", "cost_model, onnx"]);
}

#[test]
fn node_costing_more_than_the_budget_is_an_impossible_budget() {
    let text = format!("{EMBED}cost = 3.0\n\n[scheduler]\ncompute_budget = 2.0\n");
    error("impossible_budget", &text, &["nodes.embed.cost", "impossible budget", "costs 3", "compute_budget is 2"]);
}

#[test]
fn fixed_batch_model_with_max_batch_32_names_the_fix() {
    let text = "[inputs.x]\nto = [\"f.x\"]\n[outputs.y]\nfrom = \"f.y\"\n[nodes.f]\nstages = [{ model = \"@MODELS@/fixed_batch.onnx\" }]\nmax_batch = 32\n";
    error(
        "fixed_batch",
        text,
        &["nodes.f.max_batch", "is 32", "model input `x` has a fixed batch dim of 1", "set max_batch = 1"],
    );
}

#[test]
fn fixed_batch_model_with_max_batch_1_is_accepted() {
    let text = "[inputs.x]\nto = [\"f.x\"]\n[outputs.y]\nfrom = \"f.y\"\n[nodes.f]\nstages = [{ model = \"@MODELS@/fixed_batch.onnx\" }]\nmax_batch = 1\n";
    let path = write("fixed_batch_ok", text);
    PipelineSpec::from_file(&path, &registry()).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn max_batch_zero_names_the_field() {
    let text = format!("{EMBED}max_batch = 0\n");
    error("max_batch_zero", &text, &["nodes.embed.max_batch: ", "must be at least 1"]);
}

#[test]
fn a_core_that_does_not_exist_names_the_core() {
    let text = format!("{EMBED}cores = [4096]\n");
    error("no_such_core", &text, &["nodes.embed.cores: ", "core 4096 does not exist"]);
}

#[test]
fn tick_us_zero_names_the_field() {
    let text = format!("{EMBED}\n[scheduler]\ntick_us = 0\n");
    error("tick_zero", &text, &["scheduler.tick_us: ", "0 is out of range"]);
}

#[test]
fn a_foreground_slice_outside_the_kernels_limits_names_the_field() {
    for slice in [50, 100_001] {
        let text = format!("{EMBED}\n[scheduler]\nforeground_slice_us = {slice}\n");
        error("slice_range", &text, &["scheduler.foreground_slice_us: ", &format!("{slice} is out of range")]);
    }
}

#[test]
fn a_foreground_slice_beside_the_real_time_foreground_names_the_field() {
    let text = format!("{EMBED}\n[scheduler]\nforeground_slice_us = 200\nforeground_realtime = true\n");
    error("slice_and_realtime", &text, &["scheduler.foreground_slice_us: ", "foreground_realtime = true"]);
}

#[test]
fn pipeline_input_dtype_disagreeing_with_the_model_names_both() {
    let text = EMBED.replace("to = [\"embed.x\"]", "to = [\"embed.x\"]\ndtype = \"i64\"");
    error("input_dtype", &text, &["inputs.x.dtype: ", "says i64", "`embed.x` takes f32"]);
}

#[test]
fn pipeline_input_shape_disagreeing_with_the_model_names_both() {
    let text = EMBED.replace("to = [\"embed.x\"]", "to = [\"embed.x\"]\nshape = [-1, 33]");
    error("input_shape", &text, &["inputs.x.shape: ", "dim 1", "[?, 33]", "`embed.x` takes [N, 32]"]);
}

#[test]
fn no_inputs_is_an_error_saying_how_to_add_one() {
    let text = EMBED.replace("[inputs.x]\nto = [\"embed.x\"]\n", "");
    error("no_inputs", &text, &["inputs: ", "the pipeline has no inputs", "[inputs.NAME]"]);
}

#[test]
fn no_outputs_is_an_error_saying_how_to_add_one() {
    let text = EMBED.replace("[outputs.h]\nfrom = \"embed.h\"\n", "");
    error("no_outputs", &text, &["outputs: ", "the pipeline has no outputs", "[outputs.NAME]"]);
}

#[test]
fn runtime_start_reports_the_same_config_error() {
    let text = format!("{EMBED}max_batch = 0\n");
    let path = write("runtime_start", &text);
    let spec_err = PipelineSpec::from_file(&path, &registry()).err().expect("rejected");
    match Runtime::from_file(&path, &registry()) {
        Err(StartError::Config(e)) => {
            assert_eq!(e, spec_err);
            assert_eq!(StartError::Config(e).to_string(), spec_err.to_string());
        }
        Err(other) => panic!("expected a config error, got {other}"),
        Ok(_) => panic!("the runtime started"),
    }
}

/// Runs `baton check FILE` through cargo (baton-cli is a binary crate: no
/// other package can depend on it to get its path).
fn baton_check(file: &Path) -> std::process::Output {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    std::process::Command::new(cargo)
        .current_dir(repo_root())
        .args(["run", "-q", "-p", "baton-cli", "--", "check"])
        .arg(file)
        .output()
        .expect("cargo runs")
}

#[test]
fn baton_check_exits_2_with_the_error_on_stderr_and_0_on_a_good_file() {
    let text = format!("{EMBED}max_batch = 0\n");
    let bad = write("cli_bad", &text);
    let out = baton_check(&bad);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "exit 2 on a bad file; stderr:\n{stderr}");
    let expected = format!("{}: nodes.embed.max_batch: must be at least 1", bad.display());
    assert!(stderr.contains(&expected), "stderr names file, field and problem:\n{stderr}");

    let good = config("diamond.toml");
    let out = baton_check(&good);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "exit 0 on diamond.toml; stderr:\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("pipeline `diamond`: 4 nodes") && stdout.trim_end().ends_with("ok"), "{stdout}");
}

#[test]
fn state_over_max_state_bytes_is_refused_before_allocating() {
    // A tiny file once made validation allocate the zeroed state of whatever shape it named
    // (here 8 GiB); a state no stream could hold is now an error before anything is allocated.
    let node = |shape: &str| {
        cost_node(
            "acc",
            &[("x", "f32", F32_4), ("s", "f32", "[-1, -1]")],
            &[("y", "f32", F32_4), ("s_out", "f32", "[-1, -1]")],
        ) + &format!("[[nodes.acc.state]]\ninput = \"s\"\noutput = \"s_out\"\nshape = {shape}\n")
    };
    let text = format!("[inputs.x]\nto = [\"acc.x\"]\n[outputs.y]\nfrom = \"acc.y\"\n{}", node("[2147483648]"));
    error(
        "state_over_max_state_bytes",
        &text,
        &["nodes.acc.state[0]", "8589934592 bytes", "streams.max_state_bytes (268435456)"],
    );
    let small = text.replace("[2147483648]", "[16]") + "[streams]\nmax_state_bytes = 63\n";
    error("state_over_small_max_state_bytes", &small, &["64 bytes", "streams.max_state_bytes (63)"]);
    let fits = small.replace("max_state_bytes = 63", "max_state_bytes = 64");
    PipelineSpec::from_file(&write("state_fits", &fits), &registry()).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn cycle_with_a_node_downstream_is_named_not_a_panic() {
    // p -> q -> p, and q feeds `a_sink`, which sorts first: the cycle search once started there,
    // walked children (it has none) and panicked instead of naming the cycle.
    let text = format!(
        "[inputs.x]\nto = [\"p.x\"]\n[outputs.z]\nfrom = \"a_sink.z\"\n{}{}{}\n[[edges]]\nfrom = \"p.y\"\nto = \"q.y\"\n[[edges]]\nfrom = \"q.back\"\nto = \"p.back\"\n[[edges]]\nfrom = \"q.w\"\nto = \"a_sink.w\"\n",
        cost_node("p", &[("x", "f32", F32_4), ("back", "f32", F32_4)], &[("y", "f32", F32_4)]),
        cost_node("q", &[("y", "f32", F32_4)], &[("back", "f32", F32_4), ("w", "f32", F32_4)]),
        cost_node("a_sink", &[("w", "f32", F32_4)], &[("z", "f32", F32_4)])
    );
    let shown = error("cycle_downstream", &text, &["edges: ", "cycle"]);
    assert!(shown.contains("p -> q -> p") || shown.contains("q -> p -> q"), "{shown}");
    assert!(!shown.contains("a_sink"), "the node downstream is not on the cycle: {shown}");
}
