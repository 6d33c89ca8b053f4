//! Schedules re-timed from their unit assignment and start order: removes
//! a solver's float slack, and turns the periodic planner's single-sample
//! layout into a compact one-run schedule.

use crate::dag::Dag;
use crate::platform::Platform;
use crate::simulate::Schedule;

/// Re-times `s` from its unit assignment and its start order: tasks in
/// start order (inputs first on ties), each as early as its unit and its
/// inputs allow. Legal whenever `s` assigns every task a unit, whatever its
/// start times; never later than `s`'s starts when `s` is legal.
pub fn tighten(dag: &Dag, p: &Platform, s: Schedule) -> Schedule {
    let n = dag.len();
    let mut start = vec![0.0; n];
    let mut waiting: Vec<usize> = (0..n).map(|i| dag.in_edges(i).len()).collect();
    let mut ready: Vec<usize> = (0..n).filter(|&i| waiting[i] == 0).collect();
    let mut free_at = vec![0.0f64; p.units()];
    // Tasks in the solver's start order (inputs first on ties), each as early as possible.
    while let Some(k) = (0..ready.len()).min_by(|&a, &b| s.start[ready[a]].total_cmp(&s.start[ready[b]])) {
        let i = ready.swap_remove(k);
        let u = s.unit[i];
        let mut t = free_at[u];
        for &k in dag.in_edges(i) {
            let e = &dag.edges[k];
            t = t.max(start[e.from] + p.duration(dag, e.from, s.unit[e.from]) + p.delay(e, s.unit[e.from], u));
        }
        start[i] = t;
        free_at[u] = t + p.duration(dag, i, u);
        for &k in dag.out_edges(i) {
            let j = dag.edges[k].to;
            waiting[j] -= 1;
            if waiting[j] == 0 {
                ready.push(j);
            }
        }
    }
    Schedule { unit: s.unit, start }
}
