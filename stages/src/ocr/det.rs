//! Text detection around the PP-OCRv4 DB detector: input tensor and DBNet post-processing.
//!
//! The detector (`ch_PP-OCRv4_det_infer.onnx`, input `x` f32 `[1, 3, H, W]`, output f32 `[1, 1, H, W]`) is a
//! DBNet ("Real-time Scene Text Detection with Differentiable Binarization", Liao et al., AAAI 2020)
//! from PaddleOCR's PP-OCR. Its output is a per-pixel text probability; [`det_boxes`] turns it into
//! text-line quadrilaterals exactly as rapidocr-onnxruntime 1.4.4's `DBPostProcess` +
//! `filter_tag_det_res` + `sorted_boxes` do.

use baton::Tensor;

use super::geometry::{self, FPoint, IPoint};
use super::image::{resize_linear, Image};
use super::Quad;

/// How the detector input size is limited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitType {
    /// Scale down so that the longer side is at most `limit_side_len`.
    Max,
    /// Scale up so that the shorter side is at least `limit_side_len`.
    Min,
}

/// Detection settings; the defaults are the reference's (`settings.det` in `data/reference/ocr`).
#[derive(Clone, Debug, PartialEq)]
pub struct DetSettings {
    /// Side limit kind (reference: max).
    pub limit_type: LimitType,
    /// Side limit in pixels (reference: 960).
    pub limit_side_len: usize,
    /// Probability above which a pixel is text (reference: 0.3).
    pub thresh: f32,
    /// Minimum mean probability inside a box (reference: 0.5).
    pub box_thresh: f64,
    /// At most this many contours are examined (reference: 1000).
    pub max_candidates: usize,
    /// Unclip distance = area * ratio / perimeter (reference: 1.6).
    pub unclip_ratio: f64,
    /// Dilate the bitmap with a 2x2 kernel (reference: true).
    pub use_dilation: bool,
    /// Boxes with a shorter side below this are dropped, and below `min_size + 2` after unclipping
    /// (reference: 3).
    pub min_size: f32,
}

impl Default for DetSettings {
    fn default() -> Self {
        DetSettings {
            limit_type: LimitType::Max,
            limit_side_len: 960,
            thresh: 0.3,
            box_thresh: 0.5,
            max_candidates: 1000,
            unclip_ratio: 1.6,
            use_dilation: true,
            min_size: 3.0,
        }
    }
}

/// Sizes of the original image and of the detector input, to map boxes back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scale {
    /// Original image width.
    pub src_width: usize,
    /// Original image height.
    pub src_height: usize,
    /// Detector input width (a multiple of 32).
    pub det_width: usize,
    /// Detector input height (a multiple of 32).
    pub det_height: usize,
}

/// The detector input size for an image: limited as `settings` say, then each side rounded to a
/// multiple of 32 (Python's `round`, half to even), at least 32.
///
/// This is PaddleOCR's `DetResizeForTest` as the reference `settings` describe it. Note that
/// rapidocr 1.4.4's `TextDetector` replaces the limit for `limit_type` "max" by 960, 1500 or 2000
/// depending on the image's longer side (< 960, < 1500, else), so for images whose longer side is
/// above 960 rapidocr would not scale down to 960; for the committed images (all <= 928 wide) both
/// agree and the input is the image itself.
pub fn det_size(width: usize, height: usize, settings: &DetSettings) -> (usize, usize) {
    let limit = settings.limit_side_len as f64;
    let (w, h) = (width as f64, height as f64);
    let ratio = match settings.limit_type {
        LimitType::Max if w.max(h) > limit => limit / w.max(h),
        LimitType::Min if w.min(h) < limit => limit / w.min(h),
        _ => 1.0,
    };
    let round32 = |v: f64| {
        let v = (v * ratio).trunc();
        (((v / 32.0).round_ties_even() * 32.0) as usize).max(32)
    };
    (round32(w), round32(h))
}

/// The detector input: the image resized to [`det_size`] (`cv2.resize`, bilinear), normalized to
/// `(pixel/255 - 0.5) / 0.5` in rapidocr's arithmetic, as f32 NCHW [1, 3, H, W] in BGR order.
pub fn det_input(img: &Image, settings: &DetSettings) -> (Tensor, Scale) {
    let (dw, dh) = det_size(img.width, img.height, settings);
    let resized = resize_linear(img, dw, dh);
    let scale = Scale { src_width: img.width, src_height: img.height, det_width: dw, det_height: dh };
    // rapidocr: (img.astype(f32) * (1/255) [f32] - mean [f64]) / std [f64], then astype(f32); exact in
    // f32 as computed here.
    let inv255 = (1.0f64 / 255.0) as f32;
    let plane = dw * dh;
    let mut data = vec![0f32; 3 * plane];
    for c in 0..3 {
        let src_c = if resized.channels == 3 { c } else { 0 };
        for i in 0..plane {
            let v = resized.data[i * resized.channels + src_c] as f32 * inv255;
            data[c * plane + i] = (v - 0.5) / 0.5;
        }
    }
    let tensor = Tensor::from_vec(vec![1, 3, dh, dw], data).expect("shape matches the data");
    (tensor, scale)
}

/// One box of DB post-processing, in original-image coordinates, before ordering and filtering.
#[derive(Clone, Debug, PartialEq)]
pub struct DbBox {
    /// Corners as `get_mini_boxes` orders them (top-left, top-right, bottom-right, bottom-left).
    pub points: [IPoint; 4],
    /// Mean probability inside the box before unclipping.
    pub score: f64,
}

/// Why the probability map could not be read.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbError(pub String);

impl std::fmt::Display for ProbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ProbError {}

/// The [H, W] probability plane of a detector output [1, 1, H, W] (or [1, H, W] / [H, W]).
fn prob_plane(prob: &Tensor) -> Result<(&[f32], usize, usize), ProbError> {
    let shape = prob.shape();
    if shape.len() < 2 || shape[..shape.len() - 2].iter().any(|&d| d != 1) {
        return Err(ProbError(format!("detector output must be [1, 1, H, W], got {shape:?}")));
    }
    let (h, w) = (shape[shape.len() - 2], shape[shape.len() - 1]);
    let data = prob.as_slice::<f32>().map_err(|e| ProbError(format!("detector output: {e}")))?;
    Ok((data, w, h))
}

/// rapidocr's `DBPostProcess`: bitmap (`prob > thresh`, dilated), contours, min-area boxes, fast box
/// score, unclip, min-area box again, scaled to the original image and rounded.
pub fn db_postprocess(prob: &Tensor, scale: &Scale, settings: &DetSettings) -> Result<Vec<DbBox>, ProbError> {
    let (pred, width, height) = prob_plane(prob)?;
    let mut bitmap: Vec<u8> = pred.iter().map(|&p| (p > settings.thresh) as u8).collect();
    if settings.use_dilation {
        bitmap = geometry::dilate_2x2(&bitmap, width, height);
    }
    let contours = geometry::find_contours(&bitmap, width, height);
    let mut boxes = Vec::new();
    for contour in contours.iter().take(settings.max_candidates) {
        let (points, short) = geometry::mini_box(contour);
        if short < settings.min_size {
            continue;
        }
        let score = box_score_fast(pred, width, height, &points);
        if settings.box_thresh > score {
            continue;
        }
        let Some(expanded) = unclip(&points, settings.unclip_ratio) else { continue };
        let (points, short) = geometry::mini_box(&expanded);
        if short < settings.min_size + 2.0 {
            continue;
        }
        // numpy in f32: round(x / width * dest_width) (half to even), clipped to [0, dest].
        let map = |v: f32, from: usize, to: usize| {
            let r = (v / from as f32 * to as f32).round_ties_even();
            r.clamp(0.0, to as f32) as i32
        };
        let points = points.map(|p| [map(p[0], width, scale.src_width), map(p[1], height, scale.src_height)]);
        boxes.push(DbBox { points, score });
    }
    Ok(boxes)
}

/// DB's `box_score_fast`: the mean probability over the box polygon (corners truncated to
/// integers, filled with `cv2.fillPoly`) within the box's clipped bounding rectangle.
pub fn box_score_fast(pred: &[f32], width: usize, height: usize, points: &[FPoint; 4]) -> f64 {
    let min_x = points.iter().map(|p| p[0]).fold(f32::INFINITY, f32::min);
    let max_x = points.iter().map(|p| p[0]).fold(f32::NEG_INFINITY, f32::max);
    let min_y = points.iter().map(|p| p[1]).fold(f32::INFINITY, f32::min);
    let max_y = points.iter().map(|p| p[1]).fold(f32::NEG_INFINITY, f32::max);
    let clip = |v: f32, hi: usize| (v as i64).clamp(0, hi as i64 - 1);
    let (xmin, xmax) = (clip(min_x.floor(), width), clip(max_x.ceil(), width));
    let (ymin, ymax) = (clip(min_y.floor(), height), clip(max_y.ceil(), height));
    // Polygon relative to (xmin, ymin), truncated toward zero like numpy's astype(int32).
    let poly: Vec<IPoint> = points.iter().map(|p| [(p[0] - xmin as f32) as i32, (p[1] - ymin as f32) as i32]).collect();
    let (mw, mh) = ((xmax - xmin + 1) as usize, (ymax - ymin + 1) as usize);
    // Draw on a canvas that holds every vertex (OpenCV clips edges at the mask border instead; the
    // two differ only for boxes reaching outside the image), then keep the mask rectangle.
    let cx0 = poly.iter().map(|p| p[0]).min().unwrap_or(0).min(0);
    let cy0 = poly.iter().map(|p| p[1]).min().unwrap_or(0).min(0);
    let cx1 = poly.iter().map(|p| p[0]).max().unwrap_or(0).max(mw as i32 - 1);
    let cy1 = poly.iter().map(|p| p[1]).max().unwrap_or(0).max(mh as i32 - 1);
    let (cw, ch) = ((cx1 - cx0 + 1) as usize, (cy1 - cy0 + 1) as usize);
    let shifted: Vec<IPoint> = poly.iter().map(|p| [p[0] - cx0, p[1] - cy0]).collect();
    let canvas = geometry::fill_poly_mask(&shifted, cw, ch);
    let (mut sum, mut count) = (0f64, 0usize);
    for y in 0..mh {
        for x in 0..mw {
            let cy = (y as i32 - cy0) as usize;
            let cx = (x as i32 - cx0) as usize;
            if canvas[cy * cw + cx] != 0 {
                sum += pred[(ymin as usize + y) * width + xmin as usize + x] as f64;
                count += 1;
            }
        }
    }
    if count == 0 {
        0.0
    } else {
        sum / count as f64
    }
}

/// DB's `unclip`: the box offset outward (round joins) by `area * ratio / perimeter`, as integer
/// vertices; `None` if Clipper would return nothing.
pub fn unclip(points: &[FPoint; 4], ratio: f64) -> Option<Vec<IPoint>> {
    let distance = geometry::polygon_area(points) * ratio / geometry::polygon_length(points);
    let out = geometry::offset_round(points, distance);
    if out.is_empty() {
        return None;
    }
    Some(out.iter().map(|p| [p[0] as i32, p[1] as i32]).collect())
}

/// rapidocr's `order_points_clockwise`: (top-left, top-right, bottom-right, bottom-left) by sorting on
/// x (stable), then each pair on y.
pub fn order_points_clockwise(points: &[IPoint; 4]) -> [IPoint; 4] {
    let mut by_x = *points;
    by_x.sort_by_key(|p| p[0]);
    let mut left = [by_x[0], by_x[1]];
    let mut right = [by_x[2], by_x[3]];
    left.sort_by_key(|p| p[1]);
    right.sort_by_key(|p| p[1]);
    [left[0], right[0], right[1], left[1]]
}

/// rapidocr's `filter_tag_det_res`: order each box clockwise, clip it to the image, and drop boxes
/// whose sides (truncated Euclidean lengths of the top and left edges) are 3 px or less.
pub fn filter_boxes(boxes: &[DbBox], width: usize, height: usize) -> Vec<Quad> {
    let mut out = Vec::new();
    for b in boxes {
        let ordered = order_points_clockwise(&b.points);
        let quad: Quad =
            ordered.map(|p| [p[0].clamp(0, width as i32 - 1) as f32, p[1].clamp(0, height as i32 - 1) as f32]);
        let dist = |a: FPoint, b: FPoint| {
            let (dx, dy) = (a[0] - b[0], a[1] - b[1]);
            (dx * dx + dy * dy).sqrt()
        };
        let rect_width = dist(quad[0], quad[1]) as i32;
        let rect_height = dist(quad[0], quad[3]) as i32;
        if rect_width <= 3 || rect_height <= 3 {
            continue;
        }
        out.push(quad);
    }
    out
}

/// rapidocr's `sorted_boxes`: by the top-left corner's (y, x), then neighbours whose top-left y differ
/// by less than 10 px are swapped so that the left one comes first (reading order).
pub fn sort_boxes(mut boxes: Vec<Quad>) -> Vec<Quad> {
    boxes.sort_by(|a, b| (a[0][1], a[0][0]).partial_cmp(&(b[0][1], b[0][0])).unwrap_or(std::cmp::Ordering::Equal));
    let n = boxes.len();
    for i in 0..n.saturating_sub(1) {
        for j in (0..=i).rev() {
            if (boxes[j + 1][0][1] - boxes[j][0][1]).abs() < 10.0 && boxes[j + 1][0][0] < boxes[j][0][0] {
                boxes.swap(j, j + 1);
            } else {
                break;
            }
        }
    }
    boxes
}

/// The text boxes of a detector output, in reading order, in original-image coordinates:
/// [`db_postprocess`] + [`filter_boxes`] + [`sort_boxes`].
pub fn det_boxes(prob: &Tensor, scale: &Scale, settings: &DetSettings) -> Result<Vec<Quad>, ProbError> {
    let raw = db_postprocess(prob, scale, settings)?;
    Ok(sort_boxes(filter_boxes(&raw, scale.src_width, scale.src_height)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn det_size_rounds_to_32_and_limits() {
        let s = DetSettings::default();
        assert_eq!(det_size(672, 160, &s), (672, 160));
        assert_eq!(det_size(700, 150, &s), (704, 160));
        // 1920x1080 -> ratio 0.5 -> 960x540 -> 540/32 = 16.875 -> 544.
        assert_eq!(det_size(1920, 1080, &s), (960, 544));
        // Half to even: 16.5 * 32 = 528 stays 512 (16), 17.5 * 32 = 560 becomes 576 (18).
        assert_eq!(det_size(528, 560, &s), (512, 576));
        let min = DetSettings { limit_type: LimitType::Min, limit_side_len: 736, ..s };
        assert_eq!(det_size(672, 160, &min), (3104, 736));
        assert_eq!(det_size(10, 10, &DetSettings { limit_side_len: 5, ..DetSettings::default() }), (32, 32));
    }

    #[test]
    fn det_input_normalizes_like_rapidocr() {
        let img = Image::from_raw(32, 32, 1, (0..1024).map(|i| (i % 256) as u8).collect());
        let (t, scale) = det_input(&img, &DetSettings::default());
        assert_eq!(t.shape(), &[1, 3, 32, 32]);
        assert_eq!(scale, Scale { src_width: 32, src_height: 32, det_width: 32, det_height: 32 });
        let v = t.as_slice::<f32>().unwrap();
        assert_eq!(v[0], -1.0);
        assert_eq!(v[255], 1.0);
        assert_eq!(v[1024 + 255], 1.0);
        // numpy: (np.float32(128) * (1/255) - 0.5) / 0.5 in f64 -> f32
        assert_eq!(v[128], 0.003921628);
    }

    #[test]
    fn boxes_from_a_synthetic_probability_map() {
        let (w, h) = (64usize, 32usize);
        let mut p = vec![0f32; w * h];
        for y in 10..16 {
            for x in 8..50 {
                p[y * w + x] = 0.9;
            }
        }
        let prob = Tensor::from_vec(vec![1, 1, h, w], p).unwrap();
        let scale = Scale { src_width: w, src_height: h, det_width: w, det_height: h };
        let raw = db_postprocess(&prob, &scale, &DetSettings::default()).unwrap();
        // rapidocr's DBPostProcess on the same map: [[4, 6], [54, 6], [54, 20], [4, 20]],
        // score 0.7534883521323981 (the dilated outline includes zero-probability pixels).
        assert_eq!(raw.len(), 1);
        assert_eq!(raw[0].points, [[4, 6], [54, 6], [54, 20], [4, 20]]);
        assert!((raw[0].score - 0.7534883521323981).abs() < 1e-9, "{raw:?}");
        let quads = det_boxes(&prob, &scale, &DetSettings::default()).unwrap();
        assert_eq!(quads, vec![[[4.0, 6.0], [54.0, 6.0], [54.0, 20.0], [4.0, 20.0]]]);
    }

    #[test]
    fn sorting_is_reading_order() {
        let q = |x: f32, y: f32| [[x, y], [x + 10.0, y], [x + 10.0, y + 5.0], [x, y + 5.0]];
        // rapidocr's sorted_boxes on the same boxes: (0,12), (30,5), (10,45), (50,40).
        let sorted = sort_boxes(vec![q(50.0, 40.0), q(10.0, 45.0), q(30.0, 5.0), q(0.0, 12.0)]);
        assert_eq!(sorted, vec![q(0.0, 12.0), q(30.0, 5.0), q(10.0, 45.0), q(50.0, 40.0)]);
    }

    #[test]
    fn clockwise_order_and_filter() {
        let b = DbBox { points: [[10, 20], [2, 3], [40, 2], [41, 21]], score: 0.9 };
        assert_eq!(order_points_clockwise(&b.points), [[2, 3], [40, 2], [41, 21], [10, 20]]);
        let tiny = DbBox { points: [[0, 0], [3, 0], [3, 9], [0, 9]], score: 0.9 };
        let out = filter_boxes(&[b, tiny], 40, 30);
        assert_eq!(out, vec![[[2.0, 3.0], [39.0, 2.0], [39.0, 21.0], [10.0, 20.0]]]);
    }
}
