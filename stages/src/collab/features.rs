//! The recommender's inputs: hashed text features and their join with the speech features.
//!
//! The exact definition is the one `scripts/train_recommender.py` trained the
//! model with: lowercase ASCII, tokens = runs of `[a-z0-9]`, FNV-1a 32-bit per
//! token into 256 buckets, L2-normalized (in f64, then f32); then the two
//! speech features. Text travels between nodes as UTF-8 bytes in a `u8`
//! tensor `[N, L]`, zero-padded to the batch's longest text.

use baton::{DType, Dim, FunctionStage, ModelSignature, StageOutput, Tensor, TensorSpec};

/// Text feature buckets.
pub const BUCKETS: usize = 256;

/// FNV-1a, 32 bits.
pub fn fnv1a32(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811C_9DC5u32, |h, &b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193))
}

/// The text's hashed, L2-normalized bag of tokens.
pub fn text_features(text: &str) -> [f32; BUCKETS] {
    let lower = text.to_ascii_lowercase();
    let mut counts = [0f64; BUCKETS];
    for token in lower.split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit())).filter(|t| !t.is_empty()) {
        counts[fnv1a32(token.as_bytes()) as usize % BUCKETS] += 1.0;
    }
    let norm = counts.iter().map(|c| c * c).sum::<f64>().sqrt();
    let mut out = [0f32; BUCKETS];
    if norm > 0.0 {
        for (o, c) in out.iter_mut().zip(counts) {
            *o = (c / norm) as f32;
        }
    }
    out
}

/// Texts as a `u8 [N, L]` tensor of UTF-8, zero-padded to the longest.
pub fn texts_tensor(texts: &[String]) -> Result<Tensor, String> {
    let width = texts.iter().map(String::len).max().unwrap_or(0);
    let mut bytes = vec![0u8; texts.len() * width];
    for (row, text) in bytes.chunks_mut(width.max(1)).zip(texts) {
        row[..text.len()].copy_from_slice(text.as_bytes());
    }
    Tensor::from_vec(vec![texts.len(), width], bytes).map_err(|e| e.to_string())
}

/// The texts of a `u8 [N, L]` tensor (zero padding removed).
pub fn texts_of(tensor: &Tensor) -> Vec<String> {
    let bytes = tensor.as_slice::<u8>().unwrap_or(&[]);
    let width = tensor.shape().get(1).copied().unwrap_or(0).max(1);
    bytes
        .chunks(width)
        .map(|row| {
            let end = row.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
            String::from_utf8_lossy(&row[..end]).into_owned()
        })
        .collect()
}

fn spec(name: &str, width: usize) -> TensorSpec {
    TensorSpec { name: name.into(), dtype: DType::F32, shape: vec![Dim::Dynamic(Some("N".into())), Dim::Fixed(width)] }
}

/// The `recommend_features` stage: `text_features [N,256]` and `speech_features [N,2]` → `features [N,258]`.
pub fn recommend_features_stage() -> FunctionStage {
    let signature = ModelSignature {
        inputs: vec![spec("text_features", BUCKETS), spec("speech_features", 2)],
        outputs: vec![spec("features", BUCKETS + 2)],
    };
    FunctionStage::new(signature, |inputs, _rows| {
        let text = inputs[0].as_slice::<f32>().map_err(|e| e.to_string())?;
        let speech = inputs[1].as_slice::<f32>().map_err(|e| e.to_string())?;
        let n = inputs[0].batch_rows();
        let mut out = Vec::with_capacity(n * (BUCKETS + 2));
        for (t, s) in text.chunks_exact(BUCKETS).zip(speech.chunks_exact(2)) {
            out.extend_from_slice(t);
            out.extend_from_slice(s);
        }
        let features = Tensor::from_vec(vec![n, BUCKETS + 2], out).map_err(|e| e.to_string())?;
        Ok(StageOutput { tensors: vec![features], rows: None })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_the_training_test_vectors() {
        assert_eq!(fnv1a32(b""), 0x811C_9DC5);
        assert_eq!(fnv1a32(b"invoice"), 0x5A90_6110);
        assert_eq!(fnv1a32(b"invoice") as usize % BUCKETS, 16);
    }

    #[test]
    fn text_features_are_a_unit_vector_of_token_counts() {
        let f = text_features("Invoice INVOICE, refund!");
        let norm: f32 = f.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-6);
        assert!(f[16] > f[fnv1a32(b"refund") as usize % BUCKETS], "invoice counted twice");
        assert!(text_features("  ...  ").iter().all(|&x| x == 0.0));
    }

    #[test]
    fn texts_round_trip_through_a_padded_byte_tensor() {
        let texts = vec!["hello world".to_string(), String::new(), "ok".to_string()];
        assert_eq!(texts_of(&texts_tensor(&texts).unwrap()), texts);
    }
}
