//! configs/diamond.toml end to end on real ONNX Runtime: many concurrent
//! submitters, every request answered once, every answer equal to running
//! embed → branch_a, embed → branch_b, join directly with ORT.

use std::sync::Mutex;

use baton::{Outputs, Request, Runtime, Tensor};
use baton_e2e::mixed::DiamondReference;
use baton_e2e::{answer, batch_sizes, config, random_f32, record_metrics, registry, Agreement};
use rand::rngs::StdRng;
use rand::SeedableRng;

const THREADS: usize = 8;
/// Each submitter sends this many requests before waiting for their answers, so batches form.
const WINDOW: usize = 8;

/// One request and its answer.
struct Done {
    x: Tensor,
    priority: bool,
    outputs: Outputs,
}

/// Request `i`'s input: mostly 1 row, every 7th 2 rows, every 11th 3 rows; distinct random values.
fn input(i: usize) -> Tensor {
    let mut rng = StdRng::seed_from_u64(0xD1A3_0000 + i as u64);
    let rows = match (i % 11, i % 7) {
        (0, _) => 3,
        (_, 0) => 2,
        _ => 1,
    };
    random_f32(&mut rng, rows, 32)
}

/// Submits `total` requests from [`THREADS`] threads (request i is priority when
/// `priority(i)`), checks each resolved Ok and nothing is left in flight.
fn run_concurrently(total: usize, priority: impl Fn(usize) -> bool + Sync) -> Vec<Done> {
    record_metrics();
    let runtime = Runtime::from_file(&config("diamond.toml"), &registry()).expect("diamond.toml starts");
    let done = Mutex::new(Vec::with_capacity(total));
    let errors = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (runtime, done, errors, priority) = (&runtime, &done, &errors, &priority);
            s.spawn(move || {
                let mine: Vec<usize> = (t..total).step_by(THREADS).collect();
                for window in mine.chunks(WINDOW) {
                    let tickets: Vec<_> = window
                        .iter()
                        .map(|&i| {
                            let x = input(i);
                            let p = priority(i);
                            (x.clone(), p, runtime.submit(Request::new().input("x", x).priority(p)))
                        })
                        .collect();
                    for (x, priority, ticket) in tickets {
                        match answer(ticket) {
                            Ok(outputs) => done.lock().unwrap().push(Done { x, priority, outputs }),
                            Err(e) => errors.lock().unwrap().push(e.to_string()),
                        }
                    }
                }
            });
        }
    });
    let errors = errors.into_inner().unwrap();
    assert!(errors.is_empty(), "{} of {total} requests failed, first: {}", errors.len(), errors[0]);
    let done = done.into_inner().unwrap();
    assert_eq!(done.len(), total, "every request answered Ok exactly once");
    assert_eq!(runtime.in_flight(), 0, "nothing left in flight after every ticket resolved");
    runtime.shutdown();
    done
}

/// Compares every answer with the direct ORT chain; returns the agreement over `out` and `features`.
fn check_against_direct(done: &[Done]) -> Agreement {
    let mut diamond = DiamondReference::load();
    let mut agreement = Agreement::default();
    for (i, d) in done.iter().enumerate() {
        let h = diamond.features(&d.x);
        let out = diamond.out_from_features(&h);
        assert_eq!(d.outputs.len(), 2, "answer {i}: two outputs (out, features)");
        let rows = d.x.shape()[0];
        let got_out = d.outputs.get("out").expect("output `out`");
        let got_features = d.outputs.get("features").expect("output `features`");
        assert_eq!(got_out.shape(), [rows, 4], "answer {i}: out is [rows, 4]");
        assert_eq!(got_features.shape(), [rows, 64], "answer {i}: features is [rows, 64]");
        agreement.check(&format!("answer {i} (priority {}) out", d.priority), got_out, &out);
        agreement.check(&format!("answer {i} (priority {}) features", d.priority), got_features, &h);
    }
    agreement
}

fn report(test: &str, agreement: Agreement) {
    eprintln!(
        "{test}: {} tensors compared with direct ORT, {} bitwise equal, max abs diff {:e}",
        agreement.compared, agreement.bitwise, agreement.max_abs_diff
    );
    for node in ["embed", "branch_a", "branch_b", "join"] {
        let sizes = batch_sizes("diamond", node);
        let max = sizes.iter().copied().fold(0.0, f64::max);
        eprintln!("  {node}: {} batches so far in this binary, largest {max} rows", sizes.len());
    }
}

#[test]
fn diamond_1000_concurrent_requests_all_answered_once_and_equal_to_direct_ort() {
    let done = run_concurrently(1000, |_| false);
    let agreement = check_against_direct(&done);
    assert_eq!(agreement.compared, 2000);
    report("diamond", agreement);
    agreement.assert_bitwise("diamond");
}

#[test]
fn diamond_every_10th_request_priority_gives_the_same_correct_answers() {
    let done = run_concurrently(500, |i| i % 10 == 0);
    assert_eq!(done.iter().filter(|d| d.priority).count(), 50, "every 10th request was priority and answered");
    let agreement = check_against_direct(&done);
    assert_eq!(agreement.compared, 1000);
    report("diamond with priority", agreement);
    agreement.assert_bitwise("diamond with priority");
}
