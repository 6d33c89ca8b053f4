"""The model repository extension through tritonclient (HTTP and gRPC), on a
server started with a model repository (--repo: slowrepo.toml, every run
slowed to ~0.1 s, one request a batch) and mlp given on the command line:
the index; reloading a changed file while requests are in flight (every one
is answered by the old pipeline, later ones by the new); unload (drains, then
not ready, not served, UNAVAILABLE in the index) and load again; a failed load
and the calls that cannot work, each with a clear message."""
import os
import threading
import time
import urllib.error
import urllib.request

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from common import args, check, close, metrics, raises, session, value

a = args()
http = httpclient.InferenceServerClient(a.http)
grpc = grpcclient.InferenceServerClient(a.grpc)
slow = session("slow")
x = np.random.default_rng(2).standard_normal((1, 64)).astype(np.float32)
want = slow.run(["y"], {"x": x})[0]
path = os.path.join(a.repo, "slowrepo.toml")


def index(client):
    if client is http:
        return {m["name"]: (m["state"], m.get("reason", "")) for m in http.get_model_repository_index()}
    return {m.name: (m.state, m.reason) for m in grpc.get_model_repository_index().models}


def poll(cond, what, limit=30.0):
    """Waits (up to `limit` s) for cond() to hold."""
    deadline = time.monotonic() + limit
    while not cond():
        check(time.monotonic() < deadline, f"timed out waiting for {what}")
        time.sleep(0.01)


def infer(client_mod, addr, output):
    c = client_mod.InferenceServerClient(addr)
    i = client_mod.InferInput("x", [1, 64], "FP32")
    i.set_data_from_numpy(x)
    return c.infer("slowrepo", [i]).as_numpy(output)


for client in (http, grpc):
    got = index(client)
    check(got == {"mlp": ("READY", ""), "slowrepo": ("READY", "")}, f"index: {got}")
check(http.is_model_ready("slowrepo") and grpc.is_model_ready("slowrepo"), "slowrepo ready")
close(infer(httpclient, a.http, "y"), want, "slowrepo before the reload")

# Reload a changed file (output renamed y -> y2) with requests in flight.
N = 6
results, errors = [], []


def client(k):
    try:
        mod, addr = (httpclient, a.http) if k % 2 else (grpcclient, a.grpc)
        results.append(infer(mod, addr, "y"))
    except Exception as e:  # noqa: BLE001 - every failure is reported below
        errors.append(repr(e))


threads = [threading.Thread(target=client, args=(k,)) for k in range(N)]
for t in threads:
    t.start()
poll(lambda: value(metrics(a.metrics), "baton_in_flight", pipeline="slowrepo") >= 3, "requests in flight")
with open(path) as f:
    text = f.read()
with open(path, "w") as f:
    f.write(text.replace("[outputs.y]", "[outputs.y2]"))
http.load_model("slowrepo")
for t in threads:
    t.join(timeout=60)
check(not errors, f"requests in flight during the reload failed: {errors}")
check(len(results) == N, f"{len(results)} of {N} in-flight requests answered")
for k, got in enumerate(results):
    close(got, want, f"in-flight request {k}")
outputs = [o["name"] for o in http.get_model_metadata("slowrepo")["outputs"]]
check(outputs == ["y2"], f"after the reload the model gives {outputs}")
close(infer(grpcclient, a.grpc, "y2"), want, "the reloaded pipeline")

# Unload: drains, then not ready and not served; load brings it back.
grpc.unload_model("slowrepo")
check(not http.is_model_ready("slowrepo") and not grpc.is_model_ready("slowrepo"), "unloaded model reads not ready")
check(index(http)["slowrepo"] == ("UNAVAILABLE", "unloaded"), f"index after unload: {index(http)}")
raises(lambda: infer(httpclient, a.http, "y2"), "404", "model `slowrepo` is not loaded", "HTTP infer of an unloaded model")
names = [m["name"] for m in http.get_inference_statistics()["model_stats"]]
check(names == ["mlp"], f"statistics of loaded models: {names}")
check(value(metrics(a.metrics), "baton_in_flight", pipeline="slowrepo") == 0, "the unloaded model drained")
http.load_model("slowrepo")
check(http.is_model_ready("slowrepo"), "loaded again")
close(infer(httpclient, a.http, "y2"), want, "after loading again")

# Failures: each with a message, and the server keeps serving.
raises(lambda: http.load_model("nope"), "404", "no pipeline file", "HTTP load of a missing file")
raises(lambda: grpc.load_model("nope"), "StatusCode.NOT_FOUND", "no pipeline file", "gRPC load of a missing file")
for i in range(20):
    raises(lambda: http.load_model(f"junk{i}"), "404", "no pipeline file", "HTTP load of another missing file")
for client in (http, grpc):
    listed = [name for name in index(client) if name == "nope" or name.startswith("junk")]
    check(not listed, f"failed loads of unknown names leave no index entry: {listed}")
status = urllib.request.Request(f"http://{a.http}/v2/models/junk1/ready")
try:
    urllib.request.urlopen(status)
    check(False, "a name never loaded is not ready")
except urllib.error.HTTPError as e:
    check(e.code == 404, f"readiness of a name never loaded: {e.code}, want 404 (unknown model)")
raises(lambda: http.unload_model("mlp"), "400", "given on the command line", "HTTP unload of a command-line model")
check(http.is_model_ready("mlp"), "a failed unload leaves the model ready")
with open(os.path.join(a.repo, "broken.toml"), "w") as f:
    f.write("[pipeline]\nname = \"broken\"\n[nodes.n]\nstages = []\n")
raises(lambda: http.load_model("broken"), "400", "failed to load model `broken`", "HTTP load of a broken file")
state, reason = index(grpc)["broken"]
check(state == "UNAVAILABLE" and reason, f"broken in the index: {state} {reason!r}")
raises(lambda: http.load_model("slowrepo", config='{"max_batch_size": 4}'), "501", "not supported by Baton",
       "load with a config override")
check(http.is_model_ready("slowrepo"), "still ready after the failed calls")
print(f"ok: repository index, reload with {N} requests in flight, unload, load, and failures")
