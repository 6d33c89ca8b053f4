//! What the command's test files share: scratch folders.

pub use baton_scratch::Scratch;

/// A fresh, empty folder for test `what`.
pub fn scratch(what: &str) -> Scratch {
    Scratch::new(what)
}
