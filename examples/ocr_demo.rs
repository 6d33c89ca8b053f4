//! OCR of the 16 committed text images with the PP-OCRv4 models and the pure-Rust processing of
//! `baton_stages::ocr`, with per-image timings of detection and recognition.
//!
//! Run with `cargo run --release -p baton-examples --example ocr [-- THREADS [REPEATS]]` after
//! `scripts/setup.sh` (ONNX Runtime and `models/real/`). THREADS is ONNX Runtime's intra-op thread
//! count per session (default 1); each image runs REPEATS times (default 5) after one warm-up run
//! and the median times are printed, with the share of the pure-Rust processing in parentheses.

use std::path::Path;
use std::time::{Duration, Instant};

use clap::Parser;

use baton_stages::ocr::{self, Image, OcrEngine};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Time in the pure-Rust steps alone (models excluded): detection pre+post, recognition pre+post.
fn processing_time(engine: &mut OcrEngine, img: &Image) -> Result<(Duration, Duration), Box<dyn std::error::Error>> {
    let settings = engine.settings.clone();
    let t = Instant::now();
    let (input, scale) = ocr::det_input(img, &settings);
    let mut det = t.elapsed();
    let prob = engine.det_probabilities(&input)?;
    let t = Instant::now();
    let boxes = ocr::det_boxes(&prob, &scale, &settings)?;
    let crops: Vec<Image> = boxes.iter().filter_map(|q| ocr::crop(img, q)).collect();
    det += t.elapsed();
    let t = Instant::now();
    let batches = ocr::rec_batches(&crops, ocr::REC_BATCH);
    let mut rec = t.elapsed();
    for b in &batches {
        let probs = engine.rec_probabilities(&b.input)?;
        let t = Instant::now();
        ocr::ctc_decode(&probs, engine.dictionary())?;
        rec += t.elapsed();
    }
    Ok((det, rec))
}

/// OCR of the 16 committed text images (PP-OCRv4), with the median detection and recognition
/// times per image and the share of the pure-Rust processing in parentheses.
#[derive(Parser)]
#[command(name = "ocr")]
struct Args {
    /// ONNX Runtime's intra-op thread count per session.
    #[arg(default_value_t = 1)]
    threads: usize,
    /// Timed runs per image, after one warm-up run.
    #[arg(default_value_t = 5)]
    repeats: usize,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Args { threads, repeats } = Args::parse();
    let repeats = repeats.max(1);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut engine = OcrEngine::from_dir(root.join("models/real"), threads)?;
    println!("ONNX Runtime intra-op threads per session: {threads}; {repeats} timed runs per image (median)");
    println!("id   size      boxes  det ms (rust)  rec ms (rust)  text");
    let (mut det_total, mut rec_total) = (Duration::ZERO, Duration::ZERO);
    let (mut det_rust_total, mut rec_rust_total) = (Duration::ZERO, Duration::ZERO);
    for i in 0..16 {
        let id = format!("s{i:02}");
        let img = ocr::load_png(root.join(format!("data/images/{id}.png")))?;
        let first = engine.run(&img)?;
        let (mut det, mut rec, mut det_rust, mut rec_rust) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..repeats {
            let out = engine.run(&img)?;
            det.push(out.det_time);
            rec.push(out.rec_time);
            let (d, r) = processing_time(&mut engine, &img)?;
            det_rust.push(d);
            rec_rust.push(r);
        }
        let (d, r) = (median(det), median(rec));
        let (dr, rr) = (median(det_rust), median(rec_rust));
        det_total += d;
        rec_total += r;
        det_rust_total += dr;
        rec_rust_total += rr;
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!(
            "{id}  {:>3}x{:<3}  {:>5}  {:>6.1} ({:>4.1})  {:>6.1} ({:>4.1})  {}",
            img.width,
            img.height,
            first.boxes.len(),
            ms(d),
            ms(dr),
            ms(r),
            ms(rr),
            first.text()
        );
    }
    let mean = |d: Duration| d.as_secs_f64() * 1e3 / 16.0;
    println!(
        "mean per image: detection {:.1} ms (pure Rust {:.2} ms), recognition {:.1} ms (pure Rust {:.2} ms)",
        mean(det_total),
        mean(det_rust_total),
        mean(rec_total),
        mean(rec_rust_total)
    );
    println!("(detection = input + model + boxes; recognition = crops + batches + model + CTC; in parentheses the");
    println!(" same without the models: det_input + det_boxes + crop, and rec_batches + ctc_decode)");
    Ok(())
}
