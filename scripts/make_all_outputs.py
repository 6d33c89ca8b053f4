#!/usr/bin/env python3
"""A copy of an ONNX model whose graph outputs also include every intermediate float tensor.

    .venv/bin/python scripts/make_all_outputs.py MODEL.onnx OUT.onnx

Writes OUT.onnx (the model, its original outputs first, then each f32 tensor that a node
produces and onnx.shape_inference typed, in node order) and OUT.nodes.json beside it: the
graph's nodes in the file's (topological) order with their op type, inputs, outputs and
non-tensor attributes, plus the graph inputs, initializer names, original outputs and which
outputs were exported. `examples/provider_diff.rs` reads both to compare every node's result
between two execution providers (docs/gpu.md, "Finding where CUDA and the CPU differ").

Outputs of `Constant` nodes are not exported (they are the same on every provider). Note that
exposing an intermediate tensor as a graph output stops ONNX Runtime from fusing the node that
produces it with its consumer, so the copy may run different kernels from the original.
"""

import json
import sys
from pathlib import Path

import onnx
from onnx import helper, shape_inference


def attribute_summary(attr):
    """A JSON-friendly value of a non-tensor attribute (tensors and graphs are summarized)."""
    value = helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, (int, float, str)):
        return value
    if isinstance(value, list):
        return [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in value
                if isinstance(v, (int, float, str, bytes))]
    return f"<{type(value).__name__}>"


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    src, dst = Path(argv[1]), Path(argv[2])
    model = onnx.load(str(src))
    inferred = shape_inference.infer_shapes(model)
    graph = model.graph
    typed = {vi.name: vi for vi in list(inferred.graph.value_info) + list(inferred.graph.output)}
    original_outputs = [o.name for o in graph.output]
    already = set(original_outputs)
    exported, skipped = [], []
    for node in graph.node:
        if node.op_type == "Constant":
            continue
        for name in node.output:
            if not name or name in already:
                continue
            vi = typed.get(name)
            if vi is None or not vi.type.HasField("tensor_type"):
                skipped.append({"tensor": name, "why": "no type from shape inference"})
                continue
            if vi.type.tensor_type.elem_type != onnx.TensorProto.FLOAT:
                skipped.append({"tensor": name, "why": "not float32"})
                continue
            graph.output.append(vi)
            already.add(name)
            exported.append(name)
    onnx.save(model, str(dst))

    nodes = []
    for i, node in enumerate(graph.node):
        nodes.append({
            "index": i,
            "name": node.name or f"{node.op_type}_{i}",
            "op_type": node.op_type,
            "domain": node.domain,
            "inputs": list(node.input),
            "outputs": list(node.output),
            "attributes": {a.name: attribute_summary(a) for a in node.attribute if a.name != "value"},
        })
    sidecar = {
        "source_model": str(src),
        "graph_inputs": [i.name for i in graph.input],
        "initializers": [t.name for t in graph.initializer],
        "constants": [o for n in graph.node if n.op_type == "Constant" for o in n.output],
        "original_outputs": original_outputs,
        "exported": exported,
        "skipped": skipped,
        "nodes": nodes,
    }
    sidecar_path = dst.with_suffix(".nodes.json")
    sidecar_path.write_text(json.dumps(sidecar, indent=1))
    size = dst.stat().st_size
    print(f"{dst}: {len(original_outputs)} original + {len(exported)} intermediate outputs "
          f"({len(skipped)} not exported), {size} bytes ({size / 2**20:.1f} MiB); nodes in {sidecar_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
