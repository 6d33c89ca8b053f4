//! Dropping a profile's far tail: samples above Tukey's fence `q3 + k × (q3 − q1)`
//! of their batch size.
//!
//! A profile taken on a machine shared with other work holds runs the OS took
//! the core away from (on this machine whole scheduler slices: 4 and 8 ms on
//! batches of 3 µs). Whether the runtime meets those stalls at the same rate
//! as the profile did is a question for real runs (docs/simulate.md,
//! "Fidelity"): the option is off unless asked for (`--outlier-fence K`).

/// Removes the samples above `q3 + k × (q3 − q1)` (quartiles by rank); returns how many.
/// Fewer than 4 samples are kept as they are.
pub fn fence(samples: &mut Vec<f64>, k: f64) -> usize {
    if samples.len() < 4 {
        return 0;
    }
    let mut sorted = samples.clone();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let (q1, q3) = (sorted[n / 4], sorted[3 * n / 4]);
    let limit = q3 + k * (q3 - q1);
    let before = samples.len();
    samples.retain(|&s| s <= limit);
    before - samples.len()
}

/// Checks a `--outlier-fence` value: finite and non-negative.
pub fn check(k: Option<f64>) -> Result<(), String> {
    match k {
        Some(k) if !(k.is_finite() && k >= 0.0) => {
            Err(format!("--outlier-fence must be a non-negative number, not {k}"))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_above_the_fence_go_and_the_rest_keep_their_order() {
        // Quartiles by rank of 8 samples: q1 = sorted[2] = 3, q3 = sorted[6] = 7; fence at k = 1: 11.
        let mut s = vec![5.0, 1.0, 2.0, 3.0, 4.0, 6.0, 7.0, 11.0];
        assert_eq!(fence(&mut s, 1.0), 0);
        s.push(4000.0);
        s.push(11.5);
        // Now 10 samples: q1 = sorted[2] = 3, q3 = sorted[7] = 11; fence at k = 1: 19.
        assert_eq!(fence(&mut s, 1.0), 1);
        assert_eq!(s, vec![5.0, 1.0, 2.0, 3.0, 4.0, 6.0, 7.0, 11.0, 11.5]);
        let mut few = vec![1.0, 1000.0];
        assert_eq!(fence(&mut few, 0.0), 0);
    }

    #[test]
    fn a_bad_fence_is_refused_by_name() {
        assert!(check(Some(-1.0)).unwrap_err().contains("--outlier-fence"));
        assert!(check(Some(f64::NAN)).unwrap_err().contains("--outlier-fence"));
        assert!(check(Some(3.0)).is_ok() && check(None).is_ok());
    }
}
