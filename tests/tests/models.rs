//! The shipped single-node configs on real ONNX Runtime, with batches of
//! several multi-row requests: mlp.toml, two_io.toml, two_stage.toml (two
//! stages in one node), dtypes.toml (f16, i64, i32, u8, bool). Answers are
//! compared with direct ORT runs or with the values the models compute.

use baton::{Outputs, Request, Runtime, Tensor};
use baton_e2e::{answer, batch_sizes, random_f32, record_metrics, start, Agreement, Direct, Scheduling};
use half::f16;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const BOTH: [Scheduling; 2] = [Scheduling::AsShipped, Scheduling::Accumulate];

/// Rows of request `i`: 1, 2, 3 or 4 (never more than `max`).
fn rows(i: usize, max: usize) -> usize {
    (i % 4 + 1).min(max)
}

/// Submits every request before waiting for any (so they can share batches); returns the answers in order.
fn submit_all(runtime: &Runtime, requests: Vec<Request>) -> Vec<Outputs> {
    let tickets: Vec<_> = requests.into_iter().map(|r| runtime.submit(r)).collect();
    let answers: Vec<Outputs> = tickets
        .into_iter()
        .enumerate()
        .map(|(i, t)| answer(t).unwrap_or_else(|e| panic!("request {i}: {e}")))
        .collect();
    assert_eq!(runtime.in_flight(), 0);
    answers
}

/// With [`Scheduling::Accumulate`] the requests were submitted within one tick: some batch must
/// have held more rows than the largest request, or the test did not test batching.
fn assert_batched(pipeline: &str, node: &str, largest_request: usize) {
    let sizes = batch_sizes(pipeline, node);
    assert!(
        sizes.iter().any(|&s| s > largest_request as f64),
        "no batch of `{pipeline}.{node}` held more than one request's {largest_request} rows: {sizes:?}"
    );
}

fn report(test: &str, scheduling: Scheduling, a: Agreement) {
    eprintln!(
        "{test} ({scheduling:?}): {} tensors compared with direct ORT, {} bitwise equal, max abs diff {:e}",
        a.compared, a.bitwise, a.max_abs_diff
    );
}

#[test]
fn mlp_batched_multi_row_requests_equal_direct_ort() {
    record_metrics();
    let mut direct = Direct::load("mlp.onnx");
    let mut rng = StdRng::seed_from_u64(1);
    for scheduling in BOTH {
        let runtime = start("mlp.toml", scheduling);
        let xs: Vec<Tensor> = (0..48).map(|i| random_f32(&mut rng, rows(i, 32), 256)).collect();
        let answers = submit_all(&runtime, xs.iter().map(|x| Request::new().input("input", x.clone())).collect());
        runtime.shutdown();
        let mut agreement = Agreement::default();
        for (i, (x, a)) in xs.iter().zip(&answers).enumerate() {
            let want = direct.run_one(&[("input", x)], "output");
            agreement.check(&format!("request {i} output"), a.get("output").expect("output"), &want);
        }
        report("mlp", scheduling, agreement);
        agreement.assert_bitwise("mlp");
    }
    assert_batched("mlp", "mlp", 4);
}

#[test]
fn two_io_sum_and_proj_of_batched_requests_equal_direct_ort() {
    record_metrics();
    let mut direct = Direct::load("two_io.onnx");
    let mut rng = StdRng::seed_from_u64(2);
    for scheduling in BOTH {
        let runtime = start("two_io.toml", scheduling);
        let inputs: Vec<(Tensor, Tensor)> = (0..40)
            .map(|i| {
                let r = rows(i, 32);
                (random_f32(&mut rng, r, 16), random_f32(&mut rng, r, 16))
            })
            .collect();
        let requests = inputs.iter().map(|(a, b)| Request::new().input("a", a.clone()).input("b", b.clone()));
        let answers = submit_all(&runtime, requests.collect());
        runtime.shutdown();
        let mut agreement = Agreement::default();
        for (i, ((a, b), got)) in inputs.iter().zip(&answers).enumerate() {
            let want = direct.run(&[("a", a), ("b", b)]);
            for (name, tensor) in &want {
                agreement.check(&format!("request {i} {name}"), got.get(name).expect("output"), tensor);
            }
            // The sum is elementwise: exact whatever the batching.
            let sum: Vec<f32> =
                a.as_slice::<f32>().unwrap().iter().zip(b.as_slice::<f32>().unwrap()).map(|(x, y)| x + y).collect();
            assert_eq!(got.get("sum").unwrap().as_slice::<f32>().unwrap(), &sum[..], "request {i}: sum = a + b");
        }
        report("two_io", scheduling, agreement);
        agreement.assert_bitwise("two_io");
    }
    assert_batched("two_io", "two_io", 4);
}

#[test]
fn two_stage_node_runs_embed_then_branch_a_like_the_direct_chain() {
    record_metrics();
    let mut embed = Direct::load("embed.onnx");
    let mut branch_a = Direct::load("branch_a.onnx");
    let mut rng = StdRng::seed_from_u64(3);
    for scheduling in BOTH {
        let runtime = start("two_stage.toml", scheduling);
        assert_eq!(runtime.spec().nodes.len(), 1, "one node");
        assert_eq!(runtime.spec().nodes[0].stages.len(), 2, "of two stages");
        let xs: Vec<Tensor> = (0..40).map(|i| random_f32(&mut rng, rows(i, 16), 32)).collect();
        let answers = submit_all(&runtime, xs.iter().map(|x| Request::new().input("x", x.clone())).collect());
        runtime.shutdown();
        let mut agreement = Agreement::default();
        for (i, (x, got)) in xs.iter().zip(&answers).enumerate() {
            assert_eq!(got.len(), 1, "request {i}: only `a` is a pipeline output");
            let h = embed.run_one(&[("x", x)], "h");
            let want = branch_a.run_one(&[("h", &h)], "a");
            agreement.check(&format!("request {i} a"), got.get("a").expect("output a"), &want);
        }
        report("two_stage", scheduling, agreement);
        agreement.assert_bitwise("two_stage");
    }
    assert_batched("two_stage", "encoder", 4);
}

/// One dtypes.toml request and the answers the model must give.
struct DtypeCase {
    request: Request,
    f16_out: Vec<f16>,
    i64_out: Vec<i64>,
    i32_out: Vec<i32>,
    u8_out: Vec<u8>,
    flag_out: Vec<bool>,
}

fn dtype_case(rng: &mut impl Rng, rows: usize) -> DtypeCase {
    let n = rows * 4;
    // Halves of small integers: exact in f16, and so are their doubles.
    let f: Vec<f16> = (0..n).map(|_| f16::from_f32(rng.random_range(-2000i32..2000) as f32 / 2.0)).collect();
    let i64s: Vec<i64> = (0..n).map(|_| rng.random_range(-(1i64 << 60)..(1i64 << 60))).collect();
    let i32s: Vec<i32> = (0..n).map(|_| rng.random_range(i32::MIN..i32::MAX)).collect();
    let u8s: Vec<u8> = (0..n).map(|_| rng.random()).collect();
    let flags: Vec<bool> = (0..n).map(|_| rng.random()).collect();
    let shape = vec![rows, 4];
    let request = Request::new()
        .input("f16", Tensor::from_slice(shape.clone(), &f).unwrap())
        .input("i64", Tensor::from_slice(shape.clone(), &i64s).unwrap())
        .input("i32", Tensor::from_slice(shape.clone(), &i32s).unwrap())
        .input("u8", Tensor::from_slice(shape.clone(), &u8s).unwrap())
        .input("flag", Tensor::from_slice(shape, &flags).unwrap());
    DtypeCase {
        request,
        f16_out: f.iter().map(|x| f16::from_f32(x.to_f32() * 2.0)).collect(),
        i64_out: i64s.iter().map(|x| x + 1).collect(),
        i32_out: i32s.iter().map(|x| x + 1).collect(),
        u8_out: u8s,
        flag_out: flags.iter().map(|b| !b).collect(),
    }
}

#[test]
fn dtypes_batched_f16_doubled_i64_i32_incremented_u8_identity_bool_negated() {
    record_metrics();
    let mut rng = StdRng::seed_from_u64(4);
    for scheduling in BOTH {
        let runtime = start("dtypes.toml", scheduling);
        // max_batch is 8: requests of 1 to 3 rows.
        let cases: Vec<DtypeCase> = (0..40).map(|i| dtype_case(&mut rng, i % 3 + 1)).collect();
        let answers = submit_all(&runtime, cases.iter().map(|c| c.request.clone()).collect());
        runtime.shutdown();
        for (i, (c, got)) in cases.iter().zip(&answers).enumerate() {
            let rows = c.flag_out.len() / 4;
            for (name, tensor) in got.iter() {
                assert_eq!(tensor.shape(), [rows, 4], "request {i} {name}: shape");
            }
            let out = |name: &str| got.get(name).unwrap_or_else(|| panic!("output {name}"));
            assert_eq!(out("f16_out").as_slice::<f16>().unwrap(), &c.f16_out[..], "request {i}: f16 * 2");
            assert_eq!(out("i64_out").as_slice::<i64>().unwrap(), &c.i64_out[..], "request {i}: i64 + 1");
            assert_eq!(out("i32_out").as_slice::<i32>().unwrap(), &c.i32_out[..], "request {i}: i32 + 1");
            assert_eq!(out("u8_out").as_slice::<u8>().unwrap(), &c.u8_out[..], "request {i}: u8 identity");
            assert_eq!(out("flag_out").as_slice::<bool>().unwrap(), &c.flag_out[..], "request {i}: not flag");
        }
    }
    assert_batched("dtypes", "dtypes", 3);
}

#[test]
fn dtypes_answers_equal_direct_ort_too() {
    let mut direct = Direct::load("dtypes.onnx");
    let mut rng = StdRng::seed_from_u64(5);
    let runtime = start("dtypes.toml", Scheduling::Accumulate);
    let cases: Vec<DtypeCase> = (0..16).map(|i| dtype_case(&mut rng, i % 3 + 1)).collect();
    let answers = submit_all(&runtime, cases.iter().map(|c| c.request.clone()).collect());
    runtime.shutdown();
    for (i, (c, got)) in cases.iter().zip(&answers).enumerate() {
        let inputs: Vec<(&str, &Tensor)> = c.request.inputs.iter().map(|(n, t)| (n.as_str(), t)).collect();
        for (name, want) in direct.run(&inputs) {
            assert_eq!(got.get(&name), Some(&want), "request {i} {name}: bitwise equal to direct ORT");
        }
    }
}
