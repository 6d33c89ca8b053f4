//! What Baton does with each field of a `ModelConfig`: reads it (the mapping
//! turns it into the pipeline), warns that it ignores it (where ignoring it
//! cannot change an answer), or refuses the config naming it. A field the
//! table does not list is refused too, so no field is ever silently dropped.

use std::path::Path;

use prost_reflect::{DynamicMessage, Value};

use super::pbtxt::ConfigError;

/// The rule for one field, by its schema path (`input.data_type`, no indices).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Read by the mapping (a message field's own fields are checked in turn).
    Read,
    /// Ignored with a warning: why ignoring it changes no answer.
    Warn(&'static str),
    /// Refused: why Baton cannot honour it.
    Refuse(&'static str),
}

use Rule::{Read, Refuse, Warn};

const NO_EFFECT: &str = "it tunes Triton's own runtime and changes no answer; Baton ignores it";

/// Every field Baton knows what to do with.
const RULES: &[(&str, Rule)] = &[
    ("name", Read),
    ("platform", Read),
    ("backend", Read),
    ("runtime", Refuse("Baton runs ONNX models with its own ONNX Runtime engine; leave `runtime` out")),
    ("max_batch_size", Read),
    ("default_model_filename", Read),
    ("cc_model_filenames", Refuse("per-GPU model files are not supported; use default_model_filename")),
    ("version_policy", Read),
    ("version_policy.latest", Read),
    ("version_policy.latest.num_versions", Read),
    ("version_policy.all", Read),
    ("version_policy.specific", Read),
    ("version_policy.specific.versions", Read),
    ("input", Read),
    ("input.name", Read),
    ("input.data_type", Read),
    ("input.dims", Read),
    ("input.reshape", Read),
    ("input.reshape.shape", Read),
    ("input.optional", Read),
    ("input.format", Warn("the format only describes the tensor's layout; Baton ignores it")),
    ("input.is_shape_tensor", Refuse("shape tensors are a TensorRT feature")),
    ("input.allow_ragged_batch", Refuse("ragged batching of a Triton model is not supported")),
    ("input.is_non_linear_format_io", Refuse("non-linear I/O formats are a TensorRT feature")),
    ("output", Read),
    ("output.name", Read),
    ("output.data_type", Read),
    ("output.dims", Read),
    ("output.reshape", Read),
    ("output.reshape.shape", Read),
    ("output.label_filename", Warn("labels serve only the classification extension, which Baton does not offer")),
    ("output.is_shape_tensor", Refuse("shape tensors are a TensorRT feature")),
    ("output.is_non_linear_format_io", Refuse("non-linear I/O formats are a TensorRT feature")),
    ("batch_input", Refuse("batch inputs are not supported")),
    ("batch_output", Refuse("batch outputs are not supported")),
    ("dynamic_batching", Read),
    ("dynamic_batching.max_queue_delay_microseconds", Read),
    ("dynamic_batching.preferred_batch_size", Warn("Baton forms batches of what is waiting; sizes change no answer")),
    ("dynamic_batching.preserve_ordering", Warn("each request is answered on its own; ordering changes no answer")),
    ("dynamic_batching.priority_levels", Read),
    ("dynamic_batching.default_priority_level", Read),
    ("dynamic_batching.default_queue_policy", Read),
    ("dynamic_batching.default_queue_policy.timeout_action", Read),
    ("dynamic_batching.default_queue_policy.default_timeout_microseconds", Read),
    ("dynamic_batching.default_queue_policy.allow_timeout_override", Read),
    ("dynamic_batching.default_queue_policy.max_queue_size", Read),
    ("dynamic_batching.priority_queue_policy", Refuse("per-priority-level queue policies are not supported")),
    ("sequence_batching", Read),
    ("sequence_batching.max_sequence_idle_microseconds", Read),
    ("sequence_batching.direct", Read),
    ("sequence_batching.direct.max_queue_delay_microseconds", Read),
    ("sequence_batching.direct.minimum_slot_utilization", Read),
    ("sequence_batching.oldest", Read),
    ("sequence_batching.oldest.max_candidate_sequences", Read),
    ("sequence_batching.oldest.preferred_batch_size", Read),
    ("sequence_batching.oldest.max_queue_delay_microseconds", Read),
    ("sequence_batching.oldest.preserve_ordering", Read),
    ("sequence_batching.control_input", Read),
    ("sequence_batching.control_input.name", Read),
    ("sequence_batching.control_input.control", Read),
    ("sequence_batching.control_input.control.kind", Read),
    ("sequence_batching.control_input.control.int32_false_true", Read),
    ("sequence_batching.control_input.control.fp32_false_true", Read),
    ("sequence_batching.control_input.control.bool_false_true", Read),
    ("sequence_batching.control_input.control.data_type", Read),
    ("sequence_batching.state", Read),
    ("sequence_batching.state.input_name", Read),
    ("sequence_batching.state.output_name", Read),
    ("sequence_batching.state.data_type", Read),
    ("sequence_batching.state.dims", Read),
    ("sequence_batching.state.initial_state", Read),
    ("sequence_batching.state.initial_state.zero_data", Read),
    ("sequence_batching.state.initial_state.data_file", Read),
    ("sequence_batching.state.initial_state.data_type", Read),
    ("sequence_batching.state.initial_state.dims", Read),
    ("sequence_batching.state.initial_state.name", Read),
    ("sequence_batching.state.use_same_buffer_for_input_output", Warn(NO_EFFECT)),
    ("sequence_batching.state.use_growable_memory", Read),
    ("sequence_batching.iterative_sequence", Refuse("iterative sequences (decoupled generation) are not supported")),
    ("ensemble_scheduling", Read),
    ("ensemble_scheduling.step", Read),
    ("ensemble_scheduling.step.model_name", Read),
    ("ensemble_scheduling.step.model_version", Read),
    ("ensemble_scheduling.step.input_map", Read),
    ("ensemble_scheduling.step.output_map", Read),
    ("ensemble_scheduling.step.model_namespace", Refuse("model namespaces are not supported")),
    ("ensemble_scheduling.max_inflight_requests", Warn("Baton's scheduler bounds what runs; it changes no answer")),
    ("instance_group", Read),
    ("instance_group.name", Read),
    ("instance_group.kind", Read),
    ("instance_group.count", Read),
    ("instance_group.gpus", Read),
    ("instance_group.rate_limiter", Warn("Baton's scheduler decides what runs; rate limits change no answer")),
    ("instance_group.host_policy", Warn(NO_EFFECT)),
    ("instance_group.secondary_devices", Refuse("secondary devices (NVDLA) are not supported")),
    ("instance_group.profile", Refuse("TensorRT profiles are not supported")),
    ("instance_group.passive", Refuse("passive instances are not supported")),
    ("parameters", Read),
    ("optimization", Read),
    ("optimization.execution_accelerators", Read),
    ("optimization.execution_accelerators.gpu_execution_accelerator", Read),
    ("optimization.execution_accelerators.gpu_execution_accelerator.name", Read),
    ("optimization.execution_accelerators.gpu_execution_accelerator.parameters", Read),
    ("optimization.execution_accelerators.cpu_execution_accelerator", Read),
    ("optimization.execution_accelerators.cpu_execution_accelerator.name", Read),
    ("optimization.execution_accelerators.cpu_execution_accelerator.parameters", Read),
    ("optimization.graph", Warn(NO_EFFECT)),
    ("optimization.priority", Warn(NO_EFFECT)),
    ("optimization.cuda", Warn(NO_EFFECT)),
    ("optimization.input_pinned_memory", Warn(NO_EFFECT)),
    ("optimization.output_pinned_memory", Warn(NO_EFFECT)),
    ("optimization.gather_kernel_buffer_threshold", Warn(NO_EFFECT)),
    ("optimization.eager_batching", Warn(NO_EFFECT)),
    ("model_warmup", Warn("Baton warms its engines up itself; warm-up requests change no answer")),
    ("model_transaction_policy", Read),
    ("model_transaction_policy.decoupled", Read),
    ("model_operations", Refuse("model operations (custom op libraries) are not supported")),
    ("model_repository_agents", Refuse("repository agents are not supported")),
    ("response_cache", Warn("a cache changes no answer; Baton does not cache responses")),
    ("metric_tags", Warn("Baton's metrics carry their own labels")),
    ("model_metrics", Warn("Baton's metrics are configured on the server")),
];

/// The rule for schema path `path`: refused when the table does not list it.
pub fn rule(path: &str) -> Rule {
    RULES.iter().find(|(p, _)| *p == path).map_or(Refuse("Baton does not implement it"), |(_, r)| *r)
}

/// Checks every field `message` sets against the table: the first refused one
/// is the error; ignored ones come back as warnings (naming field and file).
pub fn check(file: &Path, text: Option<&str>, message: &DynamicMessage) -> Result<Vec<String>, ConfigError> {
    let mut warnings = Vec::new();
    walk(file, text, message, "", "", &mut warnings)?;
    Ok(warnings)
}

fn walk(
    file: &Path,
    text: Option<&str>,
    message: &DynamicMessage,
    path: &str,
    schema: &str,
    warnings: &mut Vec<String>,
) -> Result<(), ConfigError> {
    for (field, value) in message.fields() {
        let join = |prefix: &str| {
            if prefix.is_empty() {
                field.name().to_string()
            } else {
                format!("{prefix}.{}", field.name())
            }
        };
        let (path, schema) = (join(path), join(schema));
        match rule(&schema) {
            Refuse(why) => return Err(ConfigError::field(file, text, &path, format!("not supported: {why}"))),
            Warn(why) => warnings.push(format!("{}: field `{path}` ignored: {why}", file.display())),
            Read => match value {
                Value::Message(inner) => walk(file, text, inner, &path, &schema, warnings)?,
                Value::List(items) => {
                    for (i, item) in items.iter().enumerate() {
                        if let Value::Message(inner) = item {
                            walk(file, text, inner, &format!("{path}[{i}]"), &schema, warnings)?;
                        }
                    }
                }
                _ => {}
            },
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::triton::pbtxt;

    fn checked(text: &str) -> Result<Vec<String>, ConfigError> {
        let parsed = pbtxt::parse(Path::new("m/config.pbtxt"), text).unwrap();
        check(Path::new("m/config.pbtxt"), Some(text), &parsed.message)
    }

    #[test]
    fn read_fields_pass_ignored_ones_warn_and_others_are_refused_by_name() {
        assert_eq!(checked("max_batch_size: 4\ninput { name: \"a\" dims: 2 }").unwrap(), Vec::<String>::new());
        let w = checked("model_warmup { name: \"w\" batch_size: 1 }").unwrap();
        assert!(w[0].contains("field `model_warmup` ignored"), "{w:?}");
        let e = checked("name: \"m\"\ninput { name: \"a\" }\ninput { name: \"b\" is_shape_tensor: true }").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("input[1].is_shape_tensor"));
        assert_eq!(e.line, Some(3));
        let e = checked("model_operations { op_library_filename: \"x.so\" }").unwrap_err();
        assert!(e.to_string().contains("field `model_operations`: not supported"), "{e}");
    }

    #[test]
    fn every_schema_field_has_a_rule_or_is_refused() {
        // A field the table does not list is refused: nothing is dropped silently.
        assert_eq!(rule("no_such_field"), Refuse("Baton does not implement it"));
        assert_eq!(rule("input.name"), Read);
    }
}
