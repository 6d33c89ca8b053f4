//! Embedding Baton in a program: load a pipeline, submit requests from
//! several threads, wait on the tickets, shut down gracefully.
//!
//! Run with `cargo run --release -p baton-examples --example embed` after
//! `scripts/setup.sh` (which fetches ONNX Runtime and makes the models).

use std::path::Path;

use baton::{Request, Runtime, Tensor};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // No options: `--help` says what this does, anything else is refused.
    clap::Command::new("embed")
        .about("Embeds Baton: loads configs/diamond.toml, submits 1,000 requests from 4 threads, shuts down")
        .get_matches();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let engines = baton_engines::standard_registry();
    let runtime = Runtime::from_file(&root.join("configs/diamond.toml"), &engines)?;
    println!("{}", runtime.spec().describe());

    std::thread::scope(|scope| {
        for submitter in 0..4 {
            let runtime = &runtime;
            scope.spawn(move || {
                for i in 0..250 {
                    let x: Vec<f32> = (0..32).map(|j| ((submitter * 1000 + i * 32 + j) as f32).sin()).collect();
                    let request = Request::new()
                        .input("x", Tensor::from_vec(vec![1, 32], x).expect("32 values"))
                        // Every 50th request is urgent: the scheduler runs its nodes first.
                        .priority(i % 50 == 0);
                    match runtime.submit(request).wait() {
                        Ok(outputs) if i == 0 => println!("submitter {submitter}: out = {:?}", outputs.get("out")),
                        Ok(_) => {}
                        Err(e) => eprintln!("submitter {submitter} request {i}: {e}"),
                    }
                }
            });
        }
    });
    runtime.shutdown();
    Ok(())
}
