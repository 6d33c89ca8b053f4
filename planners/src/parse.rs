//! Errors of the graph file parsers: every error names the file, the line and
//! what is wrong.

use std::fmt;
use std::path::{Path, PathBuf};

/// A parse error located in a file.
#[derive(Debug, thiserror::Error)]
pub struct ParseError {
    pub file: PathBuf,
    /// 1-based line; 0 when the error concerns the whole file.
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file.display(), self.message)
        } else {
            write!(f, "{}:{}: {}", self.file.display(), self.line, self.message)
        }
    }
}

impl ParseError {
    pub fn new(file: &Path, line: usize, message: impl Into<String>) -> ParseError {
        ParseError { file: file.to_path_buf(), line, message: message.into() }
    }
}

/// Reads a whole file, turning an I/O error into a [`ParseError`].
pub fn read(file: &Path) -> Result<String, ParseError> {
    std::fs::read_to_string(file).map_err(|e| ParseError::new(file, 0, format!("cannot read: {e}")))
}
