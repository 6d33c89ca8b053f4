//! The Rust stages of the shipped pipelines, registered by the `baton`
//! binary: the collaborating-networks pipeline's speech (voice activity),
//! text and recommender stages ([`collab`]), and OCR ([`ocr`]).

pub mod collab;
pub mod ocr;
