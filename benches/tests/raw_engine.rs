//! The raw engine on models/mlp.onnx: I/O binding gives the plain path's outputs
//! bit for bit, and `--raw-loops N` runs N loops whose figures come back together.

use std::path::Path;
use std::time::Duration;

use baton::{PipelineConfig, PipelineSpec, Tensor};
use baton_bench::raw::{self, RawIo, RawOptions, Runner};
use rand::rngs::StdRng;
use rand::SeedableRng;

fn mlp_spec() -> PipelineSpec {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/mlp.toml");
    let config = PipelineConfig::read(&file).unwrap();
    PipelineSpec::build(&config, Some(&file), &baton_engines::standard_registry()).unwrap()
}

/// Every output of one run, as the bits of its f32 values.
fn outputs(io: RawIo, batch: usize) -> Vec<(String, Vec<i64>, Vec<u32>)> {
    let spec = mlp_spec();
    let stage = &spec.nodes[0].stages[0];
    let mut session = baton_engines::onnx::open_session(&stage.request).unwrap();
    let mut rng = StdRng::seed_from_u64(7);
    let inputs: Vec<Tensor> =
        stage.signature.inputs.iter().map(|s| baton_bench::load::generate(s, batch, &mut rng).unwrap()).collect();
    let mut runner = Runner::new(&session, inputs, io).unwrap();
    // Twice: the second run shows the binding's rebinding gives the same again.
    for _ in 0..2 {
        runner.run(&mut session, |_| ()).unwrap();
    }
    runner
        .run(&mut session, |outputs| {
            outputs
                .iter()
                .map(|(name, value)| {
                    let (shape, data) = value.try_extract_tensor::<f32>().unwrap();
                    (name.to_string(), shape.to_vec(), data.iter().map(|x| x.to_bits()).collect())
                })
                .collect()
        })
        .unwrap()
}

#[test]
fn io_binding_gives_the_plain_runs_outputs_bit_for_bit() {
    for batch in [1, 5] {
        let plain = outputs(RawIo::Plain, batch);
        let bound = outputs(RawIo::Binding, batch);
        assert!(!plain.is_empty() && !plain[0].2.is_empty());
        assert_eq!(plain[0].1[0], batch as i64);
        assert_eq!(plain, bound, "batch {batch}");
    }
}

#[test]
fn raw_loops_run_at_once_and_sum_their_figures() {
    let spec = mlp_spec();
    let options = RawOptions {
        batches: vec![1, 8],
        duration: Duration::from_millis(100),
        seed: 0,
        io: RawIo::Binding,
        loops: 2,
        node: None,
    };
    let mut told = Vec::new();
    let report = raw::measure(&spec, &options, |node, batch| told.push((node.to_string(), batch))).unwrap();
    assert_eq!(told, [("mlp".to_string(), 1), ("mlp".to_string(), 8)], "progress is told once per size");
    assert_eq!((report.io, report.loops), (RawIo::Binding, 2));
    let node = &report.nodes[0];
    assert_eq!(node.loops, 2);
    assert_eq!(node.cores, [1, 1], "configs/mlp.toml's cores = [1], round-robin");
    assert_eq!(node.points.iter().map(|p| p.batch).collect::<Vec<_>>(), [1, 8]);
    for p in &node.points {
        assert!(p.runs > 0 && p.rows_per_s > 0.0 && p.median_us > 0.0, "{p:?}");
        // runs/s is the sum of each loop's, so about runs ÷ seconds (the loops' intervals match).
        assert!((p.runs_per_s * p.seconds / p.runs as f64 - 1.0).abs() < 0.2, "{p:?}");
    }
}
