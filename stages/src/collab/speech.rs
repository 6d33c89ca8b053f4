//! The speech side of the collaborating-networks pipeline: WAV input, VAD
//! chunking, and the Rust stage that turns per-chunk speech probabilities into
//! a stream's speech features.
//!
//! Chunking follows silero-vad's own ONNX wrapper: 16 kHz samples as
//! `int16 / 32768`, chunks of 512 new samples, each preceded by the last 64
//! samples of the previous chunk (zeros before the first), the last chunk
//! zero-padded. The model (`vad_batched.onnx`, a batch-first wrapper made by
//! `scripts/fetch_real_models.py`) keeps its recurrent state in `state`, which
//! the pipeline writes back per stream.

use std::path::Path;

use baton::{DType, Dim, FunctionStage, ModelSignature, StageOutput, Tensor, TensorSpec};

/// Samples per chunk at 16 kHz.
pub const CHUNK: usize = 512;
/// Samples of context before each chunk.
pub const CONTEXT: usize = 64;
/// Sample rate the VAD expects.
pub const SAMPLE_RATE: u32 = 16_000;
/// A chunk with probability above this is speech.
pub const THRESHOLD: f32 = 0.5;

/// Reads a 16-bit PCM mono WAV file as samples in [-1, 1).
pub fn read_wav(path: &Path) -> Result<Vec<f32>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse_wav(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// Parses a 16-bit PCM mono 16 kHz WAV.
pub fn parse_wav(bytes: &[u8]) -> Result<Vec<f32>, String> {
    if bytes.len() < 12 || &bytes[0..4] != b"RIFF" || &bytes[8..12] != b"WAVE" {
        return Err("not a RIFF/WAVE file".into());
    }
    let u16_at = |i: usize| u16::from_le_bytes([bytes[i], bytes[i + 1]]);
    let u32_at = |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
    let mut at = 12;
    let mut format = None;
    while at + 8 <= bytes.len() {
        let id = &bytes[at..at + 4];
        let size = u32_at(at + 4) as usize;
        let body = at + 8;
        let end = body.checked_add(size).filter(|&e| e <= bytes.len()).ok_or("truncated chunk")?;
        match id {
            b"fmt " if size >= 16 => {
                format = Some((u16_at(body), u16_at(body + 2), u32_at(body + 4), u16_at(body + 14)))
            }
            b"data" => {
                let (codec, channels, rate, bits) = format.ok_or("data chunk before fmt chunk")?;
                if (codec, channels, rate, bits) != (1, 1, SAMPLE_RATE, 16) {
                    return Err(format!(
                        "need 16-bit PCM mono at {SAMPLE_RATE} Hz, got codec {codec}, {channels} channels, {rate} Hz, {bits} bits"
                    ));
                }
                let samples =
                    bytes[body..end].chunks_exact(2).map(|p| f32::from(i16::from_le_bytes([p[0], p[1]])) / 32768.0);
                return Ok(samples.collect());
            }
            _ => {}
        }
        at = end + (size & 1);
    }
    Err("no data chunk".into())
}

/// The stream's chunks as VAD inputs: `[CONTEXT + CHUNK]` samples each.
pub fn chunks(samples: &[f32]) -> Vec<Vec<f32>> {
    let count = samples.len().div_ceil(CHUNK).max(1);
    (0..count)
        .map(|k| {
            let start = k * CHUNK;
            (0..CONTEXT + CHUNK)
                .map(|i| {
                    let at = (start + i).checked_sub(CONTEXT);
                    at.and_then(|a| samples.get(a)).copied().unwrap_or(0.0)
                })
                .collect()
        })
        .collect()
}

/// A chunk as the pipeline's `chunk` input, `[1, 576]`.
pub fn chunk_tensor(chunk: &[f32]) -> Tensor {
    Tensor::from_slice(vec![1, chunk.len()], chunk).expect("shape matches the data")
}

fn spec(name: &str, width: usize) -> TensorSpec {
    TensorSpec { name: name.into(), dtype: DType::F32, shape: vec![Dim::Dynamic(Some("N".into())), Dim::Fixed(width)] }
}

/// Speech features of a stream from its running counts `[chunks, speech chunks]`:
/// the fraction of speech chunks, and the speech duration in seconds / 10
/// (the recommender's last two features; see `scripts/train_recommender.py`).
pub fn speech_features(chunks: f64, speech: f64) -> [f32; 2] {
    let fraction = if chunks > 0.0 { speech / chunks } else { 0.0 };
    let seconds = speech * CHUNK as f64 / f64::from(SAMPLE_RATE);
    [fraction as f32, (seconds / 10.0) as f32]
}

/// The `speech_activity` stage: `prob [N,1]` and the stream's running counts
/// `activity [N,2]` (written back per stream) → `speech_features [N,2]` and
/// `new_activity [N,2]`.
pub fn speech_activity_stage() -> FunctionStage {
    let signature = ModelSignature {
        inputs: vec![spec("prob", 1), spec("activity", 2)],
        outputs: vec![spec("speech_features", 2), spec("new_activity", 2)],
    };
    FunctionStage::new(signature, |inputs, _rows| {
        let prob = inputs[0].as_slice::<f32>().map_err(|e| e.to_string())?;
        let activity = inputs[1].as_slice::<f32>().map_err(|e| e.to_string())?;
        let n = prob.len();
        let mut features = Vec::with_capacity(2 * n);
        let mut next = Vec::with_capacity(2 * n);
        for (p, counts) in prob.iter().zip(activity.chunks_exact(2)) {
            let chunks = f64::from(counts[0]) + 1.0;
            let speech = f64::from(counts[1]) + f64::from(u8::from(*p > THRESHOLD));
            features.extend(speech_features(chunks, speech));
            next.extend([chunks as f32, speech as f32]);
        }
        let tensor = |data: Vec<f32>| Tensor::from_vec(vec![n, 2], data).map_err(|e| e.to_string());
        Ok(StageOutput { tensors: vec![tensor(features)?, tensor(next)?], rows: None })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_carry_64_samples_of_context_and_pad_the_last() {
        let samples: Vec<f32> = (0..600).map(|i| i as f32).collect();
        let c = chunks(&samples);
        assert_eq!(c.len(), 2);
        assert!(c[0][..CONTEXT].iter().all(|&x| x == 0.0), "zeros before the first sample");
        assert_eq!(c[0][CONTEXT], 0.0);
        assert_eq!(c[0][CONTEXT + 511], 511.0);
        assert_eq!(c[1][0], 448.0, "context = the last 64 samples of chunk 0");
        assert_eq!(c[1][CONTEXT], 512.0);
        assert_eq!(c[1][CONTEXT + 88], 0.0, "the last chunk is zero-padded");
    }

    #[test]
    fn speech_features_match_the_training_definition() {
        // 102 chunks, 71 above threshold (session s00's reference): 71/102 and 71*512/16000/10.
        let [fraction, duration] = speech_features(102.0, 71.0);
        assert_eq!(fraction, (71.0f64 / 102.0) as f32);
        assert_eq!(duration, (71.0f64 * 512.0 / 16000.0 / 10.0) as f32);
    }

    #[test]
    fn wav_parser_reads_16_bit_mono_and_rejects_others() {
        let mut wav = b"RIFF\0\0\0\0WAVEfmt ".to_vec();
        wav.extend(16u32.to_le_bytes());
        wav.extend([1, 0, 1, 0]);
        wav.extend(16000u32.to_le_bytes());
        wav.extend(32000u32.to_le_bytes());
        wav.extend([2, 0, 16, 0]);
        wav.extend(b"data");
        wav.extend(4u32.to_le_bytes());
        wav.extend((-16384i16).to_le_bytes());
        wav.extend(16384i16.to_le_bytes());
        assert_eq!(parse_wav(&wav).unwrap(), vec![-0.5, 0.5]);
        wav[22] = 2; // two channels
        assert!(parse_wav(&wav).unwrap_err().contains("2 channels"));
    }
}
