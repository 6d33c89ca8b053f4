//! The collaborating-networks pipeline of `configs/collab.toml`: per-session speech streamed chunk by chunk through silero-vad with
//! its recurrent state written back, the session's image through PP-OCRv4
//! detection and recognition, and a recommender joining both.
//!
//! This module holds the pipeline's Rust stages ([`register`] adds them to an
//! engine registry under the names the config uses) and the client side:
//! reading the committed sessions and streaming them ([`session`]).

pub mod features;
pub mod session;
pub mod speech;
pub mod text;

use baton::EngineRegistry;

/// Adds the pipeline's Rust stages: `speech_activity`, `ocr_det_input`,
/// `ocr_crops`, `ocr_decode`, `recommend_features`.
pub fn register(registry: EngineRegistry) -> EngineRegistry {
    registry
        .with_function("speech_activity", speech::speech_activity_stage())
        .with_function("ocr_det_input", text::det_input_stage())
        .with_function("ocr_crops", text::crops_stage())
        .with_function("ocr_decode", text::DecodeStage::default())
        .with_function("recommend_features", features::recommend_features_stage())
}

/// The standard engines plus this pipeline's stages: what `baton` itself runs configs with.
pub fn registry() -> EngineRegistry {
    register(baton_engines::standard_registry())
}
