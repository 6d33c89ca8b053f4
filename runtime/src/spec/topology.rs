//! Queries over a built pipeline's graph: parents, the nodes a partial request runs, a readable picture, topological order.

use super::{err, NodeSpec, PipelineSpec, Result, Target};

impl PipelineSpec {
    pub fn node_index(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }

    /// The bounded entries: `(pipeline input, node, max_queue)` for each node a pipeline
    /// input feeds directly that has a `max_queue`. A request carrying that input is
    /// refused while the node has `max_queue` tasks waiting.
    pub fn entry_limits(&self) -> Vec<(usize, usize, usize)> {
        let nodes = &self.nodes;
        self.inputs
            .iter()
            .enumerate()
            .flat_map(|(i, input)| {
                input.targets.iter().filter_map(move |t| match *t {
                    Target::Node { node, .. } => nodes[node].max_queue.map(|limit| (i, node, limit)),
                    _ => None,
                })
            })
            .collect()
    }

    /// Parents of each node (nodes that feed it), deduplicated.
    pub fn parents(&self) -> Vec<Vec<usize>> {
        let mut parents = vec![Vec::new(); self.nodes.len()];
        for (from, node) in self.nodes.iter().enumerate() {
            for route in &node.routes {
                for target in &route.targets {
                    if let Target::Node { node: to, .. } = *target {
                        if !parents[to].contains(&from) {
                            parents[to].push(from);
                        }
                    }
                }
            }
        }
        parents
    }

    /// Which nodes run for a request carrying the pipeline inputs marked in
    /// `present`: a node runs when every input slot is fed by a present pipeline
    /// input, a running node, or its own state. In topological order.
    pub fn running_nodes(&self, present: &[bool]) -> Vec<bool> {
        // fed[n][slot]: the slot has a value for this request.
        let mut fed: Vec<Vec<bool>> = self.nodes.iter().map(|n| vec![false; n.inputs.len()]).collect();
        for (n, node) in self.nodes.iter().enumerate() {
            for state in &node.state {
                fed[n][state.slot] = true;
            }
        }
        for (input, &here) in self.inputs.iter().zip(present) {
            for target in &input.targets {
                if let (Target::Node { node, slot }, true) = (*target, here) {
                    fed[node][slot] = true;
                }
            }
        }
        let mut runs = vec![false; self.nodes.len()];
        for &n in &self.topo_order {
            runs[n] = fed[n].iter().all(|&f| f);
            if runs[n] {
                for route in &self.nodes[n].routes {
                    for target in &route.targets {
                        if let Target::Node { node, slot } = *target {
                            fed[node][slot] = true;
                        }
                    }
                }
            }
        }
        runs
    }

    /// A readable picture of the graph, one line per node and route.
    pub fn describe(&self) -> String {
        let mut out = format!("pipeline `{}`: {} nodes\n", self.name, self.nodes.len());
        for input in &self.inputs {
            out += &format!(
                "  input  {} {} {} -> {}\n",
                input.spec.name,
                input.spec.dtype,
                input.spec.shape_string(),
                self.targets(&input.targets)
            );
        }
        for &n in &self.topo_order {
            let node = &self.nodes[n];
            let stages: Vec<String> = node
                .stages
                .iter()
                .map(|s| match &s.request.model {
                    Some(m) => format!("{}:{}", s.engine, m.file_name().unwrap_or_default().to_string_lossy()),
                    None => s.engine.clone(),
                })
                .collect();
            out += &format!(
                "  node   {} [{}] max_batch={} weight={} cost={} workers={}\n",
                node.name,
                stages.join(" -> "),
                node.max_batch,
                node.weight,
                node.cost,
                node.workers
            );
            for route in &node.routes {
                out += &format!("           .{} -> {}\n", route.name, self.targets(&route.targets));
            }
        }
        for output in &self.outputs {
            out += &format!(
                "  output {} {} {} <- {}\n",
                output.spec.name,
                output.spec.dtype,
                output.spec.shape_string(),
                self.nodes[output.node].name
            );
        }
        out
    }

    fn targets(&self, targets: &[Target]) -> String {
        let names: Vec<String> = targets
            .iter()
            .map(|t| match *t {
                Target::Node { node, slot } => {
                    format!("{}.{}", self.nodes[node].name, self.nodes[node].inputs[slot].name)
                }
                Target::Output(i) => format!("output {}", self.outputs[i].spec.name),
                Target::State(_) => "state (write-back)".to_string(),
            })
            .collect();
        names.join(", ")
    }
}

/// Kahn's algorithm; a cycle is an error naming the nodes on it.
pub(super) fn topological_order(nodes: &[NodeSpec]) -> Result<Vec<usize>> {
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    let mut indegree = vec![0usize; nodes.len()];
    for (from, node) in nodes.iter().enumerate() {
        for route in &node.routes {
            for target in &route.targets {
                if let Target::Node { node: to, .. } = *target {
                    if !children[from].contains(&to) {
                        children[from].push(to);
                        indegree[to] += 1;
                    }
                }
            }
        }
    }
    let mut ready: Vec<usize> = (0..nodes.len()).filter(|&n| indegree[n] == 0).collect();
    let mut order = Vec::with_capacity(nodes.len());
    while let Some(n) = ready.pop() {
        order.push(n);
        for &c in &children[n] {
            indegree[c] -= 1;
            if indegree[c] == 0 {
                ready.push(c);
            }
        }
    }
    if order.len() < nodes.len() {
        // Walk from any node left over back along parents that are also left over, until a node
        // repeats. A left-over node always has a left-over parent (that is why it was left over);
        // it need not have a left-over child: it may sit downstream of the cycle.
        let left: Vec<bool> = indegree.iter().map(|&d| d > 0).collect();
        let mut path = vec![(0..nodes.len()).find(|&n| left[n]).expect("a node is left")];
        loop {
            let last = *path.last().expect("non-empty");
            let next = (0..nodes.len())
                .find(|&p| left[p] && children[p].contains(&last))
                .expect("a left-over node has a left-over parent");
            if let Some(start) = path.iter().position(|&n| n == next) {
                let cycle: Vec<&str> =
                    path[start..].iter().chain([&next]).rev().map(|&n| nodes[n].name.as_str()).collect();
                return err("edges", format!("the edges form a cycle: {}", cycle.join(" -> ")));
            }
            path.push(next);
        }
    }
    Ok(order)
}
