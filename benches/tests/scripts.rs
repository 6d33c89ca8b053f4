//! The Python fits behind `scripts/fidelity.sh`'s measured terms
//! (`scripts/test_fidelity_fits.py`: the runtime CPU line and a node's compute
//! line), run under the checkout's Python (`scripts/setup.sh` makes `.venv`).

use std::path::PathBuf;
use std::process::Command;

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().expect("benches/ sits in the repository").to_path_buf()
}

#[test]
fn the_fidelity_fits_pass_their_python_unit_tests() {
    let python = repo_root().join(".venv/bin/python");
    assert!(python.is_file(), "{} is missing: run scripts/setup.sh", python.display());
    let out =
        Command::new(python).arg(repo_root().join("scripts/test_fidelity_fits.py")).output().expect("python runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "scripts/test_fidelity_fits.py failed:\n{stderr}");
    assert!(stderr.contains("OK"), "unittest did not report OK:\n{stderr}");
}
