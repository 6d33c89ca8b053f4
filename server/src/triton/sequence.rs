//! `sequence_batching` → Baton's streams: a Triton sequence model becomes a
//! one-node pipeline whose node keeps per-stream state (`state` → write-back
//! edges, `max_sequence_idle_microseconds` → the streams' idle timeout), and
//! whose control inputs (START, END, READY, CORRID) the server fills for each
//! request from its `sequence_id` / `sequence_start` / `sequence_end`.
//!
//! Strategies: `direct` and `oldest` both run as Baton's stream node does: a
//! sequence's requests run in order, one at a time; requests of different
//! sequences batch together, up to `max_batch_size`, waiting at most the
//! strategy's `max_queue_delay_microseconds`. Every row of a batch is a real
//! request, so READY is always true. Slot placement (`direct`) and candidate
//! counts (`oldest`) decide only which sequences share a batch: no answer
//! changes, and they are warned about.

use std::path::Path;
use std::time::Duration;

use baton::request::StreamChunk;
use baton::{DType, Tensor};
use serde_json::{json, Map, Value as Json};

use super::mapping::{self, Source};
use super::pbtxt::ConfigError;
use super::tpb;
use crate::sequence_ids::{IdKind, SequenceId};
use tpb::model_sequence_batching::control::Kind;
use tpb::model_sequence_batching::StrategyChoice;

/// Triton's `max_sequence_idle_microseconds` when the config gives none (1 s).
const DEFAULT_IDLE_US: u64 = 1_000_000;

/// The value a control input carries for false and true (or the correlation id's type).
#[derive(Clone, Debug, PartialEq)]
enum Value {
    Int32(i32, i32),
    Fp32(f32, f32),
    Bool(bool, bool),
    CorrId(DType),
}

/// One control input the server fills.
#[derive(Clone, Debug, PartialEq)]
pub struct Control {
    pub name: String,
    kind: Kind,
    value: Value,
}

impl Control {
    /// The data type of the model input it feeds.
    pub fn dtype(&self) -> DType {
        match self.value {
            Value::Int32(..) => DType::I32,
            Value::Fp32(..) => DType::F32,
            Value::Bool(..) => DType::Bool,
            Value::CorrId(d) => d,
        }
    }

    /// The tensor for request `chunk` of sequence `id`: one element, `[1, 1]` when
    /// the model batches, else `[1]`. A CORRID carries `id` itself (the model's
    /// [`IdKind`] has refused an id of the other kind before).
    fn tensor(&self, chunk: StreamChunk, id: &SequenceId, batched: bool) -> Result<Tensor, String> {
        let shape = if batched { vec![1, 1] } else { vec![1] };
        let flag = match self.kind {
            Kind::ControlSequenceStart => chunk.start,
            Kind::ControlSequenceEnd => chunk.end,
            Kind::ControlSequenceReady | Kind::ControlSequenceCorrid => true,
        };
        let tensor = match self.value {
            Value::Int32(f, t) => Tensor::from_vec(shape, vec![if flag { t } else { f }]),
            Value::Fp32(f, t) => Tensor::from_vec(shape, vec![if flag { t } else { f }]),
            Value::Bool(f, t) => Tensor::from_vec(shape, vec![if flag { t } else { f }]),
            Value::CorrId(dtype) => return self.corrid(id, dtype, shape),
        };
        tensor.map_err(|e| format!("control input `{}`: {e}", self.name))
    }
}

impl Control {
    /// The CORRID tensor of sequence `id`, of the control's `dtype`.
    fn corrid(&self, id: &SequenceId, dtype: DType, shape: Vec<usize>) -> Result<Tensor, String> {
        let tensor = match (id, dtype) {
            (SequenceId::Str(s), DType::Bytes) => Tensor::from_strings(shape, [s.as_bytes()]),
            (SequenceId::Int(n), DType::I64) => {
                let n = i64::try_from(*n).map_err(|_| self.too_large(id, "TYPE_INT64"))?;
                Tensor::from_vec(shape, vec![n])
            }
            (SequenceId::Int(n), DType::I32) => {
                let n = i32::try_from(*n).map_err(|_| self.too_large(id, "TYPE_INT32"))?;
                Tensor::from_vec(shape, vec![n])
            }
            (SequenceId::Int(n), DType::U64) => Tensor::from_vec(shape, vec![*n]),
            (SequenceId::Int(n), DType::U32) => {
                let n = u32::try_from(*n).map_err(|_| self.too_large(id, "TYPE_UINT32"))?;
                Tensor::from_vec(shape, vec![n])
            }
            _ => return Err(format!("sequence_id {id} does not match control input `{}` ({dtype})", self.name)),
        };
        tensor.map_err(|e| format!("control input `{}`: {e}", self.name))
    }

    fn too_large(&self, id: &SequenceId, ty: &str) -> String {
        format!("sequence_id {id} does not fit control input `{}` ({ty})", self.name)
    }
}

/// What the server applies to each request of a sequence model.
#[derive(Clone, Debug, PartialEq)]
pub struct Sequencing {
    pub controls: Vec<Control>,
    batched: bool,
}

impl Sequencing {
    /// The control tensors of request `chunk` of sequence `id`, to add to its inputs.
    pub fn control_tensors(&self, chunk: StreamChunk, id: &SequenceId) -> Result<Vec<(String, Tensor)>, String> {
        self.controls.iter().map(|c| Ok((c.name.clone(), c.tensor(chunk, id, self.batched)?))).collect()
    }

    /// The sequence ids the model takes: those of its CORRID control's type, or any without one.
    pub fn id_kind(&self) -> IdKind {
        match self.controls.iter().find_map(|c| if let Value::CorrId(d) = c.value { Some(d) } else { None }) {
            Some(DType::Bytes) => IdKind::Str,
            Some(_) => IdKind::Int,
            None => IdKind::Any,
        }
    }

    /// The CORRID control input, as an error names it (`` `CORRID` (TYPE_STRING) ``).
    pub fn corrid(&self) -> Option<String> {
        self.controls
            .iter()
            .find(|c| c.kind == Kind::ControlSequenceCorrid)
            .map(|c| format!("`{}` is {}", c.name, mapping::data_type(c.dtype()).as_str_name()))
    }

    /// Whether `name` is a control input (filled by the server, never sent by a client).
    pub fn is_control(&self, name: &str) -> bool {
        self.controls.iter().any(|c| c.name == name)
    }
}

/// Model tensors the config leaves out of `input` / `output`: control inputs
/// and state inputs (inputs), state outputs (outputs).
pub fn implicit_tensors(config: &tpb::ModelConfig) -> (Vec<&str>, Vec<&str>) {
    let Some(s) = batching(config) else { return (Vec::new(), Vec::new()) };
    let inputs = s.control_input.iter().map(|c| c.name.as_str()).chain(s.state.iter().map(|t| t.input_name.as_str()));
    (inputs.collect(), s.state.iter().map(|t| t.output_name.as_str()).collect())
}

/// The config's `sequence_batching`, if any.
pub fn batching(config: &tpb::ModelConfig) -> Option<&tpb::ModelSequenceBatching> {
    match &config.scheduling_choice {
        Some(tpb::model_config::SchedulingChoice::SequenceBatching(s)) => Some(s),
        _ => None,
    }
}

/// The scheduler section, the `[streams]` section and the node's state for a
/// sequence model; its pipeline inputs for the control inputs go into `inputs`.
pub fn map(
    config: &tpb::ModelConfig,
    s: &tpb::ModelSequenceBatching,
    node: &mut Map<String, Json>,
    inputs: &mut Map<String, Json>,
    source: Source,
    warnings: &mut Vec<String>,
) -> Result<(Json, Json, Sequencing), ConfigError> {
    let batched = config.max_batch_size > 0;
    let delay = strategy(s, source.file, warnings);
    let scheduler =
        if batched { json!({ "policy": "dynamic", "max_queue_delay_us": delay }) } else { json!({ "policy": "none" }) };
    let idle_us =
        if s.max_sequence_idle_microseconds == 0 { DEFAULT_IDLE_US } else { s.max_sequence_idle_microseconds };
    let streams = json!({ "idle_timeout_ms": Duration::from_micros(idle_us).as_millis().max(1) as u64 });
    let mut controls = Vec::new();
    for (i, input) in s.control_input.iter().enumerate() {
        let control = control(i, input, source)?;
        if controls.iter().any(|c: &Control| c.name == control.name) {
            return Err(source.error(&format!("sequence_batching.control_input[{i}].name"), "is given twice"));
        }
        let shape: Vec<i64> = batched.then_some(-1).into_iter().chain([1]).collect();
        inputs.insert(
            control.name.clone(),
            json!({ "to": [format!("{}.{}", mapping::NODE, control.name)], "shape": shape }),
        );
        controls.push(control);
    }
    let states =
        s.state.iter().enumerate().map(|(i, st)| state(i, st, source, warnings)).collect::<Result<Vec<_>, _>>()?;
    if !states.is_empty() {
        node.insert("state".into(), Json::Array(states));
    }
    Ok((scheduler, streams, Sequencing { controls, batched }))
}

/// The strategy's queue delay, µs; what it does not map is warned about.
fn strategy(s: &tpb::ModelSequenceBatching, file: &Path, warnings: &mut Vec<String>) -> u64 {
    let mut warn = |field: &str, why: &str| {
        warnings.push(format!("{}: field `sequence_batching.{field}` ignored: {why}", file.display()));
    };
    let placement = "Baton batches requests of different sequences as they come; which share a batch changes no answer";
    match &s.strategy_choice {
        Some(StrategyChoice::Direct(d)) => {
            if d.minimum_slot_utilization > 0.0 {
                warn("direct.minimum_slot_utilization", placement);
            }
            d.max_queue_delay_microseconds
        }
        Some(StrategyChoice::Oldest(o)) => {
            if o.max_candidate_sequences > 0 {
                warn("oldest.max_candidate_sequences", placement);
            }
            if !o.preferred_batch_size.is_empty() {
                warn("oldest.preferred_batch_size", placement);
            }
            if o.preserve_ordering {
                warn("oldest.preserve_ordering", "each request is answered on its own; ordering changes no answer");
            }
            o.max_queue_delay_microseconds
        }
        None => 0,
    }
}

/// One `control_input`: exactly one control, its false/true values (or the correlation id's type).
fn control(
    i: usize,
    input: &tpb::model_sequence_batching::ControlInput,
    source: Source,
) -> Result<Control, ConfigError> {
    let at = |f: &str| format!("sequence_batching.control_input[{i}].{f}");
    let [c] = input.control.as_slice() else {
        return Err(source.error(&at("control"), "needs exactly one control per control input"));
    };
    let kind = Kind::try_from(c.kind).map_err(|_| source.error(&at("control[0].kind"), "unknown control kind"))?;
    let given = [!c.int32_false_true.is_empty(), !c.fp32_false_true.is_empty(), !c.bool_false_true.is_empty()];
    let value = if kind == Kind::ControlSequenceCorrid {
        match tpb::DataType::try_from(c.data_type) {
            Ok(tpb::DataType::TypeInt64) => Value::CorrId(DType::I64),
            Ok(tpb::DataType::TypeInt32) => Value::CorrId(DType::I32),
            Ok(tpb::DataType::TypeUint64) => Value::CorrId(DType::U64),
            Ok(tpb::DataType::TypeUint32) => Value::CorrId(DType::U32),
            Ok(tpb::DataType::TypeString) => Value::CorrId(DType::Bytes),
            Ok(other) => {
                return Err(source.error(
                    &at("control[0].data_type"),
                    format!(
                        "{}: a correlation id is TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 or TYPE_STRING",
                        other.as_str_name()
                    ),
                ))
            }
            Err(_) => return Err(source.error(&at("control[0].data_type"), "unknown data type")),
        }
    } else {
        let pair = |field: &str, n: usize| {
            if n == 2 {
                Ok(())
            } else {
                Err(source.error(&at(&format!("control[0].{field}")), "needs two values: false, then true"))
            }
        };
        match given {
            [true, false, false] => {
                pair("int32_false_true", c.int32_false_true.len())?;
                Value::Int32(c.int32_false_true[0], c.int32_false_true[1])
            }
            [false, true, false] => {
                pair("fp32_false_true", c.fp32_false_true.len())?;
                Value::Fp32(c.fp32_false_true[0], c.fp32_false_true[1])
            }
            [false, false, true] => {
                pair("bool_false_true", c.bool_false_true.len())?;
                Value::Bool(c.bool_false_true[0], c.bool_false_true[1])
            }
            _ => {
                return Err(source.error(
                    &at("control[0]"),
                    "needs exactly one of int32_false_true, fp32_false_true, bool_false_true",
                ))
            }
        }
    };
    Ok(Control { name: input.name.clone(), kind, value })
}

/// One implicit `state` → a write-back edge of the node, zeros at a sequence's start.
fn state(
    i: usize,
    st: &tpb::model_sequence_batching::State,
    source: Source,
    warnings: &mut Vec<String>,
) -> Result<Json, ConfigError> {
    let at = |f: &str| format!("sequence_batching.state[{i}].{f}");
    mapping::dtype(st.data_type).map_err(|why| source.error(&at("data_type"), why))?;
    let dims = match st.initial_state.as_slice() {
        [] => &st.dims,
        [init] => {
            use tpb::model_sequence_batching::initial_state::StateData;
            if let Some(StateData::DataFile(f)) = &init.state_data {
                return Err(source.error(
                    &at("initial_state[0].data_file"),
                    format!("`{f}`: initial state from a file is not supported (Baton starts a state at zeros)"),
                ));
            }
            if init.data_type != st.data_type {
                return Err(source.error(&at("initial_state[0].data_type"), "differs from the state's data_type"));
            }
            &init.dims
        }
        _ => return Err(source.error(&at("initial_state"), "Baton takes one initial state per state")),
    };
    let shape =
        dims.iter().map(|&d| usize::try_from(d).map_err(|_| d)).collect::<Result<Vec<usize>, i64>>().map_err(|d| {
            source.error(
                &at("dims"),
                format!("{dims:?} has a variable dim ({d}): Baton's state starts at zeros of a fixed shape"),
            )
        })?;
    if st.use_growable_memory {
        warnings.push(format!(
            "{}: field `{}` ignored: Baton holds each sequence's state in its own buffer",
            source.file.display(),
            at("use_growable_memory")
        ));
    }
    Ok(json!({ "input": st.input_name, "output": st.output_name, "shape": shape }))
}

/// Checks the control and state tensors against the model's inputs and outputs:
/// each one a model tensor of the control's (or state's) data type.
pub fn check_against(
    s: &tpb::ModelSequenceBatching,
    signature: &baton::ModelSignature,
    source: Source,
) -> Result<(), ConfigError> {
    let find = |list: &[baton::TensorSpec], name: &str| list.iter().find(|t| t.name == name).map(|t| t.dtype);
    for (i, input) in s.control_input.iter().enumerate() {
        let control = control(i, input, source)?;
        let at = format!("sequence_batching.control_input[{i}].name");
        match find(&signature.inputs, &control.name) {
            None => return Err(source.error(&at, format!("`{}` is not a model input", control.name))),
            Some(d) if d != control.dtype() => {
                return Err(source.error(
                    &at,
                    format!(
                        "the model's `{}` is {} but the control fills {}",
                        control.name,
                        mapping::data_type(d).as_str_name(),
                        mapping::data_type(control.dtype()).as_str_name()
                    ),
                ))
            }
            Some(_) => {}
        }
    }
    for (i, st) in s.state.iter().enumerate() {
        for (field, list, name) in
            [("input_name", &signature.inputs, &st.input_name), ("output_name", &signature.outputs, &st.output_name)]
        {
            let at = format!("sequence_batching.state[{i}].{field}");
            match find(list, name) {
                None => return Err(source.error(&at, format!("`{name}` is not a model tensor of that kind"))),
                Some(d) if mapping::data_type(d) as i32 != st.data_type => {
                    return Err(source.error(
                        &format!("sequence_batching.state[{i}].data_type"),
                        format!("differs from the model's `{name}` ({})", mapping::data_type(d).as_str_name()),
                    ))
                }
                Some(_) => {}
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corrid(dtype: DType) -> Control {
        Control { name: "CORRID".into(), kind: Kind::ControlSequenceCorrid, value: Value::CorrId(dtype) }
    }

    const CHUNK: StreamChunk = StreamChunk { id: 0, start: true, end: false };

    #[test]
    fn unsigned_corrids_carry_the_integer_id() {
        let big = SequenceId::Int(u64::MAX);
        let t = corrid(DType::U64).tensor(CHUNK, &big, true).unwrap();
        assert_eq!((t.shape(), t.as_slice::<u64>().unwrap()), (&[1, 1][..], &[u64::MAX][..]));
        let t = corrid(DType::U32).tensor(CHUNK, &SequenceId::Int(u64::from(u32::MAX)), false).unwrap();
        assert_eq!((t.shape(), t.as_slice::<u32>().unwrap()), (&[1][..], &[u32::MAX][..]));
    }

    #[test]
    fn an_id_past_a_uint32_corrid_is_refused_naming_input_and_type() {
        let id = SequenceId::Int(u64::from(u32::MAX) + 1);
        let e = corrid(DType::U32).tensor(CHUNK, &id, true).unwrap_err();
        assert_eq!(e, "sequence_id 4294967296 does not fit control input `CORRID` (TYPE_UINT32)");
        let e = corrid(DType::U64).tensor(CHUNK, &SequenceId::Str("a".into()), true).unwrap_err();
        assert!(e.contains("does not match control input `CORRID` (u64)"), "{e}");
    }
}
