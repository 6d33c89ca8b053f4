//! The variants `provider_diff` compares: each is a set of CUDA provider options and graph
//! optimization levels, written as tokens joined by `+` (`tf32_off+conv_default+no_graph_opt`).
//!
//! Each token sets one thing; a token that contradicts an earlier one in the same variant
//! (`nhwc+no_nhwc`) is an error, as is an unknown token (named, with the known ones).

use std::fmt;

use ort::session::builder::GraphOptimizationLevel;

/// An ONNX Runtime graph optimization level, named as the report prints it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Level {
    /// No graph optimization (`ORT_DISABLE_ALL`).
    Disable,
    /// Constant folding and redundant-node elimination (`ORT_ENABLE_BASIC`).
    Basic,
    /// Basic plus the operator fusions (`ORT_ENABLE_EXTENDED`: Conv+Add+Relu, Gelu, ...).
    Extended,
    /// Everything, layout transformations included (`ORT_ENABLE_ALL`: the engine's level; NCHWc on
    /// the CPU, NHWC on CUDA when `prefer_nhwc`).
    All,
}

impl Level {
    /// `ort`'s value of this level.
    pub fn ort(self) -> GraphOptimizationLevel {
        match self {
            Level::Disable => GraphOptimizationLevel::Disable,
            Level::Basic => GraphOptimizationLevel::Level1,
            Level::Extended => GraphOptimizationLevel::Level2,
            Level::All => GraphOptimizationLevel::All,
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Disable => "disable",
            Level::Basic => "basic",
            Level::Extended => "extended",
            Level::All => "all",
        })
    }
}

/// One comparison: the reference session (always the CPU provider) against the candidate (the
/// CUDA provider, or the CPU provider with `on_cpu` or in CPU-reference-only mode).
#[derive(Clone, Debug, PartialEq)]
pub struct Variant {
    /// As written on the command line (`tf32_off+conv_default`).
    pub name: String,
    /// The candidate session's graph optimization level.
    pub candidate_level: Level,
    /// The CPU reference session's graph optimization level.
    pub reference_level: Level,
    /// Run the candidate on the CPU provider even when a GPU is there.
    pub candidate_on_cpu: bool,
    /// CUDA provider options, `(key, value)` in ONNX Runtime's names; left out: ORT's default.
    pub cuda_options: Vec<(&'static str, &'static str)>,
}

/// Every token, with what it sets (for the help text and the unknown-token error).
pub const TOKENS: &[(&str, &str)] = &[
    ("default", "ONNX Runtime's defaults (all graph optimizations, ORT's CUDA options)"),
    ("tf32_off", "use_tf32=0"),
    ("tf32_on", "use_tf32=1"),
    ("conv_exhaustive", "cudnn_conv_algo_search=EXHAUSTIVE"),
    ("conv_heuristic", "cudnn_conv_algo_search=HEURISTIC"),
    ("conv_default", "cudnn_conv_algo_search=DEFAULT (cuDNN's IMPLICIT_PRECOMP_GEMM, no search)"),
    ("nhwc", "prefer_nhwc=1"),
    ("no_nhwc", "prefer_nhwc=0"),
    ("fuse_conv_bias", "fuse_conv_bias=1"),
    ("no_fuse_conv_bias", "fuse_conv_bias=0"),
    ("max_workspace_off", "cudnn_conv_use_max_workspace=0"),
    ("max_workspace_on", "cudnn_conv_use_max_workspace=1"),
    ("no_graph_opt", "graph optimizations disabled on both sessions"),
    ("opt_basic", "basic graph optimizations only, both sessions"),
    ("opt_extended", "extended graph optimizations (fusions, no layout changes), both sessions"),
    ("cuda_no_opt", "graph optimizations disabled on the candidate session only"),
    ("ref_no_opt", "graph optimizations disabled on the CPU reference only (are the CPU's own fusions the odd one?)"),
    ("on_cpu", "the candidate runs on the CPU provider too (with cuda_no_opt: the CPU's fusions vs none)"),
];

/// Parses a comma-separated list of variants (`default,tf32_off,tf32_off+no_graph_opt`).
pub fn parse_list(list: &str) -> Result<Vec<Variant>, String> {
    let variants: Vec<Variant> =
        list.split(',').map(str::trim).filter(|s| !s.is_empty()).map(parse).collect::<Result<_, _>>()?;
    if variants.is_empty() {
        return Err(format!("--variants `{list}` names no variant"));
    }
    Ok(variants)
}

/// Parses one variant: tokens joined by `+`.
pub fn parse(spec: &str) -> Result<Variant, String> {
    let mut v = Variant {
        name: spec.to_string(),
        candidate_level: Level::All,
        reference_level: Level::All,
        candidate_on_cpu: false,
        cuda_options: Vec::new(),
    };
    let mut levels_set: Vec<&str> = Vec::new();
    for token in spec.split('+').map(str::trim) {
        let mut option = |key: &'static str, value: &'static str| -> Result<(), String> {
            match v.cuda_options.iter().find(|(k, _)| *k == key) {
                Some((_, old)) if *old != value => {
                    Err(format!("variant `{spec}`: `{token}` sets {key}={value}, but an earlier token set {key}={old}"))
                }
                Some(_) => Ok(()),
                None => {
                    v.cuda_options.push((key, value));
                    Ok(())
                }
            }
        };
        match token {
            "default" => {}
            "tf32_off" => option("use_tf32", "0")?,
            "tf32_on" => option("use_tf32", "1")?,
            "conv_exhaustive" => option("cudnn_conv_algo_search", "EXHAUSTIVE")?,
            "conv_heuristic" => option("cudnn_conv_algo_search", "HEURISTIC")?,
            "conv_default" => option("cudnn_conv_algo_search", "DEFAULT")?,
            "nhwc" => option("prefer_nhwc", "1")?,
            "no_nhwc" => option("prefer_nhwc", "0")?,
            "fuse_conv_bias" => option("fuse_conv_bias", "1")?,
            "no_fuse_conv_bias" => option("fuse_conv_bias", "0")?,
            "max_workspace_off" => option("cudnn_conv_use_max_workspace", "0")?,
            "max_workspace_on" => option("cudnn_conv_use_max_workspace", "1")?,
            "on_cpu" => v.candidate_on_cpu = true,
            "no_graph_opt" | "opt_basic" | "opt_extended" | "cuda_no_opt" | "ref_no_opt" => {
                let (candidate, reference) = match token {
                    "no_graph_opt" => (Some(Level::Disable), Some(Level::Disable)),
                    "opt_basic" => (Some(Level::Basic), Some(Level::Basic)),
                    "opt_extended" => (Some(Level::Extended), Some(Level::Extended)),
                    "cuda_no_opt" => (Some(Level::Disable), None),
                    _ => (None, Some(Level::Disable)),
                };
                // Two level tokens may combine only when they set different sessions.
                let clash = levels_set.iter().any(|earlier| {
                    let sets_both = |t: &str| matches!(t, "no_graph_opt" | "opt_basic" | "opt_extended");
                    sets_both(earlier) || sets_both(token) || earlier == &token
                });
                if clash {
                    return Err(format!(
                        "variant `{spec}`: `{token}` and `{}` both set a graph optimization level",
                        levels_set.join("`, `")
                    ));
                }
                levels_set.push(token);
                if let Some(level) = candidate {
                    v.candidate_level = level;
                }
                if let Some(level) = reference {
                    v.reference_level = level;
                }
            }
            unknown => {
                let known: Vec<&str> = TOKENS.iter().map(|(t, _)| *t).collect();
                return Err(format!(
                    "unknown variant `{unknown}` (in `{spec}`); known: {} (combine with `+`)",
                    known.join(", ")
                ));
            }
        }
    }
    Ok(v)
}

impl Variant {
    /// The CUDA options as `key=value` pairs, or `ORT defaults` when none is set.
    pub fn options_text(&self) -> String {
        if self.cuda_options.is_empty() {
            "ORT defaults".to_string()
        } else {
            self.cuda_options.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
        }
    }

    /// A file-name-safe form of the name (`+` and `,` become `_`).
    pub fn file_stem(&self) -> String {
        self.name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_sets_nothing() {
        let v = parse("default").unwrap();
        assert_eq!((v.candidate_level, v.reference_level), (Level::All, Level::All));
        assert!(v.cuda_options.is_empty() && !v.candidate_on_cpu);
    }

    #[test]
    fn tokens_combine_with_plus() {
        let v = parse("tf32_off+conv_default+no_graph_opt").unwrap();
        assert_eq!(v.cuda_options, vec![("use_tf32", "0"), ("cudnn_conv_algo_search", "DEFAULT")]);
        assert_eq!((v.candidate_level, v.reference_level), (Level::Disable, Level::Disable));
        assert_eq!(v.file_stem(), "tf32_off_conv_default_no_graph_opt");
    }

    #[test]
    fn ref_no_opt_only_touches_the_reference() {
        let v = parse("ref_no_opt").unwrap();
        assert_eq!((v.candidate_level, v.reference_level), (Level::All, Level::Disable));
        let v = parse("cuda_no_opt+ref_no_opt").unwrap();
        assert_eq!((v.candidate_level, v.reference_level), (Level::Disable, Level::Disable));
    }

    #[test]
    fn unknown_tokens_are_named() {
        let err = parse_list("default,tf32_off+fft_off").unwrap_err();
        assert!(
            err.contains("`fft_off`") && err.contains("tf32_off+fft_off") && err.contains("conv_heuristic"),
            "{err}"
        );
    }

    #[test]
    fn contradictions_are_errors() {
        assert!(parse("nhwc+no_nhwc").unwrap_err().contains("prefer_nhwc"));
        assert!(parse("no_graph_opt+ref_no_opt").is_err());
        assert!(parse("tf32_off+tf32_off").is_ok());
    }

    #[test]
    fn empty_lists_are_errors() {
        assert!(parse_list(" , ").is_err());
    }
}
