"""BYTES tensors with tritonclient on the strings model (Identity, Concat, StringConcat,
Equal and Cast on ONNX string tensors): over HTTP with JSON and with binary tensors
(4-byte length prefixes), over gRPC with raw_input_contents and with typed
bytes_contents; answers must equal onnxruntime run directly on the same model.
Bytes that are not UTF-8 round-trip (compared with what the model must do: onnxruntime's
Python API cannot carry them), and malformed BYTES data is refused naming input and place."""
import json
import urllib.error
import urllib.request

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from common import args, check, raises, session

a = args()
http = httpclient.InferenceServerClient(a.http)
grpc = grpcclient.InferenceServerClient(a.grpc)
ref = session("strings")
OUTS = [o.name for o in ref.get_outputs()]

meta = http.get_model_metadata("strings")
check({"name": "text", "datatype": "BYTES", "shape": [-1, 2]} in meta["inputs"], f"HTTP metadata {meta}")
gmeta = {o.name: o.datatype for o in grpc.get_model_metadata("strings").outputs}
check(gmeta["echo"] == "BYTES" and gmeta["value"] == "FP32", f"gRPC metadata {gmeta}")
config = {i["name"]: i["data_type"] for i in http.get_model_config("strings")["input"]}
check(config["text"] == "TYPE_STRING", f"the config names BYTES TYPE_STRING: {config}")


def as_bytes(arr):
    """An object array of str or bytes as one of bytes (tritonclient gives str from JSON, bytes from binary)."""
    return np.array([x.encode() if isinstance(x, str) else bytes(x) for x in arr.flat], dtype=object).reshape(arr.shape)


def same(got, want, what):
    if want.dtype == object:
        got, want = as_bytes(got), as_bytes(want)
        ok = got.shape == want.shape and all(g == w for g, w in zip(got.flat, want.flat))
    else:
        ok = got.dtype == want.dtype and np.array_equal(got, want)
    check(ok, f"{what}: got {got!r}, want {want!r}")


def infer(mode, feeds, outputs=OUTS):
    """One request over `mode`: json, binary (HTTP), raw or contents (gRPC)."""
    mod = grpcclient if mode in ("raw", "contents") else httpclient
    ins = []
    for name, arr in feeds.items():
        i = mod.InferInput(name, list(arr.shape), "BYTES")
        if mode == "contents":
            i._get_tensor().contents.bytes_contents.extend(as_bytes(arr).flat)
        elif mode == "raw":
            i.set_data_from_numpy(arr)
        else:
            i.set_data_from_numpy(arr, binary_data=mode == "binary")
        ins.append(i)
    if mod is grpcclient:
        return grpc.infer("strings", ins, outputs=[grpcclient.InferRequestedOutput(n) for n in outputs])
    outs = [httpclient.InferRequestedOutput(n, binary_data=mode == "binary") for n in outputs]
    return http.infer("strings", ins, outputs=outs)


rng = np.random.default_rng(7)
words = ["baton", "", "héllo wörld", "数据", "a longer sentence of several words", "x", "BATON"]
for rows in (1, 3, 8):
    text = np.array([[words[k] for k in rng.integers(0, len(words), 2)] for _ in range(rows)], dtype=object)
    number = np.array([[str(v)] for v in rng.integers(-1000, 1000, rows) / 4], dtype=object)
    want = dict(zip(OUTS, ref.run(None, {"text": text, "number": number})))
    for mode in ("json", "binary", "raw", "contents"):
        r = infer(mode, {"text": text, "number": number})
        for n in OUTS:
            same(r.as_numpy(n), want[n], f"{mode} rows={rows} {n}")
    # Binary outputs carry the length-prefixed form; JSON outputs carry strings.
    r = infer("json", {"text": text, "number": number}, ["echo"])
    check(r.get_response()["outputs"][0]["data"] == list(text.flat), "JSON output data are the strings")

# Concurrent requests batch together in the server; each answer is still its own.
pending = []
for k in range(24):
    text = np.array([[words[(k + j) % len(words)], words[k % len(words)]] for j in range(k % 3 + 1)], dtype=object)
    number = np.array([[str(k)]] * (k % 3 + 1), dtype=object)
    ins = []
    for name, arr in (("text", text), ("number", number)):
        i = grpcclient.InferInput(name, list(arr.shape), "BYTES")
        i.set_data_from_numpy(arr)
        ins.append(i)
    done = []
    grpc.async_infer("strings", ins, callback=lambda result, error, done=done: done.append((result, error)))
    pending.append((text, number, done))
for text, number, done in pending:
    import time

    deadline = time.monotonic() + 30
    while not done and time.monotonic() < deadline:
        time.sleep(0.005)
    check(done and done[0][1] is None, f"concurrent gRPC answer: {done}")
    want = dict(zip(OUTS, ref.run(None, {"text": text, "number": number})))
    for n in OUTS:
        same(done[0][0].as_numpy(n), want[n], f"concurrent {n}")

# Bytes that are not UTF-8 (and NUL bytes) round-trip over binary HTTP and gRPC; asked for as
# JSON, such an output comes back binary (JSON strings carry only text).
odd = np.array([[b"\xff\xfe", b"nul\x00inside"], [b"caf\xe9", b""]], dtype=object)
number = np.array([[b"1"], [b"2.5"]], dtype=object)
for mode in ("binary", "raw", "contents"):
    r = infer(mode, {"text": odd, "number": number})
    same(r.as_numpy("echo"), odd, f"{mode} non-UTF-8 echo")
    same(r.as_numpy("shout"), np.array([[x + b"!" for x in row] for row in odd], dtype=object), f"{mode} shout")
    same(r.as_numpy("value"), np.array([[1.0], [2.5]], np.float32), f"{mode} value")
ins = []
for name, arr in (("text", odd), ("number", number)):
    i = httpclient.InferInput(name, list(arr.shape), "BYTES")
    i.set_data_from_numpy(arr, binary_data=True)
    ins.append(i)
r = http.infer("strings", ins, outputs=[httpclient.InferRequestedOutput(n, binary_data=False) for n in ("echo", "value")])
outs = {o["name"]: o for o in r.get_response()["outputs"]}
check("binary_data_size" in outs["echo"].get("parameters", {}), f"non-UTF-8 output sent binary: {outs['echo']}")
check("data" in outs["value"], "a numeric output asked for as JSON stays JSON")
same(r.as_numpy("echo"), odd, "non-UTF-8 echo asked for as JSON")


def post(body, header_len=None):
    """POSTs a raw infer body; returns (status, JSON answer)."""
    headers = {"Content-Type": "application/octet-stream"}
    if header_len is not None:
        headers["Inference-Header-Content-Length"] = str(header_len)
    req = urllib.request.Request(f"http://{a.http}/v2/models/strings/infer", data=body, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def binary_request(text_bytes, text_shape):
    head = json.dumps({"inputs": [
        {"name": "text", "shape": text_shape, "datatype": "BYTES", "parameters": {"binary_data_size": len(text_bytes)}},
        {"name": "number", "shape": [1, 1], "datatype": "BYTES", "data": ["1"]},
    ]}).encode()
    return post(head + text_bytes, len(head))


def prefixed(*items):
    return b"".join(len(s).to_bytes(4, "little") + s for s in items)


# Malformed BYTES data: each refused with 400 naming the input and where it goes wrong.
status, body = binary_request(prefixed(b"ab") + (9).to_bytes(4, "little") + b"c", [1, 2])
check(status == 400 and "input `text`" in body["error"] and "element 1" in body["error"]
      and "says 9 bytes but only 1 follow" in body["error"], f"prefix past the data: {status} {body}")
status, body = binary_request(prefixed(b"ab") + b"\x01\x00", [1, 2])
check(status == 400 and "element 1" in body["error"] and "length prefix is due at byte 6" in body["error"],
      f"prefix cut short: {status} {body}")
status, body = binary_request(prefixed(b"a", b"b", b"c"), [1, 2])
check(status == 400 and "input `text`" in body["error"] and "after the shape's 2 elements" in body["error"],
      f"more elements than the shape: {status} {body}")
status, body = binary_request(prefixed(b"a"), [1, 2])
check(status == 400 and "holds 2 elements but 1 were given" in body["error"], f"fewer elements: {status} {body}")
status, body = post(json.dumps({"inputs": [
    {"name": "text", "shape": [1, 2], "datatype": "BYTES", "data": ["a", 5]},
    {"name": "number", "shape": [1, 1], "datatype": "BYTES", "data": ["1"]},
]}).encode())
check(status == 400 and "input `text`" in body["error"] and "element 1 (5) is not a string" in body["error"],
      f"JSON element not a string: {status} {body}")
status, body = post(json.dumps({"inputs": [
    {"name": "text", "shape": [1, 2], "datatype": "BYTES", "data": ["a", "b"]},
    {"name": "number", "shape": [1, 1], "datatype": "BYTES", "data": ["1", "2"]},
]}).encode())
check(status == 400 and "input `number`" in body["error"], f"JSON count mismatch: {status} {body}")

bad = grpcclient.InferInput("text", [1, 2], "BYTES")
bad._raw_content = prefixed(b"ab") + (7).to_bytes(4, "little")
num = grpcclient.InferInput("number", [1, 1], "BYTES")
num.set_data_from_numpy(np.array([["1"]], dtype=object))
raises(lambda: grpc.infer("strings", [bad, num]), "StatusCode.INVALID_ARGUMENT",
       "input `text`: raw_input_contents: BYTES element 1: its length prefix at byte 6 says 7 bytes but only 0 follow",
       "gRPC raw prefix past the data")
few = grpcclient.InferInput("text", [1, 2], "BYTES")
few._get_tensor().contents.bytes_contents.extend([b"only one"])
typed_num = grpcclient.InferInput("number", [1, 1], "BYTES")
typed_num._get_tensor().contents.bytes_contents.extend([b"1"])
raises(lambda: grpc.infer("strings", [few, typed_num]), "StatusCode.INVALID_ARGUMENT",
       "input `text`: the shape holds 2 elements but bytes_contents has 1", "gRPC bytes_contents count")
print("ok: BYTES over HTTP (JSON, binary) and gRPC (raw, bytes_contents) equal onnxruntime")
