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
//!
//! Warming every size is not enough where an engine keeps set-up for the last
//! shape only. ONNX Runtime's CUDA convolutions (cuDNN 9's frontend) rebuild
//! their execution plans whenever the input shape differs from the previous
//! run's, so batches that alternate between sizes pay that rebuild on every
//! batch. With `session_per_size` (the default on CUDA nodes with sizes) an
//! engine opens one session per size, and each session only ever sees its
//! own shape ([`BatchSizes::session_per_size`]).
//!
//! ```toml
//! [nodes.det]
//! provider = "cuda"
//! session_per_size = false   # one session for all sizes: less device memory, plans rebuilt per change
//! ```
//!
//! A CUDA node may go one step further with `cuda = { cuda_graph = true }`: each
//! size's session records its kernel launches once (ONNX Runtime's CUDA graphs)
//! and replays them, which needs its inputs and outputs at the same device
//! addresses on every run. Such a node runs with [`BatchSizes::fixed_buffers`]:
//! each session owns one buffer per input and output at its size, a batch is
//! copied into the input buffers and its outputs copied out of the output
//! buffers. It needs a session per size; without one it is refused, naming
//! the key.
//!
//! ## Pieces
//!
//! A model may run a row cheapest at fewer rows than the node batches (on a
//! CPU, a small MLP's rows cost least at 4-8 rows where its weights and
//! activations stay in the caches). With `piece_rows = N` a batch of more than
//! `N` rows runs through each ONNX stage in pieces of `N` rows, one after
//! another on the same session, each bound to its rows of the batch's input
//! and writing into its rows of the batch's output buffers: no copy, and the
//! node still stitches, routes and answers whole batches, so Baton's cost per
//! batch is shared by all its rows. With batch sizes, `N` must be one of them
//! (the last piece is padded like any batch), and each size's session would
//! see pieces of another size, so a session per size is refused, as are fixed
//! buffers. Like padding, pieces are only right where each row's result
//! depends on that row alone.
//!
//! ```toml
//! [nodes.mlp]
//! max_batch = 32
//! piece_rows = 8     # a 32-row batch runs as four 8-row runs
//! ```

use crate::config::{ConfigError, NodeConfig};
use crate::execution::Execution;

/// The sizes a node's ONNX stages run at, ascending (empty: every batch runs at its own
/// rows), and whether each size runs in a session of its own.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BatchSizes {
    sizes: Vec<usize>,
    session_per_size: bool,
    fixed_buffers: bool,
    /// The most rows one run takes (see "Pieces" in the module docs).
    piece_rows: Option<usize>,
}

impl BatchSizes {
    /// No fixed sizes.
    pub fn none() -> Self {
        BatchSizes::default()
    }

    /// Sizes from a list that is ascending, without repeats, each at least 1 (else `None`),
    /// all run in one session.
    pub fn new(sizes: Vec<usize>) -> Option<Self> {
        (sizes.first().is_none_or(|&s| s >= 1) && sizes.windows(2).all(|w| w[0] < w[1])).then_some(BatchSizes {
            sizes,
            session_per_size: false,
            fixed_buffers: false,
            piece_rows: None,
        })
    }

    /// These sizes, each run in a session of its own when `own` (and there are sizes).
    pub fn with_session_per_size(self, own: bool) -> Self {
        let session_per_size = own && !self.sizes.is_empty();
        BatchSizes { session_per_size, fixed_buffers: self.fixed_buffers && session_per_size, ..self }
    }

    /// These sizes with each session's inputs and outputs in buffers of its own, at fixed
    /// addresses, when `fixed` (and there is a session per size).
    pub fn with_fixed_buffers(self, fixed: bool) -> Self {
        BatchSizes { fixed_buffers: fixed && self.session_per_size, ..self }
    }

    /// Whether each size's session reads its inputs from and writes its outputs to buffers
    /// of its own whose addresses never change (a batch is copied in and its outputs copied
    /// out), as a CUDA graph's replay needs (see the module docs).
    pub fn fixed_buffers(&self) -> bool {
        self.fixed_buffers
    }

    /// Whether an engine opens one session per size, so that each session only
    /// ever runs one input shape (see the module docs).
    pub fn session_per_size(&self) -> bool {
        self.session_per_size
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
        BatchSizes { sizes, session_per_size: false, fixed_buffers: false, piece_rows: None }
    }

    /// These sizes, with batches of more than `rows` run in pieces of `rows` (see the module docs).
    pub fn with_piece_rows(self, rows: Option<usize>) -> Self {
        BatchSizes { piece_rows: rows, ..self }
    }

    /// The most rows one run takes, when batches run in pieces.
    pub fn piece_rows(&self) -> Option<usize> {
        self.piece_rows
    }

    pub fn sizes(&self) -> &[usize] {
        &self.sizes
    }

    pub fn is_empty(&self) -> bool {
        self.sizes.is_empty()
    }

    /// The rows a batch of `rows` runs at: the smallest size `>= rows`, or
    /// `rows` itself when there are no sizes or it is larger than all of them.
    pub fn padded(&self, rows: usize) -> usize {
        self.sizes.iter().copied().find(|&s| s >= rows).unwrap_or(rows)
    }

    /// The node's sizes from its config, checked (errors at `nodes.NAME.batch_sizes`,
    /// `nodes.NAME.session_per_size` and `nodes.NAME.cuda.cuda_graph`). A CUDA node opens a
    /// session per size unless told not to, and keeps fixed buffers where it asks for CUDA graphs.
    pub(crate) fn for_node(name: &str, cfg: &NodeConfig, execution: &Execution) -> Result<BatchSizes, ConfigError> {
        let gpu = matches!(execution, Execution::Cuda { .. });
        let sizes = Self::declared(name, cfg, gpu)?;
        let sizes = match cfg.session_per_size {
            Some(true) if sizes.is_empty() => {
                return Err(ConfigError::new(
                    format!("nodes.{name}.session_per_size"),
                    format!(
                        "node `{name}` runs no fixed batch sizes, so there is no size to open a session for; \
                         declare `batch_sizes` or leave `session_per_size` out"
                    ),
                ))
            }
            own => sizes.with_session_per_size(own.unwrap_or(gpu)),
        };
        let graphs = matches!(execution, Execution::Cuda { options, .. } if options.cuda_graph);
        if graphs && !sizes.session_per_size() {
            let why = if sizes.is_empty() { "runs no fixed batch sizes" } else { "has `session_per_size = false`" };
            return Err(ConfigError::new(
                format!("nodes.{name}.cuda.cuda_graph"),
                format!(
                    "node `{name}` {why}: a CUDA graph replays one shape, so it needs batch sizes run in a \
                     session each (leave `batch_sizes` and `session_per_size` out for the defaults)"
                ),
            ));
        }
        let sizes = sizes.with_fixed_buffers(graphs);
        let pieces = Self::pieces(name, cfg, &sizes)?;
        Ok(sizes.with_piece_rows(pieces))
    }

    /// The node's `piece_rows`, checked against its `max_batch`, stages and `sizes`.
    fn pieces(name: &str, cfg: &NodeConfig, sizes: &BatchSizes) -> Result<Option<usize>, ConfigError> {
        let Some(rows) = cfg.piece_rows else { return Ok(None) };
        let refuse = |why: String| Err(ConfigError::new(format!("nodes.{name}.piece_rows"), why));
        if rows == 0 || rows > cfg.max_batch {
            return refuse(format!("{rows} must be between 1 and the node's max_batch ({})", cfg.max_batch));
        }
        if cfg.stages.iter().any(|s| s.remote.is_some()) {
            return refuse("a remote stage runs the batches its server is sent; leave `piece_rows` out".into());
        }
        if !sizes.is_empty() && !sizes.sizes.contains(&rows) {
            return refuse(format!("{rows} must be one of the node's batch sizes {:?}", sizes.sizes));
        }
        if sizes.session_per_size {
            return refuse(format!(
                "node `{name}` runs each batch size in a session of its own, and pieces would take every batch to \
                 the session of size {rows}; write `session_per_size = false` (one session for every size)"
            ));
        }
        Ok(Some(rows))
    }

    fn declared(name: &str, cfg: &NodeConfig, gpu: bool) -> Result<BatchSizes, ConfigError> {
        let at = format!("nodes.{name}.batch_sizes");
        let Some(declared) = &cfg.batch_sizes else {
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
        let largest = *sizes.sizes.last().expect("not empty");
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

    fn node(toml_text: &str) -> NodeConfig {
        toml::from_str(&format!("stages = [{{ model = \"m.onnx\" }}]\nmax_batch = 8\n{toml_text}")).unwrap()
    }

    #[test]
    fn a_cuda_node_opens_a_session_per_size_unless_told_not_to_and_a_cpu_node_only_when_told() {
        let cuda = Execution::Cuda { device: 0, options: Default::default() };
        assert!(BatchSizes::for_node("n", &node(""), &cuda).unwrap().session_per_size());
        assert!(!BatchSizes::for_node("n", &node("session_per_size = false"), &cuda).unwrap().session_per_size());
        assert!(!BatchSizes::for_node("n", &node("batch_sizes = [1, 8]"), &Execution::Cpu).unwrap().session_per_size());
        let asked = node("batch_sizes = [1, 8]\nsession_per_size = true");
        assert!(BatchSizes::for_node("n", &asked, &Execution::Cpu).unwrap().session_per_size());
    }

    #[test]
    fn cuda_graphs_keep_fixed_buffers_and_need_a_session_per_size_naming_the_key() {
        let graphs: crate::execution::CudaOptions = toml::from_str("cuda_graph = true").unwrap();
        let cuda = Execution::Cuda { device: 0, options: graphs };
        let sizes = BatchSizes::for_node("n", &node(""), &cuda).unwrap();
        assert!(sizes.session_per_size() && sizes.fixed_buffers());
        let plain = Execution::Cuda { device: 0, options: Default::default() };
        assert!(!BatchSizes::for_node("n", &node(""), &plain).unwrap().fixed_buffers());
        for (text, why) in
            [("session_per_size = false", "session_per_size = false"), ("batch_sizes = []", "no fixed batch sizes")]
        {
            let err = BatchSizes::for_node("det", &node(text), &cuda).unwrap_err().to_string();
            assert!(err.contains("nodes.det.cuda.cuda_graph") && err.contains(why), "{err}");
        }
    }

    #[test]
    fn fixed_buffers_need_a_session_per_size() {
        let sizes = BatchSizes::new(vec![1, 2]).unwrap();
        assert!(!sizes.clone().with_fixed_buffers(true).fixed_buffers());
        assert!(sizes.with_session_per_size(true).with_fixed_buffers(true).fixed_buffers());
    }

    #[test]
    fn a_session_per_size_without_sizes_is_refused_naming_the_key() {
        let err = BatchSizes::for_node("det", &node("session_per_size = true"), &Execution::Cpu).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("nodes.det.session_per_size") && text.contains("batch_sizes"), "{text}");
    }
}
