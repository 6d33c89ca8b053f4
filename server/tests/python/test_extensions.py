"""Triton's extensions and the protocol's response bodies, through tritonclient
(HTTP and gRPC) against mlp and stateful: the health and readiness bodies,
model configuration, statistics (per model and for all models, consistent
with the requests sent and with /metrics, on mlp_stats), streaming gRPC inference (answers
in order per sequence, equal to onnxruntime), and every call Baton does not
support answering with a message that names it (counted in /metrics)."""
import json
import queue
import urllib.request
from functools import partial

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from common import args, check, close, metrics, raises, session, value

a = args()
http = httpclient.InferenceServerClient(a.http)
grpc = grpcclient.InferenceServerClient(a.grpc)
rng = np.random.default_rng(5)
mlp = session("mlp")


def get(path):
    """(status, JSON body) of GET path."""
    try:
        r = urllib.request.urlopen(f"http://{a.http}{path}", timeout=10)
        return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


# The protocol's bodies of health and readiness.
check(get("/v2/health/live") == (200, {"live": True}), f"live: {get('/v2/health/live')}")
check(get("/v2/health/ready") == (200, {"ready": True}), f"ready: {get('/v2/health/ready')}")
check(get("/v2/models/mlp/ready") == (200, {"name": "mlp", "ready": True}), f"model ready: {get('/v2/models/mlp/ready')}")
check(get("/v2/models/mlp/versions/1/ready")[1] == {"name": "mlp", "ready": True}, "model version ready")
check(get("/v2/models/nope/ready")[0] == 404, "unknown model's readiness is 404")
extensions = http.get_server_metadata()["extensions"]
for e in ("statistics", "model_configuration", "model_repository"):
    check(e in extensions, f"HTTP extensions {extensions} lack {e}")
check(set(grpc.get_server_metadata().extensions) == set(extensions), "gRPC advertises what HTTP does")

# Model configuration: shapes without the batch dim, batching sections.
config = http.get_model_config("mlp")
check(config["name"] == "mlp" and config["platform"] == "baton", f"config: {config}")
check(config["max_batch_size"] == 32, f"max_batch_size {config['max_batch_size']}")
check(config["input"] == [{"name": "input", "data_type": "TYPE_FP32", "dims": [256], "optional": False}], f"inputs {config['input']}")
check([(o["name"], o["data_type"], o["dims"]) for o in config["output"]] == [("output", "TYPE_FP32", [10])], f"outputs {config['output']}")
check("dynamic_batching" in config and "sequence_batching" not in config, f"batching sections of mlp: {config}")
check(http.get_model_config("mlp", "1") == config, "config of version 1")
g = grpc.get_model_config("mlp").config
check(g.name == "mlp" and g.platform == "baton" and g.max_batch_size == 32, f"gRPC config {g}")
check(list(g.input[0].dims) == [256] and g.input[0].data_type == 11, f"gRPC input {g.input}")  # TYPE_FP32
check(list(g.output[0].dims) == [10] and g.HasField("dynamic_batching"), f"gRPC output {g.output}")
s = http.get_model_config("stateful")
check(s["sequence_batching"]["max_sequence_idle_microseconds"] == 60_000_000, f"stateful: {s}")
check(s["input"][0]["dims"] == [8], f"stateful inputs {s['input']}")
check(grpc.get_model_config("stateful").config.HasField("sequence_batching"), "gRPC sequence_batching")
raises(lambda: http.get_model_config("nope"), "404", "unknown model `nope`", "HTTP config of unknown model")
raises(lambda: grpc.get_model_config("nope"), "StatusCode.NOT_FOUND", "unknown model `nope`", "gRPC config of unknown model")


# Statistics: a known number of requests over both protocols to mlp_stats, a model
# no other test touches (its /metrics series are this test's alone).
M = "mlp_stats"
def inp(mod, rows, name="input"):
    i = mod.InferInput(name, [rows, 256], "FP32")
    i.set_data_from_numpy(rng.standard_normal((rows, 256)).astype(np.float32))
    return i


def stats(model):
    return http.get_inference_statistics(model)["model_stats"][0]


before, metrics_before = stats(M), metrics(a.metrics)
OK_HTTP, OK_GRPC, BAD = 6, 4, 3
rows = 0
for k in range(OK_HTTP):
    http.infer(M, [inp(httpclient, 1 + k % 2)])
    rows += 1 + k % 2
for _ in range(OK_GRPC):
    grpc.infer(M, [inp(grpcclient, 3)])
    rows += 3
for _ in range(BAD):
    raises(lambda: http.infer(M, [inp(httpclient, 1, "wrong")]), "400", "unknown input", "bad request")
after, metrics_after = stats(M), metrics(a.metrics)


def delta(*path):
    x, y = after, before
    for p in path:
        x, y = x[p], y[p]
    return int(x) - int(y)


ok = OK_HTTP + OK_GRPC
check(delta("inference_stats", "success", "count") == ok, f"success count {delta('inference_stats', 'success', 'count')}, want {ok}")
check(delta("inference_stats", "fail", "count") == BAD, f"fail count {delta('inference_stats', 'fail', 'count')}, want {BAD}")
for part in ("queue", "compute_input", "compute_infer", "compute_output"):
    check(delta("inference_stats", part, "count") == ok, f"{part} count {delta('inference_stats', part, 'count')}, want {ok}")
    check(delta("inference_stats", part, "ns") > 0, f"{part} ns did not grow")
check(delta("inference_count") == rows, f"inference_count {delta('inference_count')}, want {rows}")
executions = value(metrics_after, "baton_executions_total", pipeline=M) - value(metrics_before, "baton_executions_total", pipeline=M)
check(delta("execution_count") == executions and 1 <= executions <= ok, f"execution_count {delta('execution_count')}, /metrics {executions}")
check(sum(int(b["compute_infer"]["count"]) for b in after["batch_stats"]) == int(after["execution_count"]), f"batch_stats {after['batch_stats']}")
# Each request is charged its whole batch (Triton's count): the requests' compute is at
# least the batches' (equal only when every batch held one request).
batches_ns = sum(int(b["compute_infer"]["ns"]) for b in after["batch_stats"])
check(int(after["inference_stats"]["compute_infer"]["ns"]) >= batches_ns, f"compute_infer {after['inference_stats']['compute_infer']} against batches' {batches_ns} ns")
check(int(after["last_inference"]) > 0, "last_inference set")
ok_metrics = sum(value(metrics_after, "baton_server_requests_total", endpoint="infer", model=M, code=c)
                 - value(metrics_before, "baton_server_requests_total", endpoint="infer", model=M, code=c) for c in ("200", "OK"))
check(ok_metrics == ok, f"/metrics counts {ok_metrics} good infers, statistics {ok}")
# gRPC's ModelStatistics answers the same figures; all-model statistics hold every model.
gs = grpc.get_inference_statistics(M, as_json=True)["model_stats"][0]
check(int(gs["inference_stats"]["success"]["count"]) == int(after["inference_stats"]["success"]["count"]), f"gRPC stats {gs}")
check(int(gs["execution_count"]) == int(after["execution_count"]), "gRPC execution_count")
names = sorted(m["name"] for m in http.get_inference_statistics()["model_stats"])
check(names == ["mlp", M, "stateful"], f"HTTP all-model statistics: {names}")
names = sorted(m["name"] for m in grpc.get_inference_statistics(as_json=True)["model_stats"])
check(names == ["mlp", M, "stateful"], f"gRPC all-model statistics: {names}")
raises(lambda: http.get_inference_statistics("nope"), "404", "unknown model `nope`", "HTTP stats of unknown model")

# Streaming gRPC: two interleaved sequences of stateful and plain mlp requests on one stream.
results = queue.Queue()
grpc.start_stream(callback=lambda result, error: results.put((result, error)))
STEPS = 5
xs = {sid: [rng.standard_normal((1, 8)).astype(np.float32) for _ in range(STEPS)] for sid in (7, 8)}
plain = [rng.standard_normal((2, 256)).astype(np.float32) for _ in range(4)]
for k in range(STEPS):
    for sid in (7, 8):
        i = grpcclient.InferInput("x", [1, 8], "FP32")
        i.set_data_from_numpy(xs[sid][k])
        grpc.async_stream_infer("stateful", [i], request_id=f"{sid}-{k}", sequence_id=sid,
                                sequence_start=k == 0, sequence_end=k == STEPS - 1)
    if k < len(plain):
        i = grpcclient.InferInput("input", [2, 256], "FP32")
        i.set_data_from_numpy(plain[k])
        grpc.async_stream_infer("mlp", [i], request_id=f"mlp-{k}")
bad = grpcclient.InferInput("wrong", [1, 256], "FP32")
bad.set_data_from_numpy(plain[0][:1])
grpc.async_stream_infer("mlp", [bad], request_id="bad")
answers = [results.get(timeout=30) for _ in range(2 * STEPS + len(plain) + 1)]
grpc.stop_stream()
errors = [e for r, e in answers if e is not None]
check(len(errors) == 1 and "unknown input `wrong`" in str(errors[0]), f"stream errors: {errors}")
got = [(r.get_response().id, r) for r, e in answers if e is None]
for sid in (7, 8):
    order = [rid for rid, _ in got if rid.startswith(f"{sid}-")]
    check(order == [f"{sid}-{k}" for k in range(STEPS)], f"sequence {sid} answered out of order: {order}")
    ref = session("stateful")
    state = np.zeros((1, 16), np.float32)
    for k in range(STEPS):
        y, state = ref.run(["y", "new_state"], {"x": xs[sid][k], "state": state})
        close(dict(got)[f"{sid}-{k}"].as_numpy("y"), y, f"stream sequence {sid} step {k}")
for k, x in enumerate(plain):
    close(dict(got)[f"mlp-{k}"].as_numpy("output"), mlp.run(["output"], {"input": x})[0], f"stream mlp {k}")

# Calls Baton does not support: a message naming the call, over both protocols, counted.
m0 = metrics(a.metrics)
unsupported_http = [
    (http.get_trace_settings, "trace settings"),
    (partial(http.update_trace_settings, settings={"trace_rate": "1"}), "trace settings"),
    (http.get_log_settings, "log settings"),
    (http.get_system_shared_memory_status, "system shared memory status"),
    (partial(http.unregister_system_shared_memory), "system shared memory unregister"),
    (http.get_cuda_shared_memory_status, "CUDA shared memory status"),
]
for fn, name in unsupported_http:
    raises(fn, "501", f"{name} is not supported by Baton", f"HTTP {name}")
unsupported_grpc = [
    (grpc.get_trace_settings, "TraceSetting"),
    (grpc.get_log_settings, "LogSettings"),
    (grpc.get_system_shared_memory_status, "SystemSharedMemoryStatus"),
    (grpc.unregister_system_shared_memory, "SystemSharedMemoryUnregister"),
    (grpc.get_cuda_shared_memory_status, "CudaSharedMemoryStatus"),
]
for fn, name in unsupported_grpc:
    raises(fn, "StatusCode.UNIMPLEMENTED", f"{name}", f"gRPC {name}")
    raises(fn, "StatusCode.UNIMPLEMENTED", "is not supported by Baton", f"gRPC {name}")
m1 = metrics(a.metrics)
counted = (value(m1, "baton_server_requests_total", endpoint="unsupported", protocol="http", code="501")
           - value(m0, "baton_server_requests_total", endpoint="unsupported", protocol="http", code="501"))
check(counted == len(unsupported_http), f"HTTP unsupported calls counted {counted}, want {len(unsupported_http)}")
counted = (value(m1, "baton_server_requests_total", endpoint="unsupported", protocol="grpc", code="UNIMPLEMENTED")
           - value(m0, "baton_server_requests_total", endpoint="unsupported", protocol="grpc", code="UNIMPLEMENTED"))
check(counted == 2 * len(unsupported_grpc), f"gRPC unsupported calls counted {counted}, want {2 * len(unsupported_grpc)}")
status, body = get("/v2/no/such/thing")
check(status == 404 and "GET /v2/no/such/thing" in body["error"], f"unknown path: {status} {body}")
print(f"ok: health bodies, config, statistics ({ok} ok, {BAD} failed, {executions:.0f} executions), "
      f"stream infer and {len(unsupported_http) + len(unsupported_grpc)} unsupported calls")
