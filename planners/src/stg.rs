//! The Standard Task Graph (STG) format (Tobita & Kasahara) and its CSV files
//! of optimal schedule lengths.
//!
//! An STG file holds `n` on its first line, then `n + 2` lines
//! `id time num_preds pred...`; task 0 and task `n + 1` are dummy entry and exit
//! tasks of time 0, dropped here (real task `k` becomes index `k - 1`, named
//! `T{k}`). Lines from `#` on are comments. Edges carry no transfer time.

use std::collections::BTreeMap;
use std::path::Path;

use crate::dag::{Dag, Edge, Task};
use crate::parse::{read, ParseError};

/// Parses an STG file.
pub fn load(file: &Path) -> Result<Dag, ParseError> {
    parse(&read(file)?, file)
}

/// Parses STG text; `file` only names the source in errors.
pub fn parse(text: &str, file: &Path) -> Result<Dag, ParseError> {
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(k, l)| (k + 1, l.split('#').next().unwrap_or("").trim()))
        .filter(|(_, l)| !l.is_empty());
    let (first, head) = lines.next().ok_or_else(|| ParseError::new(file, 0, "empty file: expected the task count"))?;
    let n: usize =
        head.parse().map_err(|_| ParseError::new(file, first, format!("expected the task count, found `{head}`")))?;
    let mut tasks = Vec::with_capacity(n);
    let mut edges = Vec::new();
    for want in 0..n + 2 {
        let (line, body) = lines
            .next()
            .ok_or_else(|| ParseError::new(file, 0, format!("expected {} task lines, found {want}", n + 2)))?;
        let nums: Vec<u64> = body
            .split_whitespace()
            .map(|w| w.parse().map_err(|_| ParseError::new(file, line, format!("`{w}` is not a non-negative integer"))))
            .collect::<Result<_, _>>()?;
        if nums.len() < 3 {
            return Err(ParseError::new(file, line, "expected `id time num_preds pred...`"));
        }
        let (id, time, np) = (nums[0] as usize, nums[1], nums[2] as usize);
        if id != want {
            return Err(ParseError::new(file, line, format!("expected task id {want}, found {id}")));
        }
        if nums.len() != 3 + np {
            return Err(ParseError::new(
                file,
                line,
                format!("task {id} declares {np} predecessors but lists {}", nums.len() - 3),
            ));
        }
        for &p in &nums[3..] {
            if p as usize >= id {
                return Err(ParseError::new(
                    file,
                    line,
                    format!("predecessor {p} of task {id} is not an earlier task"),
                ));
            }
        }
        let dummy = id == 0 || id == n + 1;
        if dummy {
            if time != 0 {
                return Err(ParseError::new(file, line, format!("dummy task {id} must have time 0")));
            }
            continue;
        }
        tasks.push(Task { name: format!("T{id}"), cost: time as f64, memory: 0.0 });
        for &p in &nums[3..] {
            if p != 0 {
                edges.push(Edge { from: p as usize - 1, to: id - 1, transfer: 0.0, data: String::new() });
            }
        }
    }
    Dag::new(tasks, edges).map_err(|e| ParseError::new(file, 0, e.to_string()))
}

/// One row of an STG optimum CSV.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Optimum {
    /// The proven optimum, or the best known lower bound when not proven.
    pub lower_bound: f64,
    /// The best known schedule length (equal to `lower_bound` when proven).
    pub best_known: f64,
}

impl Optimum {
    pub fn proven(&self) -> bool {
        self.lower_bound == self.best_known
    }
}

/// Parses `CaseN_M_OPT.csv`: `file,processors,optimal_length` or
/// `file,processors,lower_bound,best_known_length`. Keys are the file
/// column (e.g. `50/rand0000.stg`).
pub fn load_optima(file: &Path) -> Result<BTreeMap<String, Optimum>, ParseError> {
    let mut out = BTreeMap::new();
    for (k, line) in read(file)?.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let cols: Vec<&str> = line.split(',').map(str::trim).collect();
        let num =
            |s: &str| s.parse::<f64>().map_err(|_| ParseError::new(file, k + 1, format!("`{s}` is not a number")));
        let opt = match cols.len() {
            3 => {
                let v = num(cols[2])?;
                Optimum { lower_bound: v, best_known: v }
            }
            4 => Optimum { lower_bound: num(cols[2])?, best_known: num(cols[3])? },
            _ => return Err(ParseError::new(file, k + 1, "expected `file,processors,optimum[,best_known]`")),
        };
        out.insert(cols[0].to_string(), opt);
    }
    Ok(out)
}
