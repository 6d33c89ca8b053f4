//! What a simulated point sends, for `baton simulate` and `baton tune` alike:
//! `baton bench`'s requests (plain, chunks of streams, a mixed load) or the
//! collab example's sessions. [`Traffic::new`] checks the options and reads the
//! session file once; [`Traffic::sim`] sets up each point's simulation with
//! them (the one place either command builds a point's [`Sim`]).

use baton::PipelineSpec;

use super::durations::Durations;
use super::engine::{PointSetup, Sim, Terms};
use super::sessions::{self, Sessions};
use super::streams::Streams;
use super::SessionLoad;
use crate::load::{Arrivals, InterArrival, LoadShape};

/// `baton bench`'s stream options (`--stream-chunks`, `--stream-inputs`, `--stream-fraction`).
#[derive(Clone, Debug, PartialEq)]
pub struct StreamLoad {
    /// Chunks per stream (0: no streams).
    pub chunks: usize,
    /// A mixed load: the inputs chunks carry (empty: every input).
    pub inputs: Vec<String>,
    /// A mixed load: the fraction of each sender's requests sent as chunks.
    pub fraction: f64,
    /// `--tenants`: each request's tenant by shares (empty: the default tenant).
    pub tenants: Vec<crate::load::TenantShare>,
}

impl StreamLoad {
    /// The options that give this load (empty without streams).
    pub fn describe(&self) -> String {
        match (self.chunks, self.inputs.is_empty()) {
            (0, _) => String::new(),
            (n, true) => format!("--stream-chunks {n}"),
            (n, false) => format!(
                "--stream-chunks {n} --stream-inputs {} --stream-fraction {}",
                self.inputs.join(","),
                self.fraction
            ),
        }
    }
}

impl Default for StreamLoad {
    fn default() -> StreamLoad {
        StreamLoad { chunks: 0, inputs: Vec::new(), fraction: 0.25, tenants: Vec::new() }
    }
}

/// The sessions of a session file, ready to send.
#[derive(Clone, Debug, PartialEq)]
struct SessionPlan {
    pace_ms: f64,
    /// Chunks per session, taken in turn.
    counts: Vec<u64>,
}

/// What each point of a run sends (checked options; the session file read).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Traffic {
    streams: StreamLoad,
    sessions: Option<SessionPlan>,
}

impl Traffic {
    /// Checks the options that need no pipeline and reads the session file.
    pub fn new(streams: StreamLoad, sessions: Option<&SessionLoad>) -> Result<Traffic, String> {
        if !(streams.fraction > 0.0 && streams.fraction <= 1.0) {
            return Err("--stream-fraction must be in (0, 1]".into());
        }
        let Some(load) = sessions else {
            return Ok(Traffic { streams, sessions: None });
        };
        if !(load.pace_ms.is_finite() && load.pace_ms >= 0.0) {
            return Err("--pace-ms must be non-negative".into());
        }
        if streams.chunks > 0 || !streams.inputs.is_empty() {
            return Err("--sessions sends its own streams: leave out --stream-chunks and --stream-inputs".into());
        }
        let counts = sessions::session_chunks(&load.file)?;
        Ok(Traffic { streams, sessions: Some(SessionPlan { pace_ms: load.pace_ms, counts }) })
    }

    /// Whether the load sends streams (chunks or sessions): what a stateful node needs.
    pub fn sends_streams(&self) -> bool {
        self.streams.chunks > 0 || self.sessions.is_some()
    }

    /// Whether the load is sessions (rates count sessions per second).
    pub fn is_sessions(&self) -> bool {
        self.sessions.is_some()
    }

    /// The simulation of one point of `spec` sending this load; `trace` keeps every
    /// chunk's parking, start and write-back at stateful nodes.
    pub fn sim<'a>(
        &self,
        spec: &'a PipelineSpec,
        durations: &'a Durations,
        terms: Terms,
        setup: PointSetup,
        trace: bool,
    ) -> Result<Sim<'a>, String> {
        let streams = self.streams(spec, setup.rows, setup.priority_fraction, trace)?;
        Ok(Sim::new(spec, durations, terms, setup).with_streams(streams))
    }

    /// The load's request kinds for `spec`, checked as `baton bench` checks them
    /// (its `request_pool`): sessions, or `baton bench`'s requests.
    pub fn streams(&self, spec: &PipelineSpec, rows: usize, priority: f64, trace: bool) -> Result<Streams, String> {
        if let Some(node) = spec.nodes.iter().find(|n| n.keeps_streams()).filter(|_| rows != 1) {
            return Err(format!("node `{}` keeps one row of state per stream: give --rows 1 (not {rows})", node.name));
        }
        if let Some(plan) = &self.sessions {
            if priority > 0.0 {
                return Err(
                    "--sessions: the final chunks are the priority requests: leave out --priority-fraction".into()
                );
            }
            let pace_ns = (plan.pace_ms * 1e6).round() as u64;
            return Streams::with_sessions(spec, Sessions::new(plan.counts.clone(), pace_ns), trace);
        }
        let s = &self.streams;
        let names: Vec<&str> = spec.inputs.iter().map(|i| i.spec.name.as_str()).collect();
        if let Some(name) = s.inputs.iter().find(|n| !names.contains(&n.as_str())) {
            return Err(format!("--stream-inputs: the pipeline has no input `{name}`"));
        }
        if !s.inputs.is_empty() && s.chunks == 0 {
            return Err("--stream-inputs needs --stream-chunks N".into());
        }
        if !s.inputs.is_empty() && names.iter().all(|n| s.inputs.iter().any(|i| i == n)) {
            return Err("--stream-inputs names every input: a mixed load needs inputs for its plain requests".into());
        }
        crate::load::tenant_indices(&s.tenants, &spec.fairness.tenants)?;
        let shape = LoadShape {
            stream_chunks: s.chunks as u64,
            stream_fraction: (!s.inputs.is_empty()).then_some(s.fraction),
            priority_fraction: priority,
            tenants: s.tenants.clone(),
        };
        Ok(Streams::new(spec, shape, &s.inputs, trace))
    }

    /// Sessions: the mean chunks a session sends.
    pub fn mean_chunks(&self) -> Option<f64> {
        let plan = self.sessions.as_ref()?;
        Some(plan.counts.iter().map(|&c| c.max(1)).sum::<u64>() as f64 / plan.counts.len() as f64)
    }

    /// Sessions: the chunks due in `[from_ns, to_ns)` on the sessions' own
    /// schedule (chunk `k` of a session `k × pace` after its start) when sessions
    /// start at `rate` per second from `seed`'s arrivals, as a point's engine
    /// starts them (the first at 0, each next a gap later): what a pipeline that
    /// keeps up answers in that interval, but for the chunks in flight at its ends.
    pub fn scheduled_chunks(&self, rate: f64, arrivals: Arrivals, seed: u64, from_ns: u64, to_ns: u64) -> Option<u64> {
        let plan = self.sessions.as_ref()?;
        let pace_ns = (plan.pace_ms * 1e6).round() as u64;
        let mut gaps = InterArrival::new(rate, arrivals, seed);
        let (mut start, mut due) = (0u64, 0u64);
        for i in 0.. {
            if start >= to_ns {
                break;
            }
            let chunks = plan.counts[i % plan.counts.len()].max(1);
            due += (0..chunks).map(|k| start + k * pace_ns).filter(|t| (from_ns..to_ns).contains(t)).count() as u64;
            start += (gaps.next_gap() * 1e9).round() as u64;
        }
        Some(due)
    }
}
