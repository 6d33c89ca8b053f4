#!/usr/bin/env python3
"""Generate Baton's small ONNX test models into OUTDIR (usage: make_models.py OUTDIR).

Deterministic (numpy default_rng with fixed seeds), opset 17, IR version 8 (strings: opset 20,
IR version 9, for Equal and StringConcat on strings). Every input and
output has a dynamic batch dimension "N" unless noted. Names and signatures are a contract
that the Rust tests code against: change them only together with those tests.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F32 = TensorProto.FLOAT


def vi(name, dtype, width, batch="N"):
    return helper.make_tensor_value_info(name, dtype, [batch, width])


def weight(rng, name, fan_in, fan_out):
    w = rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)
    return numpy_helper.from_array(w.astype(np.float32), name)


def const(name, value):
    return numpy_helper.from_array(np.asarray(value), name)


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, **attrs)


def save(outdir, name, nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8 if opset <= 17 else 9
    onnx.checker.check_model(model, full_check=True)
    path = os.path.join(outdir, name + ".onnx")
    onnx.save(model, path)
    print("saved", path)


def mlp(rng):
    # Same construction as shared/peers/make_model.py: 256 -> 1024 -> 1024 -> 10, zero bias.
    dims = [256, 1024, 1024, 10]
    inits, nodes, x = [], [], "input"
    for i in range(3):
        w = (rng.standard_normal((dims[i], dims[i + 1])) / np.sqrt(dims[i])).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"W{i}"),
                  numpy_helper.from_array(np.zeros(dims[i + 1], np.float32), f"B{i}")]
        y = "output" if i == 2 else f"h{i}"
        nodes.append(node("Gemm", [x, f"W{i}", f"B{i}"], [y if i == 2 else y + "_pre"]))
        if i < 2:
            nodes.append(node("Relu", [y + "_pre"], [y]))
        x = y
    return nodes, [vi("input", F32, 256)], [vi("output", F32, 10)], inits


def two_io(rng):
    nodes = [node("Add", ["a", "b"], ["sum"]), node("MatMul", ["a", "W"], ["proj"])]
    return (nodes, [vi("a", F32, 16), vi("b", F32, 16)],
            [vi("sum", F32, 16), vi("proj", F32, 4)], [weight(rng, "W", 16, 4)])


def stateful(rng):
    nodes = [node("MatMul", ["x", "Wx"], ["xw"]), node("MatMul", ["state", "Ws"], ["sw"]),
             node("Add", ["xw", "sw"], ["pre"]), node("Tanh", ["pre"], ["new_state"]),
             node("MatMul", ["new_state", "Wy"], ["y"])]
    inits = [weight(rng, "Wx", 8, 16), weight(rng, "Ws", 16, 16), weight(rng, "Wy", 16, 8)]
    return (nodes, [vi("x", F32, 8), vi("state", F32, 16)],
            [vi("new_state", F32, 16), vi("y", F32, 8)], inits)


def embed(rng):
    b = numpy_helper.from_array((0.1 * rng.standard_normal(64)).astype(np.float32), "B")
    nodes = [node("MatMul", ["x", "W"], ["xw"]), node("Add", ["xw", "B"], ["pre"]),
             node("Relu", ["pre"], ["h"])]
    return nodes, [vi("x", F32, 32)], [vi("h", F32, 64)], [weight(rng, "W", 32, 64), b]


def branch(act, out):
    def build(rng):
        nodes = [node("MatMul", ["h", "W"], ["hw"]), node(act, ["hw"], [out])]
        return nodes, [vi("h", F32, 64)], [vi(out, F32, 16)], [weight(rng, "W", 64, 16)]
    return build


def join(rng):
    nodes = [node("Concat", ["a", "b"], ["ab"], axis=1), node("MatMul", ["ab", "W"], ["out"])]
    return (nodes, [vi("a", F32, 16), vi("b", F32, 16)], [vi("out", F32, 4)],
            [weight(rng, "W", 32, 4)])


def dtypes(rng):
    T = TensorProto
    nodes = [node("Mul", ["f16", "two_f16"], ["f16_out"]),
             node("Add", ["i64", "one_i64"], ["i64_out"]),
             node("Add", ["i32", "one_i32"], ["i32_out"]),
             node("Identity", ["u8"], ["u8_out"]),
             node("Not", ["flag"], ["flag_out"])]
    inputs = [vi("f16", T.FLOAT16, 4), vi("i64", T.INT64, 4), vi("i32", T.INT32, 4),
              vi("u8", T.UINT8, 4), vi("flag", T.BOOL, 4)]
    outputs = [vi("f16_out", T.FLOAT16, 4), vi("i64_out", T.INT64, 4), vi("i32_out", T.INT32, 4),
               vi("u8_out", T.UINT8, 4), vi("flag_out", T.BOOL, 4)]
    inits = [const("two_f16", np.float16(2)), const("one_i64", np.int64(1)),
             const("one_i32", np.int32(1))]
    return nodes, inputs, outputs, inits


def fixed_batch(rng):
    # Static batch of 1: the only model without the dynamic "N" dimension.
    return ([node("Mul", ["x", "three"], ["y"])], [vi("x", F32, 8, batch=1)],
            [vi("y", F32, 8, batch=1)], [const("three", np.float32(3))])


def slow(rng):
    # 64 -> 8 x (MatMul 512x512 + Tanh) -> 64: ~1 ms a run at batch 8, for scheduling tests.
    nodes, inits, x = [], [], "x"
    widths = [64] + [512] * 8 + [64]
    for i in range(len(widths) - 1):
        y = "y" if i == len(widths) - 2 else f"t{i}"
        inits.append(weight(rng, f"W{i}", widths[i], widths[i + 1]))
        nodes += [node("MatMul", [x, f"W{i}"], [f"m{i}"]), node("Tanh", [f"m{i}"], [y])]
        x = y
    return nodes, [vi("x", F32, 64)], [vi("y", F32, 64)], inits


def strings(rng):
    # String tensors (BYTES) in and out, through ONNX Runtime's CPU string kernels:
    # echo = text; doubled = text twice along dim 1; shout = each text + "!";
    # is_baton = text == "baton"; value = number parsed as float.
    S = TensorProto.STRING
    nodes = [node("Identity", ["text"], ["echo"]),
             node("Concat", ["text", "text"], ["doubled"], axis=1),
             node("StringConcat", ["text", "bang"], ["shout"]),
             node("Equal", ["text", "word"], ["is_baton"]),
             node("Cast", ["number"], ["value"], to=F32)]
    inputs = [vi("text", S, 2), vi("number", S, 1)]
    outputs = [vi("echo", S, 2), vi("doubled", S, 4), vi("shout", S, 2),
               vi("is_baton", TensorProto.BOOL, 2), vi("value", F32, 1)]
    inits = [const("word", np.array("baton", dtype=object)), const("bang", np.array("!", dtype=object))]
    return nodes, inputs, outputs, inits, 20


MODELS = {
    "mlp": mlp, "two_io": two_io, "stateful": stateful, "embed": embed,
    "branch_a": branch("Tanh", "a"), "branch_b": branch("Sigmoid", "b"), "join": join,
    "dtypes": dtypes, "fixed_batch": fixed_batch, "slow": slow, "strings": strings,
}


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_models.py OUTDIR")
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    for seed, (name, build) in enumerate(MODELS.items()):
        # mlp uses seed 0 exactly like shared/peers/make_model.py; others get their own sub-seed.
        save(outdir, name, *build(np.random.default_rng(seed)))


if __name__ == "__main__":
    main()
