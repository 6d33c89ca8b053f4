//! Time limits given in seconds (a command-line flag, [`crate::ilp::Options`]),
//! checked and turned into deadlines: a number of seconds >= 0; `inf` or one
//! too large for a deadline means no limit; NaN and negative numbers are
//! errors.

use std::time::{Duration, Instant};

/// Parses a time limit in seconds (`10`, `0.5`, `inf`, `1e300`), as a
/// command-line value parser: the error names the value and what is expected.
pub fn parse_seconds(text: &str) -> Result<f64, String> {
    let secs: f64 = text.trim().parse().map_err(|_| format!("`{text}` is not a number of seconds"))?;
    check(secs)?;
    Ok(secs)
}

/// A time limit must be a number of seconds >= 0 (`inf` allowed).
pub fn check(secs: f64) -> Result<(), String> {
    if secs.is_nan() || secs < 0.0 {
        return Err(format!("a time limit must be a number of seconds >= 0 (or inf), got {secs}"));
    }
    Ok(())
}

/// The limit as a duration; `None` (no limit) for `inf` and for limits past
/// what a [`Duration`] can hold.
pub fn duration(secs: f64) -> Result<Option<Duration>, String> {
    check(secs)?;
    Ok(Duration::try_from_secs_f64(secs).ok())
}

/// The deadline `secs` after `start`; `None` (no limit) for `inf` and for
/// limits past what an [`Instant`] can hold.
pub fn after(start: Instant, secs: f64) -> Result<Option<Instant>, String> {
    Ok(duration(secs)?.and_then(|d| start.checked_add(d)))
}

/// Seconds left until `deadline` (infinite without one), at least `floor`.
pub fn seconds_left(deadline: Option<Instant>, floor: f64) -> f64 {
    match deadline {
        Some(d) => d.saturating_duration_since(Instant::now()).as_secs_f64().max(floor),
        None => f64::INFINITY,
    }
}

/// Whether `needed` still fits before `deadline`.
pub fn fits(deadline: Option<Instant>, needed: Duration) -> bool {
    deadline.is_none_or(|d| Instant::now() + needed < d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_limits_mean_no_deadline() {
        let t0 = Instant::now();
        for secs in [f64::INFINITY, 1e20, 1e300] {
            assert_eq!(after(t0, secs), Ok(None), "{secs}");
            assert_eq!(seconds_left(after(t0, secs).unwrap(), 0.01), f64::INFINITY);
        }
        assert_eq!(after(t0, 2.0), Ok(Some(t0 + Duration::from_secs(2))));
        assert_eq!(after(t0, 0.0), Ok(Some(t0)));
        assert_eq!(duration(1e300), Ok(None));
        assert_eq!(duration(0.5), Ok(Some(Duration::from_millis(500))));
    }

    #[test]
    fn nan_and_negative_limits_are_errors_naming_the_value() {
        let t0 = Instant::now();
        let e = after(t0, f64::NAN).unwrap_err();
        assert!(e.contains("NaN") && e.contains(">= 0"), "{e}");
        assert!(after(t0, -1.0).unwrap_err().contains("-1"));
        assert!(parse_seconds("nan").unwrap_err().contains("NaN"));
        assert!(parse_seconds("ten").unwrap_err().contains("`ten`"));
        assert_eq!(parse_seconds("inf"), Ok(f64::INFINITY));
        assert_eq!(parse_seconds("1e300"), Ok(1e300));
        assert_eq!(parse_seconds(" 2.5"), Ok(2.5));
    }
}
