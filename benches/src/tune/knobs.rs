//! What `baton tune` may change in a pipeline file: each knob is a key of the
//! file (`scheduler.compute_budget`, `nodes.deep1.weight`, ...) with the values
//! it may take, the shipped value among them. A candidate is one choice per
//! knob; applying it to the file's TOML table sets those keys (or removes them,
//! for "absent") and leaves every other key as it was.

use std::path::Path;

use baton::BatchingPolicy;
use toml::{Table, Value};

/// One key of the pipeline file and the values the search may give it.
#[derive(Clone, Debug, PartialEq)]
pub struct Knob {
    /// The key's path in the file, e.g. `["nodes", "deep1", "weight"]`.
    pub path: Vec<String>,
    /// The values, in order; `None` is the key left out (the runtime's default).
    pub choices: Vec<Option<Value>>,
    /// The shipped file's choice.
    pub shipped: usize,
}

impl Knob {
    /// The key as the file writes it: `nodes.deep1.weight`.
    pub fn name(&self) -> String {
        self.path.join(".")
    }

    /// Choice `i` as text: the value, or `absent`.
    pub fn show(&self, i: usize) -> String {
        match &self.choices[i] {
            Some(v) => v.to_string(),
            None => "absent".into(),
        }
    }
}

/// The key at `path` in `table`, if present.
pub fn get<'t>(table: &'t Table, path: &[String]) -> Option<&'t Value> {
    let (last, parents) = path.split_last()?;
    let mut t = table;
    for p in parents {
        t = t.get(p)?.as_table()?;
    }
    t.get(last)
}

/// Sets (or, with `None`, removes) the key at `path`, creating parent tables as needed.
pub fn set(table: &mut Table, path: &[String], value: Option<&Value>) {
    let (last, parents) = path.split_last().expect("a knob has a key");
    let mut t = table;
    for p in parents {
        t = t.entry(p.clone()).or_insert_with(|| Value::Table(Table::new())).as_table_mut().expect("a table");
    }
    match value {
        Some(v) => {
            t.insert(last.clone(), v.clone());
        }
        None => {
            t.remove(last);
        }
    }
}

/// `table` with candidate `choice` (one index per knob) applied.
pub fn apply(table: &Table, knobs: &[Knob], choice: &[usize]) -> Table {
    let mut out = table.clone();
    for (k, &c) in knobs.iter().zip(choice) {
        set(&mut out, &k.path, k.choices[c].as_ref());
    }
    out
}

/// The knob at `path` with `values`, the shipped value put among them if missing.
fn knob(table: &Table, path: &[&str], values: Vec<Option<Value>>) -> Knob {
    let path: Vec<String> = path.iter().map(|s| s.to_string()).collect();
    let current = get(table, &path).cloned();
    let mut choices = values;
    let shipped = match choices.iter().position(|c| *c == current) {
        Some(i) => i,
        None => {
            choices.push(current);
            choices.len() - 1
        }
    };
    Knob { path, choices, shipped }
}

fn floats(v: &[f64]) -> Vec<Option<Value>> {
    v.iter().map(|&x| Some(Value::Float(x))).collect()
}

fn ints(v: &[i64]) -> Vec<Option<Value>> {
    v.iter().map(|&x| Some(Value::Integer(x))).collect()
}

/// `knobs` without those `keep` names: each pattern is a key as the file writes it
/// (`scheduler.work_conserving`), where `*` stands for one whole part (`nodes.*.workers`).
/// Those keys keep the shipped file's values. A pattern that names no knob is an error.
pub fn keep(knobs: Vec<Knob>, keep: &[String]) -> Result<Vec<Knob>, String> {
    let matches = |pattern: &str, knob: &Knob| {
        let parts: Vec<&str> = pattern.split('.').collect();
        parts.len() == knob.path.len() && parts.iter().zip(&knob.path).all(|(p, k)| *p == "*" || p == k)
    };
    if let Some(unknown) = keep.iter().find(|p| !knobs.iter().any(|k| matches(p, k))) {
        let names: Vec<String> = knobs.iter().map(Knob::name).collect();
        return Err(format!("--keep {unknown}: no knob of the search is named so (knobs: {})", names.join(", ")));
    }
    Ok(knobs.into_iter().filter(|k| !keep.iter().any(|p| matches(p, k))).collect())
}

fn bools() -> Vec<Option<Value>> {
    vec![Some(Value::Boolean(false)), Some(Value::Boolean(true))]
}

/// What the search may change, from the file's `table` (as it stands), its
/// policy, the request `rows`, the machine's `cores`, and per node the largest
/// batch the profile measured (`max_profiled`, by node name): the batch knobs
/// stay inside the profile, so every candidate can be simulated.
pub fn knobs(
    table: &Table,
    policy: BatchingPolicy,
    rows: usize,
    cores: f64,
    max_profiled: &dyn Fn(&str) -> usize,
) -> Vec<Knob> {
    let mut out = scheduler_knobs(table, policy, cores);
    let nodes: Vec<(String, Table)> = table
        .get("nodes")
        .and_then(Value::as_table)
        .map(|t| t.iter().filter_map(|(k, v)| Some((k.clone(), v.as_table()?.clone()))).collect())
        .unwrap_or_default();
    for (name, node) in &nodes {
        out.extend(node_knobs(table, name, node, policy, rows, cores, max_profiled(name)));
    }
    out
}

fn scheduler_knobs(table: &Table, policy: BatchingPolicy, cores: f64) -> Vec<Knob> {
    let mut out = vec![knob(table, &["scheduler", "tick_us"], ints(&[100, 250, 500, 1000, 2000]))];
    if policy == BatchingPolicy::Dynamic {
        let delays = ints(&[0, 100, 250, 500, 1000, 2000, 5000]);
        out.push(knob(table, &["scheduler", "max_queue_delay_us"], delays));
    }
    if policy != BatchingPolicy::Collaborative {
        return out;
    }
    let budgets: Vec<f64> = [0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0].iter().map(|f| f * cores).collect();
    let absent_or = |key: &str, values: &[i64]| {
        let mut v = vec![None];
        v.extend(ints(values));
        knob(table, &["scheduler", key], v)
    };
    let brief = absent_or("brief_batch_us", &[20, 50, 100, 200, 500]);
    let hold = absent_or("max_hold_us", &[500, 1000, 2000, 5000, 10000]);
    out.extend([
        knob(table, &["scheduler", "compute_budget"], floats(&budgets)),
        brief,
        hold,
        knob(table, &["scheduler", "work_conserving"], bools()),
        knob(table, &["scheduler", "decide_on_arrival"], bools()),
        knob(table, &["scheduler", "separate_priority_batches"], bools()),
        knob(table, &["scheduler", "join_boost"], bools()),
        knob(
            table,
            &["scheduler", "on_misfit"],
            vec![Some(Value::String("stop".into())), Some(Value::String("skip".into()))],
        ),
    ]);
    out
}

/// Batch sizes for `max_batch` and `priority_max_batch`: multiples of `rows` doubling up to `most`.
fn batch_choices(rows: usize, most: usize) -> Vec<i64> {
    let mut v = Vec::new();
    let mut b = rows.max(1);
    while b <= most {
        v.push(b as i64);
        b *= 2;
    }
    v
}

fn node_knobs(
    table: &Table,
    name: &str,
    node: &Table,
    policy: BatchingPolicy,
    rows: usize,
    cores: f64,
    max_profiled: usize,
) -> Vec<Knob> {
    fn key<'k>(name: &'k str, k: &'k str) -> [&'k str; 3] {
        ["nodes", name, k]
    }
    let sizes = batch_choices(rows, max_profiled);
    let mut out = vec![knob(table, &key(name, "max_batch"), ints(&sizes))];
    if !node.contains_key("worker_groups") {
        let workers: Vec<i64> = (1..=(cores.ceil() as i64).max(1)).collect();
        out.push(knob(table, &key(name, "workers"), ints(&workers)));
    }
    if node.contains_key("batch_sizes") {
        // The shipped list, or none (batches run at the rows they have).
        out.push(knob(table, &key(name, "batch_sizes"), vec![Some(Value::Array(Vec::new()))]));
    }
    if policy == BatchingPolicy::Collaborative {
        out.push(knob(table, &key(name, "weight"), floats(&[0.25, 0.5, 1.0, 2.0, 4.0, 8.0])));
        out.push(knob(table, &key(name, "cost"), floats(&[0.1, 0.2, 0.5, 1.0, 2.0])));
        let mut caps = vec![None];
        caps.extend(ints(&sizes));
        out.push(knob(table, &key(name, "priority_max_batch"), caps));
    }
    out
}

/// Rewrites the model and state files of `table` (relative to `from`'s folder)
/// so that they resolve from `to`'s folder: absolute paths when the folders differ.
pub fn rebase_paths(table: &mut Table, from: &Path, to: &Path) {
    let base = |p: &Path| p.parent().map(Path::to_path_buf).unwrap_or_default();
    let (src, dst) = (base(from), base(to));
    let same = match (src.canonicalize(), dst.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => src == dst,
    };
    if same {
        return;
    }
    let Some(nodes) = table.get_mut("nodes").and_then(Value::as_table_mut) else { return };
    let absolute = |v: &mut Value| {
        if let Some(s) = v.as_str().filter(|s| Path::new(s).is_relative()) {
            let joined = src.join(s);
            *v = Value::String(joined.canonicalize().unwrap_or(joined).display().to_string());
        }
    };
    for (_, node) in nodes.iter_mut() {
        let Some(node) = node.as_table_mut() else { continue };
        let lists = [("stages", "model"), ("state", "initial")];
        for (list, key) in lists {
            let Some(items) = node.get_mut(list).and_then(Value::as_array_mut) else { continue };
            for item in items.iter_mut().filter_map(Value::as_table_mut) {
                if let Some(v) = item.get_mut(key) {
                    absolute(v);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_paths_become_absolute_only_when_the_file_moves_to_another_folder() {
        let scratch = baton_scratch::Scratch::new("tune-rebase");
        let dir: &std::path::Path = &scratch;
        std::fs::create_dir_all(dir.join("out")).unwrap();
        let text = "[nodes.a]\nstages = [{ model = \"m.onnx\" }, { model = \"/abs/n.onnx\" }]\n\
                    state = [{ input = \"s\", output = \"t\", initial = \"s0.npy\" }]\n";
        let original: Table = text.parse().unwrap();
        let mut same = original.clone();
        rebase_paths(&mut same, &dir.join("p.toml"), &dir.join("tuned.toml"));
        assert_eq!(same, original);
        let mut moved = original.clone();
        rebase_paths(&mut moved, &dir.join("p.toml"), &dir.join("out/tuned.toml"));
        let path = |keys: &[&str], i: usize| {
            let node = moved["nodes"]["a"].as_table().unwrap();
            node[keys[0]].as_array().unwrap()[i][keys[1]].as_str().unwrap().to_string()
        };
        let base = dir.canonicalize().unwrap();
        assert_eq!(path(&["stages", "model"], 0), base.join("m.onnx").display().to_string());
        assert_eq!(path(&["stages", "model"], 1), "/abs/n.onnx");
        assert_eq!(path(&["state", "initial"], 0), base.join("s0.npy").display().to_string());
    }

    #[test]
    fn a_shipped_value_outside_the_choices_is_added_and_chosen_first() {
        let table: Table = "[scheduler]\ntick_us = 333\n".parse().unwrap();
        let k = knob(&table, &["scheduler", "tick_us"], ints(&[100, 500]));
        assert_eq!(k.choices[k.shipped], Some(Value::Integer(333)));
        let absent = knob(&table, &["scheduler", "max_hold_us"], ints(&[100]));
        assert_eq!(absent.choices[absent.shipped], None);
        assert_eq!(apply(&table, std::slice::from_ref(&absent), &[absent.shipped]), table);
    }

    #[test]
    fn kept_keys_leave_the_search_and_an_unknown_one_is_refused_naming_it() {
        let table: Table =
            "[scheduler]\ntick_us = 500\n[nodes.a]\nworkers = 1\n[nodes.b]\nworkers = 1\n".parse().unwrap();
        let all = vec![
            knob(&table, &["scheduler", "tick_us"], ints(&[100, 500])),
            knob(&table, &["nodes", "a", "workers"], ints(&[1, 2])),
            knob(&table, &["nodes", "b", "workers"], ints(&[1, 2])),
        ];
        let names = |k: &[Knob]| k.iter().map(Knob::name).collect::<Vec<_>>();
        assert_eq!(names(&keep(all.clone(), &["nodes.*.workers".into()]).unwrap()), ["scheduler.tick_us"]);
        assert_eq!(names(&keep(all.clone(), &["scheduler.tick_us".into()]).unwrap()).len(), 2);
        let e = keep(all, &["scheduler.tick".into()]).unwrap_err();
        assert!(e.contains("--keep scheduler.tick") && e.contains("scheduler.tick_us"), "{e}");
    }
}
