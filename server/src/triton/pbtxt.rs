//! `config.pbtxt`: Triton's `ModelConfig` in protobuf text format, parsed by
//! prost-reflect's text-format parser over the schema in
//! `proto/triton_model_config.proto` (compiled by protox at build time), then
//! decoded into the generated [`super::tpb::ModelConfig`]. The config shows
//! as JSON (protobuf field names) at the HTTP config endpoint.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use prost::Message;
use prost_reflect::{DescriptorPool, DynamicMessage, MapKey, MessageDescriptor, Value};
use serde_json::{json, Map, Value as Json};

use super::tpb;

static POOL: LazyLock<DescriptorPool> = LazyLock::new(|| {
    DescriptorPool::decode(&include_bytes!(concat!(env!("OUT_DIR"), "/triton_model_config.bin"))[..])
        .expect("the model config schema compiled by build.rs decodes")
});

/// The `ModelConfig` message's descriptor.
pub fn model_config_descriptor() -> MessageDescriptor {
    POOL.get_message_by_name("triton.ModelConfig").expect("the schema has triton.ModelConfig")
}

/// A model configuration that cannot be used: its file, the line (when known),
/// the field (a path such as `input[1].data_type`, when it is about one) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub file: PathBuf,
    pub line: Option<usize>,
    pub field: Option<String>,
    pub message: String,
}

impl ConfigError {
    /// An error about `field` of `file`; the line is where the field's name first appears in `text`.
    pub fn field(file: &Path, text: Option<&str>, field: &str, message: impl Into<String>) -> Self {
        let line = text.and_then(|t| line_of_field(t, field));
        ConfigError { file: file.to_path_buf(), line, field: Some(field.to_string()), message: message.into() }
    }

    /// An error about `file` as a whole.
    pub fn file(file: &Path, message: impl Into<String>) -> Self {
        ConfigError { file: file.to_path_buf(), line: None, field: None, message: message.into() }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": field `{field}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// The line (1-based) where the last name of field path `field` first appears as a
/// field name (`name:`, `name {` or `name [`) in text-format `text`.
fn line_of_field(text: &str, field: &str) -> Option<usize> {
    let leaf = field.rsplit('.').next()?.split('[').next()?;
    text.lines()
        .position(|line| {
            let line = line.split('#').next().unwrap_or("");
            line.match_indices(leaf).any(|(at, _)| {
                let before = line[..at].chars().next_back();
                let after = line[at + leaf.len()..].trim_start().chars().next();
                !before.is_some_and(|c| c.is_alphanumeric() || c == '_') && matches!(after, Some(':' | '{' | '['))
            })
        })
        .map(|i| i + 1)
}

/// A parsed configuration: the generic message (every field it sets) and the typed one.
#[derive(Clone, Debug)]
pub struct Parsed {
    pub message: DynamicMessage,
    pub config: tpb::ModelConfig,
}

/// Parses text-format `text` of `file`. Errors give the line and column and name
/// the field (an unknown field, a wrong value's field) as the parser does.
pub fn parse(file: &Path, text: &str) -> Result<Parsed, ConfigError> {
    let colons = list_colons(text);
    let message = DynamicMessage::parse_text_format(model_config_descriptor(), &colons).map_err(|e| {
        let offset = miette::Diagnostic::labels(&e).and_then(|mut labels| labels.next()).map(|l| l.offset());
        let (line, column) = offset.map_or((None, None), |o| line_column(&colons, o));
        let message = match column {
            Some(column) => format!("column {column}: {e}"),
            None => e.to_string(),
        };
        ConfigError { file: file.to_path_buf(), line, field: None, message }
    })?;
    typed(file, message)
}

/// The typed config of a generic message.
pub fn typed(file: &Path, message: DynamicMessage) -> Result<Parsed, ConfigError> {
    let config = tpb::ModelConfig::decode(message.encode_to_vec().as_slice())
        .map_err(|e| ConfigError::file(file, format!("the config does not decode as ModelConfig: {e}")))?;
    Ok(Parsed { message, config })
}

/// The generic message of a typed config.
pub fn dynamic(config: &tpb::ModelConfig) -> DynamicMessage {
    DynamicMessage::decode(model_config_descriptor(), config.encode_to_vec().as_slice())
        .expect("a ModelConfig encodes and decodes with its own schema")
}

/// `text` with a `:` between a field name and the `[` of a list of messages
/// (`input [ { ... } ]`, as Triton's configs write them), which the text format
/// allows but prost-reflect's parser wants written `input: [ ... ]`. Strings and
/// comments are left alone; lines keep their numbers.
fn list_colons(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut chars = text.chars().peekable();
    let mut last_word = false; // the last token was an identifier
    while let Some(c) = chars.next() {
        match c {
            '"' | '\'' => {
                out.push(c);
                while let Some(d) = chars.next() {
                    out.push(d);
                    if d == '\\' {
                        out.extend(chars.next());
                    } else if d == c {
                        break;
                    }
                }
                last_word = false;
            }
            '#' => {
                out.push(c);
                while let Some(&d) = chars.peek() {
                    if d == '\n' {
                        break;
                    }
                    out.push(d);
                    chars.next();
                }
            }
            '[' if last_word => {
                out.push_str(": [");
                last_word = false;
            }
            c if c.is_whitespace() => out.push(c),
            c => {
                out.push(c);
                last_word = c.is_alphanumeric() || c == '_';
            }
        }
    }
    out
}

fn line_column(text: &str, offset: usize) -> (Option<usize>, Option<usize>) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    (Some(line), Some(column))
}

fn value_json(value: &Value) -> Json {
    match value {
        Value::Bool(b) => json!(b),
        Value::I32(n) => json!(n),
        Value::I64(n) => json!(n),
        Value::U32(n) => json!(n),
        Value::U64(n) => json!(n),
        Value::F32(n) => json!(n),
        Value::F64(n) => json!(n),
        Value::String(s) => json!(s),
        Value::Bytes(b) => json!(String::from_utf8_lossy(b)),
        Value::EnumNumber(n) => json!(n),
        Value::Message(m) => to_json_named(m),
        Value::List(items) => Json::Array(items.iter().map(value_json).collect()),
        Value::Map(map) => {
            let mut object = Map::new();
            for (key, value) in map {
                object.insert(map_key(key), value_json(value));
            }
            Json::Object(object)
        }
    }
}

fn map_key(key: &MapKey) -> String {
    match key {
        MapKey::Bool(b) => b.to_string(),
        MapKey::I32(n) => n.to_string(),
        MapKey::I64(n) => n.to_string(),
        MapKey::U32(n) => n.to_string(),
        MapKey::U64(n) => n.to_string(),
        MapKey::String(s) => s.clone(),
    }
}

/// The message as JSON with protobuf field names: the fields it sets, enums by
/// name (`TYPE_FP32`, `KIND_CPU`), 64-bit integers as numbers (as the server's
/// other config answers write them).
pub fn to_json_named(message: &DynamicMessage) -> Json {
    let mut object = Map::new();
    for (field, value) in message.fields() {
        let json = match (field.kind().as_enum(), value) {
            (Some(e), Value::EnumNumber(n)) => enum_name(e, *n),
            (Some(e), Value::List(items)) => {
                Json::Array(items.iter().map(|v| v.as_enum_number().map_or(Json::Null, |n| enum_name(e, n))).collect())
            }
            (None, Value::Message(m)) => to_json_named(m),
            (None, Value::List(items)) if field.kind().as_message().is_some() => {
                Json::Array(items.iter().map(|v| v.as_message().map_or(Json::Null, to_json_named)).collect())
            }
            (None, Value::Map(map)) => {
                let mut object = Map::new();
                for (key, value) in map {
                    let v = value.as_message().map_or_else(|| value_json(value), to_json_named);
                    object.insert(map_key(key), v);
                }
                Json::Object(object)
            }
            _ => value_json(value),
        };
        object.insert(field.name().to_string(), json);
    }
    Json::Object(object)
}

fn enum_name(e: &prost_reflect::EnumDescriptor, n: i32) -> Json {
    e.get_value(n).map_or(json!(n), |v| json!(v.name()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ADD: &str = r#"
name: "add"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [
  { name: "A", data_type: TYPE_INT32, dims: [ 4 ] },
  { name: "B" data_type: TYPE_INT32 dims: [ 4 ] }
]
output { name: "C" data_type: TYPE_INT32 dims: 4 }
dynamic_batching { max_queue_delay_microseconds: 100 preferred_batch_size: [ 2, 4 ] }
instance_group [ { count: 2, kind: KIND_CPU } ]
version_policy: { latest: { num_versions: 2 } }
parameters { key: "intra_op_thread_count" value: { string_value: "2" } }
"#;

    #[test]
    fn triton_text_format_parses_into_the_typed_config() {
        let parsed = parse(Path::new("m/config.pbtxt"), ADD).unwrap();
        let c = &parsed.config;
        assert_eq!((c.name.as_str(), c.max_batch_size), ("add", 8));
        assert_eq!(c.input.len(), 2);
        assert_eq!(c.input[1].data_type, tpb::DataType::TypeInt32 as i32);
        assert_eq!(c.output[0].dims, [4]);
        assert_eq!(c.instance_group[0].count, 2);
        assert_eq!(c.parameters["intra_op_thread_count"].string_value, "2");
        let Some(tpb::model_config::SchedulingChoice::DynamicBatching(d)) = &c.scheduling_choice else {
            panic!("dynamic batching expected");
        };
        assert_eq!((d.max_queue_delay_microseconds, d.preferred_batch_size.as_slice()), (100, &[2, 4][..]));
        let json = to_json_named(&parsed.message);
        assert_eq!(json["input"][0]["data_type"], "TYPE_INT32");
        assert_eq!(json["instance_group"][0]["kind"], "KIND_CPU");
    }

    #[test]
    fn errors_name_the_file_line_and_field() {
        let text = "name: \"a\"\nmax_batch_size: 8\ninput { name: \"x\" data_typ: TYPE_FP32 }\n";
        let e = parse(Path::new("repo/a/config.pbtxt"), text).unwrap_err();
        assert_eq!(e.line, Some(3), "{e}");
        let shown = e.to_string();
        assert!(shown.starts_with("repo/a/config.pbtxt:3: column"), "{shown}");
        assert!(shown.contains("data_typ"), "{shown}");
        let e = parse(Path::new("c.pbtxt"), "max_batch_size: \"eight\"\n").unwrap_err();
        assert_eq!(e.line, Some(1), "{e}");
        let e = parse(Path::new("c.pbtxt"), "input { data_type: TYPE_FLOAT32 }").unwrap_err();
        assert!(e.to_string().contains("TYPE_FLOAT32"), "{e}");
    }

    #[test]
    fn a_field_error_finds_the_fields_line() {
        let e = ConfigError::field(Path::new("c.pbtxt"), Some(ADD), "dynamic_batching.preferred_batch_size", "x");
        assert_eq!(e.line, Some(10));
        assert_eq!(e.to_string(), "c.pbtxt:10: field `dynamic_batching.preferred_batch_size`: x");
    }
}
