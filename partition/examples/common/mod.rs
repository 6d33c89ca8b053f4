//! Command-line helpers shared by the partitioning benchmarks.

// Each example compiles its own copy; not every one uses every helper.
#![allow(dead_code)]

/// The value after `name` in `args`, parsed, or `default` when absent.
pub fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T
where
    T::Err: std::fmt::Debug,
{
    match args.iter().position(|a| a == name) {
        Some(i) => args.get(i + 1).unwrap_or_else(|| panic!("{name} needs a value")).parse().expect(name),
        None => default,
    }
}

/// The fastest of three runs (the results are deterministic; the machine is shared).
pub fn fastest(mut run: impl FnMut() -> baton_partition::multilevel::Outcome) -> baton_partition::multilevel::Outcome {
    (0..3).map(|_| run()).min_by(|a, b| a.seconds.total_cmp(&b.seconds)).expect("three runs")
}

/// The 1, 5 and 15 minute load averages (Linux), or `?`.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map_or("?".into(), |s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
}

/// When `args` ask for help (`--help`, `-h`): prints the example's own
/// documentation, the leading `//!` lines of `source` (its file, with
/// `include_str!`), and exits.
pub fn exit_on_help(args: &[String], source: &str) {
    if !args.iter().any(|a| a == "--help" || a == "-h") {
        return;
    }
    for line in source.lines().take_while(|l| l.starts_with("//!")) {
        let text = line.trim_start_matches("//!");
        println!("{}", text.strip_prefix(' ').unwrap_or(text));
    }
    std::process::exit(0);
}
