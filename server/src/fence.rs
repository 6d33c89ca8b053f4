//! The model repository as a fence: nothing a request names can reach a
//! file outside it, and files a request sends land only in a folder of the
//! server's own.
//!
//! - A model name or version folder name is one plain path component: not
//!   empty, not `.` or `..`, no `/`, `\` or NUL ([`check_component`]).
//! - A file the server opens from the repository is resolved through its
//!   symlinks and must still lie inside the repository ([`inside`]).
//! - Files sent with a load request are written under a private folder the
//!   server made for that model ([`SentFiles`]): relative paths of plain
//!   components only, each file and the whole set under a size limit; the
//!   folder is removed when the model is unloaded (when the `SentFiles` drops).
//!   The private folders lie in the repository's own folder ([`SentRoot`]),
//!   removed with whatever is left in it when the repository drops.

use std::path::{Component, Path, PathBuf};

/// Largest file a load request may send, bytes.
pub const MAX_SENT_FILE_BYTES: usize = 256 << 20;
/// Largest total of the files one load request may send, bytes.
pub const MAX_SENT_TOTAL_BYTES: usize = 1 << 30;

/// Checks that `name` (a `what`: "model name", "version folder") is one plain path component.
pub fn check_component(name: &str, what: &str) -> Result<(), String> {
    let bad = if name.is_empty() {
        Some("is empty")
    } else if name == "." || name == ".." {
        Some("is a relative folder")
    } else if name.contains(['/', '\\']) {
        Some("holds a path separator")
    } else if name.contains('\0') {
        Some("holds a NUL byte")
    } else {
        None
    };
    match bad {
        Some(why) => Err(format!("{what} {name:?} {why}: it must be one plain name inside the model repository")),
        None => Ok(()),
    }
}

/// `path` resolved through its symlinks, when it lies inside `root` (resolved too);
/// an error naming it when it does not exist or leads out.
pub fn inside(root: &Path, path: &Path) -> Result<PathBuf, String> {
    let root =
        root.canonicalize().map_err(|e| format!("cannot resolve the model repository {}: {e}", root.display()))?;
    let resolved = path.canonicalize().map_err(|e| format!("cannot resolve {}: {e}", path.display()))?;
    if resolved.starts_with(&root) {
        Ok(resolved)
    } else {
        Err(format!("{} leads out of the model repository {}: refused", path.display(), root.display()))
    }
}

/// A relative path a request names for a file it sends: plain components only.
fn relative_path(name: &str) -> Result<PathBuf, String> {
    let path = Path::new(name);
    let mut clean = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => clean.push(part),
            _ => {
                return Err(format!(
                    "sent file {name:?} must be a relative path of plain names (no `..`, `.`, root or drive)"
                ))
            }
        }
    }
    if clean.as_os_str().is_empty() || name.contains(['\\', '\0']) {
        return Err(format!("sent file {name:?} is not a usable relative path"));
    }
    Ok(clean)
}

/// A repository's folder for the files load requests send: `baton-PID-N-sent-models`
/// under `parent`, made by the first load that sends files and removed with
/// everything in it on drop. Each load's files take a private folder inside
/// ([`SentRoot::write`]); nothing else removes this folder, so a load never
/// races with another model's unload for it.
#[derive(Debug)]
pub struct SentRoot {
    dir: PathBuf,
}

impl SentRoot {
    /// A folder name no other repository of this process takes, under `parent`.
    pub fn new(parent: &Path) -> SentRoot {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        SentRoot { dir: parent.join(format!("baton-{}-{n}-sent-models", std::process::id())) }
    }

    /// The folder (it exists once a load has sent files).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes `files` (relative path, contents) for model `model` into a private
    /// folder here, after checking every name and size; nothing is written when
    /// one is refused.
    pub fn write(&self, model: &str, files: &[(String, Vec<u8>)]) -> Result<SentFiles, String> {
        check_component(model, "model name")?;
        let mut total = 0usize;
        let mut checked = Vec::with_capacity(files.len());
        for (name, contents) in files {
            let path = relative_path(name)?;
            if contents.len() > MAX_SENT_FILE_BYTES {
                return Err(format!(
                    "sent file {name:?} is {} bytes, over the limit of {MAX_SENT_FILE_BYTES}",
                    contents.len()
                ));
            }
            total += contents.len();
            checked.push((path, contents));
        }
        if total > MAX_SENT_TOTAL_BYTES {
            return Err(format!("the sent files total {total} bytes, over the limit of {MAX_SENT_TOTAL_BYTES}"));
        }
        let sent = SentFiles { dir: self.private_dir(model)? };
        for (path, contents) in checked {
            let target = sent.dir.join(&path);
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent).map_err(|e| format!("cannot make {}: {e}", parent.display()))?;
            }
            std::fs::write(&target, contents).map_err(|e| format!("cannot write {}: {e}", target.display()))?;
        }
        Ok(sent)
    }

    /// A fresh folder for model `model`'s sent files, readable by the server's user only.
    fn private_dir(&self, model: &str) -> Result<PathBuf, String> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        std::fs::create_dir_all(&self.dir).map_err(|e| format!("cannot make {}: {e}", self.dir.display()))?;
        let dir = self.dir.join(format!("{model}.{}", NEXT.fetch_add(1, Ordering::Relaxed)));
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(&dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        Ok(dir)
    }
}

impl Drop for SentRoot {
    fn drop(&mut self) {
        remove_all(&self.dir);
    }
}

/// The files a load request sent for one model, in their private folder (mode
/// 0700) of a [`SentRoot`]; the folder is removed on drop.
#[derive(Debug)]
pub struct SentFiles {
    dir: PathBuf,
}

impl SentFiles {
    /// The private folder holding the files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for SentFiles {
    fn drop(&mut self) {
        remove_all(&self.dir);
    }
}

/// Removes `dir` with its files; one already gone (a model that outlived its
/// repository's folder) is fine.
fn remove_all(dir: &Path) {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            tracing::warn!("cannot remove the sent files' folder {}: {e}", dir.display())
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(what: &str) -> baton_scratch::Scratch {
        baton_scratch::Scratch::new(&format!("fence-{what}"))
    }

    #[test]
    fn names_are_one_plain_component() {
        for good in ["mlp", "model.v2", "a-b_c", "1"] {
            check_component(good, "model name").unwrap();
        }
        for (bad, why) in [
            ("", "is empty"),
            ("..", "relative folder"),
            (".", "relative folder"),
            ("../etc", "separator"),
            ("/etc/passwd", "separator"),
            ("a\\b", "separator"),
            ("a\0b", "NUL"),
        ] {
            let error = check_component(bad, "version folder").unwrap_err();
            assert!(error.starts_with("version folder") && error.contains(why), "{bad:?}: {error}");
        }
    }

    #[test]
    fn a_symlink_out_of_the_repository_is_refused() {
        let (root_dir, outside_dir) = (scratch("root"), scratch("outside"));
        let (root, outside): (&Path, &Path) = (&root_dir, &outside_dir);
        std::fs::write(outside.join("secret.onnx"), b"x").unwrap();
        std::fs::write(root.join("model.onnx"), b"y").unwrap();
        std::os::unix::fs::symlink(outside.join("secret.onnx"), root.join("link.onnx")).unwrap();
        std::os::unix::fs::symlink(root.join("model.onnx"), root.join("inner.onnx")).unwrap();
        assert!(inside(root, &root.join("model.onnx")).is_ok());
        assert!(inside(root, &root.join("inner.onnx")).is_ok(), "a link within the repository is fine");
        let error = inside(root, &root.join("link.onnx")).unwrap_err();
        assert!(error.contains("leads out of the model repository"), "{error}");
        let error = inside(root, &root.join("sub/../../outside")).unwrap_err();
        assert!(error.contains("cannot resolve") || error.contains("leads out"), "{error}");
    }

    #[test]
    fn sent_files_stay_in_their_private_folder_and_go_with_it() {
        let tmp = scratch("server");
        let root = SentRoot::new(&tmp);
        let files = vec![("1/model.onnx".to_string(), vec![1u8; 10]), ("config.pbtxt".to_string(), b"x".to_vec())];
        let sent = root.write("m", &files).unwrap();
        let dir = sent.dir().to_path_buf();
        assert!(dir.starts_with(root.dir()));
        assert_eq!(std::fs::read(dir.join("1/model.onnx")).unwrap(), vec![1u8; 10]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
        }
        let other = root.write("n", &files).unwrap();
        drop(sent);
        assert!(!dir.exists(), "the folder outlives its model");
        assert!(other.dir().is_dir(), "another model's files went with it");
        for bad in ["../escape.onnx", "/etc/x", "a/../../b", "./a", "a\\..\\b", ""] {
            let error = root.write("m", &[(bad.to_string(), vec![])]).unwrap_err();
            assert!(error.contains("sent file"), "{bad:?}: {error}");
        }
        let error = root.write("..", &files).unwrap_err();
        assert!(error.contains("model name"), "{error}");
        let big = vec![("big".to_string(), vec![0u8; MAX_SENT_FILE_BYTES + 1])];
        assert!(root.write("m", &big).unwrap_err().contains("over the limit"));
        let left: Vec<_> = std::fs::read_dir(root.dir()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left.len(), 1, "refused loads wrote into {}: {left:?}", root.dir().display());
        let root_dir = root.dir().to_path_buf();
        drop(root);
        assert!(!root_dir.exists(), "the repository's folder outlives the repository");
        drop(other);
    }

    #[test]
    fn two_repositories_take_two_folders() {
        let tmp = scratch("roots");
        let (a, b) = (SentRoot::new(&tmp), SentRoot::new(&tmp));
        assert_ne!(a.dir(), b.dir());
        let files = vec![("f".to_string(), b"x".to_vec())];
        let (in_a, in_b) = (a.write("m", &files).unwrap(), b.write("m", &files).unwrap());
        drop(a);
        assert!(!in_a.dir().exists() && in_b.dir().is_dir(), "one repository's drop took the other's files");
    }
}
