//! Fixed batch sizes: the row counts a node's ONNX stages run at.
//!
//! An engine whose input shape changes pays set-up on the first run of each
//! shape: on a GPU, cuDNN's algorithm search, memory arena growth and kernel
//! selection, tens to hundreds of milliseconds inside the serving path. A
//! node with batch sizes runs only those shapes: a batch of `r` rows is padded
//! with zero rows up to the smallest size `>= r` ([`BatchSizes::padded`]), the
//! padding rows are dropped from the outputs, and every size runs once when a
//! worker starts its engines, so no request meets a first shape.
//!
//! ```toml
//! [nodes.det]
//! stages = [{ model = "det.onnx" }]
//! provider = "cuda"
//! max_batch = 16
//! batch_sizes = [1, 2, 4, 8, 16]   # default on a CUDA node: 1, 2, 3, 4, 6, 8, 12, 16
//! ```
//!
//! Padding adds rows of zeros to a batch, so it is only right where each row's
//! result depends on that row alone. A node that keeps per-stream state
//! (`state`) is refused: its rows are streams whose state the padding rows
//! would not have. A stage whose batch is larger than the largest size (a
//! stage after one that changes rows, say) runs at the rows it has.

use crate::config::{ConfigError, NodeConfig};
use crate::execution::Execution;

/// The sizes a node's ONNX stages run at, ascending; empty: every batch runs at its own rows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BatchSizes(Vec<usize>);

impl BatchSizes {
    /// No fixed sizes.
    pub fn none() -> Self {
        BatchSizes(Vec::new())
    }

    /// Sizes from a list that is ascending, without repeats, each at least 1 (else `None`).
    pub fn new(sizes: Vec<usize>) -> Option<Self> {
        (sizes.first().is_none_or(|&s| s >= 1) && sizes.windows(2).all(|w| w[0] < w[1])).then_some(BatchSizes(sizes))
    }

    /// Powers of two and the sizes halfway between them (1, 2, 3, 4, 6, 8, 12, 16, 24, ...)
    /// below `max_batch`, and `max_batch` itself: a batch is padded by at most a third of
    /// its rows, and a node warms about twice as many sizes as powers of two alone.
    pub fn gpu_default(max_batch: usize) -> Self {
        let mut sizes: Vec<usize> = std::iter::successors(Some(1usize), |s| s.checked_mul(2))
            .take_while(|&s| s < max_batch)
            .flat_map(|s| [s, s + s / 2])
            .filter(|&s| s < max_batch)
            .collect();
        sizes.dedup();
        sizes.push(max_batch.max(1));
        BatchSizes(sizes)
    }

    pub fn sizes(&self) -> &[usize] {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The rows a batch of `rows` runs at: the smallest size `>= rows`, or
    /// `rows` itself when there are no sizes or it is larger than all of them.
    pub fn padded(&self, rows: usize) -> usize {
        self.0.iter().copied().find(|&s| s >= rows).unwrap_or(rows)
    }

    /// The node's sizes from its config, checked (errors at `nodes.NAME.batch_sizes`).
    pub(crate) fn for_node(name: &str, cfg: &NodeConfig, execution: &Execution) -> Result<BatchSizes, ConfigError> {
        let at = format!("nodes.{name}.batch_sizes");
        let Some(declared) = &cfg.batch_sizes else {
            let gpu = matches!(execution, Execution::Cuda { .. });
            return Ok(if gpu && cfg.state.is_empty() { Self::gpu_default(cfg.max_batch) } else { Self::none() });
        };
        if declared.is_empty() {
            return Ok(Self::none());
        }
        if cfg.stages.iter().any(|s| s.remote.is_some()) {
            return Err(ConfigError::new(
                at,
                "a remote stage runs at the batch sizes its server chooses; leave it out",
            ));
        }
        if !cfg.state.is_empty() {
            return Err(ConfigError::new(
                at,
                format!(
                    "node `{name}` keeps per-stream state (`state`): its rows are streams, so padding a batch with \
                     zero rows is refused; leave `batch_sizes` out or write `batch_sizes = []`"
                ),
            ));
        }
        let sizes = BatchSizes::new(declared.clone()).ok_or_else(|| {
            ConfigError::new(&at, format!("{declared:?} must be ascending sizes of at least 1, without repeats"))
        })?;
        let largest = *sizes.0.last().expect("not empty");
        if largest != cfg.max_batch {
            return Err(ConfigError::new(
                at,
                format!(
                    "the largest size ({largest}) must be the node's max_batch ({}), so that every batch has a size",
                    cfg.max_batch
                ),
            ));
        }
        Ok(sizes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_is_padded_to_the_next_size_and_a_larger_one_runs_as_it_is() {
        let sizes = BatchSizes::new(vec![1, 2, 4, 8]).unwrap();
        let padded: Vec<usize> = (1..=10).map(|r| sizes.padded(r)).collect();
        assert_eq!(padded, [1, 2, 4, 4, 8, 8, 8, 8, 9, 10]);
        assert_eq!(BatchSizes::none().padded(5), 5);
    }

    #[test]
    fn powers_of_two_and_halfway_sizes_end_at_max_batch() {
        assert_eq!(BatchSizes::gpu_default(32).sizes(), &[1, 2, 3, 4, 6, 8, 12, 16, 24, 32]);
        assert_eq!(BatchSizes::gpu_default(20).sizes(), &[1, 2, 3, 4, 6, 8, 12, 16, 20]);
        assert_eq!(BatchSizes::gpu_default(2).sizes(), &[1, 2]);
        assert_eq!(BatchSizes::gpu_default(1).sizes(), &[1]);
    }

    #[test]
    fn sizes_must_ascend_without_repeats() {
        assert!(BatchSizes::new(vec![1, 4, 2]).is_none());
        assert!(BatchSizes::new(vec![2, 2]).is_none());
        assert!(BatchSizes::new(vec![0, 2]).is_none());
    }
}
