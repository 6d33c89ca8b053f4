//! Text recognition around the PP-OCRv4 CRNN-style recognizer: crops, batched input, CTC decoding.
//!
//! The recognizer (`ch_PP-OCRv4_rec_infer.onnx`, input `x` f32 `[N, 3, 48, W]`, output f32
//! `[N, W/8, 6625]` softmax) reads one text line per row; its output is decoded greedily with CTC
//! ("Connectionist Temporal Classification", Graves et al., ICML 2006): best class per time step,
//! repeats collapsed, blanks dropped. Everything follows rapidocr-onnxruntime 1.4.4
//! (`get_rotate_crop_image`, `TextRecognizer`, `CTCLabelDecode`).

use std::path::Path;

use baton::Tensor;

use super::image::{perspective_transform, resize_linear, warp_perspective_cubic, Image};
use super::Quad;

/// Recognizer input height.
pub const REC_HEIGHT: usize = 48;
/// Recognizer base width: batches are at least `320/48` times as wide as high.
pub const REC_BASE_WIDTH: usize = 320;
/// rapidocr's recognizer batch size (`rec_batch_num`).
pub const REC_BATCH: usize = 6;
/// rapidocr's `text_score`: recognized lines with a lower mean probability are dropped.
pub const TEXT_SCORE: f64 = 0.5;

/// rapidocr's `get_rotate_crop_image`: the quadrilateral warped to an upright rectangle.
///
/// Width = the longer of the top and bottom edges, height = the longer of the left and right edges
/// (Euclidean lengths in `f32`, truncated); `cv2.getPerspectiveTransform` of the corners onto
/// `[[0,0],[w,0],[w,h],[0,h]]` and `cv2.warpPerspective` with bicubic interpolation and replicated
/// border; a crop at least 1.5 times as high as wide is turned 90 degrees counter-clockwise.
/// `None` for a degenerate quadrilateral.
pub fn crop(img: &Image, quad: &Quad) -> Option<Image> {
    let dist = |a: [f32; 2], b: [f32; 2]| {
        let (dx, dy) = (a[0] - b[0], a[1] - b[1]);
        (dx * dx + dy * dy).sqrt()
    };
    let w = dist(quad[0], quad[1]).max(dist(quad[2], quad[3])) as usize;
    let h = dist(quad[0], quad[3]).max(dist(quad[1], quad[2])) as usize;
    if w == 0 || h == 0 {
        return None;
    }
    let (wf, hf) = (w as f32, h as f32);
    let target = [[0.0, 0.0], [wf, 0.0], [wf, hf], [0.0, hf]];
    let m = perspective_transform(quad, &target)?;
    let out = warp_perspective_cubic(img, &m, w, h)?;
    if out.height as f64 / out.width as f64 >= 1.5 {
        Some(out.rot90())
    } else {
        Some(out)
    }
}

/// One recognizer batch: which crops it holds (indices into the crop list) and its input tensor.
#[derive(Debug)]
pub struct RecBatch {
    /// Indices of the crops, in tensor row order.
    pub indices: Vec<usize>,
    /// f32 [n, 3, 48, W].
    pub input: Tensor,
}

/// rapidocr's batching: crops sorted by aspect ratio w/h (ascending, stable), cut into batches of
/// `batch_size`, each turned into a tensor by [`rec_input`].
pub fn rec_batches(crops: &[Image], batch_size: usize) -> Vec<RecBatch> {
    let mut order: Vec<usize> = (0..crops.len()).collect();
    let ratio = |i: usize| crops[i].width as f64 / crops[i].height as f64;
    order.sort_by(|&a, &b| ratio(a).partial_cmp(&ratio(b)).unwrap_or(std::cmp::Ordering::Equal));
    order
        .chunks(batch_size.max(1))
        .map(|chunk| {
            let members: Vec<&Image> = chunk.iter().map(|&i| &crops[i]).collect();
            RecBatch { indices: chunk.to_vec(), input: rec_input(&members) }
        })
        .collect()
}

/// The batch width for crops: `int(48 * max(320/48, max w/h))`.
pub fn rec_width(crops: &[&Image]) -> usize {
    let mut max_ratio = REC_BASE_WIDTH as f64 / REC_HEIGHT as f64;
    for c in crops {
        max_ratio = max_ratio.max(c.width as f64 / c.height as f64);
    }
    (REC_HEIGHT as f64 * max_ratio) as usize
}

/// rapidocr's `resize_norm_img` for a batch: each crop resized (`cv2.resize`, bilinear) to height 48
/// and width `min(W, ceil(48 * w / h))`, normalized to `(pixel/255 - 0.5) / 0.5` and zero-padded on
/// the right to the batch width `W` ([`rec_width`]); f32 [n, 3, 48, W], BGR.
pub fn rec_input(crops: &[&Image]) -> Tensor {
    let width = rec_width(crops);
    let plane = REC_HEIGHT * width;
    let mut data = vec![0f32; crops.len() * 3 * plane];
    for (n, c) in crops.iter().enumerate() {
        let ratio = c.width as f64 / c.height as f64;
        let want = (REC_HEIGHT as f64 * ratio).ceil() as usize;
        let rw = want.min(width).max(1);
        let resized = resize_linear(c, rw, REC_HEIGHT);
        for ch in 0..3 {
            let src_c = if resized.channels == 3 { ch } else { 0 };
            let base = (n * 3 + ch) * plane;
            for y in 0..REC_HEIGHT {
                for x in 0..rw {
                    let v = resized.data[(y * rw + x) * resized.channels + src_c] as f32 / 255.0;
                    data[base + y * width + x] = (v - 0.5) / 0.5;
                }
            }
        }
    }
    Tensor::from_vec(vec![crops.len(), 3, REC_HEIGHT, width], data).expect("shape matches the data")
}

/// The recognizer's character table: index 0 is the CTC blank, 1.. the model's characters, and the
/// last one the ASCII space rapidocr appends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dictionary {
    chars: Vec<String>,
}

/// Why the dictionary could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DictionaryError(pub String);

impl std::fmt::Display for DictionaryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DictionaryError {}

impl Dictionary {
    /// From the model metadata value `character`: `["blank"] + character.splitlines() + [" "]`
    /// (Python's `str.splitlines`, which also splits on `\r`, `\x0b`, `\x0c`, `\x1c`-`\x1e`,
    /// `\x85`, U+2028 and U+2029).
    pub fn from_metadata(character: &str) -> Dictionary {
        let mut chars = vec!["blank".to_string()];
        chars.extend(python_splitlines(character));
        chars.push(" ".to_string());
        Dictionary { chars }
    }

    /// Reads the `character` metadata of a recognizer model with ONNX Runtime (loaded through
    /// `baton_engines::ort_library`).
    pub fn from_rec_model(path: impl AsRef<Path>) -> Result<Dictionary, DictionaryError> {
        let path = path.as_ref();
        let env = baton_engines::ort_library::environment().map_err(DictionaryError)?;
        let err = |e: String| DictionaryError(format!("{}: {e}", path.display()));
        let session = ort::session::Session::builder(env)
            .map_err(|e| err(e.to_string()))?
            .commit_from_file(path)
            .map_err(|e| err(e.to_string()))?;
        let meta = session.metadata().map_err(|e| err(e.to_string()))?;
        let character = meta.custom("character").ok_or_else(|| err("no `character` metadata".into()))?;
        Ok(Dictionary::from_metadata(&character))
    }

    /// Number of classes (6625 for PP-OCRv4).
    pub fn len(&self) -> usize {
        self.chars.len()
    }

    /// Never true for a dictionary made by the constructors (blank and space are always there).
    pub fn is_empty(&self) -> bool {
        self.chars.is_empty()
    }

    /// The text of class `index`.
    pub fn get(&self, index: usize) -> Option<&str> {
        self.chars.get(index).map(String::as_str)
    }

    /// All entries, blank first.
    pub fn entries(&self) -> &[String] {
        &self.chars
    }
}

/// Python's `str.splitlines()` (no trailing empty line).
fn python_splitlines(s: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                lines.push(std::mem::take(&mut cur));
            }
            '\n' | '\x0b' | '\x0c' | '\x1c' | '\x1d' | '\x1e' | '\u{85}' | '\u{2028}' | '\u{2029}' => {
                lines.push(std::mem::take(&mut cur));
            }
            _ => cur.push(c),
        }
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

/// One recognized line.
#[derive(Clone, Debug, PartialEq)]
pub struct Recognized {
    /// The decoded text.
    pub text: String,
    /// Mean probability of the kept steps (0 if none).
    pub score: f64,
    /// The best class of every time step (before collapsing).
    pub argmax: Vec<usize>,
}

/// Greedy CTC decoding of recognizer output `probs` [n, T, C], one result per row: per step the
/// first class with the highest probability; a step equal to the previous step's class is dropped,
/// then blanks (class 0); text = the kept classes' entries, score = mean of their probabilities.
/// Classes beyond the dictionary decode to nothing.
pub fn ctc_decode(probs: &Tensor, dict: &Dictionary) -> Result<Vec<Recognized>, String> {
    let shape = probs.shape();
    if shape.len() != 3 {
        return Err(format!("recognizer output must be [N, T, C], got {shape:?}"));
    }
    let (n, t, c) = (shape[0], shape[1], shape[2]);
    let data = probs.as_slice::<f32>().map_err(|e| format!("recognizer output: {e}"))?;
    let mut out = Vec::with_capacity(n);
    for row in 0..n {
        let mut argmax = Vec::with_capacity(t);
        let mut best_p = Vec::with_capacity(t);
        for step in 0..t {
            let p = &data[(row * t + step) * c..(row * t + step + 1) * c];
            let (mut bi, mut bv) = (0usize, f32::NEG_INFINITY);
            for (i, &v) in p.iter().enumerate() {
                if v > bv {
                    bi = i;
                    bv = v;
                }
            }
            argmax.push(bi);
            best_p.push(bv);
        }
        let (text, score) = collapse(&argmax, &best_p, dict);
        out.push(Recognized { text, score, argmax });
    }
    Ok(out)
}

/// CTC collapse of one argmax sequence: drop repeats (against the previous raw step), then blanks.
pub fn collapse(argmax: &[usize], probs: &[f32], dict: &Dictionary) -> (String, f64) {
    let mut text = String::new();
    let (mut sum, mut kept) = (0f64, 0usize);
    for (i, &k) in argmax.iter().enumerate() {
        if (i > 0 && argmax[i - 1] == k) || k == 0 {
            continue;
        }
        text.push_str(dict.get(k).unwrap_or(""));
        sum += probs[i] as f64;
        kept += 1;
    }
    let score = if kept == 0 { 0.0 } else { sum / kept as f64 };
    (text, score)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dict() -> Dictionary {
        Dictionary::from_metadata("a\nb\nc\n")
    }

    #[test]
    fn dictionary_layout() {
        let d = dict();
        assert_eq!(d.entries(), &["blank", "a", "b", "c", " "]);
        let d = Dictionary::from_metadata("x\r\ny\u{2028}z");
        assert_eq!(d.entries(), &["blank", "x", "y", "z", " "]);
        assert_eq!(python_splitlines("a\n\nb"), vec!["a", "", "b"]);
    }

    #[test]
    fn ctc_collapse_and_blank_rules() {
        let d = dict();
        // a a _ a b b _ _ c  -> "aabc": repeats merge, a blank separates two a's.
        let seq = [1, 1, 0, 1, 2, 2, 0, 0, 3];
        let p = [0.9, 0.8, 0.99, 0.7, 0.6, 0.5, 0.99, 0.99, 0.4];
        let (text, score) = collapse(&seq, &p, &d);
        assert_eq!(text, "aabc");
        let want = (0.9f32 as f64 + 0.7f32 as f64 + 0.6f32 as f64 + 0.4f32 as f64) / 4.0;
        assert!((score - want).abs() < 1e-12);
        assert_eq!(collapse(&[0, 0, 0], &[1.0; 3], &d), (String::new(), 0.0));
        // The appended space is the last class.
        assert_eq!(collapse(&[1, 4, 2], &[1.0; 3], &d).0, "a b");
    }

    #[test]
    fn ctc_decode_takes_first_maximum() {
        let d = dict();
        // 1 row, 3 steps, 5 classes; step 1 ties between 2 and 3 -> 2.
        let probs: Vec<f32> = vec![
            0.1, 0.6, 0.1, 0.1, 0.1, //
            0.0, 0.0, 0.5, 0.5, 0.0, //
            0.9, 0.0, 0.0, 0.1, 0.0,
        ];
        let t = Tensor::from_vec(vec![1, 3, 5], probs).unwrap();
        let r = ctc_decode(&t, &d).unwrap();
        assert_eq!(r[0].argmax, vec![1, 2, 0]);
        assert_eq!(r[0].text, "ab");
        assert!((r[0].score - 0.55).abs() < 1e-6);
    }

    #[test]
    fn rec_input_shape_and_padding() {
        let a = Image::filled(96, 24, 1, 255); // ratio 4 -> 192 wide
        let b = Image::filled(400, 40, 1, 0); // ratio 10 -> 480 wide, the batch width
        let t = rec_input(&[&a, &b]);
        assert_eq!(t.shape(), &[2, 3, 48, 480]);
        let v = t.as_slice::<f32>().unwrap();
        let plane = 48 * 480;
        assert_eq!(v[191], 1.0);
        assert_eq!(v[192], 0.0, "padding after the resized width");
        assert_eq!(v[3 * plane + 479], -1.0);
        let narrow = Image::filled(20, 40, 1, 128);
        assert_eq!(rec_width(&[&narrow]), 320);
    }

    #[test]
    fn batches_sorted_by_aspect_ratio() {
        let crops: Vec<Image> =
            [(300, 40), (100, 40), (200, 40)].iter().map(|&(w, h)| Image::filled(w, h, 1, 0)).collect();
        let b = rec_batches(&crops, 2);
        assert_eq!(b.len(), 2);
        assert_eq!(b[0].indices, vec![1, 2]);
        assert_eq!(b[1].indices, vec![0]);
        assert_eq!(b[0].input.shape(), &[2, 3, 48, 320]);
    }

    #[test]
    fn crop_of_an_axis_aligned_box_is_the_region() {
        let img = Image::from_raw(40, 20, 1, (0..800).map(|i| (i * 7 % 256) as u8).collect());
        let q = [[5.0, 3.0], [25.0, 3.0], [25.0, 13.0], [5.0, 13.0]];
        let c = crop(&img, &q).unwrap();
        assert_eq!((c.width, c.height), (20, 10));
        for y in 0..10 {
            for x in 0..20 {
                assert_eq!(c.at(x, y, 0), img.at(x + 5, y + 3, 0));
            }
        }
        // A tall box is turned.
        let tall = [[5.0, 0.0], [10.0, 0.0], [10.0, 19.0], [5.0, 19.0]];
        let c = crop(&img, &tall).unwrap();
        assert_eq!((c.width, c.height), (19, 5));
    }
}
