//! The `cost_model` engine: a SIMULATED model stage, for scheduler tests and
//! large simulated pipelines.
//!
//! It runs no model. It declares the inputs and outputs its `params` give,
//! takes as long as its latency curve says for the batch size, and fills its
//! outputs deterministically. **Figures measured on it describe the runtime's
//! scheduling overhead under a made-up load, never model performance: do not
//! report them as real inference numbers.**
//!
//! Everything is configured in the stage's `params` (unknown keys are errors):
//!
//! ```toml
//! [nodes.stages.params]
//! inputs  = [{ name = "x", dtype = "f32", shape = [-1, 4] }]   # -1 (or a name like "N") = dynamic
//! outputs = [{ name = "y", dtype = "f32", shape = [-1, 4] }]   # dim 0 is the batch dim
//! latency_us = { "1" = 100, "8" = 300, "32" = 900 }            # or a constant: latency_us = 250
//! mode = "auto"                                                 # "spin" | "sleep" | "auto" (default)
//! fail_every = 10                                               # optional: every 10th run fails
//! ```
//!
//! - **Batch size** is dim 0 of the first input.
//! - **Latency** (default 0): a curve is interpolated linearly between its
//!   points and extrapolated from the nearest two points outside them (never
//!   below 0); see [`interpolate`]. The latency counts from the start of `run`,
//!   so building outputs is part of it.
//! - **Mode**: `spin` busy-waits (accurate to about a microsecond, but holds a
//!   core), `sleep` sleeps (frees the core, but the OS adds tens of
//!   microseconds). `auto` spins when the run's latency is under
//!   [`SPIN_BELOW_US`] (200 µs), where sleep's overshoot would be a large
//!   error, and sleeps otherwise.
//! - **Outputs** have shape `[batch, rest...]`: fixed dims as declared, dynamic
//!   ones from the first input's dim at the same position (or 1). An output
//!   takes the rows of the first input with the same dtype, the same batch and
//!   the same number of elements per row (shared, not copied: tensors are
//!   immutable), so data flows through simulated pipelines and tests can check
//!   routing; otherwise it is zeros.
//! - **`fail_every = N`**: every Nth run (counting runs whose inputs were
//!   valid) waits its latency and then returns an error containing
//!   "injected failure".

use std::fmt;
use std::num::NonZeroU64;
use std::time::{Duration, Instant};

use baton::{DType, Dim, Engine, EngineError, EngineProvider, ModelSignature, StageRequest, Tensor, TensorSpec};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

/// Runs shorter than this (in µs) busy-wait in `auto` mode; longer ones sleep.
pub const SPIN_BELOW_US: f64 = 200.0;

/// Provider of [`CostModelEngine`]s, registered as `cost_model`. Stateless.
#[derive(Clone, Copy, Debug, Default)]
pub struct CostModelProvider;

impl CostModelProvider {
    pub fn new() -> Self {
        CostModelProvider
    }
}

impl EngineProvider for CostModelProvider {
    fn inspect(&self, stage: &StageRequest) -> Result<ModelSignature, EngineError> {
        Ok(CostModelConfig::from_stage(stage)?.signature)
    }

    fn create(&self, stage: &StageRequest) -> Result<Box<dyn Engine>, EngineError> {
        Ok(Box::new(CostModelEngine::new(stage)?))
    }
}

/// How a run waits out its latency.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WaitMode {
    /// Spin below [`SPIN_BELOW_US`], sleep above.
    #[default]
    Auto,
    Spin,
    Sleep,
}

/// Latency by batch size.
#[derive(Clone, Debug, PartialEq)]
pub enum LatencyCurve {
    /// The same latency (µs) for every batch size.
    Constant(f64),
    /// `(batch size, µs)` points, sorted by batch size, at least one.
    Points(Vec<(f64, f64)>),
}

impl LatencyCurve {
    /// Latency in microseconds at `batch` rows.
    pub fn latency_us(&self, batch: usize) -> f64 {
        match self {
            LatencyCurve::Constant(us) => *us,
            LatencyCurve::Points(points) => interpolate(points, batch as f64),
        }
    }
}

/// Piecewise-linear curve through `points` (sorted by x, distinct x) at `x`:
/// linear between points, extrapolated from the first two points below the
/// first and from the last two above the last, clamped at 0. One point is a
/// constant; no points is 0.
pub fn interpolate(points: &[(f64, f64)], x: f64) -> f64 {
    match points {
        [] => 0.0,
        [(_, y)] => y.max(0.0),
        _ => {
            let i = points.windows(2).position(|w| x <= w[1].0).unwrap_or(points.len() - 2);
            let ((x0, y0), (x1, y1)) = (points[i], points[i + 1]);
            (y0 + (y1 - y0) * (x - x0) / (x1 - x0)).max(0.0)
        }
    }
}

/// A cost model stage's settings, parsed from its `params`.
#[derive(Clone, Debug, PartialEq)]
pub struct CostModelConfig {
    pub signature: ModelSignature,
    pub latency: LatencyCurve,
    pub mode: WaitMode,
    pub fail_every: Option<u64>,
}

impl CostModelConfig {
    /// Reads `stage.params`; errors name the stage and the offending key.
    pub fn from_stage(stage: &StageRequest) -> Result<CostModelConfig, EngineError> {
        let params: CostModelParams = stage.params()?;
        if params.inputs.is_empty() {
            return Err(stage.params_error("inputs", "must list at least one input (its dim 0 is the batch size)"));
        }
        let inputs = tensor_specs(stage, "inputs", params.inputs)?;
        let outputs = tensor_specs(stage, "outputs", params.outputs)?;
        Ok(CostModelConfig {
            signature: ModelSignature { inputs, outputs },
            latency: params.latency_us.unwrap_or(LatencyCurve::Constant(0.0)),
            mode: params.mode,
            fail_every: params.fail_every.map(NonZeroU64::get),
        })
    }
}

/// The stage's `params` as written (see the module docs).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CostModelParams {
    inputs: Vec<TensorParams>,
    outputs: Vec<TensorParams>,
    latency_us: Option<LatencyCurve>,
    #[serde(default)]
    mode: WaitMode,
    fail_every: Option<NonZeroU64>,
}

/// One entry of `inputs` or `outputs`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TensorParams {
    name: String,
    #[serde(deserialize_with = "dtype")]
    dtype: DType,
    #[serde(deserialize_with = "shape")]
    shape: Vec<Dim>,
}

/// `list` (the stage's `key`) as specs: names non-empty and listed once.
pub(crate) fn tensor_specs(
    stage: &StageRequest,
    key: &str,
    list: Vec<TensorParams>,
) -> Result<Vec<TensorSpec>, EngineError> {
    let mut specs: Vec<TensorSpec> = Vec::with_capacity(list.len());
    for (i, TensorParams { name, dtype, shape }) in list.into_iter().enumerate() {
        let at = format!("{key}[{i}].name");
        if name.is_empty() {
            return Err(stage.params_error(&at, "must be a non-empty string"));
        }
        if specs.iter().any(|s| s.name == name) {
            return Err(stage.params_error(&at, format!("\"{name}\" is listed twice in `{key}`")));
        }
        specs.push(TensorSpec { name, dtype, shape });
    }
    Ok(specs)
}

fn dtype<'de, D: Deserializer<'de>>(deserializer: D) -> Result<DType, D::Error> {
    let name = String::deserialize(deserializer)?;
    DType::parse(&name).ok_or_else(|| de::Error::custom(format!("unknown dtype \"{name}\"")))
}

/// A dim as written: `n >= 0`, `-1` (dynamic) or a name (dynamic).
#[derive(Deserialize)]
#[serde(untagged)]
enum DimParam {
    Size(i64),
    Name(String),
}

fn shape<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Dim>, D::Error> {
    let dims = Vec::<DimParam>::deserialize(deserializer)?;
    if dims.is_empty() {
        return Err(de::Error::custom("must be a non-empty array (dim 0 is the batch dim)"));
    }
    dims.into_iter()
        .map(|d| match d {
            DimParam::Size(-1) => Ok(Dim::Dynamic(None)),
            DimParam::Size(n) if n >= 0 => Ok(Dim::Fixed(n as usize)),
            DimParam::Name(s) if !s.is_empty() => Ok(Dim::Dynamic(Some(s))),
            DimParam::Size(n) => Err(de::Error::custom(format!("{n} is not a dim (use n >= 0, -1 or a name)"))),
            DimParam::Name(_) => Err(de::Error::custom("\"\" is not a dim (use n >= 0, -1 or a name)")),
        })
        .collect()
}

/// `latency_us`: a number of microseconds, or a table of batch size -> microseconds.
impl<'de> Deserialize<'de> for LatencyCurve {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(CurveVisitor)
    }
}

struct CurveVisitor;

impl<'de> Visitor<'de> for CurveVisitor {
    type Value = LatencyCurve;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a number of microseconds or a table like { \"1\" = 100, \"8\" = 300 }")
    }

    fn visit_i64<E: de::Error>(self, us: i64) -> Result<LatencyCurve, E> {
        self.visit_f64(us as f64)
    }

    fn visit_u64<E: de::Error>(self, us: u64) -> Result<LatencyCurve, E> {
        self.visit_f64(us as f64)
    }

    fn visit_f64<E: de::Error>(self, us: f64) -> Result<LatencyCurve, E> {
        microseconds(us).map(LatencyCurve::Constant)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LatencyCurve, A::Error> {
        let mut points = Vec::new();
        while let Some((key, us)) = map.next_entry::<String, f64>()? {
            let batch: usize = key
                .parse()
                .ok()
                .filter(|&b| b >= 1)
                .ok_or_else(|| de::Error::custom(format!("key \"{key}\" is not a batch size >= 1")))?;
            points.push((batch as f64, microseconds(us)?));
        }
        if points.is_empty() {
            return Err(de::Error::custom("the table has no points"));
        }
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        Ok(LatencyCurve::Points(points))
    }
}

fn microseconds<E: de::Error>(us: f64) -> Result<f64, E> {
    if us.is_finite() && us >= 0.0 {
        Ok(us)
    } else {
        Err(E::custom(format!("must be >= 0 microseconds, not {us}")))
    }
}

/// A simulated stage (see the module docs). Never use its timings as real figures.
pub struct CostModelEngine {
    config: CostModelConfig,
    location: String,
    /// Runs with valid inputs so far.
    runs: u64,
}

impl CostModelEngine {
    pub fn new(stage: &StageRequest) -> Result<CostModelEngine, EngineError> {
        Ok(CostModelEngine { config: CostModelConfig::from_stage(stage)?, location: stage.location.clone(), runs: 0 })
    }

    pub fn config(&self) -> &CostModelConfig {
        &self.config
    }

    fn check_inputs(&self, inputs: &[&Tensor]) -> Result<(), String> {
        let specs = &self.config.signature.inputs;
        if inputs.len() != specs.len() {
            return Err(format!("takes {} inputs but {} were given", specs.len(), inputs.len()));
        }
        for (t, spec) in inputs.iter().zip(specs) {
            if t.dtype() != spec.dtype || !spec.accepts(t.shape()) {
                return Err(format!(
                    "input `{}` must be {} {} but got {} {:?}",
                    spec.name,
                    spec.dtype,
                    spec.shape_string(),
                    t.dtype(),
                    t.shape()
                ));
            }
        }
        Ok(())
    }

    fn output(&self, spec: &TensorSpec, inputs: &[&Tensor], batch: usize) -> Result<Tensor, String> {
        let first = inputs[0].shape();
        let shape: Vec<usize> = std::iter::once(batch)
            .chain(spec.shape.iter().enumerate().skip(1).map(|(i, d)| match d {
                Dim::Fixed(n) => *n,
                Dim::Dynamic(_) => first.get(i).copied().unwrap_or(1),
            }))
            .collect();
        if !spec.accepts(&shape) {
            return Err(format!(
                "output `{}` is declared {} but the batch has {batch} rows",
                spec.name,
                spec.shape_string()
            ));
        }
        let row: usize = shape[1..].iter().product();
        let source = inputs.iter().find(|t| {
            t.dtype() == spec.dtype && t.batch_rows() == batch && t.shape().iter().skip(1).product::<usize>() == row
        });
        match source {
            Some(t) => t.reshape(shape),
            None => Tensor::zeros(spec.dtype, shape),
        }
        .map_err(|e| format!("output `{}`: {e}", spec.name))
    }
}

impl Engine for CostModelEngine {
    fn run(&mut self, inputs: &[&Tensor]) -> Result<Vec<Tensor>, EngineError> {
        let start = Instant::now();
        self.check_inputs(inputs).map_err(|message| EngineError::Input { location: self.location.clone(), message })?;
        self.runs += 1;
        let batch = inputs[0].batch_rows();
        let latency_us = self.config.latency.latency_us(batch);
        let spin = match self.config.mode {
            WaitMode::Spin => true,
            WaitMode::Sleep => false,
            WaitMode::Auto => latency_us < SPIN_BELOW_US,
        };
        let deadline = start + Duration::from_secs_f64(latency_us / 1e6);
        if self.config.fail_every.is_some_and(|n| self.runs % n == 0) {
            wait_until(deadline, spin);
            return Err(EngineError::Run(format!(
                "stage {}: injected failure (run {}, fail_every = {})",
                self.location,
                self.runs,
                self.config.fail_every.unwrap_or_default()
            )));
        }
        let outputs = self
            .config
            .signature
            .outputs
            .iter()
            .map(|spec| self.output(spec, inputs, batch))
            .collect::<Result<Vec<_>, String>>()
            .map_err(|e| EngineError::Run(format!("stage {}: {e}", self.location)))?;
        wait_until(deadline, spin);
        Ok(outputs)
    }
}

fn wait_until(deadline: Instant, spin: bool) {
    if spin {
        while Instant::now() < deadline {
            std::hint::spin_loop();
        }
    } else {
        let now = Instant::now();
        if deadline > now {
            std::thread::sleep(deadline - now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolates_between_points() {
        let pts = [(1.0, 100.0), (8.0, 300.0), (32.0, 900.0)];
        assert_eq!(interpolate(&pts, 1.0), 100.0);
        assert_eq!(interpolate(&pts, 8.0), 300.0);
        assert_eq!(interpolate(&pts, 32.0), 900.0);
        assert!((interpolate(&pts, 4.5) - 200.0).abs() < 1e-9);
        assert!((interpolate(&pts, 20.0) - 600.0).abs() < 1e-9);
    }

    #[test]
    fn extrapolates_from_the_nearest_two_points() {
        let pts = [(1.0, 100.0), (8.0, 300.0), (32.0, 900.0)];
        // Above: slope of the last segment, 25 us per row.
        assert!((interpolate(&pts, 64.0) - 1700.0).abs() < 1e-9);
        // Below the first point: slope of the first segment, clamped at 0.
        let pts = [(4.0, 10.0), (8.0, 50.0)];
        assert!((interpolate(&pts, 3.0) - 0.0).abs() < 1e-9);
        assert!((interpolate(&pts, 2.0) - 0.0).abs() < 1e-9, "never negative");
    }

    #[test]
    fn one_point_is_constant_and_none_is_zero() {
        assert_eq!(interpolate(&[(8.0, 42.0)], 1.0), 42.0);
        assert_eq!(interpolate(&[(8.0, 42.0)], 100.0), 42.0);
        assert_eq!(interpolate(&[], 5.0), 0.0);
    }

    fn parse(src: &str) -> Result<CostModelConfig, String> {
        let stage = StageRequest {
            location: "n.stages[0]".into(),
            model: None,
            params: src.parse().unwrap(),
            intra_threads: 1,
            inter_threads: 1,
            execution: baton::Execution::Cpu,
            batch_sizes: baton::BatchSizes::none(),
            device_outputs: Vec::new(),
        };
        CostModelConfig::from_stage(&stage).map_err(|e| e.to_string())
    }

    const IO: &str = r#"
        inputs = [{ name = "x", dtype = "f32", shape = ["N", 4] }]
        outputs = [{ name = "y", dtype = "i64", shape = [-1, 2, 3] }]
    "#;

    #[test]
    fn parses_specs_curve_mode_and_fail_every() {
        let cfg =
            parse(&format!("{IO}\nlatency_us = {{ \"8\" = 300, \"1\" = 100.5 }}\nmode = \"sleep\"\nfail_every = 3"))
                .unwrap();
        let x = &cfg.signature.inputs[0];
        assert_eq!((x.name.as_str(), x.dtype), ("x", DType::F32));
        assert_eq!(x.shape, vec![Dim::Dynamic(Some("N".into())), Dim::Fixed(4)]);
        let y = &cfg.signature.outputs[0];
        assert_eq!(y.shape, vec![Dim::Dynamic(None), Dim::Fixed(2), Dim::Fixed(3)]);
        assert_eq!(y.dtype, DType::I64);
        assert_eq!(cfg.latency, LatencyCurve::Points(vec![(1.0, 100.5), (8.0, 300.0)]), "sorted by batch");
        assert_eq!(cfg.mode, WaitMode::Sleep);
        assert_eq!(cfg.fail_every, Some(3));
    }

    #[test]
    fn defaults_are_zero_latency_auto_mode_no_failures() {
        let cfg = parse(IO).unwrap();
        assert_eq!(cfg.latency, LatencyCurve::Constant(0.0));
        assert_eq!(cfg.mode, WaitMode::Auto);
        assert_eq!(cfg.fail_every, None);
        assert_eq!(parse(&format!("{IO}\nlatency_us = 250")).unwrap().latency.latency_us(7), 250.0);
    }

    #[test]
    fn bad_params_name_the_key() {
        let cases = [
            (format!("{IO}\nlatency = 5"), "`latency`"),
            (format!("{IO}\nmode = \"busy\""), "`mode`"),
            (format!("{IO}\nfail_every = 0"), "`fail_every`"),
            (format!("{IO}\nlatency_us = {{ \"zero\" = 5 }}"), "\"zero\""),
            (format!("{IO}\nlatency_us = -3"), "`latency_us`"),
            (r#"outputs = []"#.to_string(), "`inputs`"),
            (r#"inputs = [{ name = "x", dtype = "f32", shape = [-1] }]"#.to_string(), "`outputs`"),
            (
                r#"inputs = [{ name = "x", dtype = "f33", shape = [-1] }]
                outputs = []"#
                    .to_string(),
                "`inputs[0].dtype`",
            ),
            (
                r#"inputs = [{ name = "x", dtype = "f32", shape = [-1], size = 3 }]
                outputs = []"#
                    .to_string(),
                "`inputs[0].size`",
            ),
            (
                r#"inputs = [{ name = "x", dtype = "f32", shape = [-1] }]
                outputs = [{ name = "y", dtype = "f32", shape = [-2] }]"#
                    .to_string(),
                "`outputs[0].shape`",
            ),
            (
                r#"inputs = [{ name = "x", dtype = "f32", shape = [-1] }, { name = "x", dtype = "f32", shape = [-1] }]
                outputs = []"#
                    .to_string(),
                "listed twice",
            ),
        ];
        for (src, needle) in cases {
            let err = parse(&src).unwrap_err();
            assert!(err.contains(needle), "{src}\n=> {err}\n(expected {needle})");
        }
    }
}
