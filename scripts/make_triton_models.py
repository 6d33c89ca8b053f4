#!/usr/bin/env python3
"""Small ONNX models for the Triton model repository tests (usage: make_triton_models.py OUTDIR).

Made with onnx's helper API, opset 17, IR version 8, deterministic. Names and signatures are a
contract with server/tests/triton_repository.rs and server/tests/python/test_triton.py:
- add_sub_int32.onnx, add_sub_int8.onnx: INPUT0, INPUT1 [N, 16] -> OUTPUT0 = INPUT0 + INPUT1,
  OUTPUT1 = INPUT0 - INPUT1 (the int8 one computes in int32 and casts back, wrapping).
- add_sub_string.onnx: the same over STRING (BYTES) tensors holding decimal integers (Cast to INT32,
  add/sub, Cast back to STRING), as Triton's simple_string example.
- add_sub_fp32.onnx: the same over [N, 4] FP32 (the last step of the test ensemble).
- scale_fixed.onnx: X [4] FP32 -> Y = 2 X (no batch dim: a model for max_batch_size 0).
- plus_one.onnx, plus_two.onnx: X [N, 4] FP32 -> Y = X + 1 / X + 2 (versions 1 and 2 of one model).
- sequence_acc.onnx: a sequence accumulator over [N, 1] tensors: INPUT INT32, control inputs START
  INT32, END FP32, READY BOOL, CORRID INT64, implicit state STATE_IN INT32 ->
  acc = READY ? (START ? INPUT : STATE_IN + INPUT) : STATE_IN; OUTPUT = STATE_OUT = acc,
  CORRID_OUT = CORRID, END_OUT = END (echoed so a test sees what the server filled).
- sequence_acc_str.onnx, sequence_acc_u64.onnx, sequence_acc_u32.onnx: the same with CORRID and
  CORRID_OUT STRING (string correlation ids), UINT64 and UINT32.
- identity_uint16.onnx, identity_uint32.onnx, identity_uint64.onnx, identity_bfloat16.onnx: X [N, 4]
  of the type -> Y = X (Identity, the type's full range) and F = X as FP32 (Cast), one per element
  type that ONNX Runtime's CPU kernels take for Identity and Cast but not all for Add.
- scaled_add.onnx: X [N, 4] FP32, SCALE [N, 1] FP32 with a default (an initializer of the same
  name, [[2]]) -> Y = X * SCALE + 1 (an optional input: left out, ONNX Runtime uses the default).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(outdir, name, nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    path = os.path.join(outdir, name + ".onnx")
    onnx.save(model, path)
    print("saved", path)


def add_sub(outdir, name, dtype, width=16):
    io = lambda n: helper.make_tensor_value_info(n, dtype, ["N", width])
    if dtype in (TensorProto.INT32, TensorProto.FLOAT):
        nodes = [helper.make_node("Add", ["INPUT0", "INPUT1"], ["OUTPUT0"]),
                 helper.make_node("Sub", ["INPUT0", "INPUT1"], ["OUTPUT1"])]
    else:
        i32 = TensorProto.INT32
        nodes = [helper.make_node("Cast", ["INPUT0"], ["a"], to=i32),
                 helper.make_node("Cast", ["INPUT1"], ["b"], to=i32),
                 helper.make_node("Add", ["a", "b"], ["sum"]),
                 helper.make_node("Sub", ["a", "b"], ["diff"]),
                 helper.make_node("Cast", ["sum"], ["OUTPUT0"], to=dtype),
                 helper.make_node("Cast", ["diff"], ["OUTPUT1"], to=dtype)]
    save(outdir, name, nodes, [io("INPUT0"), io("INPUT1")], [io("OUTPUT0"), io("OUTPUT1")])


def plus(outdir, name, value):
    io = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N", 4])
    c = numpy_helper.from_array(np.full((1, 4), value, np.float32), "c")
    save(outdir, name, [helper.make_node("Add", ["X", "c"], ["Y"])], [io("X")], [io("Y")], [c])


def scale_fixed(outdir):
    io = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [4])
    c = numpy_helper.from_array(np.full((4,), 2.0, np.float32), "c")
    save(outdir, "scale_fixed", [helper.make_node("Mul", ["X", "c"], ["Y"])], [io("X")], [io("Y")], [c])


def sequence_acc(outdir, name="sequence_acc", corrid=TensorProto.INT64):
    t = lambda n, ty: helper.make_tensor_value_info(n, ty, ["N", 1])
    I32, F32, B, I64 = TensorProto.INT32, TensorProto.FLOAT, TensorProto.BOOL, corrid
    nodes = [helper.make_node("Cast", ["START"], ["start_b"], to=B),
             helper.make_node("Add", ["STATE_IN", "INPUT"], ["sum"]),
             helper.make_node("Where", ["start_b", "INPUT", "sum"], ["acc0"]),
             helper.make_node("Where", ["READY", "acc0", "STATE_IN"], ["OUTPUT"]),
             helper.make_node("Identity", ["OUTPUT"], ["STATE_OUT"]),
             helper.make_node("Identity", ["CORRID"], ["CORRID_OUT"]),
             helper.make_node("Identity", ["END"], ["END_OUT"])]
    inputs = [t("INPUT", I32), t("START", I32), t("END", F32), t("READY", B), t("CORRID", I64), t("STATE_IN", I32)]
    outputs = [t("OUTPUT", I32), t("STATE_OUT", I32), t("CORRID_OUT", I64), t("END_OUT", F32)]
    save(outdir, name, nodes, inputs, outputs)


def scaled_add(outdir):
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 4])
    scale = helper.make_tensor_value_info("SCALE", TensorProto.FLOAT, ["N", 1])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 4])
    inits = [numpy_helper.from_array(np.array([[2.0]], np.float32), "SCALE"),
             numpy_helper.from_array(np.array([1.0], np.float32), "one")]
    nodes = [helper.make_node("Mul", ["X", "SCALE"], ["scaled"]), helper.make_node("Add", ["scaled", "one"], ["Y"])]
    save(outdir, "scaled_add", nodes, [x, scale], [y], inits)


def identity(outdir, name, dtype):
    x = helper.make_tensor_value_info("X", dtype, ["N", 4])
    y = helper.make_tensor_value_info("Y", dtype, ["N", 4])
    f = helper.make_tensor_value_info("F", TensorProto.FLOAT, ["N", 4])
    nodes = [helper.make_node("Identity", ["X"], ["Y"]), helper.make_node("Cast", ["X"], ["F"], to=TensorProto.FLOAT)]
    save(outdir, name, nodes, [x], [y, f])


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    add_sub(outdir, "add_sub_int32", TensorProto.INT32)
    add_sub(outdir, "add_sub_int8", TensorProto.INT8)
    add_sub(outdir, "add_sub_string", TensorProto.STRING)
    add_sub(outdir, "add_sub_fp32", TensorProto.FLOAT, width=4)
    scale_fixed(outdir)
    plus(outdir, "plus_one", 1.0)
    plus(outdir, "plus_two", 2.0)
    sequence_acc(outdir)
    sequence_acc(outdir, "sequence_acc_str", TensorProto.STRING)
    sequence_acc(outdir, "sequence_acc_u64", TensorProto.UINT64)
    sequence_acc(outdir, "sequence_acc_u32", TensorProto.UINT32)
    scaled_add(outdir)
    for ty in ("uint16", "uint32", "uint64", "bfloat16"):
        identity(outdir, "identity_" + ty, getattr(TensorProto, ty.upper()))


if __name__ == "__main__":
    main()
