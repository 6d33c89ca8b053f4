//! `baton plan --method ilp|periodic` end to end: time limits (`inf` and huge
//! numbers mean none, NaN is refused), the MILP's start named, and the
//! periodic planner's bound.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use baton_scratch::Scratch;

/// Writes `text` to `dir/name`.
fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let f = dir.join(name);
    std::fs::write(&f, text).unwrap();
    f
}

fn plan(args: &[&str], dag: &PathBuf) -> Output {
    Command::new(env!("CARGO_BIN_EXE_baton")).arg("plan").args(args).arg("--dag").arg(dag).output().unwrap()
}

/// The periodic planner's worked example graph (four tasks with transfers).
const EXAMPLE: &str = "44;0A1;1B2;2C1;3D2;012a;021b;131c;231d";

#[test]
fn huge_time_limits_mean_none_and_nan_is_refused() {
    let dir = Scratch::new("plan-schedule");
    let dag = write(&dir, "example.dag", EXAMPLE);
    for limit in ["inf", "1e20", "1e300"] {
        let run = plan(&["--method", "ilp", "--time-limit", limit], &dag);
        let stdout = String::from_utf8_lossy(&run.stdout);
        assert!(run.status.success(), "{limit}: {stdout}\n{}", String::from_utf8_lossy(&run.stderr));
        assert!(stdout.contains("status: Optimal"), "{limit}: {stdout}");
        // The example's transfers rule out the periodic start; list scheduling or the local search gives it.
        assert!(stdout.contains("start (the MILP's incumbent, from "), "{limit}: {stdout}");
    }
    for limit in ["nan", "-1", "soon"] {
        let run = plan(&["--method", "ilp", &format!("--time-limit={limit}")], &dag);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(!run.status.success(), "{limit} was accepted");
        assert!(stderr.contains("--time-limit") && stderr.contains(limit), "{limit}: {stderr}");
    }
}

#[test]
fn periodic_plan_prints_a_true_bound() {
    // A long task and a short one: with X = 2 samples per period the plan
    // takes 5.5 per sample, below max(sum / h, max c) = 10.
    let dir = Scratch::new("plan-schedule");
    let dag = write(&dir, "long-short.dag", "21;0L10;1S1;010a");
    let run = plan(&["--method", "periodic", "--processors", "2", "--x-max", "4"], &dag);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&run.stderr));
    assert!(stdout.contains("(5.5 per sample)"), "{stdout}");
    assert!(stdout.contains("lower bound: 5.5 time units per sample"), "{stdout}");
    assert!(stdout.contains("one sample per period (X = 1) needs at least 10"), "{stdout}");
}
