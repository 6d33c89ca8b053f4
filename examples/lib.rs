//! Examples of embedding Baton; see the `[[example]]` targets.
