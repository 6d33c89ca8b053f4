//! Examples of embedding Baton (see the `[[example]]` targets), and the Rust
//! stages of the shipped collaborating-networks pipeline ([`collab`], [`ocr`]).

pub mod collab;
pub mod ocr;
