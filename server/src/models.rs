//! The models a server holds, by name: those given when it started and those
//! of its model repository (a directory of pipeline files, `NAME.toml` each
//! one model `NAME`), which the repository extension loads and unloads while
//! the server runs; and the server-wide bound on inferences in flight.
//!
//! Concurrency: the table is behind a read-write lock, held only to look a
//! model up or to swap one (never across an await or a runtime's start or
//! shutdown). A request takes its own `Arc<Model>` out of the table and
//! holds it until answered, so a swapped-out or unloaded model keeps running
//! what it accepted. Loads and unloads are serialized by an async mutex; each
//! swaps the table entry first (new requests see the new state at once),
//! then retires the old model: waits until no request holds it (polling its
//! reference count, bounded by the drain limit), then shuts its runtime down
//! (draining) on a blocking thread, and only then answers.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use baton::{EngineRegistry, Runtime};

use crate::model::{ErrorKind, Model, ServeError};
use crate::triton;

/// A model repository: pipeline files `NAME.toml` in `dir`, and the engines they load with.
#[derive(Clone)]
pub struct Repository {
    pub dir: PathBuf,
    pub engines: EngineRegistry,
    /// Where the files load calls send are written; shared by the clones, removed with the last.
    sent: Arc<crate::fence::SentRoot>,
}

impl Repository {
    /// The repository in `dir`, its models loaded with `engines`.
    pub fn new(dir: PathBuf, engines: EngineRegistry) -> Repository {
        Repository { dir, engines, sent: Arc::new(crate::fence::SentRoot::new(&std::env::temp_dir())) }
    }

    /// The model names of the repository, sorted: its pipeline files `NAME.toml`
    /// and its Triton model folders `NAME/` (with a `config.pbtxt` or a version folder).
    pub fn names(&self) -> Result<Vec<String>, ServeError> {
        let entries = std::fs::read_dir(&self.dir).map_err(|e| {
            ServeError::new(
                ErrorKind::Internal,
                format!("cannot read the model repository {}: {e}", self.dir.display()),
            )
        })?;
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| (p.is_file() && p.extension().is_some_and(|x| x == "toml")) || triton::layout::is_model_dir(p))
            .filter_map(|p| p.file_stem().and_then(|s| s.to_str()).map(str::to_string))
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
    }

    /// Starts model `name` (blocking: engines load their models): its pipeline file,
    /// or every served version of its Triton model folder (highest first), whose
    /// config `config` (JSON, a load call's override) replaces the folder's.
    fn start(&self, name: &str, config: Option<&str>, files: &[(String, Vec<u8>)]) -> Result<Vec<Model>, ServeError> {
        if !files.is_empty() {
            return self.start_sent(name, config, files);
        }
        let path = self.dir.join(format!("{name}.toml"));
        let folder = self.dir.join(name);
        crate::fence::check_component(name, "model name").map_err(|e| ServeError::new(ErrorKind::NotFound, e))?;
        let triton = triton::layout::is_model_dir(&folder);
        if triton && path.is_file() {
            return Err(ServeError::bad(format!(
                "model `{name}` is both the pipeline file {} and the Triton model folder {}: keep one",
                path.display(),
                folder.display()
            )));
        }
        if triton {
            let folder = crate::fence::inside(&self.dir, &folder).map_err(ServeError::bad)?;
            let loaded = triton::load_dir(&folder, name, &self.engines, config)
                .map_err(|e| ServeError::bad(format!("failed to load model `{name}`: {e}")))?;
            return Ok(triton::into_models(loaded));
        }
        if !path.is_file() {
            return Err(ServeError::new(
                ErrorKind::NotFound,
                format!("no pipeline file {} or Triton model folder in the model repository", path.display()),
            ));
        }
        if config.is_some() {
            return Err(ServeError::unsupported(&format!(
                "loading pipeline file `{name}.toml` with a `config` parameter (it applies to Triton model folders)"
            )));
        }
        let path = crate::fence::inside(&self.dir, &path).map_err(ServeError::bad)?;
        let runtime = Runtime::from_file(&path, &self.engines)
            .map_err(|e| ServeError::bad(format!("failed to load model `{name}` from {}: {e}", path.display())))?;
        if runtime.spec().name != name {
            let found = runtime.spec().name.clone();
            drop(runtime);
            return Err(ServeError::bad(format!(
                "{} names its pipeline `{found}`: a model repository's file NAME.toml must hold pipeline `NAME`",
                path.display()
            )));
        }
        Ok(vec![Model::new(runtime)])
    }
}

impl Repository {
    /// The folder holding the files load calls send, one private folder per load
    /// ([`crate::fence::SentRoot`]); removed when the repository is.
    pub fn sent_dir(&self) -> &std::path::Path {
        self.sent.dir()
    }

    /// Starts model `name` from the files a load call sent (Triton's repository API:
    /// `file:1/model.onnx` and so on, relative to the model's folder) with the
    /// call's `config`, which must come with them. The files are written into a
    /// private folder ([`crate::fence::SentFiles`]) that lives as long as the model's versions.
    fn start_sent(
        &self,
        name: &str,
        config: Option<&str>,
        files: &[(String, Vec<u8>)],
    ) -> Result<Vec<Model>, ServeError> {
        let Some(config) = config else {
            return Err(ServeError::bad(format!(
                "loading model `{name}` with files needs the `config` parameter too (as Triton's repository API)"
            )));
        };
        let sent =
            self.sent.write(name, files).map_err(|e| ServeError::bad(format!("failed to load model `{name}`: {e}")))?;
        let loaded = triton::load_dir(sent.dir(), name, &self.engines, Some(config))
            .map_err(|e| ServeError::bad(format!("failed to load model `{name}` from the sent files: {e}")))?;
        let sent = Arc::new(sent);
        Ok(triton::into_models(loaded).into_iter().map(|m| m.holding(Arc::clone(&sent))).collect())
    }
}

/// One model name's entry: its load state.
struct ModelEntry {
    /// `None`: unloaded (or its last load failed). The default (highest) version.
    model: Option<Arc<Model>>,
    /// A Triton model's other served versions.
    others: Vec<Arc<Model>>,
    /// From the model repository (loadable and unloadable), or given at start.
    from_repository: bool,
    /// Why it is not loaded, when it is not.
    reason: String,
}

impl ModelEntry {
    fn unloaded_from_repository() -> Self {
        ModelEntry { model: None, others: Vec::new(), from_repository: true, reason: String::new() }
    }
}

/// One row of the repository index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexEntry {
    pub name: String,
    /// The version (a served one, or "" for a model not loaded).
    pub version: String,
    /// `READY` or `UNAVAILABLE`.
    pub state: &'static str,
    pub reason: String,
}

/// The models of a server, by name, with the server-wide bound on inferences in flight.
pub struct Models {
    table: RwLock<BTreeMap<String, ModelEntry>>,
    repository: Option<Repository>,
    changes: tokio::sync::Mutex<()>,
    drain_limit: Duration,
    accepting: AtomicBool,
    in_flight: AtomicUsize,
    /// The server-wide in-flight bound: `--max-in-flight`, or (not given) sized
    /// from the loaded models' capacity ([`default_bound`]) and resized on every load and unload.
    limit: AtomicUsize,
    limit_given: bool,
    /// Why the repository API may not load or unload (`--model-control-mode poll`), if it may not.
    api_refused: Option<String>,
}

/// Batches per worker the default in-flight bound lets wait behind the running ones.
const BATCHES_QUEUED: usize = 4;
/// The smallest default in-flight bound.
const MIN_DEFAULT_BOUND: usize = 256;

/// The server-wide in-flight bound when `--max-in-flight` is not given: every
/// node's workers with a full batch running and [`BATCHES_QUEUED`] full batches
/// waiting, summed over the models (at least [`MIN_DEFAULT_BOUND`]). A flood past
/// it is refused at once (429 / RESOURCE_EXHAUSTED) instead of queued for seconds.
pub fn default_bound<'a>(models: impl Iterator<Item = &'a Model>) -> usize {
    let rows: usize =
        models.map(|model| model.runtime().spec().nodes.iter().map(|n| n.workers * n.max_batch).sum::<usize>()).sum();
    (rows * (1 + BATCHES_QUEUED)).max(MIN_DEFAULT_BOUND)
}

/// One inference's place under the server-wide in-flight bound; released when dropped.
pub struct InFlightPlace<'a>(&'a AtomicUsize);

impl Drop for InFlightPlace<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

fn unknown(name: &str) -> ServeError {
    ServeError::new(ErrorKind::NotFound, format!("unknown model `{name}`"))
}

impl Models {
    /// Fails on two models of one name.
    pub fn new(models: Vec<Model>, limit: Option<usize>) -> Result<Models, String> {
        let mut table = BTreeMap::new();
        for model in models {
            let name = model.name.clone();
            let entry = ModelEntry {
                model: Some(Arc::new(model)),
                others: Vec::new(),
                from_repository: false,
                reason: String::new(),
            };
            if table.insert(name.clone(), entry).is_some() {
                return Err(format!("two pipelines are named `{name}`: model names must be unique"));
            }
        }
        Ok(Models {
            table: RwLock::new(table),
            repository: None,
            changes: tokio::sync::Mutex::new(()),
            drain_limit: Duration::from_secs(30),
            accepting: AtomicBool::new(true),
            in_flight: AtomicUsize::new(0),
            limit: AtomicUsize::new(limit.unwrap_or(0)),
            limit_given: limit.is_some(),
            api_refused: None,
        }
        .with_bound_refreshed())
    }

    /// Serves the models of `repository` too (load them with [`Models::load`]);
    /// a retired model's requests get `drain_limit` to finish.
    pub fn with_repository(mut self, repository: Option<Repository>, drain_limit: Duration) -> Self {
        self.repository = repository;
        self.drain_limit = drain_limit;
        self
    }

    /// Refuses the repository API's loads and unloads from now on, saying `why`
    /// (the server's own poller still loads and unloads).
    pub fn refuse_api_control(mut self, why: impl Into<String>) -> Self {
        self.api_refused = Some(why.into());
        self
    }

    /// A repository API load: [`Models::load_with`], unless the model control mode refuses it.
    pub async fn api_load(&self, name: &str, config: Option<String>) -> Result<(), ServeError> {
        self.api_load_files(name, config, Vec::new()).await
    }

    /// A repository API load carrying files (relative path, contents): [`Models::load_sent`].
    pub async fn api_load_files(
        &self,
        name: &str,
        config: Option<String>,
        files: Vec<(String, Vec<u8>)>,
    ) -> Result<(), ServeError> {
        self.check_api()?;
        self.load_sent(name, config, files).await
    }

    /// A repository API unload: [`Models::unload`], unless the model control mode refuses it.
    pub async fn api_unload(&self, name: &str) -> Result<(), ServeError> {
        self.check_api()?;
        self.unload(name).await
    }

    fn check_api(&self) -> Result<(), ServeError> {
        match &self.api_refused {
            Some(why) => Err(ServeError::bad(why.clone())),
            None => Ok(()),
        }
    }

    pub fn repository(&self) -> Option<&Repository> {
        self.repository.as_ref()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, ModelEntry>> {
        self.table.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, ModelEntry>> {
        self.table.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The loaded models, by name.
    pub fn list(&self) -> Vec<Arc<Model>> {
        self.read().values().filter_map(|s| s.model.clone()).collect()
    }

    /// The loaded model `name`.
    pub fn get(&self, name: &str) -> Option<Arc<Model>> {
        self.read().get(name).and_then(|s| s.model.clone())
    }

    /// Whether `name` is a model the server knows (loaded or not).
    pub fn knows(&self, name: &str) -> bool {
        self.read().contains_key(name)
    }

    /// The model `name` at `version` ("": its default, the highest served), or a not-found error.
    pub fn find(&self, name: &str, version: &str) -> Result<Arc<Model>, ServeError> {
        let table = self.read();
        let entry = table.get(name).ok_or_else(|| unknown(name))?;
        let model = entry.model.as_ref().ok_or_else(|| {
            ServeError::new(ErrorKind::NotFound, format!("model `{name}` is not loaded ({})", entry.reason))
        })?;
        if version.is_empty() || version == model.version {
            return Ok(Arc::clone(model));
        }
        entry.others.iter().find(|m| m.version == version).cloned().ok_or_else(|| {
            ServeError::new(
                ErrorKind::NotFound,
                format!("unknown version `{version}` of model `{name}` (it serves {})", model.versions.join(", ")),
            )
        })
    }

    /// Whether model `name` at `version` is ready: known, loaded, and the server accepting.
    pub fn model_ready(&self, name: &str, version: &str) -> Result<bool, ServeError> {
        let loaded = self.read().get(name).map(|s| s.model.is_some()).ok_or_else(|| unknown(name))?;
        if loaded {
            self.find(name, version)?;
        } else if !version.is_empty() && !version.chars().all(|c| c.is_ascii_digit()) {
            return Err(ServeError::new(ErrorKind::NotFound, format!("unknown version `{version}` of model `{name}`")));
        }
        Ok(loaded && self.ready())
    }

    /// Every model of the server and of its repository, with its state.
    pub fn index(&self) -> Result<Vec<IndexEntry>, ServeError> {
        let mut entries: BTreeMap<(String, String), IndexEntry> = self
            .read()
            .iter()
            .flat_map(|(name, entry)| {
                let row = |version: String, state, reason: &str| {
                    (
                        (name.clone(), version.clone()),
                        IndexEntry { name: name.clone(), version, state, reason: reason.into() },
                    )
                };
                match &entry.model {
                    Some(model) => std::iter::once(model)
                        .chain(&entry.others)
                        .map(|m| row(m.version.clone(), "READY", ""))
                        .collect::<Vec<_>>(),
                    None => vec![row(String::new(), "UNAVAILABLE", &entry.reason)],
                }
            })
            .collect();
        if let Some(repository) = &self.repository {
            for name in repository.names()? {
                if !entries.keys().any(|(n, _)| *n == name) {
                    let row = IndexEntry {
                        name: name.clone(),
                        version: String::new(),
                        state: "UNAVAILABLE",
                        reason: "not loaded".into(),
                    };
                    entries.insert((name, String::new()), row);
                }
            }
        }
        Ok(entries.into_values().collect())
    }

    /// The repository of model `name`, or why it cannot be loaded or unloaded.
    fn repository_of(&self, name: &str) -> Result<&Repository, ServeError> {
        let Some(repository) = &self.repository else {
            return Err(ServeError::bad(
                "the server has no model repository (start it with --model-repository DIR to load and unload models)",
            ));
        };
        if self.read().get(name).is_some_and(|s| !s.from_repository) {
            return Err(ServeError::bad(format!(
                "model `{name}` was given on the command line: only model repository models load and unload"
            )));
        }
        Ok(repository)
    }

    /// Loads (or reloads) model `name` from the repository's `name.toml`: the new
    /// pipeline starts, takes the name's new requests, and the old one (if any)
    /// drains what it accepted before this answers. On failure the old one stays.
    pub async fn load(&self, name: &str) -> Result<(), ServeError> {
        self.load_with(name, None).await
    }

    /// [`Models::load`] with `config`, a Triton model's JSON config sent with the
    /// load call, in place of its folder's `config.pbtxt`.
    pub async fn load_with(&self, name: &str, config: Option<String>) -> Result<(), ServeError> {
        self.load_sent(name, config, Vec::new()).await
    }

    /// [`Models::load_with`], the model's folder being `files` (relative path,
    /// contents) when there are any (see [`Repository::start_sent`]).
    pub async fn load_sent(
        &self,
        name: &str,
        config: Option<String>,
        files: Vec<(String, Vec<u8>)>,
    ) -> Result<(), ServeError> {
        let repository = self.repository_of(name)?.clone();
        let _one_at_a_time = self.changes.lock().await;
        let owned = name.to_string();
        let started = tokio::task::spawn_blocking(move || repository.start(&owned, config.as_deref(), &files))
            .await
            .map_err(|e| ServeError::new(ErrorKind::Internal, format!("loading model `{name}` panicked: {e}")))?;
        let mut versions = match started {
            Ok(versions) => versions,
            Err(e) => {
                // A model that is serving keeps serving; one that is not notes why. A name
                // with no pipeline file gets no entry: the table holds only names on disk
                // or loaded, however many unknown names are asked for.
                let mut table = self.write();
                let known = table.contains_key(name) || e.kind != ErrorKind::NotFound;
                if known {
                    let entry = table.entry(name.to_string()).or_insert_with(ModelEntry::unloaded_from_repository);
                    if entry.model.is_none() {
                        entry.reason = e.message.clone();
                    }
                }
                return Err(e);
            }
        };
        let default = Arc::new(versions.remove(0));
        let others: Vec<Arc<Model>> = versions.into_iter().map(Arc::new).collect();
        let old = {
            let mut table = self.write();
            let entry = table.entry(name.to_string()).or_insert_with(ModelEntry::unloaded_from_repository);
            entry.reason.clear();
            let old_others = std::mem::replace(&mut entry.others, others);
            entry.model.replace(default).into_iter().chain(old_others).collect::<Vec<_>>()
        };
        self.refresh_bound();
        for old in old {
            self.retire(old).await;
        }
        Ok(())
    }

    /// Unloads model `name`: it takes no new requests at once, and this answers
    /// once what it accepted is done and its runtime is shut down.
    pub async fn unload(&self, name: &str) -> Result<(), ServeError> {
        self.repository_of(name)?;
        let _one_at_a_time = self.changes.lock().await;
        let old = {
            let mut table = self.write();
            let entry = table.get_mut(name).ok_or_else(|| unknown(name))?;
            entry.reason = "unloaded".into();
            entry.model.take().into_iter().chain(std::mem::take(&mut entry.others)).collect::<Vec<_>>()
        };
        self.refresh_bound();
        for old in old {
            self.retire(old).await;
        }
        Ok(())
    }

    /// Waits (up to the drain limit) until no request holds `old`, then shuts
    /// its runtime down on a blocking thread. Past the limit the last holder's
    /// drop shuts it down instead (a dropped runtime drains too).
    async fn retire(&self, old: Arc<Model>) {
        let deadline = tokio::time::Instant::now() + self.drain_limit;
        while Arc::strong_count(&old) > 1 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let name = old.name.clone();
        let _ = tokio::task::spawn_blocking(move || match Arc::try_unwrap(old) {
            Ok(model) => model.into_runtime().shutdown(),
            Err(_) => tracing::warn!("model `{name}` still has requests past the drain limit: it drains when they end"),
        })
        .await;
    }

    /// Ready: accepting requests (not shutting down).
    pub fn ready(&self) -> bool {
        self.accepting.load(Ordering::Acquire)
    }

    /// Stops taking inferences: later ones are answered "unavailable", readiness turns false.
    pub fn stop_accepting(&self) {
        self.accepting.store(false, Ordering::Release);
    }

    /// Takes a place under the server-wide in-flight bound, or says why not
    /// (at once: shutting down, or the bound reached).
    pub fn reserve_in_flight(&self) -> Result<InFlightPlace<'_>, ServeError> {
        if !self.ready() {
            return Err(ServeError::new(ErrorKind::Unavailable, "the server is shutting down"));
        }
        let limit = self.limit.load(Ordering::Relaxed);
        if self.in_flight.fetch_add(1, Ordering::AcqRel) >= limit {
            self.in_flight.fetch_sub(1, Ordering::AcqRel);
            let source =
                if self.limit_given { "--max-in-flight" } else { "sized from the models; set --max-in-flight" };
            return Err(ServeError::new(
                ErrorKind::Overloaded,
                format!("server busy: {limit} inferences already in flight ({source})"),
            ));
        }
        Ok(InFlightPlace(&self.in_flight))
    }

    /// The server-wide in-flight bound now.
    pub fn in_flight_limit(&self) -> usize {
        self.limit.load(Ordering::Relaxed)
    }

    /// Sizes the default in-flight bound from the models loaded now (no-op under `--max-in-flight`).
    fn refresh_bound(&self) {
        if !self.limit_given {
            let table = self.read();
            let bound = default_bound(table.values().flat_map(|e| e.model.iter().chain(&e.others)).map(|m| &**m));
            self.limit.store(bound, Ordering::Relaxed);
        }
    }

    fn with_bound_refreshed(self) -> Self {
        self.refresh_bound();
        self
    }

    /// Inferences holding a place under the in-flight bound, server-wide.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }

    /// Takes the runtimes out (to shut them down); a model a request still
    /// holds is left to its last holder, whose drop drains it.
    pub fn into_runtimes(self) -> Vec<Runtime> {
        let table = self.table.into_inner().unwrap_or_else(|e| e.into_inner());
        table
            .into_values()
            .flat_map(|s| s.model.into_iter().chain(s.others))
            .filter_map(|m| Arc::try_unwrap(m).ok())
            .map(Model::into_runtime)
            .collect()
    }
}
