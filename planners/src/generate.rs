//! STG-like random task graphs, written as STG text: `n` tasks with times
//! 1..=10, each with 0..=12 predecessors drawn among the 36 tasks just
//! before it (the STG 50-task set: 6.5 predecessors, 18.5 ids apart on average); tasks without a
//! predecessor hang off the entry task and tasks without a successor feed
//! the exit task. Deterministic in `seed`.

/// Predecessors are drawn among this many tasks just before (STG 50-task
/// graphs: 18.5 ids apart on average).
const WINDOW: u64 = 36;

/// The graph as STG text (the format [`crate::stg::parse`] reads).
pub fn stg_text(n: usize, seed: u64) -> String {
    let mut state = seed ^ 0x9e37_79b9_7f4a_7c15;
    let mut below = |m: u64| {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 33) % m
    };
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n + 2];
    let mut has_succ = vec![false; n + 2];
    let mut time = vec![0u64; n + 2];
    for id in 1..=n {
        time[id] = 1 + below(10);
        let wanted = below(13).min(id as u64 - 1) as usize;
        while preds[id].len() < wanted {
            let p = id - 1 - below((id as u64 - 1).min(WINDOW)) as usize;
            if !preds[id].contains(&p) {
                preds[id].push(p);
                has_succ[p] = true;
            }
        }
        preds[id].sort_unstable();
        if preds[id].is_empty() {
            preds[id].push(0);
        }
    }
    preds[n + 1] = (1..=n).filter(|&i| !has_succ[i]).collect();
    let mut text = format!("{n}\n");
    for id in 0..n + 2 {
        let list: Vec<String> = preds[id].iter().map(|p| p.to_string()).collect();
        text += &format!("{id} {} {} {}\n", time[id], preds[id].len(), list.join(" "));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn generated_graphs_parse_and_repeat_with_their_seed() {
        for seed in 0..20 {
            let text = stg_text(100, seed);
            assert_eq!(text, stg_text(100, seed));
            let dag = crate::stg::parse(&text, Path::new("generated")).unwrap();
            assert_eq!(dag.len(), 100);
            assert!(dag.tasks.iter().all(|t| (1.0..=10.0).contains(&t.cost)));
        }
        assert_ne!(stg_text(100, 1), stg_text(100, 2));
    }
}
