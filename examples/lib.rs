//! Examples of embedding Baton; see the `[[example]]` targets.

pub mod ocr;
