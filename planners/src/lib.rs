//! Offline planners for Baton: where pipeline nodes run (which unit) and how a
//! repeated pipeline is laid out over time.
//!
//! - [`dag`]: the task graph; [`platform`]: the processing units.
//! - [`stg`], [`text`]: graph file parsers (STG, the compact text format);
//!   [`generate`]: STG-like random graphs.
//! - [`bounds`]: makespan and period lower bounds.
//! - [`list`]: list scheduling on the critical path (the heuristic).
//! - [`periodic`] + [`retime`]: periodic schedule of a repeated DAG with
//!   retiming (software pipelining).
//! - [`deadline`]: time limits in seconds, checked (`inf` = none).
//! - [`ilp`]: exact scheduling as a MILP (HiGHS), makespan and period;
//!   [`incumbent`]: its start (list scheduling, periodic, local search);
//!   [`compact`]: schedules re-timed from their order.
//! - [`placement`]: each node's provider (CPU or GPU) and workers from
//!   profiles, as a MILP (HiGHS); [`placed`]: that placement written back as a
//!   pipeline file.
//! - [`simulate`]: the legality check every schedule passes.
//! - [`watchdog`]: solver runs on their own thread, abandoned at the deadline.
//! - [`pipeline`]: pipeline configs and profiles as planning inputs, and
//!   placements written back as config overlays.

pub mod bounds;
pub mod compact;
pub mod dag;
pub mod deadline;
pub mod generate;
pub mod ilp;
pub mod incumbent;
pub mod list;
pub mod parse;
pub mod periodic;
pub mod pipeline;
pub mod placed;
pub mod placement;
pub mod platform;
pub mod retime;
pub mod simulate;
pub mod stg;
pub mod text;
pub mod watchdog;
