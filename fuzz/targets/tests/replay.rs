//! Replays the committed fuzz corpus and regressions through the targets, so
//! `cargo test` (stable, no fuzzer) checks every input the fuzzer kept, and
//! every input that once crashed a target, still passes.
//!
//! Inputs live in `fuzz/corpus/<target>/` (minimized with `cargo fuzz cmin`)
//! and `fuzz/regressions/<target>/` (crash inputs, named for the bug).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use baton_fuzz_targets::TARGETS;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("fuzz/targets is inside fuzz/").to_path_buf()
}

/// The files of `dir`, sorted; none when it does not exist.
fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries.map(|e| e.expect("readable entry").path()).filter(|p| p.is_file()).collect();
    files.sort();
    files
}

/// Runs every file of `dirs` through `target`; returns how many ran and the failures.
fn replay(target: &str, dirs: &[PathBuf]) -> (usize, Vec<String>) {
    let mut ran = 0;
    let mut failures = Vec::new();
    for file in dirs.iter().flat_map(|d| files(d)) {
        let data = std::fs::read(&file).expect("readable corpus file");
        if catch_unwind(AssertUnwindSafe(|| baton_fuzz_targets::run(target, &data))).is_err() {
            failures.push(file.display().to_string());
        }
        ran += 1;
    }
    (ran, failures)
}

#[test]
fn every_target_has_a_corpus_and_passes_it() {
    let fuzz = fuzz_dir();
    let mut report = Vec::new();
    for target in TARGETS {
        let dirs = [fuzz.join("corpus").join(target), fuzz.join("regressions").join(target)];
        let corpus = files(&dirs[0]).len();
        assert!(corpus >= 10, "fuzz/corpus/{target} has {corpus} files; run scripts/fuzz.sh {target}");
        let (ran, failures) = replay(target, &dirs);
        assert!(failures.is_empty(), "target {target} panicked on {} of {ran} inputs: {failures:#?}", failures.len());
        report.push(format!("{target}: {ran} inputs"));
    }
    println!("{}", report.join(", "));
}

#[test]
fn every_harness_target_is_replayed() {
    // A fuzz target added to fuzz/fuzz_targets must be listed in TARGETS, or its corpus is never replayed.
    let mut harness: Vec<String> = files(&fuzz_dir().join("fuzz_targets"))
        .iter()
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    harness.sort();
    let mut listed: Vec<String> = TARGETS.iter().map(|t| t.to_string()).collect();
    listed.sort();
    assert_eq!(harness, listed);
}

#[test]
fn a_panicking_input_is_reported() {
    // The replay must fail on a target panic: an unknown target name panics in `run`.
    let dir = baton_scratch::Scratch::new("fuzz-replay");
    std::fs::write(dir.join("input"), b"any").unwrap();
    let (ran, failures) = replay("no_such_target", &[dir.to_path_buf()]);
    assert_eq!((ran, failures.len()), (1, 1));
}
