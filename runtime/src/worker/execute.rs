//! Running one batch: stitch the node's inputs, run every stage, check what each returns.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use super::Worker;
use crate::engine::{BatchInfo, StageOutput};
use crate::node::fault::{Fault, FaultDraws};
use crate::node::Task;
use crate::spec::{NodeSpec, StageSource};
use crate::tensor::{stitch_padded, stitch_pooled, Tensor};

/// A batch's stage outputs, and each stage's rows per task.
pub(super) struct Executed {
    pub outputs: Vec<Vec<Tensor>>,
    pub rows: Vec<Vec<usize>>,
}

impl Worker {
    /// Stitches the node inputs (padding ragged ones) and runs every stage.
    pub(super) fn execute(&mut self, tasks: &[Task]) -> Result<Executed, String> {
        let spec = Arc::clone(&self.settings.spec);
        let inputs = self.stitch(tasks)?;
        let task_rows: Vec<usize> = tasks.iter().map(|t| t.rows).collect();
        let batch = BatchInfo {
            deadline: tasks.iter().filter_map(|t| t.request.deadline).min(),
            streams: tasks.iter().map(|t| t.request.stream).collect(),
        };
        let mut outputs: Vec<Vec<Tensor>> = Vec::with_capacity(spec.stages.len());
        let mut rows_out: Vec<Vec<usize>> = Vec::with_capacity(spec.stages.len());
        for (s, stage) in spec.stages.iter().enumerate() {
            let mut rows_in: Option<&Vec<usize>> = None;
            let mut stage_inputs: Vec<&Tensor> = Vec::with_capacity(stage.sources.len());
            for source in &stage.sources {
                let (tensor, rows) = match *source {
                    StageSource::NodeInput(slot) => (&inputs[slot], &task_rows),
                    StageSource::StageOutput { stage, index } => (&outputs[stage][index], &rows_out[stage]),
                };
                if rows_in.is_some_and(|r| r != rows) {
                    return Err(format!(
                        "stage {s} takes inputs with different rows per request; their item counts must agree"
                    ));
                }
                rows_in = Some(rows);
                stage_inputs.push(tensor);
            }
            let rows_in = rows_in.unwrap_or(&task_rows).clone();
            let total: usize = rows_in.iter().sum();
            let output = if total == 0 && !stage.is_function() {
                // Nothing to infer (every request has zero items here): empty outputs, no engine call.
                StageOutput { tensors: empty_outputs(&stage.signature)?, rows: None }
            } else {
                self.run_stage(s, &stage_inputs, &rows_in, &batch)?
            };
            let rows = output.rows.unwrap_or(rows_in);
            if rows.len() != tasks.len() {
                return Err(format!(
                    "stage {s} reported rows for {} requests; the batch has {}",
                    rows.len(),
                    tasks.len()
                ));
            }
            check_outputs(&spec, s, &output.tensors, rows.iter().sum())?;
            outputs.push(output.tensors);
            rows_out.push(rows);
        }
        Ok(Executed { outputs, rows: rows_out })
    }

    /// The node's inputs for `tasks`, each stitched along dim 0: padded where
    /// the node pads ragged inputs, else into a pooled buffer in the memory the
    /// parts lie in, with room for the rows the first stage pads the batch to.
    fn stitch(&mut self, tasks: &[Task]) -> Result<Vec<Tensor>, String> {
        let spec = &self.settings.spec;
        let rows: usize = tasks.iter().map(|t| t.rows).sum();
        // Room for the rows the first stage pads the batch to (fixed batch sizes), so it need not copy.
        let capacity = spec.stages.first().map_or(rows, |stage| stage.request.batch_sizes.padded(rows));
        let mut inputs = Vec::with_capacity(spec.inputs.len());
        let mut parts: Vec<&Tensor> = Vec::with_capacity(tasks.len());
        for slot in 0..spec.inputs.len() {
            parts.clear();
            parts.extend(tasks.iter().map(|t| &t.inputs[slot]));
            let stitched = match spec.pad.iter().find(|p| p.slot == slot) {
                Some(pad) => stitch_padded(&parts, &pad.axes, &pad.multiples, pad.value),
                None => {
                    let pool = match (parts[0].device(), &mut self.device_pools) {
                        (None, _) => &mut self.input_pools[slot],
                        (Some(_), Some(pools)) => &mut pools[slot],
                        (Some(device), None) => {
                            return Err(format!(
                                "input `{}` arrived in device {device}'s memory, where this node does not run",
                                spec.inputs[slot].name
                            ))
                        }
                    };
                    stitch_pooled(pool, &parts, capacity)
                }
            };
            inputs.push(stitched.map_err(|e| format!("cannot stitch input `{}`: {e}", spec.inputs[slot].name))?);
        }
        Ok(inputs)
    }

    /// Runs stage `s`, catching a panic (the engine is then recreated).
    fn run_stage(
        &mut self,
        s: usize,
        inputs: &[&Tensor],
        rows: &[usize],
        batch: &BatchInfo,
    ) -> Result<StageOutput, String> {
        let spec = Arc::clone(&self.settings.spec);
        let engine = &mut self.engines[s];
        let fault = self.faults.as_mut().and_then(FaultDraws::draw);
        if let Some(fault) = fault {
            self.state.metrics.injected_fault(fault.kind());
        }
        let run = || match fault {
            None => engine.run_batch(inputs, rows, batch),
            Some(Fault::Error) => Err("injected fault: error".into()),
            // A real unwind, like a panicking engine's, minus the panic hook's report.
            Some(Fault::Panic) => std::panic::resume_unwind(Box::new("injected fault: panic")),
            Some(Fault::Slow(factor)) => {
                let started = Instant::now();
                let out = engine.run_batch(inputs, rows, batch);
                std::thread::sleep(started.elapsed().mul_f64(factor - 1.0));
                out
            }
        };
        let result = catch_unwind(AssertUnwindSafe(run));
        let copied = self.engines[s].host_device_bytes();
        if copied > 0 {
            self.state.metrics.host_device_bytes.increment(copied);
            self.state.counters.host_device_bytes.fetch_add(copied, Ordering::Relaxed);
        }
        match result {
            Ok(Ok(out)) => Ok(out),
            Ok(Err(e)) => Err(format!("stage {s} ({}): {e}", stage_label(&spec, s))),
            Err(panic) => {
                let what = crate::engine::panic_message(panic.as_ref());
                self.recreate_engine(s);
                Err(format!("stage {s} ({}) panicked: {what}", stage_label(&spec, s)))
            }
        }
    }

    /// Replaces stage `s`'s engine after it panicked (its state is unknown); logs if it cannot.
    fn recreate_engine(&mut self, s: usize) {
        let spec = Arc::clone(&self.settings.spec);
        match spec.stages[s].provider.create(&self.requests[s]) {
            Ok(fresh) => {
                self.engines[s] = fresh;
                self.register_stop_handles();
            }
            Err(e) => {
                tracing::error!(node = %spec.name, stage = s, error = %e, "could not recreate engine after a panic")
            }
        }
    }
}

/// Outputs with zero rows for a stage that had nothing to run (dynamic dims become 0).
fn empty_outputs(signature: &crate::engine::ModelSignature) -> Result<Vec<Tensor>, String> {
    signature
        .outputs
        .iter()
        .map(|o| {
            let shape = o.shape.iter().enumerate().map(|(i, d)| match d {
                crate::engine::Dim::Fixed(n) if i > 0 => *n,
                _ => 0,
            });
            Tensor::zeros(o.dtype, shape.collect()).map_err(|e| e.to_string())
        })
        .collect()
}

fn stage_label(spec: &NodeSpec, stage: usize) -> String {
    let s = &spec.stages[stage];
    match &s.request.model {
        Some(path) => path.file_name().unwrap_or_default().to_string_lossy().into_owned(),
        None => s.engine.clone(),
    }
}

/// Checks a stage's outputs against its signature and the batch's rows.
fn check_outputs(spec: &NodeSpec, stage: usize, outputs: &[Tensor], rows: usize) -> Result<(), String> {
    let signature = &spec.stages[stage].signature;
    if outputs.len() != signature.outputs.len() {
        return Err(format!(
            "stage {stage} returned {} outputs, its signature has {}",
            outputs.len(),
            signature.outputs.len()
        ));
    }
    for (tensor, declared) in outputs.iter().zip(&signature.outputs) {
        if tensor.dtype() != declared.dtype {
            return Err(format!(
                "stage {stage} output `{}` is {}, declared {}",
                declared.name,
                tensor.dtype(),
                declared.dtype
            ));
        }
        if tensor.shape().first() != Some(&rows) {
            return Err(format!(
                "stage {stage} output `{}` has shape {:?}; expected {rows} rows (the batch) in dim 0",
                declared.name,
                tensor.shape()
            ));
        }
    }
    Ok(())
}
