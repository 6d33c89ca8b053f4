//! A pipeline's configuration in Triton's terms (`model_config.proto`), for the
//! model configuration endpoints: name, platform `baton`, `max_batch_size`,
//! inputs and outputs (data types and dims without the batch dim when the
//! model batches), and the dynamic and sequence batching sections where they
//! apply, so Triton's tooling (perf_analyzer) reads the shapes it needs.
//!
//! The model batches (`max_batch_size` > 0) when every input and output has a
//! dynamic first dimension (the rows the scheduler stitches); its
//! `max_batch_size` is then the smallest `max_batch` of the pipeline's nodes.
//! A node with write-back state makes it a sequence model (`sequence_batching`
//! instead of `dynamic_batching`, Triton's scheduling being one of them;
//! direct strategy: each sequence keeps its state), with the pipeline's stream
//! idle timeout.

use baton::{Dim, PipelineSpec, TensorSpec};
use serde_json::{json, Value};

use crate::model::PLATFORM;
use crate::triton::tpb;

/// One input or output as the config shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigTensor {
    pub name: String,
    /// Triton's `TYPE_*` name.
    pub data_type: &'static str,
    /// Dims, the batch dim left out when the model batches; -1: any size.
    pub dims: Vec<i64>,
    pub optional: bool,
}

/// A model's Triton-shaped configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelConfig {
    pub name: String,
    /// 0: the model does not batch (dims are whole shapes).
    pub max_batch_size: u32,
    pub inputs: Vec<ConfigTensor>,
    pub outputs: Vec<ConfigTensor>,
    /// `dynamic_batching.max_queue_delay_microseconds`, when the model batches.
    pub max_queue_delay_us: Option<u64>,
    /// `sequence_batching.max_sequence_idle_microseconds`, for a sequence model.
    pub sequence_idle_us: Option<u64>,
}

/// Triton's DataType enum name of a dtype.
fn data_type(dtype: baton::DType) -> &'static str {
    baton_kserve_client::vocabulary::config_type(dtype.kserve_name()).unwrap_or("TYPE_INVALID")
}

fn dims(spec: &TensorSpec, skip_batch: bool) -> Vec<i64> {
    let skip = usize::from(skip_batch);
    spec.shape
        .iter()
        .skip(skip)
        .map(|d| match d {
            Dim::Fixed(n) => *n as i64,
            Dim::Dynamic(_) => -1,
        })
        .collect()
}

impl ModelConfig {
    /// The configuration of pipeline `spec`.
    pub fn of(spec: &PipelineSpec) -> Self {
        let batched_first = |s: &TensorSpec| matches!(s.shape.first(), Some(Dim::Dynamic(_)));
        let batches = !spec.inputs.is_empty()
            && spec.inputs.iter().all(|i| batched_first(&i.spec))
            && spec.outputs.iter().all(|o| batched_first(&o.spec));
        let max_batch = spec.nodes.iter().map(|n| n.max_batch).min().unwrap_or(1);
        let max_batch_size = if batches { u32::try_from(max_batch.max(1)).unwrap_or(u32::MAX) } else { 0 };
        let tensor = |s: &TensorSpec, optional: bool| ConfigTensor {
            name: s.name.clone(),
            data_type: data_type(s.dtype),
            dims: dims(s, batches),
            optional,
        };
        let stateful = spec.nodes.iter().any(|n| n.keeps_streams());
        ModelConfig {
            name: spec.name.clone(),
            max_batch_size,
            inputs: spec.inputs.iter().map(|i| tensor(&i.spec, i.optional)).collect(),
            outputs: spec.outputs.iter().map(|o| tensor(&o.spec, false)).collect(),
            max_queue_delay_us: batches.then_some(spec.scheduler.max_queue_delay_us),
            sequence_idle_us: stateful.then(|| spec.streams.idle_timeout_ms.saturating_mul(1000)),
        }
    }

    /// As Triton's HTTP config endpoint shows it (model_config.proto as JSON).
    pub fn to_json(&self) -> Value {
        let tensors = |list: &[ConfigTensor]| {
            list.iter()
                .map(|t| json!({ "name": t.name, "data_type": t.data_type, "dims": t.dims, "optional": t.optional }))
                .collect::<Vec<_>>()
        };
        let mut config = json!({
            "name": self.name,
            "platform": PLATFORM,
            "backend": PLATFORM,
            "max_batch_size": self.max_batch_size,
            "input": tensors(&self.inputs),
            "output": tensors(&self.outputs),
        });
        // Triton's scheduling is one of: a sequence model's batching holds its queue delay.
        match (self.sequence_idle_us, self.max_queue_delay_us) {
            (Some(idle), delay) => {
                let direct = json!({ "max_queue_delay_microseconds": delay.unwrap_or(0) });
                config["sequence_batching"] = json!({ "max_sequence_idle_microseconds": idle, "direct": direct });
            }
            (None, Some(delay)) => {
                config["dynamic_batching"] = json!({ "max_queue_delay_microseconds": delay, "priority_levels": 2 });
            }
            (None, None) => {}
        }
        config
    }

    /// As gRPC's ModelConfig answers it (Triton's full schema, the fields a pipeline has).
    pub fn to_pb(&self) -> tpb::ModelConfig {
        use tpb::model_config::SchedulingChoice;
        let data_type = |name: &str| tpb::DataType::from_str_name(name).unwrap_or(tpb::DataType::TypeInvalid) as i32;
        let input = self
            .inputs
            .iter()
            .map(|t| tpb::ModelInput {
                name: t.name.clone(),
                data_type: data_type(t.data_type),
                dims: t.dims.clone(),
                optional: t.optional,
                ..Default::default()
            })
            .collect();
        let output = self
            .outputs
            .iter()
            .map(|t| tpb::ModelOutput {
                name: t.name.clone(),
                data_type: data_type(t.data_type),
                dims: t.dims.clone(),
                ..Default::default()
            })
            .collect();
        // Triton's scheduling is one of: a sequence model's batching holds its queue delay.
        let scheduling = match (self.sequence_idle_us, self.max_queue_delay_us) {
            (Some(idle), delay) => {
                let direct = tpb::model_sequence_batching::StrategyDirect {
                    max_queue_delay_microseconds: delay.unwrap_or(0),
                    ..Default::default()
                };
                Some(SchedulingChoice::SequenceBatching(tpb::ModelSequenceBatching {
                    max_sequence_idle_microseconds: idle,
                    strategy_choice: Some(tpb::model_sequence_batching::StrategyChoice::Direct(direct)),
                    ..Default::default()
                }))
            }
            (None, Some(delay)) => Some(SchedulingChoice::DynamicBatching(tpb::ModelDynamicBatching {
                max_queue_delay_microseconds: delay,
                priority_levels: 2,
                ..Default::default()
            })),
            (None, None) => None,
        };
        tpb::ModelConfig {
            name: self.name.clone(),
            platform: PLATFORM.into(),
            backend: PLATFORM.into(),
            max_batch_size: self.max_batch_size as i32,
            input,
            output,
            scheduling_choice: scheduling,
            ..Default::default()
        }
    }
}
