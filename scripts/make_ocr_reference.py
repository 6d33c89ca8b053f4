#!/usr/bin/env python3
"""Reference OCR outputs for the committed text images, from rapidocr-onnxruntime's own pipeline.

Usage: .venv/bin/python scripts/make_ocr_reference.py
(after scripts/setup.sh and make_text_images.py; installs scripts/requirements-ref.txt into the
venv on first use). Writes data/reference/ocr/<id>.json and prints the character accuracy of
rapidocr against the known text per image; exits non-zero if any image is below 95%.

The pipeline is rapidocr_onnxruntime.RapidOCR 1.4.4 with its config.yaml except two detection
settings: det_limit_type "max" and det_limit_side_len 960 (PaddleOCR's own defaults; rapidocr's
"min"/736 would upscale a 128-px-high image ~6x to e.g. 736x4224, ~6x the time, and make the
detector input depend on OpenCV's bilinear resize). With these settings and image sizes that are
multiples of 32 and <= 960, the detector input is the image itself (no resize, no letterbox).
The models are the ones setup.sh extracted into models/real/ (same wheel, same bytes).

Everything the Rust side needs to mirror is in each JSON's "settings", and per image: the
detector's input/output shapes and output statistics, the DB post-processing boxes (detector
coordinates, before and after ordering/clipping/sorting), the crops, the classifier's answers,
the recognizer's batch input shape and per-crop argmax index sequences, and the texts and scores.
"""
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import refdeps  # noqa: E402

refdeps.ensure()

from session_defs import load_sessions_json  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REAL = os.path.join(ROOT, "models", "real")
DET_OVERRIDES = {"det_limit_type": "max", "det_limit_side_len": 960}
MIN_ACCURACY = 0.95


def levenshtein(a, b):
    d = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, d[0] = d[0], i
        for j, cb in enumerate(b, 1):
            prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (ca != cb))
    return d[-1]


def char_accuracy(got, want):
    return 1.0 - levenshtein(got, want) / len(want)


class Spy:
    """Wraps an OrtInferSession: records the shapes (and the output) of every call."""

    def __init__(self, inner):
        self.inner, self.calls = inner, []

    def __call__(self, x):
        out = self.inner(x)
        self.calls.append((x, out[0]))
        return out

    def __getattr__(self, name):
        return getattr(self.inner, name)


def settings(eng, cfg):
    det, rec, cls = cfg["Det"], cfg["Rec"], cfg["Cls"]
    chars = rec_character_list(eng)
    return {
        "pipeline": "rapidocr_onnxruntime.RapidOCR 1.4.4, config.yaml + " + json.dumps(DET_OVERRIDES),
        "image_load": "PIL -> numpy; grayscale (mode L) -> cv2.COLOR_GRAY2BGR, so B=G=R=gray",
        "global": {k: cfg["Global"][k] for k in ("text_score", "min_height", "width_height_ratio",
                                                  "max_side_len", "min_side_len", "use_cls")},
        "global_notes": "preprocess: resize only if max side > max_side_len or min side < min_side_len "
                        "(never for these images); letterbox (black top/bottom padding) only if "
                        "h <= min_height or w/h > width_height_ratio (never here); final results "
                        "keep only crops with rec score >= text_score",
        "det": {
            "model": "models/real/ch_PP-OCRv4_det_infer.onnx", "input": "x", "output": "sigmoid_0.tmp_0",
            "limit_type": DET_OVERRIDES["det_limit_type"], "limit_side_len": DET_OVERRIDES["det_limit_side_len"],
            "resize": "ratio = limit/max(h,w) if max(h,w) > limit else 1; h' = round(int(h*ratio)/32)*32, "
                      "w' likewise (Python round: half to even); cv2.resize(INTER_LINEAR) to (w',h') "
                      "- identity for these images",
            "normalize": "x = (pixel/255 - mean) / std per channel, channel order BGR, NCHW float32",
            "mean": det["mean"], "std": det["std"],
            "thresh": det["thresh"], "box_thresh": det["box_thresh"], "unclip_ratio": det["unclip_ratio"],
            "use_dilation": det["use_dilation"], "dilation_kernel": [[1, 1], [1, 1]],
            "score_mode": det["score_mode"], "max_candidates": det["max_candidates"], "min_size": 3,
            "postprocess": "bitmap = prob > thresh; dilate 2x2; cv2.findContours(RETR_LIST, "
                           "CHAIN_APPROX_SIMPLE); per contour: minAreaRect -> 4 points (get_mini_boxes "
                           "order), skip if short side < min_size; score = mean prob inside the box "
                           "polygon (fast mode, cv2.fillPoly mask over the box's bounding rect); skip "
                           "if score < box_thresh; unclip: pyclipper offset (JT_ROUND, closed polygon) "
                           "by distance = area*unclip_ratio/perimeter (shapely); minAreaRect again; "
                           "skip if short side < min_size+2; scale x by W_img/W_det, y by H_img/H_det, "
                           "round, clip to [0,W]/[0,H]; int32",
            "filter": "order points clockwise from top-left (tl,tr,br,bl by x then y sort), clip each "
                      "point to [0,W-1]x[0,H-1] (int), drop boxes with width or height <= 3",
            "sort": "by (tl.y, tl.x); then bubble: if |y_next - y| < 10 and x_next < x, swap",
        },
        "crop": "w = int(max(|p0-p1|, |p2-p3|)), h = int(max(|p0-p3|, |p1-p2|)); "
                "cv2.getPerspectiveTransform(box -> [[0,0],[w,0],[w,h],[0,h]]); cv2.warpPerspective "
                "(INTER_CUBIC, BORDER_REPLICATE) to (w,h); if h/w >= 1.5 rotate 90 (np.rot90)",
        "cls": {
            "model": "models/real/ch_ppocr_mobile_v2.0_cls_infer.onnx", "image_shape": cls["cls_image_shape"],
            "thresh": cls["cls_thresh"], "labels": cls["label_list"], "batch": cls["cls_batch_num"],
            "note": "rotates a crop 180 degrees when label '180' has score > thresh; for these images "
                    "every crop is '0' (see each file's cls), so the Rust pipeline may skip this stage",
        },
        "rec": {
            "model": "models/real/ch_PP-OCRv4_rec_infer.onnx", "input": "x", "output": "softmax_11.tmp_0",
            "image_shape": rec["rec_img_shape"], "batch": rec["rec_batch_num"],
            "batching": "crops sorted by w/h ascending, batches of `batch`; per batch max_wh_ratio = "
                        "max(320/48, w/h of its crops); batch width W = int(48*max_wh_ratio)",
            "resize": "resized_w = min(W, ceil(48*w/h)); cv2.resize(INTER_LINEAR) to (resized_w, 48)",
            "normalize": "x = (pixel/255 - 0.5)/0.5, BGR, CHW; zero padding (i.e. gray 127.5) on the "
                         "right from resized_w to W",
            "output": "[N, W/8, 6625] softmax probabilities",
            "ctc_decode": "per time step argmax index and its prob; drop a step whose index equals the "
                          "previous step's index (collapse repeats, comparing raw consecutive steps), "
                          "then drop index 0 (blank); text = concatenation of dictionary[index]; "
                          "score = mean of the kept steps' probs (0 if none kept)",
            "dictionary": f"index 0 = 'blank' (CTC blank), indices 1..{len(chars) - 2} = the lines of "
                          "the model metadata value `character` (custom_metadata_map['character'] split "
                          f"with str.splitlines(), {len(chars) - 2} entries), index {len(chars) - 1} = ' ' "
                          "(a space appended by rapidocr)",
            "dictionary_size": len(chars),
        },
    }


def rec_character_list(eng):
    return eng.text_rec.postprocess_op.character


def main():
    from rapidocr_onnxruntime import RapidOCR

    eng = RapidOCR(det_model_path=os.path.join(REAL, "ch_PP-OCRv4_det_infer.onnx"),
                   rec_model_path=os.path.join(REAL, "ch_PP-OCRv4_rec_infer.onnx"),
                   cls_model_path=os.path.join(REAL, "ch_ppocr_mobile_v2.0_cls_infer.onnx"),
                   **DET_OVERRIDES)
    from rapidocr_onnxruntime.utils import read_yaml
    import rapidocr_onnxruntime
    cfg = read_yaml(os.path.join(os.path.dirname(rapidocr_onnxruntime.__file__), "config.yaml"))
    st = settings(eng, cfg)
    assert eng.text_det.limit_type == "max" and eng.text_det.limit_side_len == 960

    det_spy = eng.text_det.infer = Spy(eng.text_det.infer)
    rec_spy = eng.text_rec.session = Spy(eng.text_rec.session)
    post = eng.text_det.postprocess_op
    post_calls = []
    orig_post = post.__call__

    class PostSpy:
        def __call__(self, pred, shape):
            boxes, scores = orig_post(pred, shape)
            post_calls.append((boxes.copy(), list(scores)))
            return boxes, scores

        def __getattr__(self, name):
            return getattr(post, name)

    eng.text_det.postprocess_op = PostSpy()
    crops = []
    orig_crop = eng.get_crop_img_list

    def crop_spy(img, boxes):
        out = orig_crop(img, boxes)
        crops.append([list(c.shape[:2]) for c in out])
        return out

    eng.get_crop_img_list = crop_spy
    cls_calls = []
    orig_cls = eng.text_cls.__call__

    class ClsSpy:
        def __call__(self, imgs):
            r = orig_cls(imgs)
            cls_calls.append([[lab, float(s)] for lab, s in r[1]])
            return r

    eng.text_cls = ClsSpy()

    doc = load_sessions_json(ROOT)
    os.makedirs(os.path.join(ROOT, "data/reference/ocr"), exist_ok=True)
    rows, failures = [], []
    for s in doc["sessions"]:
        det_spy.calls.clear(), rec_spy.calls.clear(), post_calls.clear(), crops.clear(), cls_calls.clear()
        t0 = time.perf_counter()
        result, elapse = eng(os.path.join(ROOT, "data", s["image"]))
        wall = time.perf_counter() - t0
        result = result or []
        texts = [r[1] for r in result]
        got = " ".join(texts)
        acc = char_accuracy(got, s["image_text"])
        (det_in, det_out), = det_spy.calls
        raw_boxes, raw_scores = post_calls[0]
        rec_batches = []
        for x, y in rec_spy.calls:
            rec_batches.append({"input_shape": list(x.shape), "output_shape": list(y.shape),
                                "argmax": y.argmax(axis=2).tolist()})
        # rapidocr's recognizer runs crops sorted by aspect ratio: map back to reading order.
        ratios = [w / h for h, w in crops[0]]
        order = list(np.argsort(np.array(ratios), kind="quicksort"))
        argmax_by_crop = [None] * len(ratios)
        k = 0
        for b in rec_batches:
            for row in b["argmax"]:
                argmax_by_crop[order[k]] = row
                k += 1
        ref = {
            "session": s["id"], "image": s["image"], "image_size": s["image_size"],
            "known_text": s["image_text"], "known_lines": s["image_lines"],
            "det_input_shape": list(det_in.shape), "det_output_shape": list(det_out.shape),
            "det_output_stats": {"mean": float(det_out.mean()), "max": float(det_out.max()),
                                 "pixels_above_thresh": int((det_out > st["det"]["thresh"]).sum())},
            "det_db_boxes": [{"points": b.tolist(), "score": float(sc)} for b, sc in zip(raw_boxes, raw_scores)],
            "crops_hw": crops[0],
            "cls": cls_calls[0] if cls_calls else [],
            "rec_batches": [{k2: v for k2, v in b.items() if k2 != "argmax"} for b in rec_batches],
            "results": [{"box": [[float(v) for v in p] for p in r[0]], "text": r[1], "score": float(r[2]),
                         "rec_argmax": argmax_by_crop[i]}
                        for i, r in enumerate(result)],
            "texts": texts, "text": got, "char_accuracy": acc,
            "char_accuracy_def": "1 - levenshtein(' '.join(texts), known_text) / len(known_text)",
            "settings": st,
        }
        assert len(result) == len(crops[0]), "a crop was filtered by text_score; argmax mapping assumes none"
        with open(os.path.join(ROOT, f"data/reference/ocr/{s['id']}.json"), "w") as f:
            json.dump(ref, f, indent=1)
            f.write("\n")
        if acc < MIN_ACCURACY:
            failures.append(f"{s['id']}: char accuracy {acc:.3f} < {MIN_ACCURACY}")
        rows.append((s["id"], s["image_size"], list(det_in.shape), len(result), acc, wall, got))
    tot_err = sum(levenshtein(" ".join(json.load(open(os.path.join(ROOT, f"data/reference/ocr/{r[0]}.json")))["texts"]),
                              s["image_text"]) for r, s in zip(rows, doc["sessions"]))
    tot_len = sum(len(s["image_text"]) for s in doc["sessions"])
    for r in rows:
        print(f"{r[0]} {r[1][0]}x{r[1][1]} det_in {r[2]} boxes {r[3]} acc {r[4]:.4f} {r[5]*1000:6.0f} ms  {r[6]}")
    print(f"overall char accuracy {1 - tot_err / tot_len:.4f} ({tot_err} edits / {tot_len} chars)")
    if failures:
        print("\n".join(["FAILED:"] + failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
