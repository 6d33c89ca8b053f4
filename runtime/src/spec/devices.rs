//! A node's `provider`, `device` and `cuda` options, and the pipeline's `[devices]`: validated,
//! and the engines readied for them before any stage is inspected (see [`crate::execution`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::builder::Builder;
use super::types::Resource;
use super::{err, NodeSpec, Result};
use crate::config::{ConfigError, NodeConfig};
use crate::engine::EngineError;
use crate::execution::{DeviceSpec, Execution, ProviderKind};

/// Most CUDA devices a pipeline may name (`cuda0` .. `cuda63`).
const MAX_DEVICES: usize = 64;

/// The node's [`Execution`] from its `provider`, `device` and `cuda` keys.
pub(super) fn node_execution(name: &str, cfg: &NodeConfig) -> Result<Execution> {
    let at = |field: &str| format!("nodes.{name}.{field}");
    match cfg.provider {
        ProviderKind::Cpu => {
            if cfg.device.is_some() {
                return err(at("device"), "applies to GPU nodes only; add `provider = \"cuda\"` or remove it");
            }
            if cfg.cuda.is_some() {
                return err(at("cuda"), "CUDA options apply with `provider = \"cuda\"` only; add it or remove them");
            }
            Ok(Execution::Cpu)
        }
        ProviderKind::Cuda => {
            if let Some(s) = cfg.stages.iter().position(|s| s.remote.is_some()) {
                return err(
                    at(&format!("stages[{s}].remote")),
                    format!(
                        "node `{name}` has `provider = \"cuda\"` but its stage runs on a remote server; \
                         remove `provider` (a remote node holds no local device)"
                    ),
                );
            }
            let device = cfg.device.unwrap_or(0);
            if device >= MAX_DEVICES {
                return err(
                    at("device"),
                    format!("{device} is out of range; CUDA devices are 0 to {}", MAX_DEVICES - 1),
                );
            }
            let options = cfg.cuda.clone().unwrap_or_default();
            if options.gpu_mem_limit == Some(0) {
                return err(at("cuda.gpu_mem_limit"), "must be at least 1 byte (leave it out for no limit)");
            }
            Ok(Execution::Cuda { device, options })
        }
    }
}

impl Builder<'_> {
    /// Readies every engine a GPU node uses for its device ([`EngineProvider::prepare`]),
    /// before any stage is inspected. CPU nodes ask nothing of their engines here.
    pub(super) fn prepare_engines(&self) -> Result<()> {
        for (name, cfg) in &self.config.nodes {
            let execution = node_execution(name, cfg)?;
            if execution == Execution::Cpu {
                continue;
            }
            let mut prepared: Vec<*const ()> = Vec::new();
            for (s, stage) in cfg.stages.iter().enumerate() {
                let (_, provider) = self.stage_provider(&format!("nodes.{name}.stages[{s}]"), stage)?;
                let key = Arc::as_ptr(provider) as *const ();
                if prepared.contains(&key) {
                    continue;
                }
                prepared.push(key);
                provider.prepare(&execution).map_err(|e| {
                    // The location is the node's `provider`; an engine's own location (the device) would repeat it.
                    let message = match e {
                        EngineError::Unavailable { message, .. } => message,
                        e => e.to_string(),
                    };
                    ConfigError::new(format!("nodes.{name}.provider"), message)
                })?;
            }
        }
        Ok(())
    }

    /// The pipeline's devices: every device a node runs on, with its `[devices.NAME]`
    /// budget (default 1); sets each GPU node's [`Resource`]. A `[devices]` entry no
    /// node runs on, or with a budget of 0, is an error.
    pub(super) fn devices(&self, nodes: &mut [NodeSpec]) -> Result<Vec<DeviceSpec>> {
        let mut used: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (n, node) in nodes.iter().enumerate() {
            if let Some(device) = node.execution.device_name() {
                used.entry(device).or_default().push(n);
            }
        }
        for (name, device) in &self.config.devices {
            if !used.contains_key(name) {
                let known: Vec<&str> = used.keys().map(String::as_str).collect();
                return err(
                    format!("devices.{name}"),
                    format!(
                        "no node runs on `{name}` (devices nodes run on: {}); name it `cudaN` after a node's `device = N`",
                        super::builder::list_or_none(&known)
                    ),
                );
            }
            if device.budget == 0 {
                return err(
                    format!("devices.{name}.budget"),
                    "must be at least 1 (batches that may run on it at once)",
                );
            }
        }
        let mut devices = Vec::with_capacity(used.len());
        for (index, (name, members)) in used.into_iter().enumerate() {
            let budget = self.config.devices.get(&name).map_or(1, |d| d.budget);
            for n in members {
                nodes[n].resource = Resource::Device(index);
                nodes[n].cost = nodes[n].resource.budget_cost();
            }
            devices.push(DeviceSpec { name, budget });
        }
        Ok(devices)
    }
}
