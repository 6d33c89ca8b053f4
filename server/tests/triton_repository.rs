//! A Triton model repository served unchanged: a repository built here from the
//! models scripts/make_triton_models.py makes with onnx's helper API (add/sub in
//! INT32, INT8 and BYTES, identities in UINT16, UINT32, UINT64 and BF16, a model without a batch dim, versions 1 and 2 of one model)
//! and the shipped models/mlp.onnx, with a TOML pipeline beside them and five
//! bad models. The server starts with the good ones serving and each bad one
//! UNAVAILABLE with one error naming its file and field; server/tests/python/
//! test_triton.py then drives it with tritonclient over HTTP and gRPC, every
//! answer compared with onnxruntime's on the same file.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use baton_scratch::Scratch;
use baton_server::ServerConfig;
use common::{repo_root, run_client_script, run_to_end, TestServer};

/// Makes the test models into `dir` with the project's Python (onnx).
fn make_models(dir: &Path) {
    let python = repo_root().join(".venv/bin/python");
    assert!(python.is_file(), "{} is missing: run scripts/setup.sh", python.display());
    let mut command = Command::new(python);
    command.arg(repo_root().join("scripts/make_triton_models.py")).arg(dir);
    run_to_end(command, "scripts/make_triton_models.py", Duration::from_secs(120));
}

/// `repo/NAME/VERSION/model.onnx` copied from `from`.
fn version(repo: &Path, name: &str, version: u32, from: &Path) {
    let dir = repo.join(name).join(version.to_string());
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(from, dir.join("model.onnx")).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
}

fn config(repo: &Path, name: &str, text: &str) {
    std::fs::create_dir_all(repo.join(name)).unwrap();
    std::fs::write(repo.join(name).join("config.pbtxt"), text).unwrap();
}

/// One ensemble step: the model, its input_map and its output_map (model tensor, ensemble tensor).
type Step<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a [(&'a str, &'a str)]);

/// An ensemble config with input X, outputs SUM and DIFF, and `steps`.
fn ensemble_config(name: &str, steps: &[Step]) -> String {
    let map = |kind: &str, pairs: &[(&str, &str)]| {
        pairs.iter().map(|(k, v)| format!("{kind} {{ key: \"{k}\" value: \"{v}\" }}")).collect::<Vec<_>>().join(" ")
    };
    let steps: Vec<String> = steps
        .iter()
        .map(|(model, ins, outs)| {
            format!(
                "  {{ model_name: \"{model}\" model_version: -1 {} {} }}",
                map("input_map", ins),
                map("output_map", outs)
            )
        })
        .collect();
    format!(
        "name: \"{name}\"\nplatform: \"ensemble\"\nmax_batch_size: 4\n\
         input [ {{ name: \"X\" data_type: TYPE_FP32 dims: [ 4 ] }} ]\n\
         output [ {{ name: \"SUM\" data_type: TYPE_FP32 dims: [ 4 ] }}, {{ name: \"DIFF\" data_type: TYPE_FP32 dims: [ 4 ] }} ]\n\
         ensemble_scheduling {{\n step [\n{}\n ]\n}}\n",
        steps.join(",\n")
    )
}

/// The ensemble `ens` of three models (X -> p1 -> a, X -> p2 -> b, addsub(a, b) -> SUM, DIFF) and bad ones.
fn ensemble(repo: &Path, model: &dyn Fn(&str) -> PathBuf) {
    version(repo, "p1", 1, &model("plus_one"));
    version(repo, "p2", 1, &model("plus_two"));
    version(repo, "addsub", 1, &model("add_sub_fp32"));
    let last: Step = ("addsub", &[("INPUT0", "a"), ("INPUT1", "b")], &[("OUTPUT0", "SUM"), ("OUTPUT1", "DIFF")]);
    let good = [("p1", &[("X", "X")][..], &[("Y", "a")][..]), ("p2", &[("X", "X")], &[("Y", "b")]), last];
    for (name, steps) in [
        ("ens", good.to_vec()),
        ("bad_ens_model", vec![("nope", &[("X", "X")][..], &[("Y", "a")][..]), good[1], last]),
        ("bad_ens_tensor", vec![good[0], ("p2", &[("X", "zzz")], &[("Y", "b")]), last]),
        ("bad_ens_cycle_a", vec![("bad_ens_cycle_b", &[("X", "X")][..], &[("SUM", "a")][..]), good[1], last]),
        ("bad_ens_cycle_b", vec![("bad_ens_cycle_a", &[("X", "X")][..], &[("SUM", "a")][..]), good[1], last]),
    ] {
        config(repo, name, &ensemble_config(name, &steps));
        std::fs::create_dir_all(repo.join(name).join("1")).unwrap();
    }
    // The batching policy an ensemble's steps run under: a name that is no policy is refused.
    let policy =
        |p: &str| format!("parameters {{ key: \"baton_scheduler_policy\" value: {{ string_value: \"{p}\" }} }}\n");
    for (name, p) in [("ens_greedy", "greedy"), ("bad_ens_policy", "fastest")] {
        config(repo, name, &(ensemble_config(name, &good) + &policy(p)));
        std::fs::create_dir_all(repo.join(name).join("1")).unwrap();
    }
}

/// Triton's classic two-input add/sub config for data type `ty`.
fn add_sub_config(name: &str, ty: &str) -> String {
    let tensor = |n: &str| format!("  {{ name: \"{n}\" data_type: {ty} dims: [ 16 ] }}");
    format!(
        "name: \"{name}\"\nplatform: \"onnxruntime_onnx\"\nmax_batch_size: 8\n\
         input [\n{},\n{}\n]\noutput [\n{},\n{}\n]\n\
         dynamic_batching {{ max_queue_delay_microseconds: 100 }}\n\
         instance_group [ {{ count: 2 kind: KIND_CPU }} ]\n\
         parameters {{ key: \"intra_op_thread_count\" value: {{ string_value: \"1\" }} }}\n",
        tensor("INPUT0"),
        tensor("INPUT1"),
        tensor("OUTPUT0"),
        tensor("OUTPUT1")
    )
}

/// A sequence config over sequence_acc.onnx (`corrid` TYPE_INT64) or
/// sequence_acc_str.onnx (TYPE_STRING): `strategy` (`direct { ... }` or `oldest
/// { ... }`), its idle timeout, Triton's four control inputs and the implicit state.
fn sequence_config(name: &str, strategy: &str, idle_us: u64, corrid: &str) -> String {
    format!(
        "name: \"{name}\"\nbackend: \"onnxruntime\"\nmax_batch_size: 8\n\
         input [ {{ name: \"INPUT\" data_type: TYPE_INT32 dims: [ 1 ] }} ]\n\
         output [ {{ name: \"OUTPUT\" data_type: TYPE_INT32 dims: [ 1 ] }},\n\
         {{ name: \"CORRID_OUT\" data_type: {corrid} dims: [ 1 ] }},\n\
         {{ name: \"END_OUT\" data_type: TYPE_FP32 dims: [ 1 ] }} ]\n\
         sequence_batching {{\n  max_sequence_idle_microseconds: {idle_us}\n  {strategy}\n  control_input [\n\
         {{ name: \"START\" control [ {{ kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] }} ] }},\n\
         {{ name: \"END\" control [ {{ kind: CONTROL_SEQUENCE_END fp32_false_true: [ 0, 1 ] }} ] }},\n\
         {{ name: \"READY\" control [ {{ kind: CONTROL_SEQUENCE_READY bool_false_true: [ false, true ] }} ] }},\n\
         {{ name: \"CORRID\" control [ {{ kind: CONTROL_SEQUENCE_CORRID data_type: {corrid} }} ] }}\n  ]\n\
         state [ {{ input_name: \"STATE_IN\" output_name: \"STATE_OUT\" data_type: TYPE_INT32 dims: [ 1 ]\n\
         initial_state {{ data_type: TYPE_INT32 dims: [ 1 ] zero_data: true name: \"zeros\" }} }} ]\n}}\n"
    )
}

/// A model of one version from `file` with config `text`.
fn model_with(repo: &Path, name: &str, file: &Path, text: &str) {
    version(repo, name, 1, file);
    config(repo, name, text);
}

/// The good models besides ensembles and sequences: add/sub in INT32 and INT8,
/// one completed without a config, one without a batch dim, two versions, the
/// shipped MLP, a reshaped one, and a TOML pipeline beside them.
fn plain_models(repo: &Path, model: &dyn Fn(&str) -> PathBuf) {
    model_with(repo, "simple", &model("add_sub_int32"), &add_sub_config("simple", "TYPE_INT32"));
    model_with(repo, "simple_int8", &model("add_sub_int8"), &add_sub_config("simple_int8", "TYPE_INT8"));
    model_with(repo, "simple_string", &model("add_sub_string"), &add_sub_config("simple_string", "TYPE_STRING"));
    version(repo, "auto_int8", 1, &model("add_sub_int8")); // no config.pbtxt: completed
    let nobatch = "max_batch_size: 0\ninput [ { name: \"X\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n\
                   output [ { name: \"Y\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n";
    model_with(repo, "nobatch", &model("scale_fixed"), nobatch);
    version(repo, "versioned", 1, &model("plus_one"));
    version(repo, "versioned", 2, &model("plus_two"));
    config(repo, "versioned", "version_policy: { all { } }\n");
    let mlp = repo_root().join("models/mlp.onnx");
    version(repo, "mlp", 1, &mlp);
    let toml = format!(
        "[pipeline]\nname = \"tomlmlp\"\n[inputs.input]\nto = [\"m.input\"]\n[outputs.output]\nfrom = \"m.output\"\n\
         [nodes.m]\nstages = [{{ model = {:?} }}]\n",
        mlp.display().to_string()
    );
    std::fs::write(repo.join("tomlmlp.toml"), toml).unwrap();
    model_with(repo, "reshaped", &model("plus_one"), &reshaped_config("4"));
    model_with(repo, "optional", &model("scaled_add"), &optional_config("SCALE"));
    for (ty, triton) in [("uint16", "UINT16"), ("uint32", "UINT32"), ("uint64", "UINT64"), ("bfloat16", "BF16")] {
        let name = format!("identity_{ty}");
        model_with(repo, &name, &model(&name), &identity_config(triton));
    }
}

/// identity_<type>.onnx's config: X and Y of Triton type `ty`, F FP32, all [4] rows.
fn identity_config(ty: &str) -> String {
    format!(
        "max_batch_size: 8\ninput [ {{ name: \"X\" data_type: TYPE_{ty} dims: [ 4 ] }} ]\n\
         output [ {{ name: \"Y\" data_type: TYPE_{ty} dims: [ 4 ] }}, {{ name: \"F\" data_type: TYPE_FP32 dims: [ 4 ] }} ]\n\
         dynamic_batching {{ max_queue_delay_microseconds: 100 }}\n"
    )
}

/// scaled_add.onnx's config with input `name` optional (SCALE has a default in the model, X none).
fn optional_config(name: &str) -> String {
    let tensor = |n: &str, dims: u32| {
        let optional = if n == name { " optional: true" } else { "" };
        format!("{{ name: \"{n}\" data_type: TYPE_FP32 dims: [ {dims} ]{optional} }}")
    };
    format!(
        "max_batch_size: 4\ninput [ {}, {} ]\noutput [ {{ name: \"Y\" data_type: TYPE_FP32 dims: [ 4 ] }} ]\n\
         dynamic_batching {{ max_queue_delay_microseconds: 2000 }}\n",
        tensor("X", 4),
        tensor("SCALE", 1)
    )
}

/// A config whose input `X` has dims [2, 2] and reshape `shape` (the model's [4] is right), output likewise.
fn reshaped_config(shape: &str) -> String {
    format!(
        "max_batch_size: 4\ninput [ {{ name: \"X\" data_type: TYPE_FP32 dims: [ 2, 2 ] reshape {{ shape: [ {shape} ] }} }} ]\n\
         output [ {{ name: \"Y\" data_type: TYPE_FP32 dims: [ 2, 2 ] reshape {{ shape: [ 4 ] }} }} ]\n"
    )
}

/// The sequence models: `direct` and `oldest` with integer ids, one with string
/// ids, two with unsigned ones (CORRID TYPE_UINT64, TYPE_UINT32), one with a short idle timeout, and two bad ones (their errors: [`bad_models`]).
fn sequence_models(repo: &Path, model: &dyn Fn(&str) -> PathBuf) {
    let (acc, acc_str) = (model("sequence_acc"), model("sequence_acc_str"));
    let (acc_u64, acc_u32) = (model("sequence_acc_u64"), model("sequence_acc_u32"));
    let direct = "direct { max_queue_delay_microseconds: 100 }";
    let oldest = "oldest { max_candidate_sequences: 4 max_queue_delay_microseconds: 100 }";
    model_with(repo, "seq_direct", &acc, &sequence_config("seq_direct", direct, 60_000_000, "TYPE_INT64"));
    model_with(repo, "seq_oldest", &acc, &sequence_config("seq_oldest", oldest, 60_000_000, "TYPE_INT64"));
    model_with(repo, "seq_string", &acc_str, &sequence_config("seq_string", direct, 60_000_000, "TYPE_STRING"));
    model_with(repo, "seq_u64", &acc_u64, &sequence_config("seq_u64", direct, 60_000_000, "TYPE_UINT64"));
    model_with(repo, "seq_u32", &acc_u32, &sequence_config("seq_u32", oldest, 60_000_000, "TYPE_UINT32"));
    model_with(repo, "seq_idle", &acc, &sequence_config("seq_idle", "direct { }", 200_000, "TYPE_INT64"));
    let text = sequence_config("bad_seq_control", "direct { }", 1_000_000, "TYPE_INT64");
    model_with(repo, "bad_seq_control", &acc, &text.replace("\"READY\"", "\"READY_X\""));
    let text = sequence_config("bad_seq_corrid", "direct { }", 1_000_000, "TYPE_INT64");
    model_with(repo, "bad_seq_corrid", &acc, &text.replace("TYPE_INT64 }", "TYPE_FP32 }"));
}

/// The bad models that are not ensembles or sequences.
fn bad_plain_models(repo: &Path, model: &dyn Fn(&str) -> PathBuf) {
    let plus_one = model("plus_one");
    model_with(repo, "bad_reshape", &plus_one, &reshaped_config("5"));
    model_with(repo, "bad_missing_file", &plus_one, "default_model_filename: \"missing.onnx\"\n");
    std::fs::create_dir_all(repo.join("bad_no_model/1")).unwrap();
    config(repo, "bad_no_model", "max_batch_size: 4\n");
    let text = add_sub_config("bad_type", "TYPE_INT32").replacen("TYPE_INT32", "TYPE_FP32", 1);
    model_with(repo, "bad_type", &model("add_sub_int32"), &text);
    let text = "max_batch_size: 4\ndynamic_batching { max_queue_delay_microsecond: 100 }\n";
    model_with(repo, "bad_field", &plus_one, text);
    let text = "max_batch_size: 4\nbatch_input [ { kind: BATCH_ELEMENT_COUNT } ]\n";
    model_with(repo, "bad_unsupported", &plus_one, text);
    model_with(repo, "bad_optional", &model("scaled_add"), &optional_config("X"));
}

/// Each bad model, the start of its error (file, line, field) and what the error must hold.
fn bad_models(repo: &Path) -> Vec<(&'static str, String, &'static str)> {
    let file = |n: &str, tail: &str| format!("{}{tail}", repo.join(n).join("config.pbtxt").display());
    let step0 = ":8: field `ensemble_scheduling.step[0].model_name`";
    vec![
        ("bad_ens_model", file("bad_ens_model", step0), "`nope` is not a model"),
        ("bad_ens_tensor", file("bad_ens_tensor", ":6: field `ensemble_scheduling`"), "tensor `zzz`"),
        ("bad_ens_cycle_a", file("bad_ens_cycle_a", step0), "is an ensemble"),
        ("bad_ens_cycle_b", file("bad_ens_cycle_b", step0), "is an ensemble"),
        (
            "bad_ens_policy",
            file("bad_ens_policy", ":13: field `parameters[baton_scheduler_policy]`"),
            "`fastest` is not a batching policy",
        ),
        ("bad_reshape", file("bad_reshape", ":2: field `input[0].reshape`"), "holds 5 elements but dims [2, 2] hold 4"),
        ("bad_missing_file", file("bad_missing_file", ":1: field `default_model_filename`"), "missing.onnx"),
        ("bad_no_model", file("bad_no_model", ": "), "1/model.onnx of version 1 is missing"),
        ("bad_type", file("bad_type", ":5: field `input[0].data_type`"), "is TYPE_FP32 but the model's input"),
        ("bad_field", file("bad_field", ":2: column"), "max_queue_delay_microsecond"),
        ("bad_unsupported", file("bad_unsupported", ":2: field `batch_input`"), "not supported"),
        ("bad_optional", file("bad_optional", ":2: field `input[0].optional`"), "input `X` has no default in"),
        (
            "bad_seq_control",
            file("bad_seq_control", ":"),
            "field `sequence_batching.control_input[2].name`: `READY_X` is not a model input",
        ),
        (
            "bad_seq_corrid",
            file("bad_seq_corrid", ":"),
            "field `sequence_batching.control_input[3].control[0].data_type`: TYPE_FP32: a correlation id is",
        ),
    ]
}

/// The repository: good models, a TOML pipeline, and the bad ones with the
/// file and field each one's error must name.
fn build(repo: &Path, onnx: &Path) -> Vec<(&'static str, String, &'static str)> {
    let model = |n: &str| onnx.join(format!("{n}.onnx"));
    plain_models(repo, &model);
    ensemble(repo, &model);
    sequence_models(repo, &model);
    bad_plain_models(repo, &model);
    bad_models(repo)
}

#[test]
fn a_triton_repository_serves_unchanged_through_tritonclient_and_bad_models_fail_alone() {
    let scratch = Scratch::new("triton-repository");
    let (onnx, repo): (PathBuf, PathBuf) = (scratch.join("onnx"), scratch.join("repo"));
    make_models(&onnx);
    let bad = build(&repo, &onnx);
    the_engine_takes_inputs_with_defaults_when_asked(&onnx);
    let config = ServerConfig { max_body_bytes: 4_000_000, ..ServerConfig::ephemeral() };
    let server = TestServer::start_with_repository(&[], Some(&repo), config);
    let index = server.models().index().unwrap();
    for (name, starts, holds) in &bad {
        let row = index.iter().find(|e| e.name == *name).unwrap_or_else(|| panic!("{name} is not in the index"));
        assert_eq!(row.state, "UNAVAILABLE", "{name}");
        assert!(row.reason.contains(starts.as_str()), "{name}: the reason {:?} lacks {starts:?}", row.reason);
        assert!(row.reason.contains(holds), "{name}: the reason {:?} lacks {holds:?}", row.reason);
    }
    let extra = ["--repo", repo.to_str().unwrap(), "--onnx", onnx.to_str().unwrap()];
    run_client_script("test_triton.py", &server, &extra, Duration::from_secs(120));
    // test_triton.py unloaded the models it loaded from sent files: their folders are gone.
    let sent = server.models().repository().expect("a repository").sent_dir();
    let left: Vec<_> = std::fs::read_dir(sent).map(|d| d.map(|e| e.unwrap().path()).collect()).unwrap_or_default();
    assert!(left.is_empty(), "sent files outlive their models: {left:?}");
    run_client_script("test_triton_sequence.py", &server, &extra, Duration::from_secs(120));
    // Every string sequence the script opened was ended: the table of string ids is empty again.
    let strings = server.models().get("seq_string").expect("seq_string serves");
    assert_eq!(strings.string_sequences(), 0, "string ids outlive their sequences");
    an_idle_sequence_is_ended(&server);
}

/// The onnx engine's `overridable_inputs`: a graph input with a default joins the
/// signature after the required inputs; an initializer that is no graph input does not.
fn the_engine_takes_inputs_with_defaults_when_asked(onnx: &Path) {
    let engines = baton_engines::standard_registry();
    let names = |s: &baton::ModelSignature| s.inputs.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
    let scaled = onnx.join("scaled_add.onnx");
    let plain = baton_server::triton::signature(&engines, &scaled).unwrap();
    assert_eq!(names(&plain), ["X"], "without the param the default stays inside");
    let with = baton_server::triton::signature_with(&engines, &scaled, &["SCALE".into()]).unwrap();
    assert_eq!(names(&with), ["X", "SCALE"]);
    let e = baton_server::triton::signature_with(&engines, &onnx.join("plus_one.onnx"), &["c".into()]).unwrap_err();
    assert!(e.contains("`c` is not a graph input with a default") && e.contains("(it has: none)"), "{e}");
}

/// `max_sequence_idle_microseconds` (200 ms on `seq_idle`) ends a sequence that
/// sends nothing: once the model holds no open sequence, its next chunk is refused.
fn an_idle_sequence_is_ended(server: &TestServer) {
    let chunk = |start: bool| {
        let mut parameters = serde_json::json!({ "sequence_id": 77 });
        if start {
            parameters["sequence_start"] = true.into();
        }
        let input = serde_json::json!({ "name": "INPUT", "datatype": "INT32", "shape": [1, 1], "data": [5] });
        server
            .post_json("/v2/models/seq_idle/infer", &serde_json::json!({ "inputs": [input], "parameters": parameters }))
    };
    let opened = chunk(true);
    assert_eq!(opened.status, 200, "{:?}", String::from_utf8_lossy(&opened.body));
    let answer = opened.json();
    let outputs = answer["outputs"].as_array().expect("outputs");
    let output = outputs.iter().find(|o| o["name"] == "OUTPUT").expect("OUTPUT");
    assert_eq!(output["data"], serde_json::json!([5]), "the first value");
    let model = server.models().get("seq_idle").expect("seq_idle serves");
    assert_eq!(model.runtime().stream_usage()[0].1, 1, "the sequence is open");
    wait_for("the idle sequence to end", || model.runtime().stream_usage()[0].1 == 0);
    let refused = chunk(false);
    assert_eq!(refused.status, 400, "{:?}", String::from_utf8_lossy(&refused.body));
    assert!(refused.error().contains("unknown stream 77"), "{}", refused.error());
}

/// Waits (up to 60 s) until `cond` holds, checking every 20 ms: the poller's
/// period is 100 ms, so this waits for its next looks, never for a guessed time.
fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn states(server: &TestServer) -> Vec<(String, String, &'static str)> {
    let index = server.models().index().unwrap();
    index.into_iter().map(|e| (e.name, e.version, e.state)).collect()
}

#[test]
fn model_control_explicit_loads_the_named_models_and_poll_follows_the_files() {
    use baton_server::control::{ControlMode, ModelControl};
    let scratch = Scratch::new("triton-control");
    let (onnx, repo) = (scratch.join("onnx"), scratch.join("repo"));
    make_models(&onnx);
    let model = |n: &str| onnx.join(format!("{n}.onnx"));
    version(&repo, "one", 1, &model("plus_one"));
    version(&repo, "two", 1, &model("plus_two"));
    config(&repo, "two", "version_policy: { all { } }\n");
    let config = ServerConfig::ephemeral();

    // explicit: only --load-model's names load; the API loads the others.
    let control = ModelControl { mode: ControlMode::Explicit, load: vec!["one".into()], ..Default::default() };
    let server = TestServer::start_with_control(&repo, config.clone(), control);
    let ready = |s: &TestServer, name: &str| s.models().get(name).is_some();
    assert!(ready(&server, "one") && !ready(&server, "two"), "{:?}", states(&server));
    server.rt.block_on(server.models().api_load("two", None)).unwrap();
    assert!(ready(&server, "two"));
    drop(server);

    // poll: a new version folder is loaded, a removed model unloaded; the API refused.
    let control =
        ModelControl { mode: ControlMode::Poll, poll_every: Duration::from_millis(100), ..Default::default() };
    let server = TestServer::start_with_control(&repo, config, control);
    assert_eq!(server.models().find("two", "").unwrap().versions, ["1"]);
    let refused = server.rt.block_on(server.models().api_unload("one")).unwrap_err();
    assert!(refused.message.contains("--model-control-mode poll"), "{}", refused.message);
    let v2 = repo.join("two/2");
    std::fs::create_dir_all(&v2).unwrap();
    std::fs::copy(model("plus_one"), v2.join("model.part")).unwrap();
    std::fs::rename(v2.join("model.part"), v2.join("model.onnx")).unwrap();
    wait_for("version 2 of `two`", || server.models().find("two", "2").is_ok());
    assert_eq!(server.models().find("two", "").unwrap().versions, ["1", "2"]);
    std::fs::remove_dir_all(repo.join("one")).unwrap();
    wait_for("`one` unloaded", || !ready(&server, "one"));
    assert!(ready(&server, "two"), "{:?}", states(&server));
}

/// `baton serve model.onnx`: a plain ONNX file served as the model named by its
/// stem with a config completed from it, its answer equal to the pipeline's on the same file.
#[test]
fn a_plain_onnx_file_is_served_under_its_stem_with_a_completed_config() {
    baton_server::install_recorder();
    let engines = baton_engines::standard_registry();
    let file = repo_root().join("models/mlp.onnx");
    let loaded = baton_server::triton::load_file(&file, &engines).unwrap();
    let served = baton_server::triton::into_models(loaded);
    let reference = baton::Runtime::from_file(&common::pipeline("mlp.toml"), &engines).unwrap();
    let mut server_config = ServerConfig::ephemeral();
    server_config.max_body_bytes = 4_000_000;
    let server = baton_server::Server::new(server_config).served(served);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let running = rt.block_on(server.start()).unwrap();
    let http = running.http_addr().unwrap();
    let config = common::request(http, "GET", "/v2/models/mlp/config", &[], b"").json();
    assert_eq!(config["max_batch_size"], 4, "{config}");
    assert_eq!(config["platform"], "onnxruntime_onnx", "{config}");
    assert_eq!(config["input"][0]["dims"], serde_json::json!([256]), "{config}");
    let x: Vec<f32> = (0..512).map(|i| (i as f32 * 0.37).sin()).collect();
    let body = serde_json::json!({ "inputs": [{ "name": "input", "datatype": "FP32", "shape": [2, 256], "data": x }] });
    let answer = common::request(http, "POST", "/v2/models/mlp/infer", &[], body.to_string().as_bytes()).json();
    let got: Vec<f32> = serde_json::from_value(answer["outputs"][0]["data"].clone()).unwrap();
    let input = baton::Tensor::from_vec(vec![2, 256], x).unwrap();
    let want = reference.submit(baton::Request::new().input("input", input)).wait().unwrap();
    assert_eq!(got, want.get("output").unwrap().as_slice::<f32>().unwrap().to_vec());
    rt.block_on(running.shutdown());
    reference.shutdown();
}
