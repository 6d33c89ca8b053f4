//! Pipelines with streams and sessions for the simulator's and `baton tune`'s
//! test files: a stateful node beside a flood, the collab pipeline's shape, and
//! a session file.

use std::path::{Path, PathBuf};

use super::profile;

/// Speech-like streams beside a flood: `vad` keeps per-stream state (chunk ->
/// p, state written back), `mlp` takes plain requests (x -> y).
pub fn mixed(dir: &Path, vad_batch: usize) -> PathBuf {
    let text = format!(
        r#"
[pipeline]
name = "mix"
[scheduler]
decide_on_arrival = true
[inputs.chunk]
to = ["vad.chunk"]
optional = true
[inputs.x]
to = ["mlp.x"]
optional = true
[outputs.p]
from = "vad.p"
[outputs.y]
from = "mlp.y"

[nodes.vad]
max_batch = {vad_batch}
[[nodes.vad.stages]]
engine = "cost_model"
params.inputs = [{{ name = "chunk", dtype = "f32", shape = [-1, 4] }}, {{ name = "state", dtype = "f32", shape = [-1, 2] }}]
params.outputs = [{{ name = "p", dtype = "f32", shape = [-1, 1] }}, {{ name = "new_state", dtype = "f32", shape = [-1, 2] }}]
[[nodes.vad.state]]
input = "state"
output = "new_state"

[nodes.mlp]
max_batch = 8
[[nodes.mlp.stages]]
engine = "cost_model"
params.inputs = [{{ name = "x", dtype = "f32", shape = [-1, 4] }}]
params.outputs = [{{ name = "y", dtype = "f32", shape = [-1, 4] }}]
"#
    );
    let path = dir.join("mix.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// The mixed pipeline's profile: `vad` of `vad_us` at every batch size, `mlp` 50-200 µs.
pub fn mixed_profile(dir: &Path, vad_us: &[f64]) -> PathBuf {
    let vad: Vec<(usize, &[f64])> = [1, 2, 4, 8].iter().map(|&b| (b, vad_us)).collect();
    let mlp: &[(usize, &[f64])] = &[(1, &[50.0, 60.0, 80.0]), (8, &[120.0, 150.0, 200.0])];
    profile(dir, &[("vad", &vad), ("mlp", mlp)])
}

/// The collab pipeline's shape: image -> text; chunk -> speech (stateful) ->
/// speech_features; recommend joins them with the text features a final chunk carries.
pub fn collab_like(dir: &Path) -> PathBuf {
    let stage = |inputs: &str, outputs: &str| {
        format!("engine = \"cost_model\"\nparams.inputs = [{inputs}]\nparams.outputs = [{outputs}]\n")
    };
    let f = |name: &str, width: usize| format!("{{ name = \"{name}\", dtype = \"f32\", shape = [-1, {width}] }}");
    let text = format!(
        r#"
[pipeline]
name = "collab_like"
[inputs.chunk]
to = ["speech.chunk"]
optional = true
[inputs.image]
to = ["text.image"]
optional = true
[inputs.text_features]
to = ["recommend.text_features"]
optional = true
[outputs.speech_prob]
from = "speech.p"
[outputs.text_features]
from = "text.text_features"
[outputs.category]
from = "recommend.category"
[nodes.text]
max_batch = 1
[[nodes.text.stages]]
{}
[nodes.speech]
max_batch = 8
[[nodes.speech.stages]]
{}
[[nodes.speech.state]]
input = "state"
output = "new_state"
[nodes.recommend]
max_batch = 8
[[nodes.recommend.stages]]
{}
[[edges]]
from = "speech.speech_features"
to = "recommend.speech_features"
"#,
        stage(&f("image", 4), &f("text_features", 4)),
        stage(
            &format!("{}, {}", f("chunk", 4), f("state", 2)),
            &format!("{}, {}, {}", f("p", 1), f("new_state", 2), f("speech_features", 4))
        ),
        stage(&format!("{}, {}", f("text_features", 4), f("speech_features", 4)), &f("category", 1)),
    );
    let path = dir.join("collab_like.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// A session file of one session whose WAV holds `samples` 16-bit mono samples.
pub fn session_file(dir: &Path, samples: u32) -> PathBuf {
    let mut wav = Vec::new();
    wav.extend_from_slice(b"RIFF");
    wav.extend_from_slice(&(36 + samples * 2).to_le_bytes());
    wav.extend_from_slice(b"WAVEfmt ");
    wav.extend_from_slice(&16u32.to_le_bytes());
    for v in [1u16, 1] {
        wav.extend_from_slice(&v.to_le_bytes());
    }
    wav.extend_from_slice(&16000u32.to_le_bytes());
    wav.extend_from_slice(&32000u32.to_le_bytes());
    for v in [2u16, 16] {
        wav.extend_from_slice(&v.to_le_bytes());
    }
    wav.extend_from_slice(b"data");
    wav.extend_from_slice(&(samples * 2).to_le_bytes());
    wav.resize(wav.len() + samples as usize * 2, 0);
    std::fs::write(dir.join("s.wav"), wav).unwrap();
    let path = dir.join("sessions.json");
    std::fs::write(&path, r#"{"sessions": [{"id": "s", "wav": "s.wav"}]}"#).unwrap();
    path
}
