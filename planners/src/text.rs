//! The compact text format for a DAG with transfer times:
//! `44;0A1;1B2;2C1;3D2;012a;021b;131c;231d`.
//!
//! Tokens are separated by `;` (or newlines). The first token gives the counts:
//! `44` = 4 operations and 4 edges (one digit each), or `4,4` / `4 4` for
//! larger graphs. Then one token per operation, `<id><name><time>` (`0A1` =
//! operation 0 named `A` takes 1; names are letters, digits and `_` after a
//! leading letter, times may be decimal), then one token per edge,
//! `<from><to><size><data>` (`012a` = operation 0 sends data `a` of size 2 to
//! operation 1; one digit per operation index), or `from,to,size[,data]` for
//! any index. The size is the transfer time between two different units.
//! Operation ids must be `0..n` in order.

use std::path::Path;

use crate::dag::{Dag, Edge, Task};
use crate::parse::{read, ParseError};

/// Parses a file in the text format.
pub fn load(file: &Path) -> Result<Dag, ParseError> {
    parse(&read(file)?, file)
}

/// Parses the text format; `file` only names the source in errors.
pub fn parse(text: &str, file: &Path) -> Result<Dag, ParseError> {
    let mut tokens = Vec::new();
    for (k, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("");
        for tok in line.split(';').map(str::trim).filter(|t| !t.is_empty()) {
            tokens.push((k + 1, tok));
        }
    }
    let mut it = tokens.into_iter();
    let (hl, head) = it.next().ok_or_else(|| ParseError::new(file, 0, "empty file: expected the counts `NM`"))?;
    let (n, m) = counts(head).ok_or_else(|| {
        ParseError::new(file, hl, format!("expected the counts `NM` (one digit each) or `N,M`, found `{head}`"))
    })?;
    let mut tasks = Vec::with_capacity(n);
    for id in 0..n {
        let (line, tok) =
            it.next().ok_or_else(|| ParseError::new(file, 0, format!("expected {n} operations, found {id}")))?;
        let err = |msg: String| ParseError::new(file, line, format!("operation `{tok}`: {msg}"));
        let digits = tok.chars().take_while(char::is_ascii_digit).count();
        let got: usize = tok[..digits].parse().map_err(|_| err("expected `<id><name><time>`".into()))?;
        if got != id {
            return Err(err(format!("expected id {id}, found {got}")));
        }
        let rest = &tok[digits..];
        // The name is the longest prefix ending in a letter or `_`: the time is the trailing number.
        let time_at = rest.rfind(|c: char| !(c.is_ascii_digit() || c == '.')).map(|p| p + 1).unwrap_or(0);
        let (name, time) = rest.split_at(time_at);
        if name.is_empty() || !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
            return Err(err("expected a name starting with a letter after the id".into()));
        }
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(err(format!("name `{name}` may hold only letters, digits and `_`")));
        }
        let cost: f64 = time.parse().map_err(|_| err(format!("expected a time after the name, found `{time}`")))?;
        tasks.push(Task { name: name.to_string(), cost, memory: 0.0 });
    }
    let mut edges = Vec::with_capacity(m);
    for k in 0..m {
        let (line, tok) =
            it.next().ok_or_else(|| ParseError::new(file, 0, format!("expected {m} edges, found {k}")))?;
        let edge = edge(tok, n).map_err(|msg| ParseError::new(file, line, format!("edge `{tok}`: {msg}")))?;
        edges.push(edge);
    }
    if let Some((line, tok)) = it.next() {
        return Err(ParseError::new(
            file,
            line,
            format!("unexpected token `{tok}` after {n} operations and {m} edges"),
        ));
    }
    Dag::new(tasks, edges).map_err(|e| ParseError::new(file, 0, e.to_string()))
}

fn counts(head: &str) -> Option<(usize, usize)> {
    let parts: Vec<&str> = head.split(|c: char| c == ',' || c.is_whitespace()).filter(|s| !s.is_empty()).collect();
    match parts.as_slice() {
        [both] if both.len() == 2 && both.chars().all(|c| c.is_ascii_digit()) => {
            Some((both[..1].parse().ok()?, both[1..].parse().ok()?))
        }
        [n, m] => Some((n.parse().ok()?, m.parse().ok()?)),
        _ => None,
    }
}

fn edge(tok: &str, n: usize) -> Result<Edge, String> {
    let (from, to, size, data) = if tok.contains(',') {
        let cols: Vec<&str> = tok.split(',').map(str::trim).collect();
        if !(3..=4).contains(&cols.len()) {
            return Err("expected `from,to,size[,data]`".into());
        }
        let idx = |s: &str| s.parse::<usize>().map_err(|_| format!("`{s}` is not an operation index"));
        (idx(cols[0])?, idx(cols[1])?, cols[2], cols.get(3).copied().unwrap_or(""))
    } else {
        let b = tok.as_bytes();
        if b.len() < 3 || !b[..3].iter().all(u8::is_ascii_digit) {
            return Err("expected `<from><to><size><data>` with one digit per operation index".into());
        }
        let size_end = 2 + tok[2..].find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(tok.len() - 2);
        ((b[0] - b'0') as usize, (b[1] - b'0') as usize, &tok[2..size_end], &tok[size_end..])
    };
    if from >= n || to >= n {
        return Err(format!("operation index out of range (there are {n} operations)"));
    }
    let transfer: f64 = size.parse().map_err(|_| format!("`{size}` is not a size"))?;
    Ok(Edge { from, to, transfer, data: data.to_string() })
}
