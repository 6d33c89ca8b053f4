#!/usr/bin/env python3
"""Writes the structure-aware seeds of the fuzz targets into fuzz/seeds/<target>/.

Seeds are where the fuzzer starts: the shipped pipeline files plus cost-model
pipelines using every config feature, valid and malformed KServe v2 infer
bodies (JSON, binary, protobuf for gRPC), and stitch inputs in the byte layout that
`baton_fuzz_targets::stitch_shapes` reads. `scripts/fuzz.sh` copies them into
the working corpus; the committed corpus in fuzz/corpus/ is the minimized result.
"""
import json
import math
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def out(target, name, data):
    d = os.path.join(HERE, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def spec(name, dtype, shape):
    return '{ name = "%s", dtype = "%s", shape = %s }' % (name, dtype, json.dumps(shape))


def cost(node, inputs, outputs, extra=""):
    ins = ", ".join(spec(*i) for i in inputs)
    outs = ", ".join(spec(*o) for o in outputs)
    return f'\n[[nodes.{node}.stages]]\nengine = "cost_model"\nparams.inputs = [{ins}]\nparams.outputs = [{outs}]\n{extra}'


def configs():
    os.makedirs(os.path.join(HERE, "config_loader"), exist_ok=True)
    for name in sorted(os.listdir(os.path.join(ROOT, "configs"))):
        if name.endswith(".toml"):
            shutil.copy(os.path.join(ROOT, "configs", name), os.path.join(HERE, "config_loader", name))
    f4 = [-1, 4]
    diamond = (
        '[pipeline]\nname = "diamond"\nmax_in_flight = 64\n\n[scheduler]\ntick_us = 500\ncompute_budget = 2.0\n'
        'selection = "budget"\non_misfit = "skip"\n\n[inputs.x]\nto = ["embed.x"]\ndtype = "f32"\nshape = [-1, 4]\n\n'
        '[outputs.out]\nfrom = "join.out"\n'
        + cost("embed", [("x", "f32", f4)], [("h", "f32", f4)], "params.latency_us = { 1 = 10, 8 = 40 }\n")
        + cost("a", [("h", "f32", f4)], [("a", "f32", f4)])
        + cost("b", [("h", "f32", f4)], [("b", "f32", f4)], 'params.mode = "spin"\n')
        + cost("join", [("a", "f32", f4), ("b", "f32", f4)], [("out", "f32", f4)])
        + '\n[nodes.embed]\nmax_batch = 8\nweight = 2.0\ncost = 1.0\nworkers = 2\n'
        '[[edges]]\nfrom = "embed.h"\nto = "a.h"\n[[edges]]\nfrom = "embed.h"\nto = "b.h"\n'
        '[[edges]]\nfrom = "a.a"\nto = "join.a"\n[[edges]]\nfrom = "b.b"\nto = "join.b"\n'
    )
    out("config_loader", "cost_diamond.toml", diamond)
    stateful = (
        '[pipeline]\nname = "vad"\n[streams]\nidle_timeout_ms = 1000\nmax_state_bytes = 65536\n'
        '[inputs.audio]\nto = ["vad.audio"]\n[outputs.p]\nfrom = "vad.p"\n'
        + cost("vad", [("audio", "f32", [-1, 512]), ("state", "f32", [-1, 2, 64])],
               [("p", "f32", [-1, 1]), ("new_state", "f32", [-1, 2, 64])], "params.fail_every = 3\n")
        + '[[nodes.vad.state]]\ninput = "state"\noutput = "new_state"\n'
    )
    out("config_loader", "cost_stateful.toml", stateful)
    dynamic_state = stateful.replace("[-1, 2, 64]", '[-1, 2, "S"]').replace(
        'output = "new_state"\n', 'output = "new_state"\nshape = [2, 8]\n')
    out("config_loader", "cost_state_shape.toml", dynamic_state)
    ocr = (
        '[pipeline]\nname = "ocr"\n[scheduler]\npolicy = "dynamic"\nmax_queue_delay_us = 200\n'
        '[inputs.image]\nto = ["det.image"]\noptional = true\n[inputs.q]\nto = ["rec.q"]\n'
        '[outputs.text]\nfrom = "rec.text"\n[outputs.mask]\nfrom = "det.mask"\n'
        '[nodes.det]\nstages = [{ engine = "cost_model", params.inputs = [' + spec("image", "u8", [-1, -1, -1, 3])
        + '], params.outputs = [' + spec("mask", "f32", [-1, 1, -1, -1]) + '] }, { function = "crops" }]\n'
        '[[nodes.det.pad]]\ninput = "image"\naxes = [1, 2]\nvalue = 255\ncut = { mask = [2, 3] }\n'
        + cost("rec", [("crops", "u8", [-1, 48, -1, 3]), ("q", "i64", [-1, -1])], [("logits", "f32", [-1, -1, -1])])
        + '[[nodes.rec.stages]]\nfunction = "decode"\n'
        '[[edges]]\nfrom = "det.crops"\nto = "rec.crops"\n'
    )
    out("config_loader", "cost_ocr.toml", ocr)
    count = diamond.replace('selection = "budget"\non_misfit = "skip"', 'selection = "count"\nmax_nodes = 2')
    out("config_loader", "cost_count.toml", count)
    ident = (
        '[inputs.x]\nto = ["f.x", "g.x"]\n[outputs.y]\nfrom = "f.y"\n[outputs.z]\nfrom = "g.y"\n'
        '[nodes.f]\nstages = [{ function = "identity" }]\ncores = [0]\nidle_spin_us = 0\n'
        '[nodes.g]\nstages = [{ function = "identity" }, { function = "identity", params = { a = 1 } }]\n'
    )
    out("config_loader", "functions.toml", ident)
    cycle = (
        '[inputs.x]\nto = ["p.x"]\n[outputs.z]\nfrom = "q.z"\n'
        + cost("p", [("x", "f32", f4), ("back", "f32", f4)], [("y", "f32", f4)])
        + cost("q", [("y", "f32", f4)], [("back", "f32", f4), ("z", "f32", f4)])
        + '[[edges]]\nfrom = "p.y"\nto = "q.y"\n[[edges]]\nfrom = "q.back"\nto = "p.back"\n'
    )
    out("config_loader", "cycle.toml", cycle)
    out("config_loader", "dtypes_mix.toml", diamond.replace('"f32", [-1, 4]) ]', '"f16", [-1, 4])'))
    out("config_loader", "empty.toml", "")
    out("config_loader", "bad_key.toml", "[nodes.a]\nstages = []\nmax_batc = 3\n")


MODEL = {"x": ("FP32", [-1, 4]), "f64": ("FP64", [-1, -1]), "half": ("FP16", [-1, 2]), "ids": ("INT64", [-1, -1]),
         "i32": ("INT32", [-1, 2]), "i16": ("INT16", [-1, -1]), "i8": ("INT8", [-1]),
         "image": ("UINT8", [-1, -1, -1, 3]), "flag": ("BOOL", [-1, -1])}
SIZES = {"FP32": 4, "FP64": 8, "FP16": 2, "INT64": 8, "INT32": 4, "INT16": 2, "INT8": 1, "UINT8": 1, "BOOL": 1}


def examples():
    """Each model input with a concrete shape (dynamic dims 2), its element count and raw bytes."""
    for name, (dt, shape) in MODEL.items():
        s = [2 if d < 0 else d for d in shape]
        n = math.prod(s)
        yield name, dt, s, n, bytes((i % 2) for i in range(n * SIZES[dt]))


def requests():
    # JSON bodies: one per input, nested and flat data, parameters, outputs.
    for name, dt, s, n, _ in examples():
        data = [True, False] * (n // 2) + [True] * (n % 2) if dt == "BOOL" else list(range(n))
        body = {"id": name, "inputs": [{"name": name, "datatype": dt, "shape": s, "data": data}]}
        out("v2_json_request", f"{name}.json", json.dumps(body))
    out("v2_json_request", "nested.json", json.dumps({
        "parameters": {"priority": 1, "timeout": 2500, "sequence_id": 7, "sequence_start": True,
                       "binary_data_output": False, "custom": "x"},
        "inputs": [{"name": "x", "datatype": "FP32", "shape": [2, 4], "data": [[1, 2.5, 3, 4], [5, 6, 7, 8e30]]},
                   {"name": "i8", "datatype": "INT8", "shape": [3], "data": [-128, 127, 1.0]}],
        "outputs": [{"name": "y", "parameters": {"binary_data": True}}]}))
    out("v2_json_request", "huge_shape.json", json.dumps(
        {"inputs": [{"name": "ids", "datatype": "INT64", "shape": [1000000, 1000000], "data": [1]}]}))
    out("v2_json_request", "negative_dim.json", json.dumps(
        {"inputs": [{"name": "ids", "datatype": "INT64", "shape": [-1, 2], "data": [1, 2]}]}))
    out("v2_json_request", "wrong_type.json", json.dumps(
        {"inputs": [{"name": "x", "datatype": "INT8", "shape": [1, 4], "data": [1, 2, 3, 4]}]}))
    out("v2_json_request", "sequence_string.json", json.dumps(
        {"parameters": {"sequence_id": "abc"}, "inputs": []}))
    # Binary bodies: header line, JSON, then tensor bytes.
    for name, dt, s, n, raw in examples():
        header = json.dumps({"inputs": [{"name": name, "datatype": dt, "shape": s,
                                         "parameters": {"binary_data_size": len(raw)}}]}).encode()
        out("v2_binary_request", f"{name}.bin", str(len(header)).encode() + b"\n" + header + raw)
    two = json.dumps({"inputs": [
        {"name": "x", "datatype": "FP32", "shape": [1, 4], "parameters": {"binary_data_size": 16}},
        {"name": "flag", "datatype": "BOOL", "shape": [1, 2], "data": [[True, False]]},
        {"name": "i8", "datatype": "INT8", "shape": [2], "parameters": {"binary_data_size": 2}}],
        "parameters": {"binary_data_output": True}}).encode()
    out("v2_binary_request", "mixed.bin", str(len(two)).encode() + b"\n" + two + struct.pack("<4f", 1, 2, 3, 4) + b"\x01\xff")
    huge = json.dumps({"inputs": [{"name": "image", "datatype": "UINT8", "shape": [1, 1000000, 1000000, 3],
                                   "parameters": {"binary_data_size": 3000000000000}}]}).encode()
    out("v2_binary_request", "huge_shape.bin", str(len(huge)).encode() + b"\n" + huge + b"\0" * 8)
    out("v2_binary_request", "huge_header.bin", b"99999999999999999999\n{}")
    out("v2_binary_request", "no_header.bin", json.dumps({"inputs": []}).encode())
    out("v2_binary_request", "bad_header.bin", b" 1x\n{}")


def varint(n):
    n &= (1 << 64) - 1
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def ld(field, payload):
    return varint(field << 3 | 2) + varint(len(payload)) + payload


def grpc_param(field, name, kind, value):
    # map<string, InferParameter> entry; InferParameter: bool 1, int64 2, string 3, double 4, uint64 5.
    inner = varint(kind << 3 | 0) + varint(value) if kind in (1, 2, 5) else ld(kind, value.encode())
    return ld(field, ld(1, name.encode()) + ld(2, inner))


def grpc_input(name, dt, shape, contents=None, params=b""):
    body = ld(1, name.encode()) + ld(2, dt.encode()) + ld(3, b"".join(varint(d) for d in shape)) + params
    if contents is not None:
        body += ld(5, contents)
    return ld(5, body)


def grpc():
    packers = {"FP32": (6, lambda v: struct.pack(f"<{len(v)}f", *v)), "FP64": (7, lambda v: struct.pack(f"<{len(v)}d", *v)),
               "INT64": (3, lambda v: b"".join(varint(x) for x in v)), "INT32": (2, lambda v: b"".join(varint(x) for x in v)),
               "INT16": (2, lambda v: b"".join(varint(x) for x in v)), "INT8": (2, lambda v: b"".join(varint(x) for x in v)),
               "UINT8": (4, lambda v: b"".join(varint(x) for x in v)), "BOOL": (1, lambda v: b"".join(varint(x % 2) for x in v))}
    for name, dt, s, n, raw in examples():
        out("v2_grpc_request", f"{name}_raw.pb", ld(1, b"fuzz") + grpc_input(name, dt, s) + ld(7, raw))
        if dt in packers:
            field, pack = packers[dt]
            out("v2_grpc_request", f"{name}_contents.pb",
                ld(1, b"fuzz") + grpc_input(name, dt, s, ld(field, pack(list(range(n))))))
    params = grpc_param(4, "priority", 2, 1) + grpc_param(4, "sequence_id", 5, 7) + grpc_param(4, "sequence_start", 1, 1)
    out("v2_grpc_request", "params.pb", ld(1, b"fuzz") + params + grpc_input("i8", "INT8", [2], ld(2, varint(300) + varint(-5))))
    out("v2_grpc_request", "huge_shape.pb", grpc_input("x", "FP32", [1000000, 1000000, 4]) + ld(7, b"\0" * 16))
    out("v2_grpc_request", "negative_dim.pb", grpc_input("ids", "INT64", [-3, 2], ld(3, varint(1) + varint(2))))
    out("v2_grpc_request", "raw_count.pb", grpc_input("x", "FP32", [1, 4]) + grpc_input("i8", "INT8", [1]) + ld(7, b"\0" * 16))
    out("v2_grpc_request", "half_contents.pb", grpc_input("half", "FP16", [1, 2], ld(6, struct.pack("<2f", 1, 2))))


def stitches():
    # op, dtype, count, then per part: dtype byte, rank, dims, element bytes.
    def part(rank_dims, fill, dt=0):
        n = 1
        for d in rank_dims:
            n *= d
        return bytes([dt, len(rank_dims)] + list(rank_dims)) + bytes([fill]) * (n * 4)

    out("stitch_shapes", "stitch.bin", bytes([0, 0, 2]) + part([1, 3], 1) + part([2, 3], 2))
    out("stitch_shapes", "stitch_mismatch.bin", bytes([0, 0, 2]) + part([1, 3], 1) + part([1, 4], 2))
    out("stitch_shapes", "stitch_zero_rows.bin", bytes([0, 0, 3]) + part([0, 3], 1) + part([2, 3], 2) + part([0, 3], 0))
    out("stitch_shapes", "padded.bin", bytes([1, 0, 2]) + part([1, 2, 3], 1) + part([2, 1, 2], 2) + bytes([1, 1, 2, 7]))
    out("stitch_shapes", "padded_rank.bin", bytes([1, 0, 2]) + part([1, 2], 1) + part([1, 2, 2], 2) + bytes([0, 4, 7]))
    out("stitch_shapes", "rows.bin", bytes([2, 3, 2]) + part([4, 2], 1) + part([3], 5) + bytes([1, 2, 0, 3]))
    out("stitch_shapes", "crop.bin", bytes([3, 2, 1]) + part([2, 3, 4], 9) + bytes([0, 1, 2, 2]))
    out("stitch_shapes", "absurd.bin", bytes([0, 0, 2, 0, 2, 0, 242, 0, 2, 243, 0]))
    out("stitch_shapes", "scalar.bin", bytes([0, 1, 2, 0, 0, 0, 0]))


if __name__ == "__main__":
    for t in ["config_loader", "v2_json_request", "v2_binary_request", "v2_grpc_request", "stitch_shapes"]:
        shutil.rmtree(os.path.join(HERE, t), ignore_errors=True)
    configs()
    requests()
    grpc()
    stitches()
