//! The report: every line printed as it is known and kept, and a JSON document; both rewritten
//! into the output folder after each step (`provider-diff.txt`, `provider-diff.json`), so a run
//! cut short still leaves what it found.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// The report being written.
pub struct Report {
    dir: PathBuf,
    text: String,
    /// The JSON document's top-level keys.
    pub json: Map<String, Value>,
}

impl Report {
    /// A report into `dir` (created if missing).
    pub fn new(dir: &Path) -> Result<Report, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        Ok(Report { dir: dir.to_path_buf(), text: String::new(), json: Map::new() })
    }

    /// Prints `line` and keeps it.
    pub fn say(&mut self, line: impl AsRef<str>) {
        println!("{}", line.as_ref());
        self.text.push_str(line.as_ref());
        self.text.push('\n');
    }

    /// Sets a top-level JSON key.
    pub fn set(&mut self, key: &str, value: Value) {
        self.json.insert(key.to_string(), value);
    }

    /// Appends to a top-level JSON list (created if missing).
    pub fn push(&mut self, key: &str, value: Value) {
        match self.json.entry(key.to_string()).or_insert_with(|| Value::Array(Vec::new())) {
            Value::Array(list) => list.push(value),
            other => *other = Value::Array(vec![value]),
        }
    }

    /// Writes both files; a failure is printed, not fatal (the printed report is the copy left).
    pub fn save(&self) {
        let json = serde_json::to_string_pretty(&Value::Object(self.json.clone())).unwrap_or_default();
        for (name, body) in [("provider-diff.txt", self.text.as_str()), ("provider-diff.json", json.as_str())] {
            if let Err(e) = std::fs::write(self.dir.join(name), body) {
                eprintln!("provider_diff: cannot write {}: {e}", self.dir.join(name).display());
            }
        }
    }
}
