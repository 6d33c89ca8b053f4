//! Decomposition of large requests into jobs, and their reassembly (the decomposition rule, docs/scheduling.md).
//!
//! With `[fairness] granule = g`, a request with more rows (dim 0) than the
//! pipeline's smallest `max_batch` (L) is not refused: it is split into
//! 2^n jobs, n the smallest for which jobs of `ceil(rows / 2^n)` rows, rounded
//! up to a multiple of g, fit L ([`plan`]). The last jobs take what is left
//! (fewer rows; slots left with no rows make no job). Each job is submitted as
//! a request of its own, carrying the parent's priority, deadline and tenant,
//! so jobs batch with other requests, run on whichever workers are free, and
//! pass each node (joins included) like any request: a job's task enters a
//! node only once all of that job's inputs to the node have arrived.
//!
//! ## The assembly protocol
//! Each job resolves exactly once (the runtime's guarantee) and calls
//! [`Assembly::finish`] with its index and result. A success stores the
//! job's outputs in its slot; the finish that brings `remaining` to zero
//! (an `AcqRel` count, so it sees every slot written before) concatenates
//! the slots in job order and resolves the parent. A failure resolves the
//! parent at once with [`RequestError::Job`], naming the job and its rows;
//! the parent's [`Completion`] keeps only the first resolution, so later
//! results (successes or failures of other jobs) are dropped. Every job is
//! counted in flight on its own; the parent is not (it is answered from the
//! thread that finishes its last job). The parent's outcome is counted once,
//! by the call that resolved it, beside its jobs' outcomes.
//!
//! ## Cancellation and admission
//! A job's completion points at the parent's: once the parent is answered
//! (say a job failed) or cancelled (its ticket dropped), every job counts as
//! cancelled, so the nodes skip its tasks not yet run (each such job resolves
//! with `Cancelled`, which the parent, already finished, ignores); batches
//! already running finish and their results are dropped. Admission: a split
//! request is refused as a whole with `QueueFull` when its jobs would take
//! the in-flight count past `max_in_flight` (checked once before the jobs
//! are submitted; a concurrent submitter can still fill the gap, and a job
//! then refused fails the request, naming the job).

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::metrics::{Outcome, PipelineMetrics};

use crate::request::{Completion, Outputs, Request, RequestError, RequestResult};
use crate::tensor::{stitch, Tensor};

/// Row ranges of the jobs a request of `rows` rows is split into, for a
/// largest job of `limit` rows and job sizes that are multiples of `granule`
/// (`granule <= limit`). At most 2^n ranges, in order, covering `0..rows`.
pub fn plan(rows: usize, limit: usize, granule: usize) -> Vec<Range<usize>> {
    assert!((1..=limit).contains(&granule), "granule {granule} must be within 1..={limit}");
    let mut jobs = 2usize;
    loop {
        let size = rows.div_ceil(jobs).div_ceil(granule) * granule;
        if size <= limit {
            return (0..jobs)
                .map(|j| (j * size).min(rows)..((j + 1) * size).min(rows))
                .filter(|r| !r.is_empty())
                .collect();
        }
        jobs *= 2;
    }
}

/// Rows of a request, if every input agrees on them (`None` for no inputs or disagreement).
fn rows_of(request: &Request) -> Option<usize> {
    let mut rows = request.inputs.iter().map(|(_, t)| t.batch_rows());
    let first = rows.next()?;
    rows.all(|r| r == first).then_some(first)
}

/// How many jobs `request` (oversized) is split into.
pub(crate) fn job_count(request: &Request, limit: usize, granule: usize) -> usize {
    rows_of(request).map_or(0, |rows| plan(rows, limit, granule).len())
}

/// Whether `request` is to be split: it has more rows than `limit` (its
/// inputs agreeing on them; requests with disagreeing inputs go on to be refused by validation).
pub(crate) fn is_oversized(request: &Request, limit: usize) -> bool {
    rows_of(request).is_some_and(|rows| rows > limit)
}

/// Splits `request` into jobs, submits each through `submit` (which must
/// resolve the completion it is given exactly once), and resolves `parent`
/// from the jobs' results (see the module docs).
pub(crate) fn submit_jobs(
    request: Request,
    parent: Arc<Completion>,
    limit: usize,
    granule: usize,
    metrics: PipelineMetrics,
    submit: impl Fn(Request, Arc<Completion>),
) {
    let refusal = if request.stream.is_some() {
        Some(format!("a stream chunk cannot be split into jobs: send at most {limit} rows per chunk"))
    } else if request.inputs.iter().any(|(_, t)| t.shape().is_empty()) {
        Some("a request split into jobs needs a batch dim".to_string())
    } else {
        None
    };
    if let Some(message) = refusal {
        resolve_counted(&parent, &metrics, Err(RequestError::InvalidInput(message)));
        return;
    }
    let rows = rows_of(&request).expect("checked by is_oversized");
    let ranges = plan(rows, limit, granule);
    let assembly = Arc::new(Assembly {
        parent,
        metrics,
        slots: Mutex::new(vec![None; ranges.len()]),
        remaining: AtomicUsize::new(ranges.len()),
        ranges,
    });
    for (index, range) in assembly.ranges.iter().enumerate() {
        let job = Request {
            inputs: request.inputs.iter().map(|(name, t)| (name.clone(), t.rows(range.clone()))).collect(),
            stream: None,
            ..request.clone()
        };
        let parent = Arc::clone(&assembly.parent);
        let assembly = Arc::clone(&assembly);
        let finish = Box::new(move |result| assembly.finish(index, result));
        submit(job, Arc::new(Completion::job(finish, parent)));
    }
}

/// A split request's jobs on their way back.
struct Assembly {
    parent: Arc<Completion>,
    metrics: PipelineMetrics,
    ranges: Vec<Range<usize>>,
    slots: Mutex<Vec<Option<Outputs>>>,
    remaining: AtomicUsize,
}

impl Assembly {
    fn finish(&self, index: usize, result: RequestResult) {
        match result {
            Ok(outputs) => {
                self.slots.lock()[index] = Some(outputs);
                if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
                    let slots: Vec<Outputs> =
                        self.slots.lock().drain(..).map(|s| s.expect("every job stored")).collect();
                    resolve_counted(&self.parent, &self.metrics, concatenate(&slots));
                }
            }
            Err(error) => {
                let Range { start, end } = self.ranges[index];
                let error = RequestError::Job { index, start, end, error: Box::new(error) };
                resolve_counted(&self.parent, &self.metrics, Err(error));
            }
        }
    }
}

/// Resolves a split request; the call that resolves it counts its outcome.
fn resolve_counted(parent: &Arc<Completion>, metrics: &PipelineMetrics, result: RequestResult) {
    let outcome = Outcome::of(&result);
    if parent.resolve(result) {
        metrics.request_done(outcome);
    }
}

/// The jobs' outputs joined along dim 0, in job order.
fn concatenate(jobs: &[Outputs]) -> RequestResult {
    let first = &jobs[0];
    let mut names = Vec::with_capacity(first.len());
    let mut tensors = Vec::with_capacity(first.len());
    for (name, _) in first.iter() {
        let parts: Option<Vec<&Tensor>> = jobs.iter().map(|job| job.get(name)).collect();
        let joined = parts
            .ok_or_else(|| format!("a job has no output `{name}`"))
            .and_then(|parts| stitch(&parts).map_err(|e| format!("cannot join output `{name}` of the jobs: {e}")));
        match joined {
            Ok(tensor) => tensors.push(tensor),
            Err(message) => return Err(RequestError::InvalidInput(message)),
        }
        names.push(name.to_string());
    }
    Ok(Outputs::new(Arc::from(names), tensors))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes(ranges: &[Range<usize>]) -> Vec<usize> {
        ranges.iter().map(|r| r.len()).collect()
    }

    #[test]
    fn plans_2n_jobs_of_granule_multiples_within_the_limit() {
        // 100 rows, 32 per batch, granule 8: 2 jobs of 56 do not fit; 4 of ceil(25/8)·8 = 32 do.
        let p = plan(100, 32, 8);
        assert_eq!(p, [0..32, 32..64, 64..96, 96..100]);
        assert_eq!(sizes(&plan(33, 32, 8)), [24, 9]);
        assert_eq!(sizes(&plan(64, 32, 1)), [32, 32]);
        assert_eq!(sizes(&plan(1000, 16, 16)), vec![16; 62].into_iter().chain([8]).collect::<Vec<_>>());
        // 65 rows, 32, granule 32: 4 slots of 32; the last slot would be empty and makes no job.
        assert_eq!(sizes(&plan(65, 32, 32)), [32, 32, 1]);
        for (rows, limit, granule) in [(100, 32, 8), (7, 3, 1), (1023, 64, 4), (65, 32, 32), (129, 64, 1)] {
            let p = plan(rows, limit, granule);
            assert_eq!(p.first().unwrap().start, 0);
            assert_eq!(p.last().unwrap().end, rows);
            assert!(p.windows(2).all(|w| w[0].end == w[1].start));
            assert!(p.iter().all(|r| r.len() <= limit));
            assert!(p[..p.len() - 1].iter().all(|r| r.len() % granule == 0));
        }
    }

    fn outputs(values: &[f32]) -> Outputs {
        let t = Tensor::from_vec(vec![values.len(), 1], values.to_vec()).unwrap();
        Outputs::new(Arc::from(vec!["y".to_string()]), vec![t])
    }

    fn assembly(jobs: usize) -> (Arc<Completion>, Arc<Assembly>) {
        let parent = Arc::new(Completion::default());
        let ranges: Vec<Range<usize>> = (0..jobs).map(|j| j * 2..j * 2 + 2).collect();
        let a = Assembly {
            parent: Arc::clone(&parent),
            metrics: PipelineMetrics::new("test"),
            slots: Mutex::new(vec![None; jobs]),
            remaining: AtomicUsize::new(jobs),
            ranges,
        };
        (parent, Arc::new(a))
    }

    #[test]
    fn jobs_finishing_out_of_order_are_joined_in_order() {
        let (parent, a) = assembly(3);
        a.finish(2, Ok(outputs(&[5.0, 6.0])));
        a.finish(0, Ok(outputs(&[1.0, 2.0])));
        assert!(!parent.is_finished());
        a.finish(1, Ok(outputs(&[3.0, 4.0])));
        let out = crate::request::Ticket::new(parent).wait().unwrap();
        assert_eq!(out.get("y").unwrap().to_f64_vec(), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    }

    #[test]
    fn one_failed_job_fails_the_request_naming_it() {
        let (parent, a) = assembly(3);
        a.finish(0, Ok(outputs(&[1.0, 2.0])));
        let error = RequestError::Node { node: "n".into(), message: "boom".into() };
        a.finish(1, Err(error.clone()));
        a.finish(2, Ok(outputs(&[5.0, 6.0])));
        let err = crate::request::Ticket::new(parent).wait().unwrap_err();
        assert_eq!(err, RequestError::Job { index: 1, start: 2, end: 4, error: Box::new(error) });
        assert_eq!(err.to_string(), "job 1 (rows 2..4) failed: node `n` failed: boom");
    }
}
