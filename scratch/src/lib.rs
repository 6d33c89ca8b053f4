//! A test's own folder under the system's temporary one, removed with its files
//! when the test ends, passed or failed: every crate's tests take their scratch
//! space from here.

use std::path::Path;

/// A fresh folder `baton-NAME-XXXXXX` under the system's temporary one: a path
/// to it (`Deref` to [`Path`]), removed with its files when dropped.
pub struct Scratch(tempfile::TempDir);

impl Scratch {
    /// Makes the folder; panics where the temporary folder cannot take it (a test's set-up).
    pub fn new(name: &str) -> Scratch {
        Scratch(tempfile::Builder::new().prefix(&format!("baton-{name}-")).tempdir().unwrap())
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        self.0.path()
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        self.0.path()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folder_is_named_for_its_test_and_goes_with_its_files_when_dropped() {
        let dir = Scratch::new("scratch-self");
        let path = dir.to_path_buf();
        assert!(path.file_name().unwrap().to_str().unwrap().starts_with("baton-scratch-self-"));
        std::fs::create_dir(dir.join("inner")).unwrap();
        std::fs::write(dir.join("inner/file"), b"x").unwrap();
        drop(dir);
        assert!(!path.exists(), "{} outlives its scratch", path.display());
    }
}
