#!/usr/bin/env python3
"""Sanity-check the generated test models (usage: check_models.py [MODELDIR], default models/).

Loads every *.onnx with onnxruntime.InferenceSession and runs it on random inputs with batch 3
(batch 1 where the model's batch dim is static), checking output names, dtypes and shapes,
plus the exact semantics of the small arithmetic models. Not run by setup.sh.
"""
import glob
import os
import sys

import numpy as np
import onnxruntime as ort

DTYPES = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(int64)": np.int64,
          "tensor(int32)": np.int32, "tensor(uint8)": np.uint8, "tensor(bool)": np.bool_}


def random_input(rng, meta):
    shape = [3 if isinstance(d, str) or d is None else d for d in meta.shape]
    dt = DTYPES[meta.type]
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dt, np.integer):
        return rng.integers(0, 100, shape).astype(dt)
    return rng.standard_normal(shape).astype(dt)


def main():
    mdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "models")
    rng = np.random.default_rng(123)
    paths = sorted(glob.glob(os.path.join(mdir, "*.onnx")))
    assert paths, f"no models in {mdir}"
    for path in paths:
        name = os.path.basename(path)[:-5]
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        feeds = {i.name: random_input(rng, i) for i in sess.get_inputs()}
        outs = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
        for o in sess.get_outputs():
            v = outs[o.name]
            assert v.dtype == DTYPES[o.type], (name, o.name, v.dtype, o.type)
            want = [3 if isinstance(d, str) or d is None else d for d in o.shape]
            assert list(v.shape) == want, (name, o.name, v.shape, want)
        if name == "two_io":
            np.testing.assert_allclose(outs["sum"], feeds["a"] + feeds["b"], rtol=1e-6)
        if name == "dtypes":
            assert (outs["f16_out"] == feeds["f16"] * np.float16(2)).all()
            assert (outs["i64_out"] == feeds["i64"] + 1).all()
            assert (outs["i32_out"] == feeds["i32"] + 1).all()
            assert (outs["u8_out"] == feeds["u8"]).all()
            assert (outs["flag_out"] == ~feeds["flag"]).all()
        if name == "fixed_batch":
            np.testing.assert_allclose(outs["y"], feeds["x"] * 3, rtol=1e-6)
        sig = lambda xs: ", ".join(f"{x.name}:{x.type[7:-1]}{x.shape}" for x in xs)
        print(f"ok {name:12s} ({sig(sess.get_inputs())}) -> ({sig(sess.get_outputs())})")
    print(f"all {len(paths)} models ok")


if __name__ == "__main__":
    main()
