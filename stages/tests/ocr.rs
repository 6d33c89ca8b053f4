//! The OCR module against rapidocr-onnxruntime 1.4.4's own outputs on the 16 committed images
//! (`data/reference/ocr/*.json`), running the real PP-OCRv4 models (`models/real/`, made by
//! `scripts/setup.sh`) through ONNX Runtime directly.
//!
//! `cargo test -p baton-stages --test ocr -- --nocapture` prints the per-image comparison.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use baton_stages::ocr::{self, det, Image, OcrEngine, Quad};
use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn engine() -> &'static Mutex<OcrEngine> {
    static ENGINE: OnceLock<Mutex<OcrEngine>> = OnceLock::new();
    ENGINE.get_or_init(|| {
        let dir = root().join("models/real");
        assert!(
            dir.join("ch_PP-OCRv4_det_infer.onnx").is_file() && dir.join("ch_PP-OCRv4_rec_infer.onnx").is_file(),
            "models/real/ch_PP-OCRv4_{{det,rec}}_infer.onnx missing: run scripts/setup.sh"
        );
        Mutex::new(OcrEngine::from_dir(&dir, 1).expect("load the PP-OCRv4 models"))
    })
}

fn reference(id: &str) -> Value {
    let path = root().join(format!("data/reference/ocr/{id}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("reference JSON")
}

fn session_ids() -> Vec<String> {
    let path = root().join("data/sessions.json");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("sessions.json")).expect("JSON");
    doc["sessions"].as_array().expect("sessions").iter().map(|s| s["id"].as_str().expect("id").to_string()).collect()
}

fn quad_of(v: &Value) -> Quad {
    let p = v.as_array().expect("4 points");
    std::array::from_fn(|i| [p[i][0].as_f64().unwrap() as f32, p[i][1].as_f64().unwrap() as f32])
}

fn max_corner_deviation(a: &Quad, b: &Quad) -> f32 {
    a.iter().zip(b).map(|(p, q)| (p[0] - q[0]).abs().max((p[1] - q[1]).abs())).fold(0.0, f32::max)
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut d: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = d[0];
        d[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cur = d[j + 1];
            d[j + 1] = (d[j + 1] + 1).min(d[j] + 1).min(prev + (ca != cb) as usize);
            prev = cur;
        }
    }
    d[b.len()]
}

/// What one image gave, compared with its reference.
struct Compared {
    id: String,
    raw_box_dev: f32,
    raw_boxes_same_count: bool,
    max_score_diff: f64,
    box_dev: f32,
    boxes_same_count: bool,
    crops_equal: usize,
    crops: usize,
    argmax_equal: usize,
    argmax_compared: usize,
    rec_shapes_equal: bool,
    texts_equal: bool,
    edits: usize,
    known_len: usize,
    text: String,
}

fn compare(id: &str) -> Compared {
    let r = reference(id);
    let img = ocr::load_png(root().join("data").join(r["image"].as_str().unwrap())).expect("image");
    let mut engine = engine().lock().unwrap_or_else(|e| e.into_inner());

    // DB boxes before ordering/filtering (the reference's contour order).
    let settings = engine.settings.clone();
    let (input, scale) = ocr::det_input(&img, &settings);
    let want_in: Vec<usize> =
        r["det_input_shape"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as usize).collect();
    assert_eq!(input.shape(), want_in.as_slice(), "{id}: detector input shape");
    let prob = engine.det_probabilities(&input).expect("detector");
    let raw = det::db_postprocess(&prob, &scale, &settings).expect("post-processing");
    let want_raw = r["det_db_boxes"].as_array().unwrap();
    let (mut raw_box_dev, mut max_score_diff) = (0f32, 0f64);
    for (i, w) in want_raw.iter().enumerate() {
        let wq = quad_of(&w["points"]);
        // Nearest of ours (order is the same when the contours are).
        let (j, dev) = raw
            .iter()
            .enumerate()
            .map(|(j, b)| (j, max_corner_deviation(&b.points.map(|p| [p[0] as f32, p[1] as f32]), &wq)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap_or((usize::MAX, f32::INFINITY));
        raw_box_dev = raw_box_dev.max(dev);
        if j == i {
            max_score_diff = max_score_diff.max((raw[j].score - w["score"].as_f64().unwrap()).abs());
        } else {
            max_score_diff = f64::INFINITY;
        }
    }

    let out = engine.run(&img).expect("OCR");
    let results = r["results"].as_array().unwrap();
    let mut box_dev = 0f32;
    for (res, q) in results.iter().zip(&out.boxes) {
        box_dev = box_dev.max(max_corner_deviation(q, &quad_of(&res["box"])));
    }
    let want_crops: Vec<[usize; 2]> = r["crops_hw"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| [v[0].as_u64().unwrap() as usize, v[1].as_u64().unwrap() as usize])
        .collect();
    let mut crops_equal = 0;
    let (mut argmax_equal, mut argmax_compared) = (0, 0);
    for (i, res) in results.iter().enumerate() {
        if out.crops_hw.get(i) == want_crops.get(i) {
            crops_equal += 1;
            let want: Vec<usize> =
                res["rec_argmax"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as usize).collect();
            argmax_compared += 1;
            if out.recognized[i].argmax == want {
                argmax_equal += 1;
            }
        }
    }
    let want_shapes: Vec<Vec<usize>> = r["rec_batches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["input_shape"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as usize).collect())
        .collect();
    let want_texts: Vec<&str> = r["texts"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    let texts: Vec<&str> = out.lines.iter().map(|l| l.text.as_str()).collect();
    let known = r["known_text"].as_str().unwrap();
    let text = out.text();
    Compared {
        id: id.to_string(),
        raw_box_dev,
        raw_boxes_same_count: raw.len() == want_raw.len(),
        max_score_diff,
        box_dev,
        boxes_same_count: out.boxes.len() == results.len(),
        crops_equal,
        crops: want_crops.len(),
        argmax_equal,
        argmax_compared,
        rec_shapes_equal: out.rec_shapes == want_shapes,
        texts_equal: texts == want_texts,
        edits: levenshtein(&text, known),
        known_len: known.chars().count(),
        text,
    }
}

/// All 16 images against their references: boxes within 2 px per corner, recognizer argmax
/// sequences, texts equal on >= 15 images, character accuracy >= 95% overall.
#[test]
fn matches_rapidocr_references() {
    let ids = session_ids();
    assert_eq!(ids.len(), 16);
    let rows: Vec<Compared> = ids.iter().map(|id| compare(id)).collect();
    println!("id   raw-dev score-diff box-dev crops argmax shapes texts edits  text");
    for c in &rows {
        println!(
            "{}  {:>5.1}  {:>9.2e}  {:>5.1}   {}/{}   {}/{}    {:<5}  {:<5} {:>3}   {}",
            c.id,
            c.raw_box_dev,
            c.max_score_diff,
            c.box_dev,
            c.crops_equal,
            c.crops,
            c.argmax_equal,
            c.argmax_compared,
            c.rec_shapes_equal,
            c.texts_equal,
            c.edits,
            c.text
        );
    }
    let raw_dev = rows.iter().map(|c| c.raw_box_dev).fold(0.0, f32::max);
    let box_dev = rows.iter().map(|c| c.box_dev).fold(0.0, f32::max);
    let texts_equal = rows.iter().filter(|c| c.texts_equal).count();
    let (edits, chars): (usize, usize) = rows.iter().fold((0, 0), |(e, n), c| (e + c.edits, n + c.known_len));
    let accuracy = 1.0 - edits as f64 / chars as f64;
    let argmax_equal: usize = rows.iter().map(|c| c.argmax_equal).sum();
    let argmax_compared: usize = rows.iter().map(|c| c.argmax_compared).sum();
    let crops_equal: usize = rows.iter().map(|c| c.crops_equal).sum();
    let crops: usize = rows.iter().map(|c| c.crops).sum();
    println!(
        "max corner deviation: DB boxes {raw_dev} px, final boxes {box_dev} px; crops equal {crops_equal}/{crops}; \
         argmax sequences equal {argmax_equal}/{argmax_compared}; texts equal {texts_equal}/16; \
         char accuracy {accuracy:.4} ({edits} edits / {chars} chars)"
    );
    for c in &rows {
        assert!(c.raw_boxes_same_count && c.boxes_same_count, "{}: box count differs", c.id);
    }
    assert!(raw_dev <= 2.0 && box_dev <= 2.0, "box corners deviate by more than 2 px");
    assert!(texts_equal >= 15, "texts equal on {texts_equal}/16 images only");
    assert!(accuracy >= 0.95, "character accuracy {accuracy}");
}

/// The dictionary read from the recognizer's metadata has rapidocr's layout.
#[test]
fn dictionary_from_the_recognizer() {
    let path = root().join("models/real/ch_PP-OCRv4_rec_infer.onnx");
    let dict = ocr::Dictionary::from_rec_model(&path).expect("dictionary");
    assert_eq!(dict.len(), 6625);
    assert_eq!(dict.get(0), Some("blank"));
    assert_eq!(dict.get(6624), Some(" "));
    assert_eq!(dict.get(5710), Some("\u{3000}"));
    assert_eq!(&engine().lock().unwrap_or_else(|e| e.into_inner()).dictionary().entries(), &dict.entries());
}

/// The committed images load as 8-bit gray of the sizes sessions.json gives.
#[test]
fn images_load_as_gray() {
    let img: Image = ocr::load_png(root().join("data/images/s00.png")).expect("s00.png");
    assert_eq!((img.width, img.height, img.channels), (672, 160, 1));
    let bgr = img.to_bgr();
    assert_eq!(bgr.channels, 3);
    assert!(bgr.data.chunks_exact(3).all(|p| p[0] == p[1] && p[1] == p[2]));
}

/// The geometry and pixel operations against OpenCV and pyclipper on random cases, made by
/// `stages/src/ocr/crosscheck.py` (needs the reference venv): run with
/// `OCR_CROSSCHECK=target/ocr-crosscheck.json cargo test -p baton-stages --test ocr -- --ignored`.
/// Everything must be identical (the perspective matrix within a relative 1e-12).
#[test]
#[ignore = "needs OCR_CROSSCHECK, a file made by stages/src/ocr/crosscheck.py"]
fn crosscheck_against_opencv() {
    use baton_stages::ocr::{geometry, image};
    let path = std::env::var("OCR_CROSSCHECK").expect("set OCR_CROSSCHECK to the file crosscheck.py wrote");
    // Relative paths are taken from the repository root (tests run in examples/).
    let path = root().join(path);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let doc: Value = serde_json::from_str(&text).expect("JSON");
    let f = |v: &Value| v.as_f64().unwrap() as f32;
    let ints = |v: &Value| -> Vec<[i32; 2]> {
        v.as_array().unwrap().iter().map(|p| [p[0].as_i64().unwrap() as i32, p[1].as_i64().unwrap() as i32]).collect()
    };
    let floats = |v: &Value| -> Vec<[f32; 2]> { v.as_array().unwrap().iter().map(|p| [f(&p[0]), f(&p[1])]).collect() };
    let bytes = |v: &Value| -> Vec<u8> { v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as u8).collect() };
    let usize_of = |v: &Value| v.as_u64().unwrap() as usize;

    let mut contours = 0;
    for c in doc["contours"].as_array().unwrap() {
        let (w, h) = (usize_of(&c["w"]), usize_of(&c["h"]));
        let want: Vec<Vec<[i32; 2]>> = c["contours"].as_array().unwrap().iter().map(ints).collect();
        assert_eq!(geometry::find_contours(&bytes(&c["bitmap"]), w, h), want, "contours of a {w}x{h} bitmap");
        for (contour, r) in want.iter().zip(c["rects"].as_array().unwrap()) {
            assert_eq!(geometry::convex_hull(contour), ints(&r["hull"]), "hull of {contour:?}");
            let rect = geometry::min_area_rect(contour);
            let got = [rect.center[0], rect.center[1], rect.size[0], rect.size[1], rect.angle];
            let want: Vec<f32> = r["rect"].as_array().unwrap().iter().map(f).collect();
            assert_eq!(got.to_vec(), want, "minAreaRect of {contour:?}");
            assert_eq!(rect.points().to_vec(), floats(&r["points"]), "boxPoints of {contour:?}");
            contours += 1;
        }
    }
    for c in doc["fill"].as_array().unwrap() {
        let (w, h) = (usize_of(&c["w"]), usize_of(&c["h"]));
        let pts = ints(&c["points"]);
        assert_eq!(geometry::fill_poly_mask(&pts, w, h), bytes(&c["mask"]), "fillPoly of {pts:?}");
    }
    for c in doc["offset"].as_array().unwrap() {
        let quad = floats(&c["box"]);
        let ours = geometry::offset_round(&quad, c["distance"].as_f64().unwrap());
        let want: Vec<[i64; 2]> = ints(&c["offset"]).iter().map(|p| [p[0] as i64, p[1] as i64]).collect();
        assert!(want.iter().all(|p| ours.contains(p)), "offset of {quad:?}: {ours:?} lacks some of {want:?}");
        if let Some(r) = c["rect"].as_array() {
            let pts: Vec<[i32; 2]> = ours.iter().map(|p| [p[0] as i32, p[1] as i32]).collect();
            let rect = geometry::min_area_rect(&pts);
            let got = [rect.center[0], rect.center[1], rect.size[0], rect.size[1], rect.angle];
            assert_eq!(got.to_vec(), r.iter().map(f).collect::<Vec<_>>(), "minAreaRect of the offset of {quad:?}");
        }
    }
    for c in doc["warp"].as_array().unwrap() {
        let img = image::Image::from_raw(usize_of(&c["w"]), usize_of(&c["h"]), 1, bytes(&c["image"]));
        let q = floats(&c["quad"]);
        let (cw, ch) = (usize_of(&c["cw"]), usize_of(&c["ch"]));
        let quad = [q[0], q[1], q[2], q[3]];
        let crop = baton_stages::ocr::crop(&img, &quad).expect("crop");
        let want = bytes(&c["warped"]);
        if ch as f64 / cw as f64 >= 1.5 {
            assert_eq!(crop.data, image::Image::from_raw(cw, ch, 1, want).rot90().data, "warp of {quad:?}");
        } else {
            assert_eq!(crop.data, want, "warp of {quad:?}");
        }
        let resized = image::resize_linear(&img, usize_of(&c["rw"]), usize_of(&c["rh"]));
        assert_eq!(resized.data, bytes(&c["resized"]), "resize of {}x{}", img.width, img.height);
    }
    println!(
        "identical to OpenCV {} / pyclipper {}: {contours} contours (hull, rect, points), {} fills, {} offsets, {} warps and resizes",
        doc["opencv"].as_str().unwrap_or("?"),
        doc["pyclipper"].as_str().unwrap_or("?"),
        doc["fill"].as_array().unwrap().len(),
        doc["offset"].as_array().unwrap().len(),
        doc["warp"].as_array().unwrap().len()
    );
}
