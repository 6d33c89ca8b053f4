//! A steady stream of batches through the onnx engine makes no heap allocation:
//! the batch is stitched into a pooled buffer, bound where it lies, and the
//! outputs are written into the engine's pooled buffers (engines/src/onnx/bound.rs).
//!
//! A counting global allocator counts this thread's allocations while the
//! hot path runs (ONNX Runtime's own C++ allocations are not Rust's and are
//! not counted: its arena is reused from run to run by ONNX Runtime itself).

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use baton::tensor::{stitch_pooled, TensorPool};
use baton::Tensor;
use baton_engines::OnnxEngine;
use common::{model, onnx_stage};

struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // `try_with`: the thread's locals may be gone while it exits.
        let _ = COUNTING.try_with(|on| {
            if on.get() {
                COUNT.with(|c| c.set(c.get() + 1));
            }
        });
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Heap allocations `f` makes on this thread.
fn allocations(f: impl FnOnce()) -> usize {
    COUNT.with(|c| c.set(0));
    COUNTING.with(|on| on.set(true));
    f();
    COUNTING.with(|on| on.set(false));
    COUNT.with(|c| c.get())
}

fn request(seed: usize) -> Tensor {
    let data: Vec<f32> = (0..256).map(|i| (((i + seed) * 37 % 101) as f32 - 50.0) / 25.0).collect();
    Tensor::from_slice(vec![1, 256], &data).unwrap()
}

#[test]
fn a_steady_stream_of_stitched_batches_allocates_nothing() {
    steady_stream_allocates_nothing(baton::BatchSizes::new(vec![1, 2, 4, 8]).unwrap());
}

#[test]
fn a_steady_stream_at_fixed_buffers_allocates_nothing() {
    let sizes = baton::BatchSizes::new(vec![1, 2, 4, 8]).unwrap();
    steady_stream_allocates_nothing(sizes.with_session_per_size(true).with_fixed_buffers(true));
}

#[test]
fn a_steady_stream_in_pieces_allocates_nothing() {
    // Batches of 5 and 8 rows run as pieces of 4 (the 5's last piece padded to 1).
    let sizes = baton::BatchSizes::new(vec![1, 2, 4, 8]).unwrap();
    steady_stream_allocates_nothing(sizes.with_piece_rows(Some(4)));
}

fn steady_stream_allocates_nothing(batch_sizes: baton::BatchSizes) {
    let stage = baton::StageRequest { batch_sizes, ..onnx_stage(model("mlp")) };
    let mut engine = OnnxEngine::new(&stage).unwrap();
    let requests: Vec<Tensor> = (0..8).map(request).collect();
    let mut pool = TensorPool::new(4);
    let mut parts: Vec<&Tensor> = Vec::with_capacity(8);
    let mut outputs: Vec<Tensor> = Vec::with_capacity(1);
    let mut batch = |rows: usize, engine: &mut OnnxEngine, outputs: &mut Vec<Tensor>| {
        parts.clear();
        parts.extend(requests.iter().take(rows));
        let stitched = stitch_pooled(&mut pool, &parts, stage.batch_sizes.padded(rows)).unwrap();
        engine.run_into(&[&stitched], outputs).unwrap();
        let answer = outputs[0].rows(0..1);
        assert_eq!(answer.shape(), &[1, 10]);
        outputs.clear();
    };
    // Each shape's first runs learn the output shapes and fill the pools.
    for _ in 0..3 {
        for rows in [3, 5, 8, 2] {
            batch(rows, &mut engine, &mut outputs);
        }
    }
    let made = allocations(|| {
        for _ in 0..50 {
            for rows in [3, 5, 8, 2] {
                batch(rows, &mut engine, &mut outputs);
            }
        }
    });
    assert_eq!(made, 0, "200 batches in the steady state made {made} heap allocations");
}
