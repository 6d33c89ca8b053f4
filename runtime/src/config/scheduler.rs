//! `[scheduler]`: which batching policy runs the nodes, and the collaborative rule's settings.

use serde::Deserialize;

/// How the collaborative rule picks nodes among those with pending work (docs/scheduling.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Selection {
    /// Walk nodes (priority nodes first) by descending inference priority,
    /// adding each while the running compute stays within the budget.
    #[default]
    Budget,
    /// Pick at most `max_nodes` nodes running at once (priority nodes first).
    Count,
}

/// Which batching policy runs the nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum BatchingPolicy {
    /// The collaborative rule: priority nodes first, pending × weight, under the compute budget.
    #[default]
    Collaborative,
    /// Baseline like Triton's dynamic batcher: each node runs on its own when its
    /// batch is full or its oldest task has waited `max_queue_delay_us`; no budget.
    Dynamic,
    /// Baseline like Triton's default dynamic batcher with no queue delay: a node runs
    /// as soon as it has work and a free worker, its batch whatever is waiting.
    Greedy,
    /// Baseline like Triton's priority levels: priority work first, then the oldest;
    /// no weights, no budget.
    PriorityFifo,
    /// Baseline without batching: one request per run, whenever a worker is idle.
    None,
}

impl BatchingPolicy {
    /// Every policy, the collaborative rule first.
    pub const ALL: [BatchingPolicy; 5] = [
        BatchingPolicy::Collaborative,
        BatchingPolicy::Dynamic,
        BatchingPolicy::Greedy,
        BatchingPolicy::PriorityFifo,
        BatchingPolicy::None,
    ];

    /// The name reports and command lines give it (`priority-fifo`; the config file writes `priority_fifo`).
    pub fn name(self) -> &'static str {
        match self {
            BatchingPolicy::Collaborative => "collaborative",
            BatchingPolicy::Dynamic => "dynamic",
            BatchingPolicy::Greedy => "greedy",
            BatchingPolicy::PriorityFifo => "priority-fifo",
            BatchingPolicy::None => "none",
        }
    }

    /// The policy called `name`, as [`Self::name`] or the config file writes it.
    pub fn from_name(name: &str) -> Option<BatchingPolicy> {
        let name = name.replace('_', "-");
        Self::ALL.into_iter().find(|p| p.name() == name)
    }
}

impl std::fmt::Display for BatchingPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What the budget walk does at the first node that does not fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum OnMisfit {
    /// Stop the walk (the rule's text).
    #[default]
    Stop,
    /// Skip that node and keep filling with the next ones.
    Skip,
}

/// Which batches go to the background under `background_nice`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum BackgroundScope {
    /// Every batch of a node no priority task has reached yet: the nodes only
    /// bulk work passes through run behind those the answers users wait for pass through.
    #[default]
    Node,
    /// Every batch that holds no priority task, at any node.
    Batch,
}

/// `[scheduler]`: the collaborative scheduler's settings.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SchedulerConfig {
    /// Batching policy: `collaborative` (the collaborative rule), or the baselines `dynamic`,
    /// `greedy`, `priority_fifo` and `none`.
    pub policy: BatchingPolicy,
    /// Dynamic policy: longest a task waits for its batch to fill, µs.
    pub max_queue_delay_us: u64,
    /// Period of the scheduling tick, µs.
    pub tick_us: u64,
    /// Compute that may run at once, in the units of the nodes' `cost`
    /// (a running batch holds its node's cost until it finishes). Default: every worker at
    /// once, the sum over the nodes of `cost` × `workers`.
    pub compute_budget: Option<f64>,
    /// Selection variant: `budget` or `count`.
    pub selection: Selection,
    /// K of the count variant: most nodes running at once. Default: the number of nodes.
    pub max_nodes: Option<usize>,
    /// Budget variant: `stop` at the first node that does not fit, or `skip` it and keep filling.
    pub on_misfit: OnMisfit,
    /// Also decide at once when a task arrives (not only on ticks, priority
    /// arrivals and node completions). Keeps latency low at light load; under
    /// load nodes are busy and tasks still accumulate into batches.
    pub decide_on_arrival: bool,
    /// Work descending from a priority task is priority at every node it
    /// reaches (off: only at the nodes the request enters at).
    pub priority_follows_dag: bool,
    /// A join node waiting on a parent raises that parent's inference
    /// priority by (requests waiting for it) × (the join's weight).
    pub join_boost: bool,
    /// Collaborative rule, budget variant: the budget holds work back only
    /// while priority work waits (the work-conserving budget, docs/scheduling.md);
    /// otherwise every node with work and an idle worker runs.
    pub work_conserving: bool,
    /// Collaborative rule: a batch holding no priority task runs with its
    /// worker thread's nice raised by this much (0: off; "Background batches"
    /// in docs/scheduling.md).
    pub background_nice: i32,
    /// Which batches `background_nice` sends to the background: `node` (those of
    /// nodes no priority task has reached) or `batch` (those holding no priority task).
    pub background_scope: BackgroundScope,
    /// Collaborative rule: the EEVDF slice, µs, that workers outside the
    /// background request from the kernel (100 to 100000; 0: the kernel's
    /// default). A woken thread with a shorter slice than the one running
    /// preempts it at once instead of at the next tick ("Foreground slices" in
    /// docs/scheduling.md).
    pub foreground_slice_us: u64,
    /// Collaborative rule: workers outside the background run at the real-time
    /// FIFO policy, ahead of every normal thread ("Real-time foreground" in
    /// docs/scheduling.md). For light nodes on the answer's path.
    pub foreground_realtime: bool,
    /// Collaborative rule: a batch that holds priority tasks takes no other
    /// tasks, so it is as short as it can be (and, with `background_nice`, the
    /// rest run after it as a background batch; "Priority batches alone" in
    /// docs/scheduling.md).
    pub separate_priority_batches: bool,
    /// Collaborative rule: longest the budget (or K) may hold a node's oldest
    /// task back, µs. A node whose oldest task has waited this long runs at the
    /// next decision whatever the budget says (deadline-aware selection, "Bounded
    /// hold" in docs/scheduling.md). Absent: no bound.
    pub max_hold_us: Option<u64>,
    /// Collaborative rule, budget variant: the budget neither holds back nor
    /// counts a node whose batches have taken less than this, µs, on average
    /// so far. Holding it would free a core for only that long, while its
    /// tasks, and the nodes they feed, wait for a whole batch of the nodes
    /// that hold the budget ("Brief nodes" in docs/scheduling.md). Absent: none.
    pub brief_batch_us: Option<u64>,
    /// Collaborative rule: where priority work waits at a node whose workers are
    /// all busy, stop a running batch that holds no priority task and has run
    /// less than this fraction of the node's mean batch time; its tasks wait
    /// again, first in their queues, and the priority task runs next ("Stopping
    /// young batches" in docs/scheduling.md). Only engines that can stop a run
    /// (ONNX Runtime's) and nodes without per-stream state or worker groups.
    /// Absent: batches always run to their end.
    pub preempt_before: Option<f64>,
    /// Keep every core of the process's CPU set from halting while the pipeline runs: one
    /// thread per core spins at the idle policy, which any other thread preempts at once
    /// ("Cores kept awake" in docs/scheduling.md). For sparse loads on machines whose idle
    /// cores halt (virtual machines): each batch then runs at the speed of a busy core.
    pub keep_cores_awake: bool,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            policy: BatchingPolicy::Collaborative,
            max_queue_delay_us: 1000,
            tick_us: 1000,
            compute_budget: None,
            selection: Selection::Budget,
            max_nodes: None,
            on_misfit: OnMisfit::Stop,
            decide_on_arrival: true,
            priority_follows_dag: true,
            join_boost: true,
            work_conserving: false,
            background_nice: 0,
            background_scope: BackgroundScope::Node,
            foreground_slice_us: 0,
            foreground_realtime: false,
            separate_priority_batches: false,
            max_hold_us: None,
            brief_batch_us: None,
            preempt_before: None,
            keep_cores_awake: false,
        }
    }
}
