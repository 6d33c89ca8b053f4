//! `baton tune` under stream loads and the collab example's sessions, on
//! cost-model pipelines (no ONNX Runtime needed): a candidate's point is
//! `baton simulate`'s point, the search finds goodput and is deterministic, the
//! written file loads and says its load, the sessions' rate bound and schedule
//! by hand, and the loads the simulator cannot send are refused by name.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use baton::{PipelineConfig, PipelineSpec};
use baton_bench::load::Arrivals;
use baton_bench::simulate::engine::SimLoad;
use baton_bench::simulate::traffic::StreamLoad;
use baton_bench::simulate::{simulate, ModelTerms, SessionLoad};
use baton_bench::tune::goodput::{Evaluator, Slo};
use baton_bench::tune::search::Budget;
use baton_bench::tune::{default_load, report, tune, TuneOptions};
use common::streams::{collab_like, mixed, mixed_profile, session_file};
use common::{engines, folder, options as sim_options, profile};

const SUITE: &str = "tunestreams";

/// The mixed load of the simulator's stream tests: 6-chunk streams carrying `chunk`, half the requests.
fn stream_load() -> StreamLoad {
    StreamLoad { chunks: 6, inputs: vec!["chunk".into()], fraction: 0.5, tenants: Vec::new() }
}

/// `baton tune` on `pipeline` under `profile`: 0.1 s warm-up, 0.3 s measured, `budget` candidates.
fn tune_options(pipeline: PathBuf, profile: PathBuf, write: PathBuf, budget: usize) -> TuneOptions {
    let mut load = default_load();
    load.warmup_ns = 100_000_000;
    load.duration_ns = 300_000_000;
    load.seed = 3;
    TuneOptions {
        pipeline,
        profile,
        slo: Slo { priority_p99_us: 5_000, others_p99_us: 5_000 },
        load,
        streams: StreamLoad::default(),
        sessions: None,
        budget: Budget::Evaluations(budget),
        top: 3,
        write: Some(write),
        model: ModelTerms::default(),
        keep: Vec::new(),
    }
}

/// The evaluator `tune` builds for `o` (its traffic checked).
fn evaluator<'a>(o: &TuneOptions, engines: &'a baton::EngineRegistry) -> Evaluator<'a> {
    Evaluator::new(o.pipeline.clone(), o, engines).unwrap()
}

fn shipped_table(path: &Path) -> toml::Table {
    std::fs::read_to_string(path).unwrap().parse().unwrap()
}

/// The collab-shaped pipeline: OCR 20 ms a batch of its one row, speech and
/// recommend 1 ms at every size; sessions of 3 chunks (1536 samples).
fn collab(dir: &Path) -> (PathBuf, PathBuf, SessionLoad) {
    let (ocr, one_ms): (&[f64], &[f64]) = (&[20_000.0], &[1000.0]);
    let fixed = |us: &'static [f64]| -> Vec<(usize, &'static [f64])> { vec![(1, us), (8, us)] };
    let prof = profile(dir, &[("text", &fixed(ocr)), ("speech", &fixed(one_ms)), ("recommend", &fixed(one_ms))]);
    (collab_like(dir), prof, SessionLoad { file: session_file(dir, 1536), pace_ms: 32.0 })
}

#[test]
fn a_candidates_point_is_the_point_baton_simulate_runs_for_the_same_load() {
    let dir = folder(SUITE, "same-point");
    let (pipeline, prof) = (mixed(&dir, 8), mixed_profile(&dir, &[150.0, 200.0, 400.0, 900.0]));
    let mut o = tune_options(pipeline.clone(), prof.clone(), dir.join("unused.toml"), 1);
    o.streams = stream_load();
    let mut s = sim_options(pipeline, prof);
    (s.bench.stream_chunks, s.bench.stream_inputs, s.bench.stream_fraction) = (6, vec!["chunk".into()], 0.5);
    (s.bench.warmup, s.bench.duration, s.bench.seed) = (Duration::from_millis(100), Duration::from_millis(300), 3);
    s.bench.rate = vec![3000.0];
    s.bench.concurrency = Vec::new();
    let simulated = simulate(&s, &engines()).unwrap().points.remove(0);
    let registry = engines();
    let e = evaluator(&o, &registry);
    let (spec, durations) = e.spec(&shipped_table(&o.pipeline)).unwrap();
    let point = e.point(&spec, &durations, SimLoad::Open { rate: 3000.0, arrivals: Arrivals::Poisson }).unwrap();
    assert!(point.priority_latency.count > 0, "final chunks were answered");
    assert_eq!(point, simulated);
}

#[test]
fn tune_on_a_stateful_pipeline_under_streams_finds_goodput_and_the_same_seed_gives_the_same_file() {
    let dir = folder(SUITE, "streams");
    let (pipeline, prof) = (mixed(&dir, 8), mixed_profile(&dir, &[150.0, 200.0, 400.0, 900.0]));
    let run = |name: &str| {
        let mut o = tune_options(pipeline.clone(), prof.clone(), dir.join(name), 6);
        o.streams = stream_load();
        let result = tune(&o, &engines(), false).unwrap();
        (o, result)
    };
    let ((first, a), (second, b)) = (run("first.toml"), run("second.toml"));
    assert_eq!(a.found, b.found);
    assert_eq!(report(&first, &a), report(&second, &b));
    let text = |o: &TuneOptions| std::fs::read_to_string(o.write.as_ref().unwrap()).unwrap();
    assert_eq!(text(&first), text(&second));
    let shipped = &a.found[0].score;
    assert!(shipped.goodput > 0.0 && shipped.error.is_none(), "{shipped:?}");
    assert!(a.found[a.best].score.goodput >= shipped.goodput);
    // The written file loads as a pipeline file and says the load it was tuned under.
    let written = first.write.as_ref().unwrap();
    let config = PipelineConfig::read(written).unwrap();
    PipelineSpec::build(&config, Some(written), &engines()).unwrap();
    let load = "--stream-chunks 6 --stream-inputs chunk --stream-fraction 0.5";
    assert!(text(&first).contains(&format!("# Load: --rows 1 --priority-fraction 0 {load}.")), "{}", text(&first));
    assert!(report(&first, &a).contains(load));
}

#[test]
fn tune_with_sessions_scans_below_the_ocrs_bound_and_counts_sessions() {
    let dir = folder(SUITE, "sessions");
    let (pipeline, prof, sessions) = collab(&dir);
    let run = |name: &str| {
        let mut o = tune_options(pipeline.clone(), prof.clone(), dir.join(name), 4);
        o.sessions = Some(sessions.clone());
        o.slo = Slo { priority_p99_us: 30_000, others_p99_us: 5_000 };
        let result = tune(&o, &engines(), false).unwrap();
        (o, result)
    };
    let ((first, a), (second, b)) = (run("first.toml"), run("second.toml"));
    assert_eq!(a.found, b.found);
    let text = |o: &TuneOptions| std::fs::read_to_string(o.write.as_ref().unwrap()).unwrap();
    assert_eq!(text(&first), text(&second));
    // The OCR (one worker) takes 20 ms a session: 50 sessions/s saturate it, the
    // bound (speech and recommend add 0.5 ms a session on the 2 cores: 97.6/s).
    let shipped = &a.found[0].score;
    assert_eq!(shipped.capacity, 50.0);
    assert!(shipped.goodput > 0.0 && shipped.goodput < 50.0, "{shipped:?}");
    assert!(shipped.priority_p99_us > 0 && shipped.priority_p99_us <= 30_000, "{shipped:?}");
    assert!(text(&first).contains("sessions/s") && text(&first).contains("# Load: --sessions "));
    assert!(report(&first, &a).contains("(rates in sessions/s)"));
    PipelineConfig::read(first.write.as_ref().unwrap()).unwrap();
}

#[test]
fn the_sessions_schedule_is_what_a_pipeline_that_keeps_up_answers() {
    let dir = folder(SUITE, "schedule");
    let (pipeline, prof, sessions) = collab(&dir);
    let mut o = tune_options(pipeline, prof, dir.join("unused.toml"), 1);
    o.sessions = Some(sessions);
    let registry = engines();
    let e = evaluator(&o, &registry);
    let (spec, durations) = e.spec(&shipped_table(&o.pipeline)).unwrap();
    // 10 sessions/s of 3 chunks at 32 ms: the OCR is a fifth busy, chunks are answered in 1 ms.
    let p = e.point(&spec, &durations, SimLoad::Open { rate: 10.0, arrivals: Arrivals::Poisson }).unwrap();
    let window = (o.load.warmup_ns, o.load.warmup_ns + o.load.duration_ns);
    let due = e.traffic.scheduled_chunks(10.0, Arrivals::Poisson, o.load.seed, window.0, window.1).unwrap();
    assert!(due > 0);
    assert!(p.requests.abs_diff(due) <= 1, "answered {} of {due} chunks due", p.requests);
    assert!(e.meets(&p, 10.0));
}

#[test]
fn loads_the_simulator_cannot_send_are_refused_by_name() {
    let dir = folder(SUITE, "refusals");
    let (pipeline, prof) = (mixed(&dir, 8), mixed_profile(&dir, &[100.0]));
    let err = |o: &TuneOptions| tune(o, &engines(), false).unwrap_err();
    let mut o = tune_options(pipeline, prof, dir.join("unused.toml"), 1);
    assert!(err(&o).contains("node `vad` keeps per-stream state"), "{}", err(&o));
    o.streams = stream_load();
    o.load.rows = 2;
    assert!(err(&o).contains("--rows 1"), "{}", err(&o));
    o.load.rows = 1;
    o.streams.inputs = vec!["audio".into()];
    assert!(err(&o).contains("--stream-inputs: the pipeline has no input `audio`"), "{}", err(&o));
    o.streams.inputs = vec!["chunk".into(), "x".into()];
    assert!(err(&o).contains("names every input"), "{}", err(&o));
    o.streams = StreamLoad { fraction: 0.0, ..stream_load() };
    assert!(err(&o).contains("--stream-fraction"), "{}", err(&o));

    let (pipeline, prof, sessions) = collab(&dir);
    let mut o = tune_options(pipeline, prof, dir.join("unused.toml"), 1);
    o.sessions = Some(sessions);
    o.load.capacity_concurrency = Some(16);
    assert!(err(&o).contains("--sessions has no closed loop: leave out --capacity-concurrency"), "{}", err(&o));
    o.load.capacity_concurrency = None;
    o.streams = StreamLoad { chunks: 4, ..StreamLoad::default() };
    assert!(err(&o).contains("leave out --stream-chunks"), "{}", err(&o));
    o.streams = StreamLoad::default();
    o.load.priority_fraction = 0.1;
    assert!(err(&o).contains("leave out --priority-fraction"), "{}", err(&o));
}
