//! OCR pre- and post-processing in pure Rust, reproducing rapidocr-onnxruntime 1.4.4's pipeline
//! around the PaddleOCR PP-OCRv4 models (detector + recognizer; the direction classifier is skipped).
//!
//! The models do the learning; everything around them is here, as pure functions that give the
//! same numbers as rapidocr's Python (OpenCV, pyclipper, shapely, numpy) on the committed data:
//!
//! | step | function | algorithm |
//! |---|---|---|
//! | load | [`load_png`] | PNG -> gray or BGR bytes, as rapidocr's `LoadImage` |
//! | detector input | [`det_input`] | PP-OCR `DetResizeForTest` (multiples of 32) + normalization |
//! | boxes | [`det_boxes`] | DBNet post-processing (Liao et al. 2020): threshold, dilation, Suzuki border following, rotating-calipers min-area rectangles, box score, Clipper round offset ("unclip"), then rapidocr's ordering, clipping, filtering and reading-order sort |
//! | crops | [`crop`] | 4-point homography + bicubic warp (OpenCV's fixed-point kernels) |
//! | recognizer input | [`rec_batches`] / [`rec_input`] | height 48, width by aspect ratio, bilinear resize (OpenCV-exact), batches of 6 by aspect ratio |
//! | text | [`ctc_decode`] | greedy CTC (Graves et al. 2006) over the model's `character` table ([`Dictionary`]) |
//!
//! [`OcrEngine`] strings them together with two ONNX Runtime sessions (through `ort` directly, not the
//! Baton runtime) for tests, timings and as a template for a pipeline integration.
//!
//! Exactness: the resize and warp reproduce OpenCV 4.13's fixed-point arithmetic byte for byte,
//! and contours, hulls, min-area rectangles, box corners, polygon fill and the Clipper offset follow
//! OpenCV's and Clipper's algorithms step by step (in `f32` where OpenCV uses `f32`). On the 16
//! committed images every DB box, final box, crop size, recognizer batch shape, per-step argmax
//! and text equals rapidocr's (`examples/tests/ocr.rs`); `crosscheck.py` + the ignored test
//! `crosscheck_against_opencv` compare the pieces with cv2/pyclipper on ~15k random cases.
//! Known, documented differences: [`det_size`] (rapidocr's size buckets for `limit_type` max above
//! 960 px), [`image::perspective_transform`] (within one ulp of cv2's matrix),
//! [`geometry::offset_round`] (Clipper's final union is not run; it cannot change the min-area
//! rectangle), and the score mask of boxes reaching outside the image ([`det::box_score_fast`]).
//!
//! Not reproduced (never triggered by the committed images, all 576-928 x 128/160 px): rapidocr's
//! global preprocessing (resize when the longer side exceeds 2000 px or the shorter is below 30 px;
//! black letterbox when the height is <= 30 px or w/h > 8) and the 180-degree direction classifier
//! (it answers "0" for every crop here).

pub mod det;
pub mod geometry;
pub mod image;
pub mod rec;

use std::path::Path;
use std::time::{Duration, Instant};

use baton::Tensor;
use ort::session::{Session, SessionInputValue};
use ort::value::TensorRef;

pub use det::{det_boxes, det_input, det_size, DbBox, DetSettings, LimitType, Scale};
pub use image::{decode_png, load_png, Image, ImageError};
pub use rec::{crop, ctc_decode, rec_batches, rec_input, Dictionary, RecBatch, Recognized, REC_BATCH, TEXT_SCORE};

/// A text box: four corners `[x, y]` in image pixels, clockwise from the top-left
/// (top-left, top-right, bottom-right, bottom-left). Detected boxes have integer coordinates.
pub type Quad = [[f32; 2]; 4];

/// An error of [`OcrEngine`].
#[derive(Debug)]
pub struct OcrError(pub String);

impl std::fmt::Display for OcrError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for OcrError {}

/// One line of the final result (rapidocr's `[box, text, score]`).
#[derive(Clone, Debug, PartialEq)]
pub struct OcrLine {
    /// The text box in the original image.
    pub quad: Quad,
    /// The recognized text.
    pub text: String,
    /// Its mean character probability.
    pub score: f64,
}

/// Everything [`OcrEngine::run`] found in one image.
#[derive(Clone, Debug)]
pub struct OcrOutput {
    /// Lines scoring at least [`TEXT_SCORE`], in reading order.
    pub lines: Vec<OcrLine>,
    /// Detected boxes in reading order (before the score filter; boxes too thin to crop are left out).
    pub boxes: Vec<Quad>,
    /// Crop sizes `[height, width]`, per box.
    pub crops_hw: Vec<[usize; 2]>,
    /// Recognition of every box (same order as `boxes`), unfiltered.
    pub recognized: Vec<Recognized>,
    /// Recognizer batch input shapes, in run order.
    pub rec_shapes: Vec<Vec<usize>>,
    /// Time in detection: input, model, post-processing.
    pub det_time: Duration,
    /// Time in recognition: crops, inputs, model, decoding.
    pub rec_time: Duration,
}

impl OcrOutput {
    /// The texts of the kept lines joined by one space (the reference's `text`).
    pub fn text(&self) -> String {
        self.lines.iter().map(|l| l.text.as_str()).collect::<Vec<_>>().join(" ")
    }
}

/// The PP-OCRv4 detector and recognizer on ONNX Runtime, with this module's processing around them.
pub struct OcrEngine {
    det: Session,
    rec: Session,
    dict: Dictionary,
    /// Detection settings (defaults: the reference's).
    pub settings: DetSettings,
}

impl OcrEngine {
    /// Loads `ch_PP-OCRv4_det_infer.onnx` and `ch_PP-OCRv4_rec_infer.onnx` (in `dir`) with
    /// `intra_threads` ONNX Runtime threads each (0: ONNX Runtime's default).
    pub fn from_dir(dir: impl AsRef<Path>, intra_threads: usize) -> Result<OcrEngine, OcrError> {
        let dir = dir.as_ref();
        OcrEngine::new(dir.join("ch_PP-OCRv4_det_infer.onnx"), dir.join("ch_PP-OCRv4_rec_infer.onnx"), intra_threads)
    }

    /// Loads the two models; the dictionary comes from the recognizer's metadata.
    pub fn new(
        det_model: impl AsRef<Path>,
        rec_model: impl AsRef<Path>,
        intra_threads: usize,
    ) -> Result<OcrEngine, OcrError> {
        let env = baton_engines::ort_library::environment().map_err(OcrError)?;
        let load = |path: &Path| -> Result<Session, OcrError> {
            let err = |e: String| OcrError(format!("{}: {e}", path.display()));
            let mut builder = Session::builder(env).map_err(|e| err(e.to_string()))?;
            if intra_threads > 0 {
                builder = builder.with_intra_threads(intra_threads).map_err(|e| err(e.to_string()))?;
            }
            builder.commit_from_file(path).map_err(|e| err(e.to_string()))
        };
        let det = load(det_model.as_ref())?;
        let rec = load(rec_model.as_ref())?;
        let character = {
            let meta = rec.metadata().map_err(|e| OcrError(e.to_string()))?;
            meta.custom("character")
                .ok_or_else(|| OcrError(format!("{}: no `character` metadata", rec_model.as_ref().display())))?
        };
        let dict = Dictionary::from_metadata(&character);
        Ok(OcrEngine { det, rec, dict, settings: DetSettings::default() })
    }

    /// The recognizer's dictionary.
    pub fn dictionary(&self) -> &Dictionary {
        &self.dict
    }

    /// Runs the detector on an input from [`det_input`]: the probability map [1, 1, H, W].
    pub fn det_probabilities(&mut self, input: &Tensor) -> Result<Tensor, OcrError> {
        run_single(&mut self.det, input)
    }

    /// Runs the recognizer on an input from [`rec_input`]: probabilities [n, W/8, classes].
    pub fn rec_probabilities(&mut self, input: &Tensor) -> Result<Tensor, OcrError> {
        run_single(&mut self.rec, input)
    }

    /// Detects the text boxes of an image, in reading order.
    pub fn detect(&mut self, img: &Image) -> Result<Vec<Quad>, OcrError> {
        let (input, scale) = det_input(img, &self.settings);
        let prob = self.det_probabilities(&input)?;
        det_boxes(&prob, &scale, &self.settings).map_err(|e| OcrError(e.to_string()))
    }

    /// Recognizes crops (batched as rapidocr does); one result per crop, in crop order, and the
    /// batch input shapes.
    pub fn recognize(&mut self, crops: &[Image]) -> Result<(Vec<Recognized>, Vec<Vec<usize>>), OcrError> {
        let mut results: Vec<Option<Recognized>> = vec![None; crops.len()];
        let mut shapes = Vec::new();
        for batch in rec_batches(crops, REC_BATCH) {
            shapes.push(batch.input.shape().to_vec());
            let probs = self.rec_probabilities(&batch.input)?;
            let decoded = ctc_decode(&probs, &self.dict).map_err(OcrError)?;
            for (i, r) in batch.indices.into_iter().zip(decoded) {
                results[i] = Some(r);
            }
        }
        Ok((results.into_iter().map(|r| r.expect("every crop is in a batch")).collect(), shapes))
    }

    /// The whole pipeline on one image.
    pub fn run(&mut self, img: &Image) -> Result<OcrOutput, OcrError> {
        let t0 = Instant::now();
        let boxes = self.detect(img)?;
        let det_time = t0.elapsed();
        let t1 = Instant::now();
        let mut kept_boxes = Vec::with_capacity(boxes.len());
        let mut crops = Vec::with_capacity(boxes.len());
        for q in &boxes {
            if let Some(c) = crop(img, q) {
                kept_boxes.push(*q);
                crops.push(c);
            }
        }
        let (recognized, rec_shapes) = self.recognize(&crops)?;
        let rec_time = t1.elapsed();
        let lines = kept_boxes
            .iter()
            .zip(&recognized)
            .filter(|(_, r)| r.score >= TEXT_SCORE)
            .map(|(q, r)| OcrLine { quad: *q, text: r.text.clone(), score: r.score })
            .collect();
        let crops_hw = crops.iter().map(|c| [c.height, c.width]).collect();
        Ok(OcrOutput { lines, boxes: kept_boxes, crops_hw, recognized, rec_shapes, det_time, rec_time })
    }
}

/// Runs a one-input, (first-)output f32 model.
fn run_single(session: &mut Session, input: &Tensor) -> Result<Tensor, OcrError> {
    let data = input.as_slice::<f32>().map_err(|e| OcrError(e.to_string()))?;
    let view = TensorRef::from_array_view((input.shape(), data)).map_err(|e| OcrError(e.to_string()))?;
    let inputs = [SessionInputValue::from(view)];
    let outputs = session.run(inputs.as_slice()).map_err(|e| OcrError(format!("ONNX Runtime: {e}")))?;
    let (shape, values) = outputs[0].try_extract_tensor::<f32>().map_err(|e| OcrError(e.to_string()))?;
    let shape = shape.iter().map(|&d| d as usize).collect();
    Tensor::from_slice(shape, values).map_err(|e| OcrError(e.to_string()))
}
