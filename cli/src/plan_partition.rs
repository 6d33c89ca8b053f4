//! `baton plan --method partition`.

use std::process::ExitCode;

pub fn run(_args: crate::plan::PlanArgs) -> ExitCode {
    eprintln!("error: the partitioner is not built yet");
    ExitCode::from(2)
}
