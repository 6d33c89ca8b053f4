//! The text-recognition node's Rust stages, around the PP-OCRv4 detector and
//! recognizer model stages (see [`crate::ocr`] for the algorithms):
//!
//! `image u8 [N,H,W]` ─ocr_det_input─► `x [N,3,H',W']` ─det model─► `sigmoid_0.tmp_0`
//! ─ocr_crops─► `x [crops,3,48,W]` (each request gets as many rows as it has
//! text boxes) ─rec model─► `softmax_11.tmp_0` ─ocr_decode─► `text u8 [N,L]`
//! and `text_features [N,256]` (one row per request again).
//!
//! Images of a batch arrive padded to the same size (the node's `pad` rule,
//! white); the padding holds no text, so boxes and crops are those of each
//! image. All crops of a batch go to the recognizer as one batch, padded to
//! the widest, where rapidocr batches six at a time by aspect ratio; the
//! recognized texts agree (see the tests in `baton-e2e`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use baton::{
    DType, Dim, Engine, EngineError, EngineProvider, FunctionStage, ModelSignature, NoParams, StageOutput,
    StageRequest, Tensor, TensorSpec,
};
use parking_lot::Mutex;

use super::features::{text_features, texts_tensor, BUCKETS};
use crate::ocr::{crop, ctc_decode, det_boxes, det_input, rec_input, DetSettings, Dictionary, Image, TEXT_SCORE};

fn dynamic(name: &str, dtype: DType, rank: usize) -> TensorSpec {
    TensorSpec { name: name.into(), dtype, shape: vec![Dim::Dynamic(None); rank] }
}

/// The images of a `u8 [N,H,W]` batch.
fn images(batch: &Tensor) -> Result<Vec<Image>, String> {
    let &[n, h, w] = batch.shape() else { return Err(format!("image batch {:?} is not [N,H,W]", batch.shape())) };
    let bytes = batch.as_slice::<u8>().map_err(|e| e.to_string())?;
    Ok((0..n).map(|i| Image::from_raw(w, h, 1, bytes[i * h * w..(i + 1) * h * w].to_vec())).collect())
}

/// `ocr_det_input`: gray images → the detector's normalized input.
pub fn det_input_stage() -> FunctionStage {
    let signature =
        ModelSignature { inputs: vec![dynamic("image", DType::U8, 3)], outputs: vec![dynamic("x", DType::F32, 4)] };
    FunctionStage::new(signature, |inputs, _rows| {
        let settings = DetSettings::default();
        let parts: Vec<Tensor> = images(inputs[0])?.iter().map(|img| det_input(img, &settings).0).collect();
        let refs: Vec<&Tensor> = parts.iter().collect();
        let x = baton::tensor::stitch(&refs).map_err(|e| e.to_string())?;
        Ok(StageOutput { tensors: vec![x], rows: None })
    })
}

/// `ocr_crops`: the detector's probability maps → text boxes → crops, as the recognizer's input.
pub fn crops_stage() -> FunctionStage {
    let signature = ModelSignature {
        inputs: vec![dynamic("image", DType::U8, 3), dynamic("sigmoid_0.tmp_0", DType::F32, 4)],
        outputs: vec![dynamic("x", DType::F32, 4)],
    };
    FunctionStage::new(signature, |inputs, _rows| {
        let settings = DetSettings::default();
        let mut crops = Vec::new();
        let mut counts = Vec::new();
        for (i, img) in images(inputs[0])?.iter().enumerate() {
            let (_, scale) = det_input(img, &settings);
            let prob = inputs[1].rows(i..i + 1);
            let boxes = det_boxes(&prob, &scale, &settings).map_err(|e| e.to_string())?;
            let before = crops.len();
            crops.extend(boxes.iter().filter_map(|q| crop(img, q)));
            counts.push(crops.len() - before);
        }
        let refs: Vec<&Image> = crops.iter().collect();
        let x = if refs.is_empty() {
            Tensor::zeros(DType::F32, vec![0, 3, crate::ocr::rec::REC_HEIGHT, crate::ocr::rec::REC_BASE_WIDTH])
                .map_err(|e| e.to_string())?
        } else {
            rec_input(&refs)
        };
        Ok(StageOutput { tensors: vec![x], rows: Some(counts) })
    })
}

/// `ocr_decode`: the recognizer's probabilities → each request's text (its
/// lines scoring at least 0.5, joined by a space) and text features. Its
/// `model` names the recognizer, whose metadata holds the dictionary.
#[derive(Default)]
pub struct DecodeStage {
    dictionaries: Mutex<HashMap<PathBuf, Arc<Dictionary>>>,
}

impl DecodeStage {
    fn signature() -> ModelSignature {
        ModelSignature {
            inputs: vec![dynamic("softmax_11.tmp_0", DType::F32, 3)],
            outputs: vec![
                dynamic("text", DType::U8, 2),
                TensorSpec {
                    name: "text_features".into(),
                    dtype: DType::F32,
                    shape: vec![Dim::Dynamic(None), Dim::Fixed(BUCKETS)],
                },
            ],
        }
    }

    fn dictionary(&self, stage: &StageRequest) -> Result<Arc<Dictionary>, EngineError> {
        let path = stage.model.clone().ok_or_else(|| EngineError::Setting {
            location: stage.location.clone(),
            message: "ocr_decode needs `model` = the recognizer (for its dictionary)".into(),
        })?;
        let _: NoParams = stage.params()?;
        let mut cache = self.dictionaries.lock();
        if let Some(dict) = cache.get(&path) {
            return Ok(Arc::clone(dict));
        }
        let dict = Arc::new(Dictionary::from_rec_model(&path).map_err(|e| EngineError::Load {
            location: stage.location.clone(),
            model: path.clone(),
            reason: e.0,
        })?);
        cache.insert(path, Arc::clone(&dict));
        Ok(dict)
    }
}

struct Decoder(Arc<Dictionary>);

impl Engine for Decoder {
    fn run(&mut self, inputs: &[&Tensor]) -> Result<Vec<Tensor>, EngineError> {
        let rows = [inputs[0].batch_rows()];
        self.run_tasks(inputs, &rows).map(|out| out.tensors)
    }

    fn run_tasks(&mut self, inputs: &[&Tensor], rows: &[usize]) -> Result<StageOutput, EngineError> {
        let mut texts = Vec::with_capacity(rows.len());
        let mut features = Vec::with_capacity(rows.len() * BUCKETS);
        let mut at = 0;
        for &r in rows {
            let lines = if r == 0 { Vec::new() } else { ctc_decode(&inputs[0].rows(at..at + r), &self.0)? };
            at += r;
            let kept: Vec<&str> = lines.iter().filter(|l| l.score >= TEXT_SCORE).map(|l| l.text.as_str()).collect();
            let text = kept.join(" ");
            features.extend(text_features(&text));
            texts.push(text);
        }
        let n = rows.len();
        let features = Tensor::from_vec(vec![n, BUCKETS], features).map_err(|e| e.to_string())?;
        Ok(StageOutput { tensors: vec![texts_tensor(&texts)?, features], rows: Some(vec![1; n]) })
    }
}

impl EngineProvider for DecodeStage {
    fn inspect(&self, stage: &StageRequest) -> Result<ModelSignature, EngineError> {
        self.dictionary(stage)?;
        Ok(Self::signature())
    }

    fn create(&self, stage: &StageRequest) -> Result<Box<dyn Engine>, EngineError> {
        Ok(Box::new(Decoder(self.dictionary(stage)?)))
    }
}
