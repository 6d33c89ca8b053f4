//! Graph partitioning: splitting a pipeline or a model's operator graph into
//! k balanced parts while keeping critical relations inside parts.
//!
//! - [`graph`]: the graph model (loads, weighted relations, flow order, critical marks).
//! - [`critical`]: which relations are critical (longest-path or size rule).
//! - readers: [`metis_format`], [`onnx_graph`], [`pipeline`]; [`generate`] makes layered DAGs.
//! - [`clustering`]: the flow-clustering initial partition (flow clusters, random assignment, random moves).
//! - [`refine`]: the boundary refinement by first/second critical gain.
//! - [`coarsen`] (by matching or [`label_propagation`]), [`bisection`] and [`multilevel`]: the drivers (seed method, multilevel, restarts).
//! - [`fm`] and [`strong`]: 2-way FM refinement with rollback, and the strong
//!   mode built on it (repeated multilevel runs with V-cycles); [`evolve`]:
//!   its population and combine operator; [`flow_refine`] (on [`maxflow`]):
//!   minimum cuts of a corridor around the cut; [`local_fm`]: localized
//!   multi-try FM searches (on by default for the plain cut); [`kick`]: the
//!   iterated local search on the best bisection (kick, refine, keep).
//! - [`metis_ref`]: METIS on the same graph, as the reference.
//! - [`metrics`]: cuts and balance ([`balance`]: the tightest reachable load limit); [`report`]: text and JSON output.

pub mod balance;
pub mod bisection;
pub mod clustering;
pub mod coarsen;
pub mod connectivity;
pub mod critical;
pub mod evolve;
pub mod flow_refine;
pub mod fm;
pub mod gain_queue;
pub mod generate;
pub mod graph;
pub mod kick;
pub mod label_propagation;
pub mod local_fm;
pub mod maxflow;
pub mod metis_format;
pub mod metis_ref;
pub mod metrics;
pub mod multilevel;
pub mod onnx_graph;
pub mod pipeline;
pub mod plain_bisection;
pub mod refine;
pub mod report;
pub mod strong;
