#!/usr/bin/env python3
"""Train the downstream recommender and export it to data/models/recommender.onnx (committed).

Usage: .venv/bin/python scripts/train_recommender.py
(installs scripts/requirements-ref.txt into the venv on first use; needs data/sessions.json and
data/reference/{vad,ocr}/ from make_speech.py and make_ocr_reference.py for its checks).

Model: scikit-learn LogisticRegression (lbfgs, multinomial, C=10) on a synthetic corpus of
template sentences (CORPUS_PER_CLASS per category, random.Random(SEED)), exported with skl2onnx
(zipmap off, opset 17 + ai.onnx.ml):
  input  `features`      f32 [N, 258]
  output `label`         int64 [N]     class index, names in data/models/recommender_labels.json
  output `probabilities` f32 [N, C]    C = 4: 0 billing, 1 shipping, 2 technical, 3 account

Features (reproduce exactly in Rust), for one session:
  [0..256)  text: the recognized text (the OCR texts of the session's image joined by " ").
            1. lowercase ASCII letters A-Z -> a-z (nothing else changes);
            2. split into tokens: maximal runs of ASCII [a-z0-9]; every other character (space,
               punctuation, any non-ASCII character) separates tokens; no empty tokens;
            3. for each token, FNV-1a 32-bit over its bytes:
                   h = 0x811C9DC5; for each byte b: h = ((h ^ b) * 0x01000193) mod 2^32
               and bucket = h mod 256; counts[bucket] += 1;
            4. L2 normalization: v = counts / sqrt(sum(counts^2)) computed in f64, then cast to
               f32 (all zeros stay zeros when there is no token).
            Test vectors: fnv1a32("invoice") = 0x5A906110 -> bucket 16; fnv1a32("") = 0x811C9DC5.
  [256]     speech fraction: (number of the stream's chunks with VAD prob > 0.5) / (number of
            chunks), chunks = all 512-sample chunks of the stream (the last one zero-padded)
  [257]     speech duration: (number of chunks with prob > 0.5) * 512 / 16000 seconds, / 10
  The two speech features are f32 of values computed in f64.
In the synthetic corpus the speech features are drawn at random, independent of the category
(the category comes from the text); they are inputs so the model joins both networks' results.

Checks (exit non-zero on failure): for every committed session the exported model, run with
onnxruntime, predicts the session's category from (a) the known image text and (b) rapidocr's
reference OCR text, each with the speech features of the reference VAD probabilities, and from
(c) the image text + the spoken sentence. Writes data/models/recommender_labels.json,
data/reference/recommender.json (per session: text, tokens, non-zero features, speech features,
expected label and probabilities) and expected_category / recommender fields in data/sessions.json.
"""
import json
import math
import os
import random
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import refdeps  # noqa: E402

refdeps.ensure()

from session_defs import CATEGORIES, load_sessions_json, save_sessions_json  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEED = 20240503
CORPUS_PER_CLASS = 300
BUCKETS = 256
N_FEATURES = BUCKETS + 2
CHUNK, SR, THRESHOLD = 512, 16000, 0.5


# ---------------------------------------------------------------- features (the contract)
def fnv1a32(data: bytes) -> int:
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def tokens(text):
    out, cur = [], []
    for ch in text:
        if "A" <= ch <= "Z":
            ch = chr(ord(ch) + 32)
        if "a" <= ch <= "z" or "0" <= ch <= "9":
            cur.append(ch)
        elif cur:
            out.append("".join(cur))
            cur = []
    if cur:
        out.append("".join(cur))
    return out


def text_features(text):
    counts = np.zeros(BUCKETS, dtype=np.float64)
    for t in tokens(text):
        counts[fnv1a32(t.encode()) % BUCKETS] += 1
    norm = math.sqrt(float((counts * counts).sum()))
    return (counts / norm if norm > 0 else counts).astype(np.float32)


def speech_features(probs):
    probs = np.asarray(probs, dtype=np.float32)
    on = int((probs > np.float32(THRESHOLD)).sum())
    return np.array([on / len(probs), on * CHUNK / SR / 10.0], dtype=np.float32)


def features(text, speech):
    return np.concatenate([text_features(text), np.asarray(speech, dtype=np.float32)])


# ---------------------------------------------------------------- synthetic corpus
TOPICS = {
    "billing": {
        "things": ["invoice", "bill", "monthly bill", "payment", "refund", "late fee", "statement",
                   "billing statement", "balance", "amount due", "credit card", "receipt", "charge",
                   "subscription fee", "tax", "price", "discount", "direct debit", "bank transfer"],
        "problems": ["was charged twice", "has a duplicate charge", "is higher this month",
                     "shows a wrong amount", "was declined", "is unpaid", "is overdue",
                     "needs a refund", "has an extra fee", "was not credited", "is too expensive"],
        "labels": ["Invoice", "Billing", "Payment", "Refund", "Amount due", "Balance", "Charge",
                   "Late fee", "Statement", "Payment method"],
    },
    "shipping": {
        "things": ["package", "parcel", "order", "delivery", "shipment", "tracking number",
                   "courier", "delivery address", "express shipping", "return label", "pickup",
                   "box", "shipping", "delivery date", "warehouse", "post office"],
        "problems": ["has not arrived", "is still in transit", "arrived damaged", "is late",
                     "was delivered to the wrong address", "was left at the wrong door",
                     "needs a new delivery address", "is lost", "shows no tracking update",
                     "was returned to the sender", "takes too long to ship"],
        "labels": ["Tracking number", "Delivery", "Shipping", "Parcel", "Order", "Courier",
                   "Return label", "Delivery address", "Express shipping", "Shipment"],
    },
    "technical": {
        "things": ["app", "router", "internet connection", "server", "software update", "upgrade",
                   "device", "wifi", "website", "screen", "installer", "error code", "system",
                   "network", "browser", "firmware", "service"],
        "problems": ["crashes on startup", "keeps dropping the connection", "shows an error",
                     "is very slow", "failed to install", "times out", "is unavailable",
                     "stopped working", "freezes", "needs a restart", "shows error 503",
                     "cannot connect to the internet"],
        "labels": ["Error", "Update failed", "Router status", "Server timeout", "Service unavailable",
                   "Crash report", "Connection lost", "System error", "Restart required"],
    },
    "account": {
        "things": ["password", "account", "login", "email address", "username", "profile",
                   "account settings", "sign in", "personal data", "security question",
                   "verification code", "two factor login", "user name", "membership"],
        "problems": ["is locked", "was locked after failed sign in attempts", "needs a reset",
                     "is wrong", "cannot be changed", "must be deleted", "was hacked",
                     "does not accept my password", "needs a new email", "is blocked",
                     "login failed"],
        "labels": ["Reset your password", "Login failed", "Account locked", "Account settings",
                   "Delete profile", "Sign in", "Change email", "Username", "Security"],
    },
}
OPENERS = ["", "", "I think", "Hello,", "Please help:", "Question:", "Hi, my", "Why", "Help:",
           "Urgent:", "I need help because", "Can you check why"]
CLOSERS = ["", "", "", "please", "thank you", "again", "since Monday", "today", "what should I do",
           "for order 5521", "reference 2231", "on Friday", "please advise"]
STATUS = ["failed", "pending", "open", "needed", "required", "declined", "on hold", "updated", "new"]


def synth(rng, cat):
    t = TOPICS[cat]
    form = rng.randrange(5)
    if form == 0:
        s = f"{rng.choice(OPENERS)} the {rng.choice(t['things'])} {rng.choice(t['problems'])} {rng.choice(CLOSERS)}"
    elif form == 1:
        s = f"{rng.choice(t['labels'])}: {rng.choice(t['things'])} {rng.choice(STATUS)} {rng.randrange(1, 9999)}"
    elif form == 2:
        s = f"My {rng.choice(t['things'])} {rng.choice(t['problems'])} and the {rng.choice(t['things'])} " \
            f"{rng.choice(t['problems'])}"
    elif form == 3:
        s = f"{rng.choice(t['labels'])} {rng.choice(t['labels']).lower()} {rng.choice(CLOSERS)}"
    else:
        s = f"{rng.choice(OPENERS)} I want to change the {rng.choice(t['things'])} {rng.choice(CLOSERS)}"
    return " ".join(s.split())


def corpus():
    rng = random.Random(SEED)
    xs, ys, texts = [], [], []
    for ci, cat in enumerate(CATEGORIES):
        for _ in range(CORPUS_PER_CLASS):
            text = synth(rng, cat)
            frac = rng.uniform(0.2, 0.9)
            dur = rng.uniform(0.5, 3.0)
            xs.append(features(text, [frac, dur / 10.0]))
            ys.append(ci)
            texts.append(text)
    return np.stack(xs), np.array(ys, dtype=np.int64), texts


# ---------------------------------------------------------------- main
def main():
    import onnxruntime as ort
    from skl2onnx import to_onnx
    from skl2onnx.common.data_types import FloatTensorType
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split

    assert fnv1a32(b"") == 0x811C9DC5 and fnv1a32(b"invoice") == 0x5A906110
    x, y, texts = corpus()
    xtr, xte, ytr, yte = train_test_split(x, y, test_size=0.2, random_state=0, stratify=y)
    held = LogisticRegression(C=10.0, max_iter=5000).fit(xtr, ytr)
    print(f"corpus {len(y)} sentences ({CORPUS_PER_CLASS} per class); e.g. {texts[0]!r}, {texts[-1]!r}")
    print(f"held-out accuracy (80/20 split): {held.score(xte, yte):.3f}")
    clf = LogisticRegression(C=10.0, max_iter=5000).fit(x, y)
    print(f"training accuracy (all): {clf.score(x, y):.3f}")

    onx = to_onnx(clf, initial_types=[("features", FloatTensorType([None, N_FEATURES]))],
                  options={id(clf): {"zipmap": False}}, target_opset={"": 17, "ai.onnx.ml": 3})
    # Name the outputs as the contract says (skl2onnx: output_label, output_probability).
    rename = {"output_label": "label", "output_probability": "probabilities"}
    for node in onx.graph.node:
        node.output[:] = [rename.get(o, o) for o in node.output]
    for o in onx.graph.output:
        o.name = rename.get(o.name, o.name)
    onx.graph.output[0].type.tensor_type.shape.dim[0].dim_param = "N"
    onx.graph.output[1].type.tensor_type.shape.dim[0].dim_param = "N"
    onx.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "N"
    del onx.metadata_props[:]
    for k, v in [("made_by", "scripts/train_recommender.py"),
                 ("labels", json.dumps(dict(enumerate(CATEGORIES)))),
                 ("features", "256 FNV-1a text buckets (L2-normalized) + speech fraction + speech seconds/10")]:
        onx.metadata_props.add(key=k, value=v)
    os.makedirs(os.path.join(ROOT, "data/models"), exist_ok=True)
    model_path = os.path.join(ROOT, "data/models/recommender.onnx")
    with open(model_path, "wb") as f:
        f.write(onx.SerializeToString())
    with open(os.path.join(ROOT, "data/models/recommender_labels.json"), "w") as f:
        json.dump({str(i): c for i, c in enumerate(CATEGORIES)}, f, indent=2)
        f.write("\n")

    sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    print("onnx io:", [(i.name, i.type, i.shape) for i in sess.get_inputs()],
          [(o.name, o.type, o.shape) for o in sess.get_outputs()])
    lab, prob = sess.run(None, {"features": x[:64]})
    assert np.array_equal(lab, clf.predict(x[:64])) and np.abs(prob - clf.predict_proba(x[:64])).max() < 1e-5

    doc = load_sessions_json(ROOT)
    refs, failures, rows = [], [], []
    for s in doc["sessions"]:
        vad = json.load(open(os.path.join(ROOT, f"data/reference/vad/{s['id']}.json")))
        ocr = json.load(open(os.path.join(ROOT, f"data/reference/ocr/{s['id']}.json")))
        sp = speech_features(vad["probs"])
        want = CATEGORIES.index(s["category"])
        variants = {"image_text": s["image_text"], "ocr_text": ocr["text"],
                    "image_text+sentence": s["image_text"] + " " + s["sentence"]}
        feats = np.stack([features(t, sp) for t in variants.values()])
        labels, probs = sess.run(None, {"features": feats})
        for (name, _), l in zip(variants.items(), labels):
            if l != want:
                failures.append(f"{s['id']}: {name} -> {CATEGORIES[l]}, expected {s['category']}")
        f_ocr = feats[1]
        s["expected_category"] = s["category"]
        s["recommender_text"] = ocr["text"]
        s["speech_features"] = [float(v) for v in sp]
        refs.append({
            "session": s["id"], "text": ocr["text"], "tokens": tokens(ocr["text"]),
            "text_features_nonzero": {str(i): float(f_ocr[i]) for i in np.nonzero(f_ocr[:BUCKETS])[0]},
            "speech_features": [float(v) for v in sp],
            "expected_label": want, "expected_category": s["category"],
            "probabilities": [float(p) for p in probs[1]],
        })
        s["expected_label"] = want
        rows.append((s["id"], s["category"], [CATEGORIES[l] for l in labels], float(probs[1][want]), sp))
    doc["recommender"] = {
        "made_by": "scripts/train_recommender.py", "model": "models/recommender.onnx",
        "labels": "models/recommender_labels.json",
        "recommender_text": "the text the pipeline featurizes: rapidocr's reference OCR texts joined by ' '",
        "speech_features": "[fraction of chunks with VAD prob > 0.5, seconds of such chunks / 10]",
    }
    save_sessions_json(ROOT, doc)
    with open(os.path.join(ROOT, "data/reference/recommender.json"), "w") as f:
        json.dump({"model": "data/models/recommender.onnx", "labels": CATEGORIES,
                   "features": "see scripts/train_recommender.py docstring; text = ocr reference text",
                   "sessions": refs}, f, indent=1)
        f.write("\n")
    for r in rows:
        print(f"{r[0]} {r[1]:9s} predicted (image, ocr, image+sentence) = {r[2]} p={r[3]:.3f} "
              f"speech=[{r[4][0]:.3f}, {r[4][1]:.4f}]")
    if failures:
        print("\n".join(["FAILED:"] + failures))
        sys.exit(1)
    print("all sessions predicted as their category")


if __name__ == "__main__":
    main()
