"""Inference with tritonclient over HTTP (JSON and binary tensors) and gRPC on
mlp and two_io; answers must equal onnxruntime run directly on the same models.
Also health, metadata, readiness and requested-output subsets."""
import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from common import args, check, close, session

a = args()
http = httpclient.InferenceServerClient(a.http)
grpc = grpcclient.InferenceServerClient(a.grpc)
rng = np.random.default_rng(5)

# Health, server metadata, model metadata and readiness, over both protocols.
for c in (http, grpc):
    check(c.is_server_live() and c.is_server_ready(), "server live and ready")
    check(c.is_model_ready("mlp") and c.is_model_ready("two_io"), "models ready")
check(http.get_server_metadata()["name"] == "baton", "HTTP server metadata")
check("binary_tensor_data" in grpc.get_server_metadata().extensions, "gRPC server metadata")
meta = http.get_model_metadata("mlp")
check(meta["inputs"] == [{"name": "input", "datatype": "FP32", "shape": [-1, 256]}], f"HTTP mlp metadata {meta}")
check(meta["outputs"] == [{"name": "output", "datatype": "FP32", "shape": [-1, 10]}], f"HTTP mlp metadata {meta}")
gmeta = grpc.get_model_metadata("two_io", "1")
check(sorted(i.name for i in gmeta.inputs) == ["a", "b"], f"gRPC two_io metadata {gmeta}")
check(list(gmeta.inputs[0].shape) == [-1, 16] and gmeta.versions == ["1"], f"gRPC two_io metadata {gmeta}")

mlp, two_io = session("mlp"), session("two_io")


def http_infer(model, inputs, binary_in, binary_out, outputs=None):
    ins = []
    for name, x in inputs.items():
        i = httpclient.InferInput(name, list(x.shape), "FP32")
        i.set_data_from_numpy(x, binary_data=binary_in)
        ins.append(i)
    outs = [httpclient.InferRequestedOutput(n, binary_data=binary_out) for n in outputs] if outputs else None
    return http.infer(model, ins, outputs=outs)


def grpc_infer(model, inputs, outputs=None):
    ins = []
    for name, x in inputs.items():
        i = grpcclient.InferInput(name, list(x.shape), "FP32")
        i.set_data_from_numpy(x)
        ins.append(i)
    outs = [grpcclient.InferRequestedOutput(n) for n in outputs] if outputs else None
    return grpc.infer(model, ins, outputs=outs)


# mlp: batch sizes 1, 4, 32; HTTP JSON, HTTP binary, HTTP default (binary outputs), gRPC.
for rows in (1, 4, 32):
    x = rng.standard_normal((rows, 256)).astype(np.float32)
    want = mlp.run(["output"], {"input": x})[0]
    close(http_infer("mlp", {"input": x}, False, False, ["output"]).as_numpy("output"), want, f"mlp HTTP JSON rows={rows}")
    close(http_infer("mlp", {"input": x}, True, True, ["output"]).as_numpy("output"), want, f"mlp HTTP binary rows={rows}")
    close(http_infer("mlp", {"input": x}, True, False).as_numpy("output"), want, f"mlp HTTP default rows={rows}")
    close(grpc_infer("mlp", {"input": x}).as_numpy("output"), want, f"mlp gRPC rows={rows}")

# JSON output round trip is exact (shortest float32 text), whatever the batch.
x = rng.standard_normal((2, 256)).astype(np.float32)
r = http_infer("mlp", {"input": x}, False, False, ["output"])
check(r.get_response()["outputs"][0].get("data") is not None, "JSON output carries data")

# two_io: both outputs, and each alone (requested subset), over each protocol.
a_in = rng.standard_normal((3, 16)).astype(np.float32)
b_in = rng.standard_normal((3, 16)).astype(np.float32)
names = [o.name for o in two_io.get_outputs()]
want = dict(zip(names, two_io.run(None, {"a": a_in, "b": b_in})))
for binary in (False, True):
    r = http_infer("two_io", {"a": a_in, "b": b_in}, binary, binary, ["sum", "proj"])
    for n in ("sum", "proj"):
        close(r.as_numpy(n), want[n], f"two_io HTTP binary={binary} {n}")
    r = http_infer("two_io", {"a": a_in, "b": b_in}, binary, binary, ["proj"])
    check([o["name"] for o in r.get_response()["outputs"]] == ["proj"], "only the requested output (HTTP)")
    close(r.as_numpy("proj"), want["proj"], f"two_io HTTP subset binary={binary}")
r = grpc_infer("two_io", {"a": a_in, "b": b_in})
for n in ("sum", "proj"):
    close(r.as_numpy(n), want[n], f"two_io gRPC {n}")
r = grpc_infer("two_io", {"a": a_in, "b": b_in}, ["sum"])
check([o.name for o in r.get_response().outputs] == ["sum"], "only the requested output (gRPC)")
close(r.as_numpy("sum"), want["sum"], "two_io gRPC subset")

# Every datatype of the dtypes model (FP16, INT64, INT32, UINT8, BOOL), over HTTP JSON,
# HTTP binary and gRPC: answers equal onnxruntime's exactly (int64 beyond 2**53 included).
dtypes = session("dtypes")
feeds = {
    "f16": rng.standard_normal((2, 4)).astype(np.float16),
    "i64": np.array([[2**62, -(2**62), 2**53 + 1, -7], [0, 1, -1, 9007199254740993]], np.int64),
    "i32": np.array([[2**30, -(2**31), 5, -5], [0, 1, 2, 3]], np.int32),
    "u8": np.array([[0, 1, 254, 255], [7, 8, 9, 10]], np.uint8),
    "flag": np.array([[True, False, True, False], [False, False, True, True]]),
}
kinds = {"f16": "FP16", "i64": "INT64", "i32": "INT32", "u8": "UINT8", "flag": "BOOL"}
out_names = [o.name for o in dtypes.get_outputs()]
want = dict(zip(out_names, dtypes.run(None, feeds)))
for mode in ("json", "binary", "grpc"):
    mod = grpcclient if mode == "grpc" else httpclient
    ins = []
    for name, arr in feeds.items():
        i = mod.InferInput(name, list(arr.shape), kinds[name])
        if mode == "grpc":
            i.set_data_from_numpy(arr)
        else:
            i.set_data_from_numpy(arr, binary_data=mode == "binary")
        ins.append(i)
    if mode == "grpc":
        r = grpc.infer("dtypes", ins)
    else:
        outs = [httpclient.InferRequestedOutput(n, binary_data=mode == "binary") for n in out_names]
        r = http.infer("dtypes", ins, outputs=outs)
    for n in out_names:
        got = r.as_numpy(n)
        check(got.dtype == want[n].dtype and np.array_equal(got, want[n]), f"dtypes {mode} {n}: {got} != {want[n]}")

# Concurrent requests (they batch together in the server): every answer is still its own.
# HTTP async requests (gevent, from this thread) and gRPC async requests, all in flight at once.
import queue

xs = [rng.standard_normal((1 + k % 3, 256)).astype(np.float32) for k in range(48)]


def _input(mod, x):
    i = mod.InferInput("input", list(x.shape), "FP32")
    i.set_data_from_numpy(x)
    return i


pool_http = httpclient.InferenceServerClient(a.http, concurrency=8)
answers = queue.Queue()
pending_http = []
for k, x in enumerate(xs):
    if k % 2 == 0:
        out = [httpclient.InferRequestedOutput("output", binary_data=k % 4 == 0)]
        pending_http.append((k, pool_http.async_infer("mlp", [_input(httpclient, x)], outputs=out)))
    else:
        grpc.async_infer("mlp", [_input(grpcclient, x)], callback=lambda result, error, k=k: answers.put((k, result, error)))
for k, req in pending_http:
    close(req.get_result().as_numpy("output"), mlp.run(["output"], {"input": xs[k]})[0], f"concurrent HTTP {k}")
for _ in range(len(xs) // 2):
    k, r, e = answers.get(timeout=30)
    check(e is None, f"concurrent gRPC {k}: {e}")
    close(r.as_numpy("output"), mlp.run(["output"], {"input": xs[k]})[0], f"concurrent gRPC {k}")
print("ok: infer over HTTP (JSON, binary) and gRPC equals onnxruntime")
