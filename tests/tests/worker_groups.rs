//! Worker groups on real ONNX Runtime: the mlp node with a `narrow` group
//! (intra_threads 1, capacity 8 rows) and a `wide` one (intra_threads 2):
//! answers equal running the model directly whichever group ran them, and
//! requests asking for a kind, or too large for the narrow group, are served.

use baton::config::WorkerGroupConfig;
use baton::{Request, RequestError, Runtime};
use baton_e2e::{answer, config, random_f32, registry, Agreement, Direct};
use rand::rngs::StdRng;
use rand::SeedableRng;

fn group(kind: &str, intra_threads: usize, max_rows: Option<usize>) -> WorkerGroupConfig {
    WorkerGroupConfig {
        kind: kind.into(),
        workers: 1,
        intra_threads: Some(intra_threads),
        inter_threads: None,
        cores: Vec::new(),
        max_rows,
    }
}

#[test]
fn mlp_with_two_groups_of_different_intra_threads_answers_as_the_model_does() {
    let path = config("mlp.toml");
    let mut cfg = baton::PipelineConfig::read(&path).unwrap();
    let node = cfg.nodes.get_mut("mlp").unwrap();
    node.cores.clear();
    node.worker_groups = vec![group("narrow", 1, Some(8)), group("wide", 2, None)];
    node.placement_timeout_us = Some(5_000);
    cfg.scheduler.compute_budget = Some(2.0);
    let runtime = Runtime::from_config(&cfg, Some(&path), &registry()).unwrap();
    let mut rng = StdRng::seed_from_u64(6);
    let mut direct = Direct::load("mlp.onnx");
    let mut agreement = Agreement::default();
    let mut cases = Vec::new();
    for i in 0..24 {
        let rows = [1, 3, 8, 20, 32][i % 5];
        let x = random_f32(&mut rng, rows, 256);
        let request = Request::new().input("input", x.clone());
        let request = match i % 3 {
            0 => request.worker_kind("wide"),
            1 => request.worker_kind("narrow"),
            _ => request,
        };
        cases.push((i, rows, x, runtime.submit(request)));
    }
    for (i, rows, x, ticket) in cases {
        let result = answer(ticket);
        if i % 3 == 1 && rows > 8 {
            // Asks for the narrow group, whose capacity is 8 rows: no group can take it.
            match result {
                Err(RequestError::InvalidInput(m)) => assert!(m.contains("narrow (max_rows 8)"), "{m}"),
                other => panic!("request {i} ({rows} rows, narrow): {other:?}"),
            }
            continue;
        }
        let got = result.unwrap_or_else(|e| panic!("request {i} ({rows} rows): {e}"));
        let want = direct.run_one(&[("input", &x)], "output");
        agreement.check(&format!("request {i} ({rows} rows)"), got.get("output").unwrap(), &want);
    }
    assert!(agreement.max_abs_diff < 1e-4, "max abs diff {:e}", agreement.max_abs_diff);
    assert_eq!(runtime.in_flight(), 0);
    runtime.shutdown();
}
