//! `baton plan --method list|periodic|ilp`.

use std::process::ExitCode;

pub fn run(_args: crate::plan::PlanArgs) -> ExitCode {
    eprintln!("error: scheduling planners are not built yet");
    ExitCode::from(2)
}
