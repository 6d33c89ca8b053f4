//! Triton's repository layout: `DIR/<model>/config.pbtxt` (optional) and
//! `DIR/<model>/<version>/model.onnx` (or the config's
//! `default_model_filename`), numeric version folders, and the version policy
//! that picks which of them are served.

use std::path::{Path, PathBuf};

use super::pbtxt::ConfigError;
use super::tpb;
use tpb::model_version_policy::PolicyChoice;

/// The config file of a Triton model folder.
pub const CONFIG_FILE: &str = "config.pbtxt";
/// The model file of a version folder when the config names none.
pub const DEFAULT_MODEL_FILE: &str = "model.onnx";

/// Whether `path` is a Triton model folder: it holds a `config.pbtxt` or a numeric version folder.
pub fn is_model_dir(path: &Path) -> bool {
    path.is_dir() && (path.join(CONFIG_FILE).is_file() || !versions_on_disk(path).is_empty())
}

/// The numeric version folders of model folder `dir`, ascending.
pub fn versions_on_disk(dir: &Path) -> Vec<u64> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut versions: Vec<u64> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<u64>().ok()))
        .filter(|&v| v > 0)
        .collect();
    versions.sort_unstable();
    versions
}

/// The versions the policy serves, highest first. A version the policy names
/// that has no folder is an error naming the field; so is a model with no version folder.
pub fn select(
    dir: &Path,
    config_file: &Path,
    text: Option<&str>,
    policy: Option<&tpb::ModelVersionPolicy>,
) -> Result<Vec<u64>, ConfigError> {
    let on_disk = versions_on_disk(dir);
    if on_disk.is_empty() {
        return Err(ConfigError::file(
            config_file,
            format!("model folder {} has no version folder (`1/`, `2/`, ...) holding a model", dir.display()),
        ));
    }
    let mut chosen: Vec<u64> = match policy.and_then(|p| p.policy_choice.as_ref()) {
        None => vec![*on_disk.last().expect("not empty")],
        Some(PolicyChoice::Latest(latest)) => {
            let n = usize::try_from(latest.num_versions.max(1)).unwrap_or(1);
            on_disk.iter().rev().take(n).copied().collect()
        }
        Some(PolicyChoice::All(_)) => on_disk.clone(),
        Some(PolicyChoice::Specific(specific)) => {
            let mut chosen = Vec::new();
            for &v in &specific.versions {
                match u64::try_from(v).ok().filter(|v| on_disk.contains(v)) {
                    Some(v) => chosen.push(v),
                    None => {
                        return Err(ConfigError::field(
                            config_file,
                            text,
                            "version_policy.specific.versions",
                            format!("version {v} has no folder in {} (it has {on_disk:?})", dir.display()),
                        ))
                    }
                }
            }
            chosen
        }
    };
    chosen.sort_unstable_by(|a, b| b.cmp(a));
    chosen.dedup();
    Ok(chosen)
}

/// The model file of `version`: `default_model_filename` or `model.onnx` in its
/// folder; a missing one is an error naming the file and the field.
pub fn model_file(
    dir: &Path,
    config_file: &Path,
    text: Option<&str>,
    version: u64,
    filename: &str,
) -> Result<PathBuf, ConfigError> {
    let (name, field) =
        if filename.is_empty() { (DEFAULT_MODEL_FILE, None) } else { (filename, Some("default_model_filename")) };
    if let Err(why) = crate::fence::check_component(name, "the model file name") {
        return Err(ConfigError::field(config_file, text, "default_model_filename", why));
    }
    let path = dir.join(version.to_string()).join(name);
    if path.is_file() {
        // A symlink may point elsewhere in the model's folder, never out of it.
        return crate::fence::inside(dir, &path).map_err(|why| ConfigError::file(config_file, why));
    }
    let why =
        if path.is_dir() { "is a folder (ONNX models stored as folders are not supported)" } else { "is missing" };
    let message = format!("model file {} of version {version} {why}", path.display());
    Err(match field {
        Some(field) => ConfigError::field(config_file, text, field, message),
        None => ConfigError::file(config_file, message),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model folder with these version folders, removed when dropped.
    fn folder(versions: &[&str]) -> baton_scratch::Scratch {
        let dir = baton_scratch::Scratch::new("layout");
        for v in versions {
            std::fs::create_dir_all(dir.join(v)).unwrap();
            std::fs::write(dir.join(v).join("model.onnx"), b"x").unwrap();
        }
        dir
    }

    fn policy(choice: PolicyChoice) -> tpb::ModelVersionPolicy {
        tpb::ModelVersionPolicy { policy_choice: Some(choice) }
    }

    #[test]
    fn policies_pick_versions_highest_first() {
        let tmp = folder(&["1", "2", "10", "notes"]);
        let dir: &Path = &tmp;
        let cfg = dir.join(CONFIG_FILE);
        assert_eq!(select(dir, &cfg, None, None).unwrap(), [10]);
        let latest = policy(PolicyChoice::Latest(tpb::model_version_policy::Latest { num_versions: 2 }));
        assert_eq!(select(dir, &cfg, None, Some(&latest)).unwrap(), [10, 2]);
        let all = policy(PolicyChoice::All(tpb::model_version_policy::All {}));
        assert_eq!(select(dir, &cfg, None, Some(&all)).unwrap(), [10, 2, 1]);
        let some = policy(PolicyChoice::Specific(tpb::model_version_policy::Specific { versions: vec![1, 3] }));
        let e = select(dir, &cfg, None, Some(&some)).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("version_policy.specific.versions"));
        assert!(model_file(dir, &cfg, None, 2, "").unwrap().ends_with("2/model.onnx"));
        let e = model_file(dir, &cfg, None, 2, "other.onnx").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("default_model_filename"));
        assert!(e.message.contains("is missing"), "{e}");
    }
}
