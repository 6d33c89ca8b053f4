//! Model control, as Triton's `--model-control-mode` names it: which models of
//! the repository load at start, whether the repository API may load and
//! unload them, and the poller that follows the repository's files.
//!
//! - `none` (the default): every model loads at start; the repository API
//!   loads, reloads and unloads (Triton refuses it in this mode; Baton has
//!   always allowed it, and keeps doing so).
//! - `explicit`: only the `--load-model` names (`*`: all) load at start; the
//!   repository API loads and unloads.
//! - `poll`: every model loads at start; every `--repository-poll-secs` the
//!   poller compares each model's files (names, sizes, modification times)
//!   with what it last loaded: a new or changed model is loaded (its new
//!   versions start, removed ones stop), a removed one unloaded. The API's
//!   load and unload are refused, as Triton does.
//!
//! Concurrency: the poller is one task; its loads and unloads go through
//! [`Models::load`] and [`Models::unload`], serialized with any others by the
//! models' change lock, and each retires the old pipeline only after the
//! requests it accepted are answered. It stops when the server stops.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::models::{Models, Repository};

/// `--model-control-mode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ControlMode {
    #[default]
    None,
    Explicit,
    Poll,
}

impl ControlMode {
    /// The mode called `name` (`none`, `explicit`, `poll`).
    pub fn from_name(name: &str) -> Option<ControlMode> {
        match name {
            "none" => Some(ControlMode::None),
            "explicit" => Some(ControlMode::Explicit),
            "poll" => Some(ControlMode::Poll),
            _ => None,
        }
    }
}

/// How the server controls its repository's models.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelControl {
    pub mode: ControlMode,
    /// `--load-model`: the models `explicit` loads at start (`*`: all).
    pub load: Vec<String>,
    /// `--repository-poll-secs`: how often `poll` looks at the files.
    pub poll_every: Duration,
}

impl Default for ModelControl {
    fn default() -> Self {
        ModelControl { mode: ControlMode::None, load: Vec::new(), poll_every: Duration::from_secs(15) }
    }
}

impl ModelControl {
    /// Checks the flags agree: `--load-model` only with `explicit`, a poll period only positive.
    pub fn check(&self) -> Result<(), String> {
        if !self.load.is_empty() && self.mode != ControlMode::Explicit {
            return Err("--load-model needs --model-control-mode explicit".into());
        }
        if self.mode == ControlMode::Poll && self.poll_every.is_zero() {
            return Err("--repository-poll-secs must be at least 1".into());
        }
        Ok(())
    }

    /// Whether model `name` loads at start.
    pub fn loads_at_start(&self, name: &str) -> bool {
        self.mode != ControlMode::Explicit || self.load.iter().any(|n| n == "*" || n == name)
    }
}

/// What a model's files were when last looked at: each file's path, size and modification time.
pub type Fingerprint = Vec<(PathBuf, u64, Option<SystemTime>)>;

/// The fingerprint of model `name` of `repository`: its pipeline file, or every
/// file of its Triton model folder (three levels deep); empty when it has none.
pub fn fingerprint(repository: &Repository, name: &str) -> Fingerprint {
    let mut files = Vec::new();
    collect(&repository.dir.join(format!("{name}.toml")), 0, &mut files);
    collect(&repository.dir.join(name), 0, &mut files);
    files.sort();
    files
}

fn collect(path: &Path, depth: usize, files: &mut Fingerprint) {
    let Ok(meta) = std::fs::metadata(path) else {
        return;
    };
    if meta.is_file() {
        files.push((path.to_path_buf(), meta.len(), meta.modified().ok()));
    } else if meta.is_dir() && depth < 3 {
        for entry in std::fs::read_dir(path).into_iter().flatten().flatten() {
            collect(&entry.path(), depth + 1, files);
        }
    }
}

/// Follows the repository until `stopped`: every `every`, loads new and changed
/// models and unloads removed ones. `seen`: the fingerprints of what loaded at start.
pub async fn poll(
    models: std::sync::Arc<Models>,
    every: Duration,
    mut seen: BTreeMap<String, Fingerprint>,
    stopped: impl std::future::Future<Output = ()>,
) {
    tokio::pin!(stopped);
    let mut tick = tokio::time::interval(every);
    tick.tick().await; // the first tick is now: the start has just loaded everything
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = &mut stopped => return,
        }
        let Some(repository) = models.repository().cloned() else { return };
        let names = repository.names().unwrap_or_default();
        for name in &names {
            let now = fingerprint(&repository, name);
            if seen.get(name) != Some(&now) {
                if let Err(e) = models.load(name).await {
                    eprintln!("error: {}", e.message);
                }
                seen.insert(name.clone(), now);
            }
        }
        let gone: Vec<String> = seen.keys().filter(|n| !names.contains(n)).cloned().collect();
        for name in gone {
            seen.remove(&name);
            if models.get(&name).is_some() {
                if let Err(e) = models.unload(&name).await {
                    eprintln!("error: {}", e.message);
                }
            }
        }
    }
}
