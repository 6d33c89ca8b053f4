//! A session's runs through ONNX Runtime's I/O binding, into buffers Baton owns.
//!
//! [`BoundRuns::run`] binds each input where it lies (the stitched batch's own
//! buffer, no copy) and each output to a buffer of the engine's [`TensorPool`]s,
//! then runs the session on the binding: ONNX Runtime writes the results
//! straight into those buffers, and the outputs handed on are views of them.
//! Once the requests drop their views, the buffers come back to the pools, so
//! a stream of batches of recurring shapes makes no heap allocation.
//!
//! Binding an output needs its shape before the run. The first run of a set
//! of input shapes runs unbound (ONNX Runtime allocates the outputs; they are
//! copied once into pooled buffers) and remembers the output shapes; later
//! runs of those input shapes bind. Should a bound run fail (an output whose
//! shape depends on the input's values), those input shapes run unbound from
//! then on.
//!
//! Each ONNX Runtime value that describes a buffer (its address, shape and
//! element type, not its data) is made once and kept, per input and output,
//! for the last few buffers seen. Inputs are bound again before every run:
//! on a GPU, binding a host input is when ONNX Runtime copies it to the device.
//!
//! Padding to fixed batch sizes ([`baton::BatchSizes`]) happens here: a batch
//! of `r` rows runs at the next size `s`, each input widened over its buffer's
//! room when it has `s` rows of it (a pooled stitch leaves zeroed room) or
//! else copied into a padded buffer of the engine's, and the outputs are cut
//! back to their first `r` rows.
//!
//! A batch of more rows than [`baton::BatchSizes::piece_rows`] runs in pieces
//! of that many rows, one after another ([`BoundRuns::run_pieces`]): each
//! piece's inputs are views of its rows of the batch, and its outputs are
//! bound to its rows of one pooled buffer per output, made for the whole
//! batch (with room for a padded last piece). A piece of shapes not seen
//! before runs unbound, as any first shape does, and its outputs are copied
//! into its rows. Every output must then have the piece's rows as its first
//! dim, else the batch fails naming the output.
//!
//! A session with a BYTES input or output (an ONNX string tensor, whose
//! elements live in ONNX Runtime's memory, see [`super::strings`]) always runs
//! unbound, and unpadded.
//!
//! With fixed buffers ([`baton::BatchSizes::fixed_buffers`], a session of one
//! batch size, for ONNX Runtime's CUDA graphs) the session is bound once, to
//! buffers of its own that are never handed on: its first batch runs as any
//! first shape does and fixes the shapes; from then on each batch is copied
//! into the input buffers, the session runs on the same binding, and each
//! output's rows are copied out into a pooled buffer. The padding rows past a
//! smaller batch hold an earlier batch's rows, not zeros: their results are cut
//! off, and a node pads only where each row's result depends on that row
//! alone. A batch of other shapes is an error naming both: a CUDA graph
//! replays the shapes and addresses it recorded.

use std::collections::HashMap;
use std::ffi::CString;
use std::ptr::NonNull;

use std::sync::Arc;

use baton::tensor::{stitch_pooled, DeviceMemory, HostMemory, PooledTensor, TensorPool};
use baton::{BatchSizes, DType, Dim, ModelSignature, Tensor};
use ort::memory::{AllocationDevice, AllocatorType, MemoryInfo, MemoryType};
use ort::session::{RunOptions, Session, SessionInputValue};
use ort::sys::{ONNXTensorElementDataType, OrtIoBinding, OrtStatus, OrtValue};
use ort::value::TensorElementType;
use ort::AsPointer;
use smallvec::SmallVec;

/// Most buffer descriptions kept per input or output (a few buffers, each at a few pieces' rows).
const VALUES_KEPT: usize = 32;
/// Most sets of input shapes whose output shapes are remembered.
const SHAPES_KEPT: usize = 512;
/// Buffers a pool keeps per output (batches whose outputs are still held downstream, plus one).
const BUFFERS_KEPT: usize = 8;

/// Every input's shape, one after another, each ended by `usize::MAX`.
type ShapeKey = SmallVec<[usize; 24]>;

/// Bound runs of one session; see the module docs.
pub(super) struct BoundRuns {
    binding: NonNull<OrtIoBinding>,
    memory: MemoryInfo<'static>,
    /// On a GPU: its memory, for tensors that stay there, and ONNX Runtime's name for it.
    device: Option<(Arc<dyn DeviceMemory>, MemoryInfo<'static>)>,
    device_padding_pools: Vec<TensorPool>,
    /// Bytes this side copied between host and device since last read (see [`BoundRuns::take_crossed`]).
    crossed: u64,
    /// ONNX Runtime runs made (a batch in pieces makes one per piece).
    ort_runs: u64,
    input_names: Vec<CString>,
    output_names: Vec<CString>,
    input_values: Vec<ValueCache>,
    output_values: Vec<ValueCache>,
    output_pools: Vec<TensorPool>,
    padding_pools: Vec<TensorPool>,
    output_dtypes: Vec<DType>,
    /// Output shapes by input shapes; `None`: they depend on more than the shapes (run unbound).
    output_shapes: HashMap<ShapeKey, Option<Vec<SmallVec<[usize; 6]>>>>,
    sizes: BatchSizes,
    /// Some input or output is a string tensor: every run is unbound.
    strings: bool,
    /// Runs at fixed buffers (see the module docs); `slot` holds them once the first batch ran.
    fixed: bool,
    slot: Option<FixedSlot>,
}

/// The buffers a session with fixed buffers is bound to, at the one set of shapes it runs.
struct FixedSlot {
    /// The input shapes, padded (as [`ShapeKey`]).
    key: ShapeKey,
    /// The rows every input has.
    rows: usize,
    inputs: Vec<PooledTensor>,
    outputs: Vec<PooledTensor>,
    /// The descriptions bound, kept for as long as the binding.
    _values: Vec<OwnedValue>,
}

// SAFETY: the binding is used only through `&mut self`, by the one thread that owns the engine.
unsafe impl Send for BoundRuns {}

impl BoundRuns {
    /// Bound runs of `session`, whose inputs and outputs `signature` lists, padding to `sizes`
    /// when every input and output has a dynamic batch dim (else batches run as they are).
    /// New host buffers come from `host_memory` when given (pinned memory on a GPU); with
    /// `device`, the outputs `device_outputs` marks are written to its memory.
    pub(super) fn new(
        session: &Session,
        signature: &ModelSignature,
        sizes: &BatchSizes,
        host_memory: Option<Arc<dyn HostMemory>>,
        device: Option<Arc<dyn DeviceMemory>>,
        device_outputs: &[bool],
    ) -> Result<Self, String> {
        let mut binding = std::ptr::null_mut();
        check(unsafe { (ort::api().CreateIoBinding)(session.ptr().cast_mut(), &mut binding) })?;
        let binding = NonNull::new(binding).ok_or("ONNX Runtime returned no I/O binding")?;
        let memory = MemoryInfo::new(AllocationDevice::CPU, 0, AllocatorType::Device, MemoryType::Default)
            .map_err(|e| e.to_string())?;
        let device = match device {
            Some(d) => {
                let info = MemoryInfo::new(
                    AllocationDevice::CUDA,
                    d.device() as i32,
                    AllocatorType::Device,
                    MemoryType::Default,
                )
                .map_err(|e| e.to_string())?;
                Some((d, info))
            }
            None => None,
        };
        let names = |specs: &[baton::TensorSpec]| {
            specs
                .iter()
                .map(|s| CString::new(s.name.as_str()).map_err(|e| e.to_string()))
                .collect::<Result<Vec<_>, _>>()
        };
        let batch_dim_dynamic =
            signature.inputs.iter().chain(&signature.outputs).all(|s| matches!(s.shape.first(), Some(Dim::Dynamic(_))));
        let strings = signature.inputs.iter().chain(&signature.outputs).any(|s| s.dtype == DType::Bytes);
        let fixed = sizes.fixed_buffers();
        if fixed && (strings || !batch_dim_dynamic) {
            return Err("fixed buffers (a CUDA graph) need every input and output batched along a dynamic first \
                        dim, and no string tensor"
                .into());
        }
        let outputs = signature.outputs.len();
        let on_device = |j: usize| device.is_some() && device_outputs.get(j).copied().unwrap_or(false);
        let output_pools = (0..outputs)
            .map(|j| match &device {
                Some((d, _)) if on_device(j) => TensorPool::on_device(BUFFERS_KEPT, Arc::clone(d)),
                _ => TensorPool::in_memory(BUFFERS_KEPT, host_memory.clone()),
            })
            .collect();
        let device_padding_pools = match &device {
            Some((d, _)) => (0..signature.inputs.len()).map(|_| TensorPool::on_device(2, Arc::clone(d))).collect(),
            None => Vec::new(),
        };
        Ok(BoundRuns {
            binding,
            memory,
            device,
            device_padding_pools,
            crossed: 0,
            ort_runs: 0,
            input_names: names(&signature.inputs)?,
            output_names: names(&signature.outputs)?,
            input_values: (0..signature.inputs.len()).map(|_| ValueCache::default()).collect(),
            output_values: (0..outputs).map(|_| ValueCache::default()).collect(),
            output_pools,
            padding_pools: (0..signature.inputs.len()).map(|_| TensorPool::in_memory(2, host_memory.clone())).collect(),
            output_dtypes: signature.outputs.iter().map(|s| s.dtype).collect(),
            output_shapes: HashMap::new(),
            sizes: if batch_dim_dynamic && !strings { sizes.clone() } else { BatchSizes::none() },
            strings,
            fixed,
            slot: None,
        })
    }

    /// The rows a batch of `rows` runs at (see [`BatchSizes::padded`]): its own where this
    /// session does not pad.
    pub(super) fn padded(&self, rows: usize) -> usize {
        self.sizes.padded(rows)
    }

    /// ONNX Runtime runs since the last call (a batch in pieces makes one per piece).
    pub(super) fn take_ort_runs(&mut self) -> u64 {
        std::mem::take(&mut self.ort_runs)
    }

    /// Bytes copied between host and device by this side (a first run's inputs and outputs
    /// moved through the host) since the last call.
    pub(super) fn take_crossed(&mut self) -> u64 {
        std::mem::take(&mut self.crossed)
    }

    /// Runs `session` on `inputs` (checked against the signature by the caller),
    /// appending the outputs, in signature order, to `outputs`.
    pub(super) fn run(
        &mut self,
        session: &mut Session,
        options: &RunOptions,
        inputs: &[&Tensor],
        outputs: &mut Vec<Tensor>,
    ) -> Result<(), String> {
        if self.slot.is_some() {
            return self.run_fixed(session, options, inputs, outputs);
        }
        let rows = batch_rows(inputs);
        if let (Some(rows), Some(piece)) = (rows, self.sizes.piece_rows()) {
            if rows > piece {
                return self.run_pieces(session, options, inputs, rows, piece, outputs);
            }
        }
        self.run_whole(session, options, inputs, outputs)
    }

    /// Runs `inputs` as one batch: padded, bound where its shapes were seen, else unbound.
    fn run_whole(
        &mut self,
        session: &mut Session,
        options: &RunOptions,
        inputs: &[&Tensor],
        outputs: &mut Vec<Tensor>,
    ) -> Result<(), String> {
        let rows = batch_rows(inputs);
        let target = rows.map_or(0, |r| self.sizes.padded(r));
        let mut run_inputs: SmallVec<[Tensor; 4]> = SmallVec::new();
        let mut key = ShapeKey::new();
        for (i, &tensor) in inputs.iter().enumerate() {
            let tensor = match rows {
                Some(r) if target > r => self.pad(i, tensor, target)?,
                _ => tensor.clone(),
            };
            key.extend_from_slice(tensor.shape());
            key.push(usize::MAX);
            run_inputs.push(tensor);
        }
        let first = outputs.len();
        if self.strings {
            return self.run_unbound(session, options, &run_inputs, None, outputs);
        }
        let slot_key = self.fixed.then(|| key.clone());
        match self.output_shapes.get(&key) {
            Some(Some(_)) => {
                if let Err(e) = self.run_bound(session, options, &run_inputs, &key, outputs) {
                    // Output shapes that depend on the values: unbound from now on, this batch again.
                    outputs.truncate(first);
                    tracing::debug!("bound run failed ({e}); these input shapes run unbound from now on");
                    self.output_shapes.insert(key, None);
                    self.run_unbound(session, options, &run_inputs, None, outputs)?;
                }
            }
            Some(None) => self.run_unbound(session, options, &run_inputs, None, outputs)?,
            None => {
                let learn = (self.output_shapes.len() < SHAPES_KEPT).then_some(key);
                self.run_unbound(session, options, &run_inputs, learn, outputs)?;
            }
        }
        if let Some(r) = rows.filter(|&r| target > r) {
            for output in &mut outputs[first..] {
                if output.shape().first() == Some(&target) {
                    *output = output.rows(0..r);
                }
            }
        }
        if let Some(key) = slot_key {
            let rows = rows.ok_or("fixed buffers need every input to have the same rows")?;
            self.slot = Some(self.fixed_slot(key, self.sizes.padded(rows), &run_inputs)?);
        }
        Ok(())
    }

    /// Runs a batch of `rows` in pieces of `piece` rows (see the module docs), appending one
    /// output per signature output, of `rows` rows each.
    fn run_pieces(
        &mut self,
        session: &mut Session,
        options: &RunOptions,
        inputs: &[&Tensor],
        rows: usize,
        piece: usize,
        outputs: &mut Vec<Tensor>,
    ) -> Result<(), String> {
        let last_start = (rows - 1) / piece * piece;
        let extent = last_start + self.sizes.padded(rows - last_start);
        let mut whole: SmallVec<[PooledTensor; 4]> = SmallVec::new();
        let mut views: SmallVec<[Tensor; 4]> = SmallVec::new();
        let mut padded: SmallVec<[Tensor; 4]> = SmallVec::new();
        let mut first_run = Vec::new();
        for start in (0..rows).step_by(piece) {
            let end = (start + piece).min(rows);
            let target = self.sizes.padded(end - start);
            views.clear();
            padded.clear();
            let mut key = ShapeKey::new();
            for (i, tensor) in inputs.iter().enumerate() {
                let view = tensor.rows(start..end);
                let wide = if target > end - start { self.pad(i, &view, target)? } else { view.clone() };
                key.extend_from_slice(wide.shape());
                key.push(usize::MAX);
                views.push(view);
                padded.push(wide);
            }
            let batched = |shapes: &[SmallVec<[usize; 6]>]| shapes.iter().all(|s| s.first() == Some(&target));
            if matches!(self.output_shapes.get(&key), Some(Some(shapes)) if batched(shapes)) {
                // Taken out of the map while the piece runs (not copied), then put back.
                let Some(Some(shapes)) = self.output_shapes.remove(&key) else { unreachable!("just found") };
                let ran = if whole.is_empty() {
                    self.whole_outputs(shapes.iter().map(|s| &s[1..]), rows, extent).map(|w| whole = w)
                } else {
                    Ok(())
                }
                .and_then(|()| self.run_bound_at(session, options, &padded, &shapes, &mut whole, start));
                self.output_shapes.insert(key, Some(shapes));
                ran?;
                continue;
            }
            // Shapes not seen before (or not bound): a run of its own, which learns them; copied in.
            first_run.clear();
            let refs: SmallVec<[&Tensor; 4]> = views.iter().collect();
            self.run_whole(session, options, &refs, &mut first_run)?;
            for (j, output) in first_run.iter().enumerate() {
                if output.shape().first() != Some(&(end - start)) {
                    return Err(format!(
                        "output `{}` has shape {:?} for a piece of {} rows: running in pieces (`piece_rows`) needs \
                         every output batched along its first dim",
                        self.output_names[j].to_string_lossy(),
                        output.shape(),
                        end - start
                    ));
                }
            }
            if whole.is_empty() {
                whole = self.whole_outputs(first_run.iter().map(|t| &t.shape()[1..]), rows, extent)?;
            }
            for (buffer, output) in whole.iter_mut().zip(&first_run) {
                let row_bytes = buffer.shape()[1..].iter().product::<usize>() * output.dtype().size();
                self.crossed += buffer.write_at(start * row_bytes, output).map_err(|e| e.to_string())?;
            }
        }
        outputs.extend(whole.into_iter().map(|t| t.into_tensor()));
        Ok(())
    }

    /// The buffers that hold a pieced batch's outputs: `rows` rows each of the dims `rests`
    /// gives per output (those after the first), with room for `extent` rows.
    fn whole_outputs<'s>(
        &mut self,
        rests: impl Iterator<Item = &'s [usize]>,
        rows: usize,
        extent: usize,
    ) -> Result<SmallVec<[PooledTensor; 4]>, String> {
        let mut whole = SmallVec::new();
        for (j, rest) in rests.enumerate() {
            let full: SmallVec<[usize; 6]> = std::iter::once(rows).chain(rest.iter().copied()).collect();
            whole.push(self.output_pools[j].take(self.output_dtypes[j], &full, extent).map_err(|e| e.to_string())?);
        }
        Ok(whole)
    }

    /// Runs one piece bound: `inputs` as they are, each output `j` into `whole[j]` from row
    /// `start` on, at `shapes[j]`.
    fn run_bound_at(
        &mut self,
        session: &mut Session,
        options: &RunOptions,
        inputs: &[Tensor],
        shapes: &[SmallVec<[usize; 6]>],
        whole: &mut [PooledTensor],
        start: usize,
    ) -> Result<(), String> {
        self.bind_inputs(inputs)?;
        for (j, shape) in shapes.iter().enumerate() {
            let dtype = self.output_dtypes[j];
            let row_bytes = shape[1..].iter().product::<usize>() * dtype.size();
            let buffer = &mut whole[j];
            let memory = output_memory(&self.device, &self.memory, buffer.device());
            // SAFETY: `whole_outputs` made the buffer with room for every piece's padded rows.
            let data = unsafe { buffer.data_ptr_mut().add(start * row_bytes) };
            let value = self.output_values[j].value(memory, data, shape, dtype)?;
            check(unsafe { (ort::api().BindOutput)(self.binding.as_ptr(), self.output_names[j].as_ptr(), value) })?;
        }
        self.ort_runs += 1;
        check(unsafe { (ort::api().RunWithBinding)(session.ptr().cast_mut(), options.ptr(), self.binding.as_ptr()) })
    }

    /// The buffers this session is bound to from now on: the inputs' at the shapes of
    /// `padded` (zeroed at first), the outputs' at the shapes learned for them; each bound once.
    fn fixed_slot(&mut self, key: ShapeKey, rows: usize, padded: &[Tensor]) -> Result<FixedSlot, String> {
        let Some(Some(shapes)) = self.output_shapes.get(&key) else {
            return Err("the first batch's output shapes depend on more than its input shapes, which fixed \
                        buffers (a CUDA graph) cannot run"
                .into());
        };
        let (memory, mut pool) = match &self.device {
            Some((d, info)) => (info, TensorPool::on_device(0, Arc::clone(d))),
            None => (&self.memory, TensorPool::in_memory(0, None)),
        };
        let mut values = Vec::with_capacity(padded.len() + shapes.len());
        let mut inputs = Vec::with_capacity(padded.len());
        for (i, tensor) in padded.iter().enumerate() {
            let mut buffer = pool.take(tensor.dtype(), tensor.shape(), 0).map_err(|e| e.to_string())?;
            buffer.zero_at(0, tensor.len() * tensor.dtype().size()).map_err(|e| e.to_string())?;
            let value = OwnedValue::describe(memory, buffer.data_ptr_mut(), tensor.shape(), tensor.dtype())?;
            check(unsafe { (ort::api().BindInput)(self.binding.as_ptr(), self.input_names[i].as_ptr(), value.ptr()) })?;
            values.push(value);
            inputs.push(buffer);
        }
        let mut outputs = Vec::with_capacity(shapes.len());
        for (j, shape) in shapes.iter().enumerate() {
            let dtype = self.output_dtypes[j];
            let mut buffer = pool.take(dtype, shape, 0).map_err(|e| e.to_string())?;
            let value = OwnedValue::describe(memory, buffer.data_ptr_mut(), shape, dtype)?;
            check(unsafe {
                (ort::api().BindOutput)(self.binding.as_ptr(), self.output_names[j].as_ptr(), value.ptr())
            })?;
            values.push(value);
            outputs.push(buffer);
        }
        Ok(FixedSlot { key, rows, inputs, outputs, _values: values })
    }

    /// Runs one batch at the fixed buffers: copied in, run on the one binding, copied out.
    fn run_fixed(
        &mut self,
        session: &mut Session,
        options: &RunOptions,
        inputs: &[&Tensor],
        outputs: &mut Vec<Tensor>,
    ) -> Result<(), String> {
        let slot = self.slot.as_mut().expect("checked by the caller");
        let rows = batch_rows(inputs).unwrap_or(usize::MAX);
        let mut key = ShapeKey::new();
        for tensor in inputs {
            key.push(self.sizes.padded(rows));
            key.extend_from_slice(tensor.shape().get(1..).unwrap_or_default());
            key.push(usize::MAX);
        }
        // The key holds the padded rows: a batch past the session's size differs from it too.
        if key != slot.key {
            let shapes = |tensors: &mut dyn Iterator<Item = &[usize]>| {
                tensors.map(|s| format!("{s:?}")).collect::<Vec<_>>().join(", ")
            };
            return Err(format!(
                "this session runs inputs of shapes {} only (fixed buffers, for its CUDA graph), not {}",
                shapes(&mut slot.inputs.iter().map(|b| b.shape())),
                shapes(&mut inputs.iter().map(|t| t.shape())),
            ));
        }
        for (buffer, tensor) in slot.inputs.iter_mut().zip(inputs) {
            buffer.write_at(0, tensor).map_err(|e| e.to_string())?;
        }
        self.ort_runs += 1;
        check(unsafe { (ort::api().RunWithBinding)(session.ptr().cast_mut(), options.ptr(), self.binding.as_ptr()) })?;
        for (j, buffer) in slot.outputs.iter().enumerate() {
            let whole = buffer.as_tensor();
            let part = if whole.shape().first() == Some(&slot.rows) { whole.rows(0..rows) } else { whole.clone() };
            let mut copy = self.output_pools[j].take(part.dtype(), part.shape(), 0).map_err(|e| e.to_string())?;
            copy.write_at(0, &part).map_err(|e| e.to_string())?;
            outputs.push(copy.into_tensor());
        }
        Ok(())
    }

    /// Input `i` widened to `target` rows: over its own buffer's room, else copied (as a
    /// one-part stitch with room) into a padded buffer in the memory it is in.
    fn pad(&mut self, i: usize, tensor: &Tensor, target: usize) -> Result<Tensor, String> {
        if let Some(wide) = tensor.with_rows_after(target) {
            return Ok(wide);
        }
        let pool = match tensor.device() {
            Some(_) if !self.device_padding_pools.is_empty() => &mut self.device_padding_pools[i],
            Some(device) => return Err(format!("input {i} is on device {device}, which this session is not on")),
            None => &mut self.padding_pools[i],
        };
        let copy = stitch_pooled(pool, &[tensor], target).map_err(|e| e.to_string())?;
        Ok(copy.with_rows_after(target).expect("a stitch with room for the target rows"))
    }

    /// Binds inputs and pooled outputs of the shapes remembered for `key`, and runs.
    fn run_bound(
        &mut self,
        session: &mut Session,
        options: &RunOptions,
        inputs: &[Tensor],
        key: &ShapeKey,
        outputs: &mut Vec<Tensor>,
    ) -> Result<(), String> {
        self.bind_inputs(inputs)?;
        let Some(Some(shapes)) = self.output_shapes.get(key) else { unreachable!("checked by the caller") };
        let mut pooled: SmallVec<[PooledTensor; 4]> = SmallVec::new();
        for (j, shape) in shapes.iter().enumerate() {
            let mut tensor = self.output_pools[j].take(self.output_dtypes[j], shape, 0).map_err(|e| e.to_string())?;
            let memory = output_memory(&self.device, &self.memory, tensor.device());
            let value = self.output_values[j].value(memory, tensor.data_ptr_mut(), shape, self.output_dtypes[j])?;
            check(unsafe { (ort::api().BindOutput)(self.binding.as_ptr(), self.output_names[j].as_ptr(), value) })?;
            pooled.push(tensor);
        }
        self.ort_runs += 1;
        check(unsafe { (ort::api().RunWithBinding)(session.ptr().cast_mut(), options.ptr(), self.binding.as_ptr()) })?;
        outputs.extend(pooled.into_iter().map(PooledTensor::into_tensor));
        Ok(())
    }

    fn bind_inputs(&mut self, inputs: &[Tensor]) -> Result<(), String> {
        for (i, tensor) in inputs.iter().enumerate() {
            let memory = match (&self.device, tensor.device()) {
                (Some((d, info)), Some(on)) if d.device() == on => info,
                (_, Some(on)) => return Err(format!("input {i} is on device {on}, which this session is not on")),
                (_, None) => &self.memory,
            };
            let data = tensor.data_ptr().cast_mut();
            let value = self.input_values[i].value(memory, data, tensor.shape(), tensor.dtype())?;
            check(unsafe { (ort::api().BindInput)(self.binding.as_ptr(), self.input_names[i].as_ptr(), value) })?;
        }
        Ok(())
    }

    /// Runs without binding (ONNX Runtime allocates the outputs) and copies each
    /// output into a pooled buffer; with `learn`, remembers the output shapes for those input shapes.
    fn run_unbound(
        &mut self,
        session: &mut Session,
        options: &RunOptions,
        inputs: &[Tensor],
        learn: Option<ShapeKey>,
        outputs: &mut Vec<Tensor>,
    ) -> Result<(), String> {
        // A first run binds nothing: inputs on the device come to the host for it (counted).
        let host: Vec<Tensor> = inputs
            .iter()
            .map(|t| {
                if t.device().is_some() {
                    self.crossed += (t.len() * t.dtype().size()) as u64;
                }
                t.to_host().map_err(|e| e.to_string())
            })
            .collect::<Result<_, _>>()?;
        // By name: the signature's inputs may include overridable initializers, which are
        // not among the session's (positional) inputs.
        let values = host
            .iter()
            .zip(&self.input_names)
            .map(|(t, name)| Ok((name.to_str().map_err(|e| e.to_string())?, super::input_view(t)?)))
            .collect::<Result<Vec<(&str, SessionInputValue<'_>)>, String>>()?;
        self.ort_runs += 1;
        let results = session.run_with_options(values, options).map_err(|e| format!("ONNX Runtime failed: {e}"))?;
        let mut shapes = Vec::with_capacity(self.output_dtypes.len());
        for (j, &dtype) in self.output_dtypes.iter().enumerate() {
            let tensor = match dtype {
                DType::Bytes => super::strings::output(&results[j]),
                _ => copy_output(&results[j], dtype, &mut self.output_pools[j]),
            };
            let tensor = tensor.map_err(|e| format!("output `{}`: {e}", self.output_names[j].to_string_lossy()))?;
            if tensor.device().is_some() {
                self.crossed += (tensor.len() * dtype.size()) as u64;
            }
            shapes.push(tensor.shape().into());
            outputs.push(tensor);
        }
        if let Some(key) = learn {
            self.output_shapes.insert(key, Some(shapes));
        }
        Ok(())
    }
}

impl Drop for BoundRuns {
    fn drop(&mut self) {
        // SAFETY: made by CreateIoBinding, released once.
        unsafe { (ort::api().ReleaseIoBinding)(self.binding.as_ptr()) }
    }
}

/// ONNX Runtime's name for the memory an output buffer lies in: the session's device where
/// the buffer is on one (`device`: the buffer's), else the host's.
fn output_memory<'m>(
    session_device: &'m Option<(Arc<dyn DeviceMemory>, MemoryInfo<'static>)>,
    host: &'m MemoryInfo<'static>,
    device: Option<u32>,
) -> &'m MemoryInfo<'static> {
    match (session_device, device) {
        (Some((_, on_device)), Some(_)) => on_device,
        _ => host,
    }
}

/// Rows of dim 0 when every input has the same (the batch), else `None` (no padding).
pub(super) fn batch_rows(inputs: &[&Tensor]) -> Option<usize> {
    let rows = *inputs.first()?.shape().first()?;
    inputs.iter().all(|t| t.shape().first() == Some(&rows)).then_some(rows)
}

/// Copies one ONNX Runtime output into a tensor of `pool`.
fn copy_output(value: &ort::value::DynValue, dtype: DType, pool: &mut TensorPool) -> Result<Tensor, String> {
    baton::with_element_type!(dtype, T => {
        let (shape, data) = value.try_extract_tensor::<T>().map_err(|e| e.to_string())?;
        let shape = shape
            .iter()
            .map(|&d| usize::try_from(d).map_err(|_| format!("ONNX Runtime returned dimension {d}")))
            .collect::<Result<SmallVec<[usize; 6]>, String>>()?;
        let mut tensor = pool.take(dtype, &shape, 0).map_err(|e| e.to_string())?;
        // SAFETY: T is the element type of `dtype`, plain data.
        let bytes = unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), std::mem::size_of_val(data)) };
        tensor.write_bytes_at(0, bytes).map_err(|e| e.to_string())?;
        Ok(tensor.into_tensor())
    })
}

/// ONNX Runtime values describing buffers (address, shape, element type), the last few made.
#[derive(Default)]
struct ValueCache {
    values: SmallVec<[Described; VALUES_KEPT]>,
    next: usize,
}

/// One buffer's description and the value made for it.
struct Described {
    address: usize,
    shape: SmallVec<[usize; 6]>,
    dtype: DType,
    value: OwnedValue,
}

impl ValueCache {
    /// The value for the buffer at `data` of `shape` and `dtype`: kept, or made now.
    fn value(
        &mut self,
        memory: &MemoryInfo<'static>,
        data: *mut u8,
        shape: &[usize],
        dtype: DType,
    ) -> Result<*const OrtValue, String> {
        let address = data as usize;
        if let Some(kept) =
            self.values.iter().find(|d| d.address == address && d.shape.as_slice() == shape && d.dtype == dtype)
        {
            return Ok(kept.value.0.as_ptr());
        }
        let value = OwnedValue::describe(memory, data, shape, dtype)?;
        let ptr = value.0.as_ptr();
        let described = Described { address, shape: shape.into(), dtype, value };
        if self.values.len() < VALUES_KEPT {
            self.values.push(described);
        } else {
            self.values[self.next] = described;
            self.next = (self.next + 1) % VALUES_KEPT;
        }
        Ok(ptr)
    }
}

/// An ONNX Runtime value over memory it does not own, released on drop.
struct OwnedValue(NonNull<OrtValue>);

impl OwnedValue {
    fn describe(memory: &MemoryInfo<'static>, data: *mut u8, shape: &[usize], dtype: DType) -> Result<Self, String> {
        let dims: SmallVec<[i64; 8]> = shape.iter().map(|&d| d as i64).collect();
        let bytes = shape.iter().product::<usize>() * dtype.size();
        let mut value = std::ptr::null_mut();
        check(unsafe {
            (ort::api().CreateTensorWithDataAsOrtValue)(
                memory.ptr(),
                data.cast(),
                bytes,
                dims.as_ptr(),
                dims.len(),
                element_type(dtype),
                &mut value,
            )
        })?;
        NonNull::new(value).map(OwnedValue).ok_or_else(|| "ONNX Runtime returned no value".to_string())
    }
}

impl OwnedValue {
    fn ptr(&self) -> *const OrtValue {
        self.0.as_ptr()
    }
}

impl Drop for OwnedValue {
    fn drop(&mut self) {
        // SAFETY: made by CreateTensorWithDataAsOrtValue, released once; ONNX Runtime's
        // bindings hold their own references.
        unsafe { (ort::api().ReleaseValue)(self.0.as_ptr()) }
    }
}

fn element_type(dtype: DType) -> ONNXTensorElementDataType {
    let ty = match dtype {
        DType::F32 => TensorElementType::Float32,
        DType::F64 => TensorElementType::Float64,
        DType::F16 => TensorElementType::Float16,
        DType::BF16 => TensorElementType::Bfloat16,
        DType::I64 => TensorElementType::Int64,
        DType::I32 => TensorElementType::Int32,
        DType::I16 => TensorElementType::Int16,
        DType::I8 => TensorElementType::Int8,
        DType::U8 => TensorElementType::Uint8,
        DType::U16 => TensorElementType::Uint16,
        DType::U32 => TensorElementType::Uint32,
        DType::U64 => TensorElementType::Uint64,
        DType::Bool => TensorElementType::Bool,
        DType::Bytes => TensorElementType::String,
    };
    ty.into()
}

/// An ONNX Runtime status as a result: its message, the status released.
pub(super) fn check(status: ort::sys::OrtStatusPtr) -> Result<(), String> {
    let status: *mut OrtStatus = status.0;
    if status.is_null() {
        return Ok(());
    }
    // SAFETY: a non-null status from the API: read its message, then release it once.
    unsafe {
        let message = std::ffi::CStr::from_ptr((ort::api().GetErrorMessage)(status)).to_string_lossy().into_owned();
        (ort::api().ReleaseStatus)(status);
        Err(message)
    }
}
