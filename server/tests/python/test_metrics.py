"""/metrics is consistent with the traffic sent: known numbers of good and bad
requests to mlp_metrics (a model no other test touches) over HTTP and gRPC,
then the server's request counters, the runtime's request, inference and
execution counts and the latency histograms must have moved by exactly that."""
import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from common import args, check, metrics, value

a = args()
http = httpclient.InferenceServerClient(a.http)
grpc = grpcclient.InferenceServerClient(a.grpc)
M = "mlp_metrics"
rng = np.random.default_rng(1)


def inp(mod, rows, name="input"):
    i = mod.InferInput(name, [rows, 256], "FP32")
    i.set_data_from_numpy(rng.standard_normal((rows, 256)).astype(np.float32))
    return i


before = metrics(a.metrics)
HTTP_OK, HTTP_BAD, GRPC_OK, GRPC_BAD = 7, 3, 5, 2
rows = 0
for k in range(HTTP_OK):
    http.infer(M, [inp(httpclient, 1 + k % 3)])
    rows += 1 + k % 3
for k in range(GRPC_OK):
    grpc.infer(M, [inp(grpcclient, 2)])
    rows += 2
for mod, client, n in ((httpclient, http, HTTP_BAD), (grpcclient, grpc, GRPC_BAD)):
    for _ in range(n):
        try:
            client.infer(M, [inp(mod, 1, "wrong_name")])
            raise AssertionError("a wrong input name was accepted")
        except InferenceServerException:
            pass
http.is_model_ready(M)
after = metrics(a.metrics)


def delta(name, **labels):
    return value(after, name, **labels) - value(before, name, **labels)


def expect(got, want, what):
    check(got == want, f"{what}: {got}, want {want}")


server = dict(endpoint="infer", model=M)
expect(delta("baton_server_requests_total", protocol="http", code="200", **server), HTTP_OK, "HTTP infer 200")
expect(delta("baton_server_requests_total", protocol="http", code="400", **server), HTTP_BAD, "HTTP infer 400")
expect(delta("baton_server_requests_total", protocol="grpc", code="OK", **server), GRPC_OK, "gRPC infer OK")
expect(delta("baton_server_requests_total", protocol="grpc", code="INVALID_ARGUMENT", **server), GRPC_BAD, "gRPC infer INVALID_ARGUMENT")
expect(delta("baton_server_requests_total", protocol="http", endpoint="ready", model=M, code="200"), 1, "HTTP ready")
expect(delta("baton_server_infer_seconds_count", model=M), HTTP_OK + HTTP_BAD + GRPC_OK + GRPC_BAD, "server infer latency count")

# The runtime's own series (pipeline mlp_metrics, node mlp).
expect(delta("baton_requests_total", pipeline=M, outcome="ok"), HTTP_OK + GRPC_OK, "runtime requests ok")
expect(delta("baton_request_seconds_count", pipeline=M), HTTP_OK + GRPC_OK, "end-to-end latency histogram count")
expect(delta("baton_inferences_total", pipeline=M, node="mlp"), rows, "inferences (rows)")
executions = delta("baton_executions_total", pipeline=M, node="mlp")
check(1 <= executions <= HTTP_OK + GRPC_OK, f"executions {executions}")
expect(delta("baton_batch_size_sum", pipeline=M, node="mlp"), rows, "batch size histogram sum")
expect(delta("baton_batch_size_count", pipeline=M, node="mlp"), executions, "batch size histogram count")
expect(delta("baton_compute_seconds_count", pipeline=M, node="mlp"), executions, "compute time histogram count")
expect(delta("baton_queue_seconds_count", pipeline=M, node="mlp"), HTTP_OK + GRPC_OK, "queue time histogram count")
check(value(after, "baton_in_flight", pipeline=M) == 0, "nothing in flight")
check(any(n == "baton_queue_depth" and ("pipeline", M) in ls for n, ls in after), "queue depth gauge present")
le = [dict(ls).get("le") for n, ls in after if n == "baton_request_seconds_bucket" and ("pipeline", M) in ls]
check("+Inf" in le and len(le) > 10, f"end-to-end latency is a histogram with buckets: {le}")
inf = value(after, "baton_request_seconds_bucket", pipeline=M, le="+Inf")
check(inf == value(after, "baton_request_seconds_count", pipeline=M), "histogram +Inf bucket equals its count")
print(f"ok: metrics consistent with the traffic ({HTTP_OK + GRPC_OK} ok, {HTTP_BAD + GRPC_BAD} bad, {rows} rows in "
      f"{executions:.0f} executions)")
