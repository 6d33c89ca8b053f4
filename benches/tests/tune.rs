//! `baton tune` end to end on cost-model pipelines (no ONNX Runtime needed):
//! the same seed gives the same search and file, the written file loads and
//! keeps every key it did not tune, and the search finds what batching gains.

// Of `common`, this file takes its scratch folders and engines alone.
#[allow(dead_code)]
mod common;

use std::path::{Path, PathBuf};

use baton::{PipelineConfig, PipelineSpec};
use baton_bench::simulate::ModelTerms;
use baton_bench::tune::goodput::{Evaluator, Slo};
use baton_bench::tune::search::Budget;
use baton_bench::tune::{default_load, knobs, report, tune, TuneOptions};
use common::{engines, folder};

const SUITE: &str = "tune";

/// A cost-model node `name` taking `input`, giving `output`.
fn node(name: &str, input: &str, output: &str) -> String {
    format!(
        r#"
[nodes.{name}]
max_batch = 1
cost = 1.0
[[nodes.{name}.stages]]
engine = "cost_model"
params.inputs = [{{ name = "{input}", dtype = "f32", shape = [-1, 4] }}]
params.outputs = [{{ name = "{output}", dtype = "f32", shape = [-1, 4] }}]
params.latency_us = 100
"#
    )
}

/// A chain x -> a -> b -> y, batches of one row only as shipped, with a key
/// the search never touches (`pipeline.max_in_flight`, `idle_spin_us`).
fn chain(dir: &Path) -> PathBuf {
    let mut text = String::from(
        "[pipeline]\nname = \"chain\"\nmax_in_flight = 777\n[scheduler]\ncompute_budget = 1.0\n\
         [inputs.x]\nto = [\"a.x\"]\n[outputs.y]\nfrom = \"b.y\"\n",
    );
    text += &node("a", "x", "h");
    text += &node("b", "h", "y").replace("cost = 1.0", "cost = 1.0\nidle_spin_us = 33");
    text += "\n[[edges]]\nfrom = \"a.h\"\nto = \"b.h\"\n";
    let path = dir.join("chain.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// A profile where a batch of 8 costs little more than a batch of 1 (batching pays).
fn profile(dir: &Path) -> PathBuf {
    let batches = serde_json::json!([
        {"batch": 1, "runs": 3, "median_us": 500.0, "p10_us": 480.0, "p90_us": 520.0, "min_us": 480.0,
         "max_us": 520.0, "samples_us": [480.0, 500.0, 520.0]},
        {"batch": 8, "runs": 3, "median_us": 700.0, "p10_us": 680.0, "p90_us": 720.0, "min_us": 680.0,
         "max_us": 720.0, "samples_us": [680.0, 700.0, 720.0]}
    ]);
    let node = serde_json::json!({"provider": "cpu", "batches": batches, "memory_bytes": 0, "model_bytes": 0});
    let path = dir.join("profile.json");
    let text = serde_json::json!({"pipeline": "chain.toml", "cores": 2, "nodes": {"a": node, "b": node}});
    std::fs::write(&path, text.to_string()).unwrap();
    path
}

fn options(dir: &Path, seed: u64, write: &str) -> TuneOptions {
    let mut load = default_load();
    load.rows = 1;
    load.priority_fraction = 0.1;
    load.seed = seed;
    load.warmup_ns = 100_000_000;
    load.duration_ns = 300_000_000;
    TuneOptions {
        pipeline: chain(dir),
        profile: profile(dir),
        slo: Slo { priority_p99_us: 5_000, others_p99_us: 10_000 },
        load,
        streams: Default::default(),
        sessions: None,
        budget: Budget::Evaluations(25),
        top: 3,
        write: Some(dir.join(write)),
        model: ModelTerms::default(),
        keep: Vec::new(),
    }
}

#[test]
fn the_same_seed_gives_the_same_search_and_the_same_file() {
    let dir = folder(SUITE, "determinism");
    let (first, second) = (options(&dir, 4, "first.toml"), options(&dir, 4, "second.toml"));
    let a = tune(&first, &engines(), false).unwrap();
    let b = tune(&second, &engines(), false).unwrap();
    assert_eq!(a.found, b.found);
    assert_eq!(report(&first, &a), report(&second, &b).replace("second.toml", "first.toml"));
    let text = |o: &TuneOptions| std::fs::read_to_string(o.write.as_ref().unwrap()).unwrap();
    assert_eq!(text(&first), text(&second));
    assert_eq!(a.found.len(), 25, "the budget of candidates is spent exactly");
}

#[test]
fn the_written_file_loads_keeps_every_other_key_and_scores_what_the_search_found() {
    let dir = folder(SUITE, "written");
    let o = options(&dir, 1, "tuned.toml");
    let result = tune(&o, &engines(), false).unwrap();
    let written = o.write.as_ref().unwrap();
    let config = PipelineConfig::read(written).unwrap();
    PipelineSpec::build(&config, Some(written), &engines()).unwrap();
    assert_eq!(config.pipeline.max_in_flight, 777);
    assert_eq!(config.nodes["b"].idle_spin_us, 33);
    // The written table is the shipped one with the tuned keys set, nothing else.
    let shipped: toml::Table = std::fs::read_to_string(&o.pipeline).unwrap().parse().unwrap();
    let tuned: toml::Table = std::fs::read_to_string(written).unwrap().parse().unwrap();
    let best = &result.found[result.best];
    assert_eq!(tuned, knobs::apply(&shipped, &result.knobs, &best.choice));
    // Scoring the written file again gives the search's score.
    let engines = engines();
    let evaluator = Evaluator::new(written.clone(), &o, &engines).unwrap();
    assert_eq!(evaluator.evaluate(&tuned), best.score);
}

#[test]
fn the_search_starts_from_the_shipped_file_and_finds_what_batching_gains() {
    let dir = folder(SUITE, "gain");
    let result = tune(&options(&dir, 2, "gain.toml"), &engines(), false).unwrap();
    let shipped = &result.found[0];
    assert!(shipped.choice.iter().zip(&result.knobs).all(|(&c, k)| c == k.shipped), "the shipped file is scored first");
    let best = &result.found[result.best];
    // Batch-1 runs of 500 µs at each node cap the shipped file below 2000 requests/s;
    // batches of up to 8 rows (700 µs) carry far more.
    assert!(shipped.score.goodput > 0.0 && shipped.score.goodput < 2000.0, "{:?}", shipped.score);
    assert!(best.score.goodput >= 1.5 * shipped.score.goodput, "{:?} vs {:?}", best.score, shipped.score);
    let changed: Vec<String> =
        result.knobs.iter().zip(&best.choice).filter(|(k, &c)| c != k.shipped).map(|(k, _)| k.name()).collect();
    assert!(changed.iter().any(|k| k.ends_with(".max_batch")), "{changed:?}");
}

#[test]
fn bad_slo_and_budget_are_refused_with_what_is_wrong() {
    let e = "priority_p99=20ms".parse::<Slo>().unwrap_err();
    assert!(e.contains("others_p99"), "{e}");
    let e = "priority_p99=20ms,others_p99=fast".parse::<Slo>().unwrap_err();
    assert!(e.contains("others_p99") && e.contains("`fast`"), "{e}");
    let e = "priority_p99=1ms,other=2ms".parse::<Slo>().unwrap_err();
    assert!(e.contains("unknown key `other`"), "{e}");
    let slo: Slo = "priority_p99=2.5ms,others_p99=900us".parse().unwrap();
    assert_eq!(slo, Slo { priority_p99_us: 2500, others_p99_us: 900 });
    assert_eq!("90s".parse::<Budget>().unwrap(), Budget::Time(std::time::Duration::from_secs(90)));
    assert_eq!("300".parse::<Budget>().unwrap(), Budget::Evaluations(300));
    assert!("0".parse::<Budget>().is_err() && "lots".parse::<Budget>().is_err());
}
