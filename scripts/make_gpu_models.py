"""Models for the GPU figures (docs/gpu.md), written into DIR (default models/):

- mlp4096.onnx: a GPU-sized MLP, 4096 -> 4096 -> 4096 -> 4096 -> 1000 with ReLU
  (f32, seeded weights; 200 MB, so it is made where it runs, not carried);
- ocr_det_640.onnx / ocr_rec_320.onnx: PP-OCRv4 detection and recognition
  (models/real/) with every dimension but the batch fixed (det 3x640x640,
  rec 3x48x320), so a benchmark's generated inputs have the real sizes.

Usage: python3 scripts/make_gpu_models.py [DIR] [--mlp-only]   (needs onnx and numpy;
--mlp-only makes the MLP alone, before models/real/ is there)
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def mlp(path, widths=(4096, 4096, 4096, 4096, 1000), seed=0):
    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    x = "input"
    for i, (a, b) in enumerate(zip(widths, widths[1:])):
        w = (rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32)
        bias = (0.01 * rng.standard_normal(b)).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(bias, f"b{i}")]
        last = i == len(widths) - 2
        y = "output" if last else f"h{i}"
        nodes.append(helper.make_node("Gemm", [x, f"w{i}", f"b{i}"], [y if last else f"g{i}"]))
        if not last:
            nodes.append(helper.make_node("Relu", [f"g{i}"], [y]))
        x = y
    graph = helper.make_graph(
        nodes,
        "mlp4096",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", widths[0]])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["N", widths[-1]])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def fixed(src, dst, dims):
    """`src` with its one input's dims after the batch set to `dims`."""
    model = onnx.load(src)
    shape = model.graph.input[0].type.tensor_type.shape
    for d, n in zip(shape.dim[1:], dims):
        d.ClearField("dim_param")
        d.dim_value = n
    onnx.save(model, dst)


def main():
    args = [a for a in sys.argv[1:] if a != "--mlp-only"]
    out = args[0] if args else "models"
    real = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models", "real")
    os.makedirs(out, exist_ok=True)
    mlp(os.path.join(out, "mlp4096.onnx"))
    if "--mlp-only" in sys.argv:
        print(f"wrote mlp4096.onnx into {out}")
        return
    fixed(os.path.join(real, "ch_PP-OCRv4_det_infer.onnx"), os.path.join(out, "ocr_det_640.onnx"), (3, 640, 640))
    fixed(os.path.join(real, "ch_PP-OCRv4_rec_infer.onnx"), os.path.join(out, "ocr_rec_320.onnx"), (3, 48, 320))
    print(f"wrote mlp4096.onnx, ocr_det_640.onnx, ocr_rec_320.onnx into {out}")


if __name__ == "__main__":
    main()
