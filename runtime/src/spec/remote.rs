//! A remote node's part of the build: a node whose one stage runs on a KServe
//! v2 server (`{ remote = "grpc://HOST:PORT", model = "NAME" }`, docs/remote.md).
//!
//! The stage's engine is the registry's `remote` provider; the builder hands
//! it the endpoint and model name as reserved `params` keys (`url`, `model`,
//! `lazy`, `stateful`). The node keeps its batching buffer and the scheduler's
//! rules, but holds no local cores: its resource is a window of batches in
//! flight, one worker thread each.

use super::types::Resource;
use super::{err, Result};
use crate::config::{NodeConfig, StageConfig};
use crate::engine::StageParams;

/// The engine kind remote stages run on.
pub const REMOTE_ENGINE: &str = "remote";

/// Batches in flight to the server when `window` is not given.
pub const DEFAULT_WINDOW: usize = 4;

/// `params` keys the builder sets for the remote engine; a pipeline may not set them itself.
pub const RESERVED_PARAMS: [&str; 4] = ["url", "model", "lazy", "stateful"];

/// What makes a node remote, once checked.
pub(super) struct RemoteNode {
    pub window: usize,
    pub stateful: bool,
}

/// Checks the settings that concern remote nodes: `Some` for a remote node
/// (its one stage names `remote`), `None` for a local one.
pub(super) fn check(name: &str, cfg: &NodeConfig) -> Result<Option<RemoteNode>> {
    let at = |field: &str| format!("nodes.{name}.{field}");
    let remote = cfg.stages.iter().position(|s| s.remote.is_some());
    for (s, stage) in cfg.stages.iter().enumerate() {
        if stage.remote.is_none() && (stage.lazy || stage.stateful) {
            let key = if stage.lazy { "lazy" } else { "stateful" };
            return err(
                at(&format!("stages[{s}].{key}")),
                "applies to remote stages only (`remote = \"grpc://HOST:PORT\"`)",
            );
        }
    }
    let Some(s) = remote else {
        if cfg.window.is_some() {
            return err(at("window"), "applies to remote nodes only (a stage with `remote = \"grpc://HOST:PORT\"`)");
        }
        return Ok(None);
    };
    if cfg.stages.len() != 1 {
        return err(
            at(&format!("stages[{s}]")),
            "a remote node has exactly one stage, the remote one; put local stages in nodes of their own",
        );
    }
    let refuse = |field: &str, why: &str| err(at(field), why.to_string());
    if cfg.workers.is_some() {
        return refuse("workers", "leave it out: a remote node has one worker per batch in flight (`window`)");
    }
    if !cfg.worker_groups.is_empty() {
        return refuse("worker_groups", "a remote node has no worker groups (its batches run on the server)");
    }
    if !cfg.cores.is_empty() {
        return refuse("cores", "a remote node holds no local cores; leave `cores` out");
    }
    if !cfg.state.is_empty() {
        return refuse(
            "state",
            "a remote node's state stays on its server: set `stateful = true` on the stage instead",
        );
    }
    let window = cfg.window.unwrap_or(DEFAULT_WINDOW);
    if window == 0 {
        return refuse("window", "must be at least 1 (batches in flight to the server)");
    }
    Ok(Some(RemoteNode { window, stateful: cfg.stages[s].stateful }))
}

impl RemoteNode {
    pub fn resource(&self) -> Resource {
        Resource::Remote { window: self.window }
    }
}

/// The remote engine's params for `stage`: its own `params` plus the reserved keys.
pub(super) fn params(location: &str, stage: &StageConfig, url: &str) -> Result<StageParams> {
    let Some(model) = &stage.model else {
        return err(location, format!("name the model served at {url}: `model = \"NAME\"`"));
    };
    if let Some(key) = stage.params.keys().find(|k| RESERVED_PARAMS.contains(&k.as_str())) {
        return err(
            format!("{location}.params.{key}"),
            format!("`{key}` is set by the stage itself (remote, model, lazy, stateful); remove it from params"),
        );
    }
    Ok(stage.params.with_entries([
        ("url", url.into()),
        ("model", model.as_str().into()),
        ("lazy", stage.lazy.into()),
        ("stateful", stage.stateful.into()),
    ]))
}
