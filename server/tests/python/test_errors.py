"""Error cases through tritonclient (HTTP and gRPC) and a raw HTTP client:
unknown model, wrong tensor name / datatype / shape, body too large, malformed
JSON; each answered with the protocol's status and a clear message, and the
server keeps serving good requests after each one."""
import http.client as rawhttp
import json

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from common import args, check, close, raises, session

a = args()
http = httpclient.InferenceServerClient(a.http)
grpc = grpcclient.InferenceServerClient(a.grpc)
mlp = session("mlp")
x = np.random.default_rng(3).standard_normal((1, 256)).astype(np.float32)
want = mlp.run(["output"], {"input": x})[0]


def inp(mod, name, arr, datatype="FP32", binary=True):
    i = mod.InferInput(name, list(arr.shape), datatype)
    if mod is httpclient:
        i.set_data_from_numpy(arr, binary_data=binary)
    else:
        i.set_data_from_numpy(arr)
    return i


def still_serving(what):
    close(http.infer("mlp", [inp(httpclient, "input", x)]).as_numpy("output"), want, f"HTTP after {what}")
    close(grpc.infer("mlp", [inp(grpcclient, "input", x)]).as_numpy("output"), want, f"gRPC after {what}")


# Unknown model.
check(not http.is_model_ready("nope"), "HTTP: unknown model is not ready")
raises(lambda: http.get_model_metadata("nope"), "404", "unknown model `nope`", "HTTP metadata of unknown model")
raises(lambda: http.infer("nope", [inp(httpclient, "input", x)]), "404", "unknown model `nope`", "HTTP unknown model")
raises(lambda: grpc.infer("nope", [inp(grpcclient, "input", x)]), "StatusCode.NOT_FOUND", "unknown model `nope`", "gRPC unknown model")
raises(lambda: http.infer("mlp", [inp(httpclient, "input", x)], model_version="7"), "404", "unknown version `7`", "HTTP unknown version")
still_serving("unknown model")

# Wrong tensor name, datatype, shape; JSON and binary inputs alike.
for binary in (False, True):
    raises(lambda: http.infer("mlp", [inp(httpclient, "inputs", x, binary=binary)]), "400", "unknown input `inputs`", "HTTP wrong name")
    raises(lambda: http.infer("mlp", [inp(httpclient, "input", x.astype(np.float64), "FP64", binary)]), "400",
           "has datatype FP64 but model `mlp` takes FP32", "HTTP wrong datatype")
    raises(lambda: http.infer("mlp", [inp(httpclient, "input", x[:, :200], binary=binary)]), "400",
           "has shape [1, 200] but model `mlp` takes [-1, 256]", "HTTP wrong shape")
    raises(lambda: http.infer("mlp", [inp(httpclient, "input", x)], outputs=[httpclient.InferRequestedOutput("nope")]),
           "400", "unknown output `nope`", "HTTP unknown output")
raises(lambda: grpc.infer("mlp", [inp(grpcclient, "inputs", x)]), "StatusCode.INVALID_ARGUMENT", "unknown input `inputs`", "gRPC wrong name")
# One input's data twice (raw bytes and typed values): refused, not one of them silently ignored.
both = inp(grpcclient, "input", x)
both._get_tensor().contents.fp32_contents.extend((x + 1).flatten().tolist())
raises(lambda: grpc.infer("mlp", [both]), "StatusCode.INVALID_ARGUMENT",
       "input `input` has both raw_input_contents and typed contents", "gRPC raw and typed contents for one input")
raises(lambda: grpc.infer("mlp", [inp(grpcclient, "input", x.astype(np.int64), "INT64")]), "StatusCode.INVALID_ARGUMENT",
       "has datatype INT64 but model `mlp` takes FP32", "gRPC wrong datatype")
raises(lambda: grpc.infer("mlp", [inp(grpcclient, "input", x.reshape(1, 1, 256))]), "StatusCode.INVALID_ARGUMENT",
       "has shape [1, 1, 256]", "gRPC wrong shape")
still_serving("wrong tensors")

# Body over the server's limit (the test server allows 4 MB): 413, and gRPC's message limit.
big = np.zeros((5000, 256), np.float32)  # 5.1 MB
raises(lambda: http.infer("mlp", [inp(httpclient, "input", big)]), "413", "over the server's limit", "HTTP too large")
e = raises(lambda: grpc.infer("mlp", [inp(grpcclient, "input", big)]), "StatusCode.RESOURCE_EXHAUSTED", "", "gRPC too large")
still_serving("too large")

# Malformed JSON, and JSON that is not an infer request, from a raw HTTP client.
host, port = a.http.rsplit(":", 1)
for body, fragment in [(b'{"inputs": [', "malformed JSON"), (b'{"inputs": 3}', "malformed JSON"), (b"\xff\xfe", "malformed JSON"),
                       (json.dumps({"inputs": [{"name": "input", "shape": [1, 256], "datatype": "FP32", "data": [1.0]}]}).encode(),
                        "(256 elements) but its data holds 1")]:
    c = rawhttp.HTTPConnection(host, int(port), timeout=10)
    c.request("POST", "/v2/models/mlp/infer", body=body, headers={"Content-Type": "application/json"})
    r = c.getresponse()
    answer = json.loads(r.read())
    check(r.status == 400, f"malformed body {body[:20]!r}: status {r.status}")
    check(fragment in answer["error"], f"malformed body {body[:20]!r}: {answer}")
    c.close()
still_serving("malformed JSON")
print("ok: errors answered as the protocol says; the server kept serving")
