//! What `baton profile --providers` measures: each node on each provider asked
//! for, CUDA only where the node could run there, with the execution its
//! sessions get; and CUDA readied for those nodes before any session opens.

use baton::config::NodeConfig;
use baton::execution::{ConvAlgoSearch, Execution, ProviderKind};
use baton::{EngineRegistry, PipelineConfig};
use baton_planners::pipeline::Provider;

/// A node to measure on one provider.
pub struct Job<'a> {
    pub name: &'a str,
    pub node: &'a NodeConfig,
    pub provider: Provider,
    pub execution: Execution,
}

/// Why a node cannot run on CUDA (`None`: it can): a stage that is neither an ONNX model nor a function.
fn cuda_obstacle(node: &NodeConfig) -> Option<String> {
    if let Some(s) = node.stages.iter().position(|s| s.remote.is_some()) {
        return Some(format!("stage {s} runs on a remote server"));
    }
    if let Some((s, kind)) = node
        .stages
        .iter()
        .enumerate()
        .filter(|(_, st)| st.function.is_none())
        .find_map(|(s, st)| st.engine.as_deref().filter(|e| *e != "onnx").map(|e| (s, e)))
    {
        return Some(format!("stage {s} is a `{kind}` stage, not an ONNX model"));
    }
    if node.stages.iter().all(|s| s.function.is_some()) {
        return Some("it has no ONNX model stage".into());
    }
    None
}

/// The measurements to make, node by node, each node's providers in the order asked
/// (default: the provider its file names). CUDA runs on the node's own `device` and
/// `cuda` options; a node without options that pads its inputs uses cuDNN's heuristic
/// convolution search, as `baton plan` writes it (`baton_planners::placed`).
pub fn jobs<'a>(cfg: &'a PipelineConfig, providers: Option<&[String]>) -> Result<Vec<Job<'a>>, String> {
    let asked: Option<Vec<Provider>> = providers
        .map(|ps| ps.iter().map(|p| Provider::parse(p).map_err(|e| format!("--providers: {e}"))).collect())
        .transpose()?;
    if asked.as_ref().is_some_and(|a| a.is_empty()) {
        return Err("--providers: name at least one provider (cpu, cuda)".into());
    }
    let mut jobs = Vec::new();
    for (name, node) in &cfg.nodes {
        let own = match node.provider {
            ProviderKind::Cpu => Provider::Cpu,
            ProviderKind::Cuda => Provider::Cuda,
        };
        let mut wanted: Vec<Provider> = Vec::new();
        for p in asked.clone().unwrap_or_else(|| vec![own]) {
            if !wanted.contains(&p) {
                wanted.push(p);
            }
        }
        if wanted.contains(&Provider::Cuda) {
            if let Some(why) = cuda_obstacle(node) {
                println!("{name:<16} not measured on cuda: {why}");
                wanted.retain(|&p| p != Provider::Cuda);
                if wanted.is_empty() {
                    wanted.push(Provider::Cpu);
                }
            }
        }
        for provider in wanted {
            let execution = match provider {
                Provider::Cpu => Execution::Cpu,
                Provider::Cuda => {
                    let mut options = node.cuda.clone().unwrap_or_default();
                    if node.cuda.is_none() && !node.pad.is_empty() {
                        options.cudnn_conv_algo_search = ConvAlgoSearch::Heuristic;
                    }
                    Execution::Cuda { device: node.device.unwrap_or(0), options }
                }
            };
            jobs.push(Job { name, node, provider, execution });
        }
    }
    if asked.is_some_and(|a| a.contains(&Provider::Cuda)) && !jobs.iter().any(|j| j.provider == Provider::Cuda) {
        return Err(
            "--providers cuda: no node can run on CUDA (a node's stages must be ONNX models or functions)".into()
        );
    }
    Ok(jobs)
}

/// Readies the engines of a node's stages for its CUDA measurement (the GPU build, the GPU).
pub fn prepare(job: &Job, engines: &EngineRegistry) -> Result<(), String> {
    for (s, stage) in job.node.stages.iter().enumerate() {
        let provider = match &stage.function {
            Some(f) => engines.function(f),
            None => engines.get(stage.engine.as_deref().unwrap_or("onnx")),
        }
        .ok_or_else(|| format!("nodes.{}.stages[{s}]: no engine for this stage", job.name))?;
        provider.prepare(&job.execution).map_err(|e| {
            let message = match e {
                baton::EngineError::Unavailable { message, .. } => message,
                e => e.to_string(),
            };
            format!("nodes.{}: cannot measure it on cuda: {message}", job.name)
        })?;
    }
    Ok(())
}
