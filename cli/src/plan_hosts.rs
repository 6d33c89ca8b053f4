//! `baton plan --method partition --pipeline P --hosts a=ADDR,b=ADDR --out DIR`:
//! a pipeline's nodes placed on hosts become one pipeline file per host, the
//! cut edges crossing the network as remote stages (docs/remote.md).
//!
//! The first host is the *home* host: it takes the pipeline's requests and
//! keeps its inputs and outputs. Each other host's nodes form its *segment*,
//! which must be connected and closed under paths (no path leaves it and
//! comes back), so that one call carries a request through it; the segment is
//! one pipeline served on its host, and on the home host one remote node
//! (`on_HOST`) stands in for it: it takes the tensors entering the segment and
//! returns those leaving it. A tensor crossing from one far host to another
//! passes through the home host.
//!
//! Names: a tensor crossing the cut as edge `u.t` is the segment's input (or
//! output) `u__t`; a pipeline input or output keeps its name. Model and state
//! files become absolute paths, so every host must see them at the same place.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use toml::{Table, Value};

/// A host: its name and the address its `baton serve` answers gRPC on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Host {
    pub name: String,
    pub grpc: String,
}

/// Parses `a=10.0.0.1:8001,b=10.0.0.2:8001`.
pub fn parse_hosts(text: &str) -> Result<Vec<Host>, String> {
    let mut hosts: Vec<Host> = Vec::new();
    for item in text.split(',').filter(|s| !s.is_empty()) {
        let (name, addr) = item
            .split_once('=')
            .ok_or_else(|| format!("--hosts: `{item}` should be NAME=HOST:PORT (the host's gRPC address)"))?;
        let addr = addr.strip_prefix("grpc://").unwrap_or(addr);
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            return Err(format!("--hosts: host name `{name}` should be letters, digits, `_` or `-`"));
        }
        baton_kserve_client::ServerUrl::parse(&format!("grpc://{addr}")).map_err(|e| format!("--hosts: {e}"))?;
        if hosts.iter().any(|h| h.name == name) {
            return Err(format!("--hosts: host `{name}` is named twice"));
        }
        hosts.push(Host { name: name.to_string(), grpc: addr.to_string() });
    }
    if hosts.len() < 2 {
        return Err("--hosts: name at least two hosts".into());
    }
    Ok(hosts)
}

/// Node → host index from a partition of the pipeline's graph: the part
/// holding the node the first pipeline input feeds goes to the home host (0),
/// the other parts to the other hosts in part order.
pub fn host_of_parts(
    source: &Path,
    g: &baton_partition::graph::Graph,
    part: &[u32],
) -> Result<BTreeMap<String, usize>, String> {
    let text = std::fs::read_to_string(source).map_err(|e| format!("{}: {e}", source.display()))?;
    let doc: Table = text.parse().map_err(|e| format!("{}: bad TOML: {e}", source.display()))?;
    let entry = doc
        .get("inputs")
        .and_then(Value::as_table)
        .and_then(|inputs| inputs.values().next())
        .and_then(|input| strings(input.get("to")).into_iter().next())
        .ok_or_else(|| format!("{}: the pipeline has no inputs", source.display()))?;
    let name_of = |v: usize| g.name(v as u32);
    let home = (0..g.n())
        .find(|&v| name_of(v) == node_of(&entry))
        .map(|v| part[v])
        .ok_or_else(|| format!("input node `{entry}` is not in the graph"))?;
    let mut others: Vec<u32> = part.iter().copied().filter(|&p| p != home).collect();
    others.sort_unstable();
    others.dedup();
    Ok((0..g.n())
        .map(|v| {
            let host = if part[v] == home { 0 } else { 1 + others.iter().position(|&p| p == part[v]).expect("listed") };
            (name_of(v), host)
        })
        .collect())
}

/// `a: embed, join; b: branch_a, branch_b`.
pub fn describe(host_of: &BTreeMap<String, usize>, hosts: &[Host]) -> String {
    let on = |h: usize| host_of.iter().filter(|(_, &x)| x == h).map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", ");
    hosts.iter().enumerate().map(|(h, host)| format!("{}: {}", host.name, on(h))).collect::<Vec<_>>().join("; ")
}

/// One `from -> to` edge of the pipeline, split into node and tensor.
#[derive(Clone, Debug)]
struct Edge {
    from: (String, String),
    to: (String, String),
}

/// A far host's group of nodes served as one pipeline.
struct Segment {
    host: usize,
    nodes: BTreeSet<String>,
    /// Its pipeline's (and model's) name.
    model: String,
    /// The home host's node that calls it.
    proxy: String,
}

/// Splits the pipeline file `source` by `host_of` (node → host index; host 0 is
/// home) and writes one pipeline per host into `out`. Returns the files written.
pub fn write_split(
    source: &Path,
    hosts: &[Host],
    host_of: &BTreeMap<String, usize>,
    out: &Path,
) -> Result<Vec<PathBuf>, String> {
    let text = std::fs::read_to_string(source).map_err(|e| format!("{}: {e}", source.display()))?;
    let doc: Table = text.parse().map_err(|e| format!("{}: bad TOML: {e}", source.display()))?;
    let base = source.parent().unwrap_or(Path::new(".")).canonicalize().map_err(|e| e.to_string())?;
    let split = Split::new(&doc, &base, hosts, host_of)?;
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut written = Vec::new();
    for (host, file) in split.files()? {
        let path = out.join(format!("{}.toml", hosts[host].name));
        let body = toml::to_string(&file).map_err(|e| e.to_string())?;
        let head = format!(
            "# Host `{}` of pipeline `{}`, written by `baton plan --method partition --hosts`.\n# Serve it with: baton serve {} --grpc {}\n\n",
            hosts[host].name,
            split.name,
            path.display(),
            hosts[host].grpc
        );
        std::fs::write(&path, head + &body).map_err(|e| format!("{}: {e}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

struct Split<'a> {
    doc: &'a Table,
    base: &'a Path,
    hosts: &'a [Host],
    name: String,
    nodes: &'a Table,
    edges: Vec<Edge>,
    host_of: &'a BTreeMap<String, usize>,
    segments: Vec<Segment>,
}

impl<'a> Split<'a> {
    fn new(
        doc: &'a Table,
        base: &'a Path,
        hosts: &'a [Host],
        host_of: &'a BTreeMap<String, usize>,
    ) -> Result<Self, String> {
        let nodes = doc.get("nodes").and_then(Value::as_table).ok_or("the pipeline has no [nodes]")?;
        let name =
            doc.get("pipeline").and_then(|p| p.get("name")).and_then(Value::as_str).unwrap_or("pipeline").to_string();
        let mut edges = Vec::new();
        for e in doc.get("edges").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]) {
            let port = |key: &str| -> Result<(String, String), String> {
                let text = e.get(key).and_then(Value::as_str).ok_or(format!("an [[edges]] entry lacks `{key}`"))?;
                let (n, t) = text.split_once('.').ok_or(format!("edge endpoint `{text}` is not node.tensor"))?;
                Ok((n.to_string(), t.to_string()))
            };
            edges.push(Edge { from: port("from")?, to: port("to")? });
        }
        for node in nodes.keys() {
            if !host_of.contains_key(node) {
                return Err(format!("node `{node}` has no host"));
            }
        }
        let mut split = Split { doc, base, hosts, name, nodes, edges, host_of, segments: Vec::new() };
        split.segments = split.segments()?;
        Ok(split)
    }

    fn host(&self, node: &str) -> usize {
        self.host_of[node]
    }

    /// Each far host's nodes as one segment: they must be connected and
    /// closed under paths (no path leaves the group and comes back), so one
    /// call carries a request through all of them.
    fn segments(&self) -> Result<Vec<Segment>, String> {
        let mut segments = Vec::new();
        for host in 1..self.hosts.len() {
            let mine: BTreeSet<String> = self.nodes.keys().filter(|n| self.host(n) == host).cloned().collect();
            let Some(first) = mine.iter().next().cloned() else { continue };
            let mut reached = BTreeSet::from([first.clone()]);
            let mut frontier = vec![first];
            while let Some(n) = frontier.pop() {
                for e in &self.edges {
                    for (a, b) in [(&e.from.0, &e.to.0), (&e.to.0, &e.from.0)] {
                        if *a == n && mine.contains(b) && reached.insert(b.clone()) {
                            frontier.push(b.clone());
                        }
                    }
                }
            }
            let name = &self.hosts[host].name;
            if reached != mine || !self.closed(&mine) {
                return Err(format!(
                    "host `{name}` gets nodes {} that are not one connected group closed under paths \
                     (one call must carry a request through them); place them differently or use more hosts",
                    mine.iter().cloned().collect::<Vec<_>>().join(", ")
                ));
            }
            segments.push(Segment {
                host,
                nodes: mine,
                model: format!("{}_{name}", self.name),
                proxy: format!("on_{name}"),
            });
        }
        Ok(segments)
    }

    /// No path leaves `group` and re-enters it.
    fn closed(&self, group: &BTreeSet<String>) -> bool {
        // Nodes reachable from the group through nodes outside it.
        let mut seen: BTreeSet<String> = BTreeSet::new();
        let mut frontier: Vec<String> = self
            .edges
            .iter()
            .filter(|e| group.contains(&e.from.0) && !group.contains(&e.to.0))
            .map(|e| e.to.0.clone())
            .collect();
        while let Some(n) = frontier.pop() {
            if !seen.insert(n.clone()) {
                continue;
            }
            for e in self.edges.iter().filter(|e| e.from.0 == n) {
                if group.contains(&e.to.0) {
                    return false;
                }
                frontier.push(e.to.0.clone());
            }
        }
        true
    }

    fn segment_of(&self, node: &str) -> Option<&Segment> {
        self.segments.iter().find(|s| s.nodes.contains(node))
    }

    /// The files: host index → pipeline table (home first).
    fn files(&self) -> Result<Vec<(usize, Table)>, String> {
        let mut files = vec![(0, self.home()?)];
        for s in &self.segments {
            files.push((s.host, self.segment_file(s)?));
        }
        Ok(files)
    }

    /// A node's table with its files made absolute.
    fn node_table(&self, name: &str) -> Result<Table, String> {
        let mut node = self.nodes[name].as_table().ok_or(format!("nodes.{name} is not a table"))?.clone();
        let absolute = |v: &mut Value| {
            if let Value::String(p) = v {
                let joined = self.base.join(&*p);
                *p = joined.canonicalize().unwrap_or(joined).display().to_string();
            }
        };
        for stage in node.get_mut("stages").and_then(Value::as_array_mut).into_iter().flatten() {
            if let Some(t) = stage.as_table_mut() {
                if !t.contains_key("remote") {
                    t.get_mut("model").map(absolute);
                }
            }
        }
        for state in node.get_mut("state").and_then(Value::as_array_mut).into_iter().flatten() {
            state.as_table_mut().and_then(|t| t.get_mut("initial")).map(absolute);
        }
        Ok(node)
    }

    /// Every table but nodes, edges, inputs and outputs, copied (the pipeline renamed).
    fn settings(&self, name: &str) -> Table {
        let mut t = Table::new();
        for (k, v) in self.doc {
            if !["nodes", "edges", "inputs", "outputs"].contains(&k.as_str()) {
                t.insert(k.clone(), v.clone());
            }
        }
        let mut pipeline = t.get("pipeline").and_then(Value::as_table).cloned().unwrap_or_default();
        pipeline.insert("name".into(), name.into());
        t.insert("pipeline".into(), pipeline.into());
        t
    }

    fn pipeline_inputs(&self) -> Table {
        self.doc.get("inputs").and_then(Value::as_table).cloned().unwrap_or_default()
    }

    fn pipeline_outputs(&self) -> Table {
        self.doc.get("outputs").and_then(Value::as_table).cloned().unwrap_or_default()
    }

    fn segment_file(&self, s: &Segment) -> Result<Table, String> {
        let file = self.settings(&s.model);
        let mut nodes = Table::new();
        for n in &s.nodes {
            nodes.insert(n.clone(), self.node_table(n)?.into());
        }
        let mut inputs: BTreeMap<String, (Table, Vec<String>)> = BTreeMap::new();
        for (name, input) in self.pipeline_inputs() {
            let mut input = input.as_table().cloned().unwrap_or_default();
            let to: Vec<String> =
                strings(input.get("to")).into_iter().filter(|p| s.nodes.contains(node_of(p))).collect();
            if !to.is_empty() {
                input.remove("to");
                inputs.insert(name, (input, to));
            }
        }
        let mut outputs = Table::new();
        let mut edges = Vec::new();
        for e in &self.edges {
            let (inside_from, inside_to) = (s.nodes.contains(&e.from.0), s.nodes.contains(&e.to.0));
            match (inside_from, inside_to) {
                (true, true) => {
                    edges.push(edge(&format!("{}.{}", e.from.0, e.from.1), &format!("{}.{}", e.to.0, e.to.1)))
                }
                (false, true) => {
                    let entry = inputs.entry(crossing(&e.from)).or_default();
                    entry.1.push(format!("{}.{}", e.to.0, e.to.1));
                }
                (true, false) => {
                    outputs.insert(
                        crossing(&e.from),
                        table([("from", format!("{}.{}", e.from.0, e.from.1).into())]).into(),
                    );
                }
                (false, false) => {}
            }
        }
        for (name, output) in self.pipeline_outputs() {
            if strings(output.get("from")).first().is_some_and(|p| s.nodes.contains(node_of(p))) {
                outputs.insert(name, output);
            }
        }
        let inputs: Table = inputs
            .into_iter()
            .map(|(name, (mut t, to))| {
                t.insert("to".into(), Value::Array(to.into_iter().map(Value::from).collect()));
                (name, t.into())
            })
            .collect();
        Ok(with_graph(file, inputs, outputs, nodes, edges))
    }

    /// The home host's pipeline: its own nodes, and one remote node per far segment.
    fn home(&self) -> Result<Table, String> {
        let file = self.settings(&self.name);
        let mut nodes = Table::new();
        for n in self.nodes.keys().filter(|n| self.host(n) == 0) {
            nodes.insert(n.clone(), self.node_table(n)?.into());
        }
        for s in &self.segments {
            nodes.insert(s.proxy.clone(), self.proxy_node(s).into());
        }
        // Where a node port is, seen from home: far ports become the proxy's.
        let port = |(node, tensor): &(String, String), far_name: String| match self.segment_of(node) {
            Some(s) => format!("{}.{far_name}", s.proxy),
            None => format!("{node}.{tensor}"),
        };
        let mut inputs = Table::new();
        for (name, input) in self.pipeline_inputs() {
            let mut input = input.as_table().cloned().unwrap_or_default();
            let mut to: Vec<String> = Vec::new();
            for p in strings(input.get("to")) {
                let (n, t) = p.split_once('.').unwrap_or((&p, ""));
                let mapped = port(&(n.to_string(), t.to_string()), name.clone());
                if !to.contains(&mapped) {
                    to.push(mapped);
                }
            }
            input.insert("to".into(), Value::Array(to.into_iter().map(Value::from).collect()));
            inputs.insert(name, input.into());
        }
        let mut outputs = Table::new();
        for (name, output) in self.pipeline_outputs() {
            let from = strings(output.get("from")).into_iter().next().unwrap_or_default();
            let (n, t) = from.split_once('.').unwrap_or((&from, ""));
            outputs.insert(name.clone(), table([("from", port(&(n.to_string(), t.to_string()), name).into())]).into());
        }
        let mut edges: Vec<Value> = Vec::new();
        let mut seen = BTreeSet::new();
        for e in &self.edges {
            let (a, b) = (self.segment_of(&e.from.0).map(|s| &s.proxy), self.segment_of(&e.to.0).map(|s| &s.proxy));
            if a.is_some() && a == b {
                continue; // inside one segment: on its host
            }
            let from = port(&e.from, crossing(&e.from));
            let to = port(&e.to, crossing(&e.from));
            if seen.insert((from.clone(), to.clone())) {
                edges.push(edge(&from, &to));
            }
        }
        Ok(with_graph(file, inputs, outputs, nodes, edges))
    }

    /// The remote node standing in for segment `s` on the home host.
    fn proxy_node(&self, s: &Segment) -> Table {
        let node = |n: &String| self.nodes[n].as_table().cloned().unwrap_or_default();
        let stateful = s.nodes.iter().any(|n| node(n).get("state").is_some());
        // Ragged inputs are padded on the far side only: send their requests one by one.
        let ragged = s.nodes.iter().any(|n| node(n).get("pad").is_some());
        let max_batch = s
            .nodes
            .iter()
            .map(|n| node(n).get("max_batch").and_then(Value::as_integer).unwrap_or(32))
            .min()
            .unwrap_or(32);
        let weight =
            s.nodes.iter().map(|n| node(n).get("weight").and_then(Value::as_float).unwrap_or(1.0)).fold(0.0, f64::max);
        let mut stage = table([
            ("remote", format!("grpc://{}", self.hosts[s.host].grpc).into()),
            ("model", s.model.clone().into()),
        ]);
        if stateful {
            stage.insert("stateful".into(), true.into());
        }
        table([
            ("stages", Value::Array(vec![stage.into()])),
            ("max_batch", Value::Integer(if ragged { 1 } else { max_batch })),
            ("weight", weight.into()),
        ])
    }
}

/// A pipeline file's settings with its graph: inputs, outputs, nodes and edges.
fn with_graph(mut file: Table, inputs: Table, outputs: Table, nodes: Table, edges: Vec<Value>) -> Table {
    file.insert("inputs".into(), inputs.into());
    file.insert("outputs".into(), outputs.into());
    file.insert("nodes".into(), nodes.into());
    if !edges.is_empty() {
        file.insert("edges".into(), Value::Array(edges));
    }
    file
}

/// The name a tensor crossing the cut as edge `node.tensor` has on both sides.
fn crossing((node, tensor): &(String, String)) -> String {
    format!("{node}__{tensor}")
}

fn node_of(port: &str) -> &str {
    port.split('.').next().unwrap_or(port)
}

/// A string or an array of strings, as a list.
fn strings(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).map(str::to_string).collect(),
        _ => Vec::new(),
    }
}

fn table<const N: usize>(pairs: [(&str, Value); N]) -> Table {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

fn edge(from: &str, to: &str) -> Value {
    table([("from", from.into()), ("to", to.into())]).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_parse_with_their_addresses() {
        let h = parse_hosts("a=127.0.0.1:8001,b=grpc://10.0.0.2:9001").unwrap();
        assert_eq!(h[1], Host { name: "b".into(), grpc: "10.0.0.2:9001".into() });
        assert!(parse_hosts("a=127.0.0.1:8001").unwrap_err().contains("at least two"));
        assert!(parse_hosts("a=x,b=127.0.0.1:1").unwrap_err().contains("port"));
        assert!(parse_hosts("a=h:1,a=h:2").unwrap_err().contains("twice"));
    }
}
