#!/usr/bin/env python3
"""Check models/real/ (made by fetch_real_models.py) against the committed data. Not run by setup.

Usage: .venv/bin/python scripts/check_real_models.py

1. vad_batched.onnx == silero_vad.onnx, bit for bit, chunk by chunk, on the 16 committed speech
   WAVs (data/speech/), at batch 1 (each stream alone) and with all 16 streams stacked in one
   batch (one state row per stream; a stream leaves the batch after its last chunk, so the batch
   shrinks from 16 as the shorter streams end). The original model is run on the same batch.
2. The stacked (batched) run vs each stream run alone: max |difference| of probs and states
   (reported; batching changes the GEMM shapes, so tiny float differences are possible), and the
   per-chunk decision prob > 0.5 must be identical.
3. The batch-1 probs equal data/reference/vad/<id>.json (made by make_speech.py) exactly.
4. The PP-OCRv4 det/rec models and the classifier load; their io signatures and the rec model's
   `character` metadata are as documented in data/README.md.
Exits non-zero on any failure.
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vadlib  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REAL = os.path.join(ROOT, "models", "real")
failures = []


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg)
    if not cond:
        failures.append(msg)


def sig(sess):
    return ([(i.name, i.type, i.shape) for i in sess.get_inputs()],
            [(o.name, o.type, o.shape) for o in sess.get_outputs()])


def main():
    orig = vadlib.session(os.path.join(REAL, "silero_vad.onnx"))
    wrap = vadlib.session(os.path.join(REAL, "vad_batched.onnx"))
    ins, outs = sig(wrap)
    print("vad_batched.onnx:", ins, outs)
    check([(n, t) for n, t, _ in ins] == [("chunk", "tensor(float)"), ("state", "tensor(float)")]
          and ins[0][2][1:] == [576] and ins[1][2][1:] == [2, 128], "vad_batched inputs chunk[N,576], state[N,2,128]")
    check([(n, t) for n, t, _ in outs] == [("prob", "tensor(float)"), ("new_state", "tensor(float)")],
          "vad_batched outputs prob, new_state")

    sessions = json.load(open(os.path.join(ROOT, "data/sessions.json")))["sessions"]
    streams = [vadlib.model_inputs(vadlib.to_f32(vadlib.read_wav_int16(os.path.join(ROOT, "data", s["wav"]))))
               for s in sessions]
    sr = np.array(16000, dtype=np.int64)

    # 1a + 3: batch 1, each stream alone.
    solo_probs, solo_states = [], []
    exact_b1 = True
    for s, chunks in zip(sessions, streams):
        st_w = np.zeros((1, 2, 128), np.float32)
        st_o = np.zeros((2, 1, 128), np.float32)
        probs, states = [], []
        for x in chunks:
            p_o, st_o = orig.run(None, {"input": x[None], "state": st_o, "sr": sr})
            p_w, st_w = wrap.run(None, {"chunk": x[None], "state": st_w})
            exact_b1 &= np.array_equal(p_o, p_w) and np.array_equal(st_o.transpose(1, 0, 2), st_w)
            probs.append(p_w[0, 0])
            states.append(st_w[0])
        probs = np.array(probs, np.float32)
        ref = json.load(open(os.path.join(ROOT, f"data/reference/vad/{s['id']}.json")))
        check(np.array_equal(probs, np.array(ref["probs"], np.float32)),
              f"{s['id']}: batch-1 probs == data/reference/vad/{s['id']}.json ({len(probs)} chunks)")
        solo_probs.append(probs)
        solo_states.append(np.array(states))
    check(exact_b1, "batch 1: wrapper == original bit for bit (prob and state, every chunk, 16 streams)")

    # 1b + 2: all 16 streams stacked in one batch.
    n = len(streams)
    steps = max(len(c) for c in streams)
    state = np.zeros((n, 2, 128), np.float32)
    batched = [[] for _ in range(n)]
    bstates = [[] for _ in range(n)]
    exact_bn = True
    sizes = []
    for t in range(steps):
        rows = [i for i in range(n) if t < len(streams[i])]
        sizes.append(len(rows))
        x = np.stack([streams[i][t] for i in rows])
        st = state[rows]
        p_w, st_w = wrap.run(None, {"chunk": x, "state": st})
        p_o, st_o = orig.run(None, {"input": x, "state": np.ascontiguousarray(st.transpose(1, 0, 2)), "sr": sr})
        exact_bn &= np.array_equal(p_o, p_w) and np.array_equal(st_o.transpose(1, 0, 2), st_w)
        state[rows] = st_w
        for j, i in enumerate(rows):
            batched[i].append(p_w[j, 0])
            bstates[i].append(st_w[j])
    check(exact_bn, f"stacked batch (16 streams, batch {max(sizes)}..{min(sizes)}): wrapper == original "
                    "bit for bit (prob and state, every chunk)")
    dp = max(float(np.abs(np.array(b, np.float32) - s).max()) for b, s in zip(batched, solo_probs))
    ds = max(float(np.abs(np.array(b) - s).max()) for b, s in zip(bstates, solo_states))
    same_bits = all(np.array_equal(np.array(b, np.float32), s) for b, s in zip(batched, solo_probs))
    same_dec = all(np.array_equal(np.array(b) > 0.5, s > 0.5) for b, s in zip(batched, solo_probs))
    print(f"     stacked vs alone: max |dprob| = {dp:.3g}, max |dstate| = {ds:.3g}, "
          f"bit-identical probs: {same_bits}")
    check(same_dec and dp < 1e-4, "stacked vs alone: same speech decisions (prob > 0.5), |dprob| < 1e-4")

    # 4: OCR models.
    det = vadlib.session(os.path.join(REAL, "ch_PP-OCRv4_det_infer.onnx"))
    rec = vadlib.session(os.path.join(REAL, "ch_PP-OCRv4_rec_infer.onnx"))
    cls = vadlib.session(os.path.join(REAL, "ch_ppocr_mobile_v2.0_cls_infer.onnx"))
    for name, s in [("det", det), ("rec", rec), ("cls", cls)]:
        print(f"     {name}: {sig(s)}")
    y = det.run(None, {"x": np.zeros((1, 3, 128, 320), np.float32)})[0]
    check(y.shape == (1, 1, 128, 320), f"det x[1,3,128,320] -> {y.shape}")
    y = rec.run(None, {"x": np.zeros((2, 3, 48, 320), np.float32)})[0]
    chars = rec.get_modelmeta().custom_metadata_map["character"].splitlines()
    check(y.shape == (2, 40, len(chars) + 2),
          f"rec x[2,3,48,320] -> {y.shape}; metadata `character` has {len(chars)} lines (+ blank + space = {len(chars) + 2})")
    if failures:
        print(f"{len(failures)} check(s) FAILED")
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
