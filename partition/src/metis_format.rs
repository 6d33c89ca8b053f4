//! Reader and writer for the METIS/Chaco graph file format.
//!
//! Header `n m [fmt [ncon]]`, then one line per vertex (1-based neighbour ids),
//! `%` lines are comments. `fmt` is up to three digits: vertex sizes, vertex
//! weights, edge weights (e.g. `011` = vertex and edge weights). With several
//! constraints (`ncon`), the first vertex weight is the load. The graph is
//! undirected; its flow order is the vertex order, so a relation runs from the
//! lower id to the higher. Every error names the file, the line and the problem.

use std::fmt::Write as _;
use std::path::Path;

use crate::graph::{Graph, GraphBuilder};

/// A malformed graph file.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}: {msg}")]
pub struct FormatError {
    pub file: String,
    pub line: usize,
    pub msg: String,
}

pub fn read_file(path: &Path) -> Result<Graph, FormatError> {
    let text = std::fs::read_to_string(path).map_err(|e| FormatError {
        file: path.display().to_string(),
        line: 0,
        msg: e.to_string(),
    })?;
    parse(&text, &path.display().to_string())
}

/// Parses METIS text; `file` is only used in error messages.
pub fn parse(text: &str, file: &str) -> Result<Graph, FormatError> {
    let err = |line: usize, msg: String| FormatError { file: file.to_string(), line, msg };
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l)).filter(|(_, l)| !l.trim_start().starts_with('%'));
    let (hline, header) = lines
        .by_ref()
        .find(|(_, l)| !l.trim().is_empty())
        .ok_or_else(|| err(1, "empty file: expected a header `n m [fmt [ncon]]`".into()))?;
    let nums = |line: usize, s: &str| -> Result<Vec<i64>, FormatError> {
        s.split_whitespace()
            .map(|t| t.parse::<i64>().map_err(|_| err(line, format!("`{t}` is not an integer"))))
            .collect()
    };
    let h = nums(hline, header)?;
    if h.len() < 2 || h.len() > 4 {
        return Err(err(hline, format!("header has {} fields, expected `n m [fmt [ncon]]`", h.len())));
    }
    let (n, m) = (h[0], h[1]);
    if n < 0 || m < 0 {
        return Err(err(hline, "negative vertex or edge count".into()));
    }
    let fmt = h.get(2).copied().unwrap_or(0);
    if !(0..=111).contains(&fmt) || fmt.to_string().chars().any(|c| c > '1') {
        return Err(err(hline, format!("fmt `{fmt}` is not made of three 0/1 digits")));
    }
    let (has_size, has_vw, has_ew) = (fmt / 100 == 1, (fmt / 10) % 10 == 1, fmt % 10 == 1);
    let ncon = h.get(3).copied().unwrap_or(1);
    if ncon < 1 {
        return Err(err(hline, format!("ncon must be at least 1, got {ncon}")));
    }
    let ncon = if has_vw { ncon as usize } else { 0 };
    let mut b = GraphBuilder::new();
    b.index_order = true;
    let mut entries = 0i64;
    let mut last_line = hline;
    for v in 0..n {
        let (ln, line) = lines
            .next()
            .ok_or_else(|| err(last_line + 1, format!("file ends after {v} vertex lines, header says {n} vertices")))?;
        last_line = ln;
        let vals = nums(ln, line)?;
        let fixed = has_size as usize + ncon;
        if vals.len() < fixed {
            return Err(err(ln, format!("vertex {} line has {} numbers, needs at least {fixed}", v + 1, vals.len())));
        }
        let weight = if has_vw { vals[has_size as usize] } else { 1 };
        if weight < 0 {
            return Err(err(ln, format!("vertex {} has negative weight {weight}", v + 1)));
        }
        // Named by their 1-based METIS ids.
        b.add_vertex((v + 1).to_string(), weight);
        let rest = &vals[fixed..];
        let step = if has_ew { 2 } else { 1 };
        if rest.len() % step != 0 {
            return Err(err(ln, format!("vertex {}: neighbour without an edge weight", v + 1)));
        }
        for pair in rest.chunks(step) {
            let u = pair[0];
            if u < 1 || u > n {
                return Err(err(ln, format!("neighbour {u} out of range 1..={n}")));
            }
            if u == v + 1 {
                return Err(err(ln, format!("vertex {} lists itself as a neighbour", v + 1)));
            }
            let w = if has_ew { pair[1] } else { 1 };
            if w <= 0 {
                return Err(err(ln, format!("edge {}-{u} has non-positive weight {w}", v + 1)));
            }
            entries += 1;
            if u > v + 1 {
                b.add_edge(v as u32, (u - 1) as u32, w, 0);
            }
        }
    }
    if let Some((ln, extra)) = lines.find(|(_, l)| !l.trim().is_empty()) {
        return Err(err(ln, format!("unexpected line after {n} vertices: `{}`", extra.trim())));
    }
    if entries != 2 * m {
        return Err(err(
            hline,
            format!("header says {m} edges, the lists hold {entries} entries (expected {})", 2 * m),
        ));
    }
    let g = b.build();
    if g.m() as i64 != m {
        return Err(err(hline, format!("adjacency is not symmetric: {} distinct edges, header says {m}", g.m())));
    }
    Ok(g)
}

/// Writes `g` in METIS format with vertex and edge weights (`fmt 011`).
pub fn write(g: &Graph) -> String {
    let mut s = format!("{} {} 011\n", g.n(), g.m());
    for v in 0..g.n() as u32 {
        let _ = write!(s, "{}", g.node_w[v as usize]);
        for i in g.range(v) {
            let _ = write!(s, " {} {}", g.adj[i] + 1, g.ew[i]);
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const SQUARE: &str = "% a square with a diagonal\n4 5 011\n1 2 3 4 1 3 2\n2 1 3 3 1\n3 2 1 4 2 1 2\n1 3 2 1 1\n";

    #[test]
    fn reads_weights_and_round_trips() {
        let g = parse(SQUARE, "sq.graph").unwrap();
        assert_eq!((g.n(), g.m()), (4, 5));
        assert_eq!(g.node_w, vec![1, 2, 3, 1]);
        let rel: Vec<_> = g.relations().map(|r| (r.0, r.1, r.2)).collect();
        assert_eq!(rel, vec![(0, 1, 3), (0, 2, 2), (0, 3, 1), (1, 2, 1), (2, 3, 2)]);
        let again = parse(&write(&g), "again").unwrap();
        assert_eq!(again.relations().collect::<Vec<_>>(), g.relations().collect::<Vec<_>>());
    }

    #[test]
    fn plain_format_and_isolated_vertices() {
        let g = parse("3 1\n2\n1\n\n", "p").unwrap();
        assert_eq!((g.n(), g.m()), (3, 1));
    }

    #[test]
    fn errors_name_file_line_and_problem() {
        let e = parse("3 2\n2\n1 4\n2\n", "bad.graph").unwrap_err().to_string();
        assert_eq!(e, "bad.graph:3: neighbour 4 out of range 1..=3");
        let e = parse("3 2\n2\n1 3\n", "short.graph").unwrap_err().to_string();
        assert!(e.starts_with("short.graph:4: file ends after 2 vertex lines"), "{e}");
        let e = parse("2 1\n2\nx\n", "nan.graph").unwrap_err().to_string();
        assert_eq!(e, "nan.graph:3: `x` is not an integer");
        let e = parse("3 2\n2\n1\n\n", "count.graph").unwrap_err().to_string();
        assert!(e.starts_with("count.graph:1: header says 2 edges"), "{e}");
        let e = parse("2 1 011\n1 2\n1 1 1\n", "ew.graph").unwrap_err().to_string();
        assert_eq!(e, "ew.graph:2: vertex 1: neighbour without an edge weight");
    }
}
