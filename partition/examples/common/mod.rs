//! Command-line helpers shared by the partitioning benchmarks.

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
