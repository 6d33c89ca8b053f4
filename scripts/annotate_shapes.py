#!/usr/bin/env python3
"""Shape-annotated copies of the real models for the graph partitioner.

ONNX shape inference with fixed input shapes, so every activation tensor has a
size (the partitioner weighs operator relations by tensor bytes). Usage:
    annotate_shapes.py MODELS_REAL_DIR OUT_DIR
Inputs: PP-OCRv4 det x=[1,3,640,640], rec x=[1,3,48,320]; silero-vad input=[1,512],
state=[2,1,128], sr=[] (16 kHz). Other symbolic dimensions become 1.
"""
import sys
from pathlib import Path

import onnx

SHAPES = {
    "ch_PP-OCRv4_det_infer.onnx": {"x": [1, 3, 640, 640]},
    "ch_PP-OCRv4_rec_infer.onnx": {"x": [1, 3, 48, 320]},
    "silero_vad.onnx": {"input": [1, 512], "state": [2, 1, 128], "sr": []},
}


def main(src: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, shapes in SHAPES.items():
        model = onnx.load(str(src / name))
        for inp in model.graph.input:
            dims = inp.type.tensor_type.shape.dim
            fixed = shapes.get(inp.name)
            if fixed is not None and len(fixed) != len(dims):
                del dims[:]
                for _ in fixed:
                    dims.add()
            for i, d in enumerate(dims):
                d.dim_value = fixed[i] if fixed is not None else (d.dim_value or 1)
        inferred = onnx.shape_inference.infer_shapes(model)
        onnx.save(inferred, str(out / name))
        print(f"{name}: {len(inferred.graph.value_info)} annotated tensors")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
