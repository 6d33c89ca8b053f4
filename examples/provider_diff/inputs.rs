//! The model inputs `provider_diff` feeds both sessions: deterministic, built from the model's
//! input specs, the batch size and the chosen kind.
//!
//! * `image`: an image input (`[N, 3, H, W]`) filled with the committed text images
//!   (`data/images/s*.png`, cycled over the batch), each resized to H×W (`cv2.resize`, bilinear)
//!   and normalized exactly as the OCR pipeline's detector input (`baton_stages::ocr::det_input`:
//!   `(pixel/255 − 0.5)/0.5`, gray in all three channels);
//! * `test-random`: uniform in [−1, 1) from `StdRng::seed_from_u64(7)`, element after element:
//!   with `--batch 2 --size 96x160` exactly the PP-OCRv4 input of `tests/tests/gpu.rs`;
//! * `random`: the same generator seeded per input (7 + its position);
//! * `auto`: `image` for a 4-D input with 3 channels, `random` otherwise.
//!
//! A dynamic first dimension is the batch; dynamic H and W of a 4-D input come from `--size`
//! (default: the first image's detector size for `image`, 96×160 otherwise); any other dynamic
//! dimension is an error naming it.

use std::path::{Path, PathBuf};

use baton_stages::ocr::{det_input, load_png, DetSettings, Image, LimitType};
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

use crate::compare::Named;

/// How inputs are filled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Auto,
    Image,
    Random,
    TestRandom,
}

impl std::str::FromStr for Kind {
    type Err = String;
    fn from_str(s: &str) -> Result<Kind, String> {
        Ok(match s {
            "auto" => Kind::Auto,
            "image" => Kind::Image,
            "random" => Kind::Random,
            "test-random" => Kind::TestRandom,
            other => return Err(format!("unknown --input `{other}`; known: auto, image, random, test-random")),
        })
    }
}

/// One model input as the session reports it: its name and dimensions (`None`: dynamic).
#[derive(Clone, Debug)]
pub struct InputSpec {
    pub name: String,
    pub dims: Vec<Option<usize>>,
    /// Whether the element type is f32 (the only type this tool fills).
    pub is_f32: bool,
}

/// The inputs built, with a description of how (for the report).
#[derive(Clone, Debug)]
pub struct Inputs {
    pub tensors: Vec<Named>,
    pub description: Value,
}

/// `"96x160"` → (96, 160): height × width.
pub fn parse_size(s: &str) -> Result<(usize, usize), String> {
    let (h, w) = s.split_once('x').ok_or_else(|| format!("--size `{s}` is not HxW (e.g. 96x160)"))?;
    let parse = |v: &str| v.trim().parse::<usize>().ok().filter(|&n| n > 0);
    match (parse(h), parse(w)) {
        (Some(h), Some(w)) => Ok((h, w)),
        _ => Err(format!("--size `{s}`: height and width must be positive integers")),
    }
}

/// The committed images `data/images/s*.png` in name order.
pub fn image_paths(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read the image folder {}: {e} (set --images DIR)", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "png"))
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(format!("no .png image in {} (set --images DIR)", dir.display()));
    }
    Ok(paths)
}

/// Detector settings that keep an image of a multiple-of-32 size as it is.
fn keep_size() -> DetSettings {
    DetSettings { limit_type: LimitType::Max, limit_side_len: usize::MAX / 2, ..DetSettings::default() }
}

/// Builds every input of the model for `batch` rows.
pub fn build(
    specs: &[InputSpec],
    kind: Kind,
    batch: usize,
    size: Option<(usize, usize)>,
    images: &Path,
) -> Result<Inputs, String> {
    let mut tensors = Vec::new();
    let mut described = Vec::new();
    for (position, spec) in specs.iter().enumerate() {
        if !spec.is_f32 {
            return Err(format!("input `{}` is not f32; this tool only fills f32 inputs", spec.name));
        }
        let is_image = spec.dims.len() == 4 && spec.dims[1] == Some(3);
        let kind = match kind {
            Kind::Auto if is_image => Kind::Image,
            Kind::Auto => Kind::Random,
            k => k,
        };
        if kind == Kind::Image && !is_image {
            return Err(format!("--input image needs a [N, 3, H, W] input; `{}` is {:?}", spec.name, spec.dims));
        }
        let paths = if kind == Kind::Image { image_paths(images)? } else { Vec::new() };
        let loaded: Vec<Image> = paths
            .iter()
            .take(batch.min(paths.len()))
            .map(|p| load_png(p).map_err(|e| format!("{}: {e:?}", p.display())))
            .collect::<Result<_, _>>()?;
        let default_hw = match loaded.first() {
            Some(img) => {
                let (w, h) = baton_stages::ocr::det_size(img.width, img.height, &DetSettings::default());
                (h, w)
            }
            None => (96, 160),
        };
        let (h, w) = size.unwrap_or(default_hw);
        if let Some(Some(fixed)) = spec.dims.first().filter(|d| d.is_some_and(|n| n != batch)) {
            return Err(format!("input `{}` has a fixed batch of {fixed}; run with --batch {fixed}", spec.name));
        }
        let shape: Vec<usize> = spec
            .dims
            .iter()
            .enumerate()
            .map(|(i, d)| match (i, d) {
                (0, _) => Ok(batch),
                (_, Some(n)) => Ok(*n),
                (2, None) if spec.dims.len() == 4 => Ok(h),
                (3, None) if spec.dims.len() == 4 => Ok(w),
                (i, None) => {
                    Err(format!("input `{}`: dimension {i} is dynamic and this tool cannot size it", spec.name))
                }
            })
            .collect::<Result<_, _>>()?;
        let count: usize = shape.iter().product();
        let (data, how) = match kind {
            Kind::Image => {
                let (ih, iw) = (shape[2], shape[3]);
                let mut data = Vec::with_capacity(count);
                let mut used = Vec::new();
                for row in 0..batch {
                    let k = row % paths.len();
                    let img = match loaded.get(k) {
                        Some(img) => img.clone(),
                        None => load_png(&paths[k]).map_err(|e| format!("{}: {e:?}", paths[k].display()))?,
                    };
                    let resized = baton_stages::ocr::image::resize_linear(&img, iw, ih);
                    let (t, _) = det_input(&resized, &keep_size());
                    if t.shape() != [1, 3, ih, iw] {
                        return Err(format!("preprocessing gave {:?}, not [1, 3, {ih}, {iw}]", t.shape()));
                    }
                    data.extend_from_slice(t.as_slice::<f32>().map_err(|e| e.to_string())?);
                    used.push(paths[k].display().to_string());
                }
                (data, json!({"kind": "image", "images": used, "normalization": "(pixel/255-0.5)/0.5, det_input"}))
            }
            Kind::Random | Kind::TestRandom => {
                let seed = if kind == Kind::TestRandom { 7 } else { 7 + position as u64 };
                let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
                let data: Vec<f32> = (0..count).map(|_| rng.random_range(-1.0f32..1.0)).collect();
                let name = if kind == Kind::TestRandom { "test-random" } else { "random" };
                (data, json!({"kind": name, "distribution": "uniform [-1, 1)", "seed": seed}))
            }
            Kind::Auto => unreachable!("resolved above"),
        };
        let (lo, hi) = data.iter().fold((f32::MAX, f32::MIN), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        let mean = data.iter().map(|&x| f64::from(x)).sum::<f64>() / data.len().max(1) as f64;
        let mut entry = how;
        entry["name"] = json!(spec.name);
        entry["shape"] = json!(shape);
        entry["min"] = json!(lo);
        entry["max"] = json!(hi);
        entry["mean"] = json!(mean);
        described.push(entry);
        tensors.push(Named { name: spec.name.clone(), shape, data });
    }
    Ok(Inputs { tensors, description: Value::Array(described) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(dims: Vec<Option<usize>>) -> InputSpec {
        InputSpec { name: "x".into(), dims, is_f32: true }
    }

    #[test]
    fn sizes_parse_as_height_by_width() {
        assert_eq!(parse_size("96x160").unwrap(), (96, 160));
        assert!(parse_size("96").is_err() && parse_size("0x5").is_err());
    }

    #[test]
    fn random_inputs_are_deterministic_and_batch_sized() {
        let a = build(&[spec(vec![None, Some(4)])], Kind::Auto, 3, None, Path::new("/nonexistent")).unwrap();
        let b = build(&[spec(vec![None, Some(4)])], Kind::Random, 3, None, Path::new("/nonexistent")).unwrap();
        assert_eq!(a.tensors[0].shape, vec![3, 4]);
        assert_eq!(a.tensors[0].data, b.tensors[0].data);
        assert!(a.tensors[0].data.iter().all(|x| (-1.0..1.0).contains(x)));
    }

    #[test]
    fn test_random_matches_the_gpu_test_s_generator() {
        // tests/tests/gpu.rs: random_f32(StdRng::seed_from_u64(7), 2, 3 * 96 * 160).
        let t = build(&[spec(vec![None, Some(3), None, None])], Kind::TestRandom, 2, Some((96, 160)), Path::new("."))
            .unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let want: Vec<f32> = (0..2 * 3 * 96 * 160).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        assert_eq!(t.tensors[0].shape, vec![2, 3, 96, 160]);
        assert_eq!(t.tensors[0].data, want);
    }

    #[test]
    fn unsizable_dynamic_dimensions_are_named() {
        let err = build(&[spec(vec![None, None])], Kind::Random, 1, None, Path::new(".")).unwrap_err();
        assert!(err.contains("`x`") && err.contains("dimension 1"), "{err}");
    }
}
