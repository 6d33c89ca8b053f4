//! Requests larger than a batch, split into jobs (`[fairness] granule`), on
//! real ONNX Runtime: the reassembled answer equals running the whole batch
//! directly, rows in order, through one node (mlp) and through a diamond
//! whose join waits for both branches of each job.

use baton::{Request, Runtime, Tensor};
use baton_e2e::{answer, config, random_f32, registry, Agreement, Direct};
use rand::rngs::StdRng;
use rand::SeedableRng;

fn start_split(name: &str, granule: usize) -> Runtime {
    let path = config(name);
    let mut cfg = baton::PipelineConfig::read(&path).unwrap();
    cfg.fairness.granule = Some(granule);
    Runtime::from_config(&cfg, Some(&path), &registry()).unwrap()
}

#[test]
fn mlp_request_of_100_rows_split_into_jobs_equals_the_whole_batch_run_directly() {
    let runtime = start_split("mlp.toml", 8);
    let mut rng = StdRng::seed_from_u64(4);
    let mut direct = Direct::load("mlp.onnx");
    let mut agreement = Agreement::default();
    for rows in [33, 100, 257] {
        let x = random_f32(&mut rng, rows, 256);
        let before = runtime.node_stats()[0].executions;
        let got = answer(runtime.submit(Request::new().input("input", x.clone()))).expect("answered");
        let executions = runtime.node_stats()[0].executions - before;
        assert!(executions >= rows.div_ceil(32) as u64, "{rows} rows ran in {executions} batches of at most 32");
        let want = direct.run_one(&[("input", &x)], "output");
        let got = got.get("output").unwrap();
        assert_eq!(got.shape(), want.shape());
        agreement.check(&format!("{rows} rows"), got, &want);
    }
    assert!(agreement.max_abs_diff < 1e-4, "max abs diff {:e}", agreement.max_abs_diff);
    assert_eq!(runtime.in_flight(), 0);
    runtime.shutdown();
}

#[test]
fn diamond_split_request_joins_per_job_and_equals_direct() {
    let runtime = start_split("diamond.toml", 4);
    let mut rng = StdRng::seed_from_u64(5);
    let (mut embed, mut a, mut b, mut join) = (
        Direct::load("embed.onnx"),
        Direct::load("branch_a.onnx"),
        Direct::load("branch_b.onnx"),
        Direct::load("join.onnx"),
    );
    let mut agreement = Agreement::default();
    // Several split requests at once, so jobs of different requests share batches.
    let inputs: Vec<Tensor> = (0..8).map(|i| random_f32(&mut rng, 40 + 13 * i, 32)).collect();
    let tickets: Vec<_> = inputs.iter().map(|x| runtime.submit(Request::new().input("x", x.clone()))).collect();
    for (x, ticket) in inputs.iter().zip(tickets) {
        let got = answer(ticket).expect("answered");
        let h = embed.run_one(&[("x", x)], "h");
        let out = join.run_one(&[("a", &a.run_one(&[("h", &h)], "a")), ("b", &b.run_one(&[("h", &h)], "b"))], "out");
        agreement.check("out", got.get("out").unwrap(), &out);
        agreement.check("features", got.get("features").unwrap(), &h);
    }
    assert!(agreement.max_abs_diff < 1e-4, "max abs diff {:e}", agreement.max_abs_diff);
    assert_eq!((runtime.in_flight(), runtime.partial_joins()), (0, 0));
    runtime.shutdown();
}
