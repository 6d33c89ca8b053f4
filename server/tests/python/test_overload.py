"""Overload: slow_small (models/slow.onnx, pipeline max_in_flight = 2) under
many concurrent clients over HTTP and gRPC. Past the bound requests are refused
at once (HTTP 429 / gRPC RESOURCE_EXHAUSTED) instead of queueing; admitted ones
are answered correctly; afterwards the model serves normally."""
import http.client as rawhttp
import json
import queue
import threading
import time

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from common import args, check, close, metrics, session, value

a = args()
slow = session("slow")
x = np.random.default_rng(9).standard_normal((8, 64)).astype(np.float32)
want = slow.run(["y"], {"x": x})[0]
N = 64

# tritonclient HTTP: 24 threads, each with its own client (a client is not shared across threads).
inp = httpclient.InferInput("x", [8, 64], "FP32")
inp.set_data_from_numpy(x)
counts = {"ok": 0, "refused": 0}
failures = []


def triton_http_client():
    c = httpclient.InferenceServerClient(a.http)
    for _ in range(4):
        try:
            got = c.infer("slow_small", [inp]).as_numpy("y")
            key = "ok" if np.allclose(got, want, rtol=1e-5, atol=1e-6) else "wrong"
        except InferenceServerException as e:
            key = "refused" if e.status() == "429" and "queue full" in e.message() else f"{e.status()} {e.message()}"
        with lock:
            if key in counts:
                counts[key] += 1
            else:
                failures.append(key)


lock = threading.Lock()
threads = [threading.Thread(target=triton_http_client) for _ in range(24)]
for t in threads:
    t.start()
for t in threads:
    t.join()
check(not failures, f"HTTP: unexpected answers {failures[:3]}")
http_ok, http_refused = counts["ok"], counts["refused"]

# tritonclient gRPC: 96 async requests at once.
grpc = grpcclient.InferenceServerClient(a.grpc)
ginp = grpcclient.InferInput("x", [8, 64], "FP32")
ginp.set_data_from_numpy(x)
answers = queue.Queue()
for _ in range(N):
    grpc.async_infer("slow_small", [ginp], callback=lambda result, error: answers.put((result, error)))
grpc_ok = grpc_refused = 0
for _ in range(N):
    result, error = answers.get(timeout=30)
    if error is None:
        close(result.as_numpy("y"), want, "admitted gRPC request")
        grpc_ok += 1
    else:
        check(error.status() == "StatusCode.RESOURCE_EXHAUSTED" and "queue full" in error.message(),
              f"gRPC refusal: {error.status()} {error.message()}")
        grpc_refused += 1

# Raw HTTP from 24 threads, timing each answer: refusals come at once.
host, port = a.http.rsplit(":", 1)
body = json.dumps({"inputs": [{"name": "x", "shape": [8, 64], "datatype": "FP32", "data": x.ravel().tolist()}]})
times = {200: [], 429: []}


def client():
    c = rawhttp.HTTPConnection(host, int(port), timeout=30)
    for _ in range(6):
        t = time.perf_counter()
        c.request("POST", "/v2/models/slow_small/infer", body=body, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        r.read()
        with lock:
            times.setdefault(r.status, []).append(time.perf_counter() - t)
    c.close()


threads = [threading.Thread(target=client) for _ in range(24)]
for t in threads:
    t.start()
for t in threads:
    t.join()
check(set(times) <= {200, 429}, f"only 200 and 429: {set(times)}")

print(f"HTTP (tritonclient): {http_ok} ok, {http_refused} refused; gRPC: {grpc_ok} ok, {grpc_refused} refused; "
      f"raw HTTP: {len(times[200])} ok, {len(times[429])} refused, median refusal "
      f"{1000 * float(np.median(times[429] or [0])):.2f} ms, median ok {1000 * float(np.median(times[200] or [0])):.2f} ms")
check(http_ok > 0 and http_refused > 0, "HTTP: some admitted, some refused")
check(grpc_ok > 0 and grpc_refused > 0, "gRPC: some admitted, some refused")
check(len(times[429]) > 0 and float(np.median(times[429])) < 0.05, "refusals answer at once (median < 50 ms)")

# Afterwards: normal service, nothing left in flight.
close(httpclient.InferenceServerClient(a.http).infer("slow_small", [inp]).as_numpy("y"), want, "after the overload")
deadline = time.time() + 5
while value(metrics(a.metrics), "baton_in_flight", pipeline="slow_small") != 0 and time.time() < deadline:
    time.sleep(0.05)
check(value(metrics(a.metrics), "baton_in_flight", pipeline="slow_small") == 0, "nothing left in flight")
print("ok: overload refused at once with 429 / RESOURCE_EXHAUSTED")
