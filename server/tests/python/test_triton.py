"""A Triton model repository served unchanged (run by server/tests/triton_repository.rs):
every model's answers through tritonclient over HTTP and gRPC equal onnxruntime's on the
same ONNX file; configs (written and completed) at both config endpoints; versions 1 and 2
of one model; UINT16, UINT32, UINT64 and BF16 tensors (JSON, binary, gRPC); an optional input left out or sent; a load with a JSON config override; unload and load; bad models listed
UNAVAILABLE with their error while the others serve.

--repo: the repository; --onnx: the folder of scripts/make_triton_models.py's models."""
import json
import os
import urllib.error
import urllib.request

import ml_dtypes
import numpy as np
import onnxruntime as ort
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from common import MODELS, args, check, close, raises

a = args()
http = httpclient.InferenceServerClient(a.http)
grpc = grpcclient.InferenceServerClient(a.grpc)
http_async = httpclient.InferenceServerClient(a.http, concurrency=8)
rng = np.random.default_rng(7)


def reference(path, feeds):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in s.get_outputs()], s.run(None, feeds)))


def infer(client_mod, client, model, feeds, version=""):
    inputs = []
    for name, value in feeds.items():
        i = client_mod.InferInput(name, list(value.shape), {np.int32: "INT32", np.int8: "INT8", np.float32: "FP32"}[value.dtype.type])
        i.set_data_from_numpy(value)
        inputs.append(i)
    return client.infer(model, inputs, model_version=version)


def same_as_ort(model, onnx_path, feeds, version=""):
    want = reference(onnx_path, feeds)
    for mod, client in ((httpclient, http), (grpcclient, grpc)):
        got = infer(mod, client, model, feeds, version)
        for name, value in want.items():
            g = got.as_numpy(name)
            check(g.dtype == value.dtype and np.array_equal(g, value) or np.allclose(g, value, rtol=1e-5, atol=1e-6),
                  f"{model} v{version or 'default'} {name} over {mod.__name__}: {g} != {value}")


def repo_model(name, version=1):
    return os.path.join(a.repo, name, str(version), "model.onnx")


# Every good model, over both protocols, equal to onnxruntime.
i32 = lambda rows: rng.integers(-1000, 1000, (rows, 16), dtype=np.int32)
i8 = lambda rows: rng.integers(-128, 128, (rows, 16), dtype=np.int8)
same_as_ort("simple", repo_model("simple"), {"INPUT0": i32(3), "INPUT1": i32(3)})
same_as_ort("simple_int8", repo_model("simple_int8"), {"INPUT0": i8(2), "INPUT1": i8(2)})
same_as_ort("auto_int8", repo_model("auto_int8"), {"INPUT0": i8(4), "INPUT1": i8(4)})
# BYTES: strings of decimal integers, as JSON and binary over HTTP and as bytes over gRPC.
text = lambda rows: np.array([[str(v) for v in r] for r in i32(rows)], dtype=object)
s0, s1 = text(3), text(3)
swant = reference(repo_model("simple_string"), {"INPUT0": s0, "INPUT1": s1})
for mod, client, binary in ((httpclient, http, False), (httpclient, http, True), (grpcclient, grpc, True)):
    inputs = []
    for name, value in (("INPUT0", s0), ("INPUT1", s1)):
        i = mod.InferInput(name, list(value.shape), "BYTES")
        i.set_data_from_numpy(value, **({"binary_data": binary} if mod is httpclient else {}))
        inputs.append(i)
    got = client.infer("simple_string", inputs)
    for name in ("OUTPUT0", "OUTPUT1"):
        g = [[v.decode() for v in r] for r in got.as_numpy(name)]
        check(g == swant[name].tolist(), f"simple_string {name} over {mod.__name__} binary={binary}: {g} != {swant[name]}")
same_as_ort("nobatch", repo_model("nobatch"), {"X": rng.standard_normal(4).astype(np.float32)})
same_as_ort("mlp", repo_model("mlp"), {"input": rng.standard_normal((4, 256)).astype(np.float32)})
x = rng.standard_normal((2, 4)).astype(np.float32)
same_as_ort("versioned", repo_model("versioned", 1), {"X": x}, "1")
same_as_ort("versioned", repo_model("versioned", 2), {"X": x}, "2")
same_as_ort("versioned", repo_model("versioned", 2), {"X": x})  # the default: the highest
got = infer(httpclient, http, "versioned", {"X": x}, "1").get_response()
check(got["model_version"] == "1", f"answer's version: {got}")

# reshape: the client sends and gets [N, 2, 2]; the model (plus_one.onnx) takes and gives [N, 4].
xr = rng.standard_normal((3, 2, 2)).astype(np.float32)
yr = reference(repo_model("reshaped"), {"X": xr.reshape(3, 4)})["Y"].reshape(3, 2, 2)
for mod, client in ((httpclient, http), (grpcclient, grpc)):
    i = mod.InferInput("X", [3, 2, 2], "FP32")
    i.set_data_from_numpy(xr)
    close(client.infer("reshaped", [i]).as_numpy("Y"), yr, f"reshaped over {mod.__name__}")
rmeta = http.get_model_metadata("reshaped")
check(rmeta["inputs"][0]["shape"] == [-1, 2, 2] and rmeta["outputs"][0]["shape"] == [-1, 2, 2], f"reshaped metadata: {rmeta}")
i = httpclient.InferInput("X", [3, 4], "FP32")
i.set_data_from_numpy(xr.reshape(3, 4))
raises(lambda: http.infer("reshaped", [i]), "400", "has shape [3, 4]", "the model's own shape is not the client's")

# An optional input (SCALE, with a default in scaled_add.onnx): left out, the answer is onnxruntime's with
# the default; sent, onnxruntime's with the value sent. Requests of both kinds in flight together batch together.
xo = rng.standard_normal((2, 4)).astype(np.float32)
scale = np.array([[3.0], [-0.5]], np.float32)
same_as_ort("optional", repo_model("optional"), {"X": xo})
same_as_ort("optional", repo_model("optional"), {"X": xo, "SCALE": scale})
pending = []
for k in range(8):
    feeds = {"X": rng.standard_normal((1 + k % 2, 4)).astype(np.float32)}
    if k % 2:
        feeds["SCALE"] = rng.standard_normal((2, 1)).astype(np.float32)
    inputs = []
    for name, value in feeds.items():
        i = httpclient.InferInput(name, list(value.shape), "FP32")
        i.set_data_from_numpy(value)
        inputs.append(i)
    pending.append((feeds, http_async.async_infer("optional", inputs)))
for feeds, p in pending:
    close(p.get_result().as_numpy("Y"), reference(repo_model("optional"), feeds)["Y"], f"optional, sent {list(feeds)}")
ocfg = http.get_model_config("optional")
check(ocfg["input"][1].get("optional") is True, f"optional config: {ocfg['input']}")

# Unsigned and BF16 tensors (identity_<type>.onnx: Y = X, F = X as FP32) over HTTP JSON, HTTP binary and gRPC,
# each answer equal to onnxruntime's. numpy has no bfloat16 of its own: onnxruntime takes BF16 as an OrtValue of
# its bits and gives back F (exact: every BF16 value is an FP32 value); tritonclient uses ml_dtypes.bfloat16.
def unsigned_and_bf16():
    top = {np.uint16: 2**16 - 1, np.uint32: 2**32 - 1, np.uint64: 2**64 - 1}
    for ty, triton in ((np.uint16, "UINT16"), (np.uint32, "UINT32"), (np.uint64, "UINT64")):
        name = "identity_" + np.dtype(ty).name
        x = np.array([[0, 1, top[ty], top[ty] - 7], [2**15, 3, 4, 5]], ty)
        want = reference(repo_model(name), {"X": x})
        for mod, client, binary in ((httpclient, http, False), (httpclient, http, True), (grpcclient, grpc, True)):
            i = mod.InferInput("X", list(x.shape), triton)
            i.set_data_from_numpy(x, **({"binary_data": binary} if mod is httpclient else {}))
            got = client.infer(name, [i])
            for out in ("Y", "F"):
                g = got.as_numpy(out)
                check(g.dtype == want[out].dtype and np.array_equal(g, want[out]),
                      f"{name} {out} over {mod.__name__} binary={binary}: {g} != {want[out]}")
            y = got.get_output("Y")
            datatype = y["datatype"] if mod is httpclient else y.datatype
            check(datatype == triton, f"{name} over {mod.__name__}: Y's datatype {datatype}")
    name = "identity_bfloat16"
    x = np.array([[1.5, -2.0, 3.0e38, 2.0**-130], [0.1, 257.0, -0.0, 7.0]], np.float32).astype(ml_dtypes.bfloat16)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    s = ort.InferenceSession(repo_model(name), so, providers=["CPUExecutionProvider"])
    bits = ort.OrtValue.ortvalue_from_numpy_with_onnx_type(x.view(np.uint16), onnx_element_type=16)
    want = s.run_with_ort_values(["F"], {"X": bits})[0].numpy()
    for mod, client in ((httpclient, http), (grpcclient, grpc)):
        i = mod.InferInput("X", list(x.shape), "BF16")
        i.set_data_from_numpy(x, **({"binary_data": True} if mod is httpclient else {}))
        got = client.infer(name, [i])
        y = got.as_numpy("Y")
        check(y.dtype == ml_dtypes.bfloat16 and np.array_equal(y.astype(np.float32), want),
              f"{name} Y over {mod.__name__}: {y} != {want}")
        check(np.array_equal(got.as_numpy("F"), want), f"{name} F over {mod.__name__}: {got.as_numpy('F')}")
    # BF16 as JSON numbers (Triton's HTTP JSON form), rounded to the nearest BF16.
    status, answer = post_json(name, "BF16", [1.5, 257.0, -2.0, 0.1])
    y = next(o for o in answer["outputs"] if o["name"] == "Y")
    want_json = np.array([1.5, 257.0, -2.0, 0.1], np.float32).astype(ml_dtypes.bfloat16).astype(np.float32)
    check(status == 200 and y["datatype"] == "BF16" and np.array_equal(np.array(y["data"], np.float32), want_json),
          f"{name} Y as JSON: {y} != {want_json}")
    # Past the datatype's range: refused, naming the element and datatype.
    status, answer = post_json("identity_uint16", "UINT16", [1, 2, 65536, 4])
    check(status == 400 and "element 2 (65536) is not a UINT16 value" in answer.get("error", ""),
          f"a UINT16 element past its range: {status} {answer}")


def post_json(model, datatype, data):
    """POSTs input X [1, len(data)] as JSON: (status, the JSON answer)."""
    body = {"inputs": [{"name": "X", "shape": [1, len(data)], "datatype": datatype, "data": data}]}
    req = urllib.request.Request(f"http://{a.http}/v2/models/{model}/infer", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())

unsigned_and_bf16()

# The ensemble of three models: one Baton pipeline, equal to running the three in onnxruntime; priority marked.
xe = rng.standard_normal((3, 4)).astype(np.float32)
ea = reference(repo_model("p1"), {"X": xe})["Y"]
eb = reference(repo_model("p2"), {"X": xe})["Y"]
ewant = reference(repo_model("addsub"), {"INPUT0": ea, "INPUT1": eb})
for mod, client in ((httpclient, http), (grpcclient, grpc)):
    for priority in (0, 1):
        i = mod.InferInput("X", [3, 4], "FP32")
        i.set_data_from_numpy(xe)
        got = client.infer("ens", [i], priority=priority)
        close(got.as_numpy("SUM"), ewant["OUTPUT0"], f"ensemble SUM over {mod.__name__} priority {priority}")
        close(got.as_numpy("DIFF"), ewant["OUTPUT1"], f"ensemble DIFF over {mod.__name__} priority {priority}")
check(http.get_model_config("ens")["platform"] == "ensemble", "the ensemble's config")
# The same ensemble with its steps under the greedy baseline (parameters baton_scheduler_policy) answers alike.
for mod, client in ((httpclient, http), (grpcclient, grpc)):
    i = mod.InferInput("X", [3, 4], "FP32")
    i.set_data_from_numpy(xe)
    got = client.infer("ens_greedy", [i], priority=1)
    close(got.as_numpy("SUM"), ewant["OUTPUT0"], f"greedy ensemble SUM over {mod.__name__}")

# Metadata and configs: the written config as parsed, the completed one from the ONNX model.
meta = http.get_model_metadata("versioned")
check(meta["versions"] == ["1", "2"] and meta["platform"] == "onnxruntime_onnx", f"versioned metadata: {meta}")
check(grpc.get_model_metadata("versioned").versions == ["1", "2"], "versioned gRPC metadata")
raises(lambda: http.get_model_metadata("versioned", "3"), "404", "unknown version `3`", "a version not served")
cfg = http.get_model_config("simple")
check(cfg["max_batch_size"] == 8 and cfg["dynamic_batching"]["max_queue_delay_microseconds"] == 100, f"simple: {cfg}")
check(cfg["instance_group"][0]["count"] == 2 and cfg["instance_group"][0]["kind"] == "KIND_CPU", f"simple: {cfg}")
auto = http.get_model_config("auto_int8")
check(auto["max_batch_size"] == 4 and auto["platform"] == "onnxruntime_onnx" and "dynamic_batching" in auto, f"auto: {auto}")
check([(t["name"], t["data_type"], t["dims"]) for t in auto["input"]]
      == [("INPUT0", "TYPE_INT8", [16]), ("INPUT1", "TYPE_INT8", [16])], f"auto inputs: {auto['input']}")
g = grpc.get_model_config("auto_int8").config
check(g.max_batch_size == 4 and [t.name for t in g.output] == ["OUTPUT0", "OUTPUT1"], f"gRPC auto config: {g}")
check(g.input[0].data_type == grpcclient.model_config_pb2.TYPE_INT8 and list(g.input[0].dims) == [16], f"gRPC auto input: {g.input[0]}")
gs = grpc.get_model_config("simple").config
check(gs.instance_group[0].count == 2 and gs.dynamic_batching.max_queue_delay_microseconds == 100, f"gRPC simple: {gs}")
check(gs.parameters["intra_op_thread_count"].string_value == "1", f"gRPC simple parameters: {gs}")
gv = grpc.get_model_config("versioned").config
check(gv.version_policy.HasField("all"), f"gRPC versioned policy: {gv}")
ge = grpc.get_model_config("ens").config
check([s.model_name for s in ge.ensemble_scheduling.step] == ["p1", "p2", "addsub"], f"gRPC ensemble: {ge}")
nob = grpc.get_model_config("nobatch").config
check(nob.max_batch_size == 0 and list(nob.input[0].dims) == [4], f"nobatch: {nob}")
# max_batch_size 4 from completion: five rows are refused.
raises(lambda: infer(httpclient, http, "auto_int8", {"INPUT0": i8(5), "INPUT1": i8(5)}), "400", "", "auto_int8 past max_batch_size")

# The index: every version of every good model READY; every bad model UNAVAILABLE with why.
index = http.get_model_repository_index()
rows = {(m["name"], m.get("version", "")): (m["state"], m.get("reason", "")) for m in index}
for name in ("simple", "simple_int8", "simple_string", "optional", "auto_int8", "nobatch", "mlp", "tomlmlp"):
    check(rows.get((name, "1")) == ("READY", ""), f"{name} in the index: {index}")
check(rows.get(("versioned", "2")) == ("READY", "") and rows.get(("versioned", "1")) == ("READY", ""), f"index: {index}")
bad = {m["name"]: m.get("reason", "") for m in index if m["state"] != "READY"}
check(set(bad) == {"bad_missing_file", "bad_no_model", "bad_type", "bad_field", "bad_unsupported", "bad_ens_model",
                   "bad_ens_tensor", "bad_ens_cycle_a", "bad_ens_cycle_b", "bad_seq_control", "bad_seq_corrid",
                   "bad_ens_policy", "bad_reshape", "bad_optional"},
      f"bad ones: {bad}")
gindex = {m.name: m.reason for m in grpc.get_model_repository_index().models if m.state != "READY"}
check(gindex == bad, f"gRPC index {gindex} != HTTP {bad}")

# A load with a config override (JSON, Triton's repository API): max_batch_size 2 from now on.
override = {"max_batch_size": 2, "dynamic_batching": {}, "instance_group": [{"count": 1, "kind": "KIND_CPU"}]}
http.load_model("auto_int8", config=json.dumps(override))
check(http.get_model_config("auto_int8")["max_batch_size"] == 2, "the override's max_batch_size")
same_as_ort("auto_int8", repo_model("auto_int8"), {"INPUT0": i8(2), "INPUT1": i8(2)})
raises(lambda: infer(httpclient, http, "auto_int8", {"INPUT0": i8(3), "INPUT1": i8(3)}), "400", "", "past the override's 2 rows")
raises(lambda: grpc.load_model("auto_int8", config=json.dumps({"max_batch_size": 2, "input": [{"name": "NOPE"}]})),
       "StatusCode.INVALID_ARGUMENT", "field `input[0].name`", "an override naming an unknown input")
check(http.get_model_config("auto_int8")["max_batch_size"] == 2, "a failed load keeps the model serving")
grpc.load_model("auto_int8")  # back to the folder's (no config.pbtxt: completed)
check(http.get_model_config("auto_int8")["max_batch_size"] == 4, "reloaded from the folder")

# Unload and load a Triton model.
http.unload_model("versioned")
check(not http.is_model_ready("versioned"), "versioned unloaded")
grpc.load_model("versioned")
same_as_ort("versioned", repo_model("versioned", 1), {"X": x}, "1")
# Loads carrying the model's files (Triton's repository API: `config` with `file:1/model.onnx`),
# under names the repository does not hold; HTTP sends them base64, gRPC as bytes.
def sent_config(name):
    t = lambda n: {"name": n, "data_type": "TYPE_FP32", "dims": [4]}
    return json.dumps({"name": name, "backend": "onnxruntime", "max_batch_size": 4, "input": [t("X")], "output": [t("Y")]})


def model_bytes(name):
    with open(os.path.join(a.onnx, name + ".onnx"), "rb") as f:
        return f.read()


http.load_model("sent_http", config=sent_config("sent_http"), files={"file:1/model.onnx": model_bytes("plus_one")})
same_as_ort("sent_http", os.path.join(a.onnx, "plus_one.onnx"), {"X": x})
grpc.load_model("sent_grpc", config=sent_config("sent_grpc"), files={"file:1/model.onnx": model_bytes("plus_two")})
same_as_ort("sent_grpc", os.path.join(a.onnx, "plus_two.onnx"), {"X": x})
check(http.get_model_config("sent_grpc")["max_batch_size"] == 4, "the sent model's config")
raises(lambda: http.load_model("sent_esc", config=sent_config("sent_esc"), files={"file:../escape.onnx": b"x"}),
       "400", "must be a relative path of plain names", "a sent file escaping its folder")
raises(lambda: grpc.load_model("sent_esc", config=sent_config("sent_esc"), files={"file:/etc/x.onnx": b"x"}),
       "StatusCode.INVALID_ARGUMENT", "must be a relative path of plain names", "an absolute sent file over gRPC")
raises(lambda: http.load_model("sent_noconf", files={"file:1/model.onnx": model_bytes("plus_one")}),
       "400", "needs the `config` parameter", "files without a config")
raises(lambda: http.load_model("sent_nomodel", config=sent_config("sent_nomodel"), files={"file:2/other.bin": b"x"}),
       "400", "model.onnx of version 2 is missing", "sent files without the model file")
http.unload_model("sent_http")
grpc.unload_model("sent_grpc")
check(not http.is_model_ready("sent_http") and not http.is_model_ready("sent_grpc"), "sent models unloaded")
print("triton repository: ok")
