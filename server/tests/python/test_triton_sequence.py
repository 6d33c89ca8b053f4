"""Triton sequence models served unchanged (run by server/tests/triton_repository.rs):
seq_direct and seq_oldest (sequence_acc.onnx with START/END/READY/CORRID control inputs
and an implicit state) driven by tritonclient over HTTP, gRPC and gRPC streaming with
integer correlation ids, and seq_string (sequence_acc_str.onnx, CORRID TYPE_STRING) with
string ones, and seq_u64 / seq_u32 (CORRID TYPE_UINT64 / TYPE_UINT32) with ids past
INT64 / up to UINT32's top; sequences interleaved and batched together; every answer equal to
onnxruntime run step by step on the same file with the controls Triton would fill.
A correlation id of the other type than the model's CORRID is refused, naming both, and one
past a TYPE_UINT32 CORRID's range is refused naming the input and type.

--repo: the repository."""
import os
import queue
from functools import partial

import numpy as np
import onnxruntime as ort
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from common import args, check, raises

a = args()
http = httpclient.InferenceServerClient(a.http, concurrency=8)
grpc = grpcclient.InferenceServerClient(a.grpc)
stream_client = grpcclient.InferenceServerClient(a.grpc)
rng = np.random.default_rng(5)
so = ort.SessionOptions()
so.intra_op_num_threads = 1
refs = {m: ort.InferenceSession(os.path.join(a.repo, m, "1", "model.onnx"), so, providers=["CPUExecutionProvider"])
        for m in ("seq_direct", "seq_string", "seq_u64", "seq_u32")}
CORRID_TYPES = {"seq_u64": np.uint64, "seq_u32": np.uint32}
STEPS = 5


def reference(model, sid, start, end, x, state):
    """One step in onnxruntime with the controls the server must fill: (OUTPUT, CORRID_OUT, END_OUT, new state)."""
    corrid = np.array([[sid]], object) if isinstance(sid, str) else np.array([[sid]], CORRID_TYPES.get(model, np.int64))
    feeds = {"INPUT": x, "START": np.array([[int(start)]], np.int32), "END": np.array([[float(end)]], np.float32),
             "READY": np.array([[True]]), "CORRID": corrid, "STATE_IN": state}
    ref = refs[model if model in refs else "seq_direct"]
    out, corrid, end_out, new_state = ref.run(["OUTPUT", "CORRID_OUT", "END_OUT", "STATE_OUT"], feeds)
    return out, corrid, end_out, new_state


def same_corrid(got, want):
    """CORRID_OUT as tritonclient gives it (bytes for strings) against onnxruntime's (str for strings), types included."""
    if want.dtype == object:
        return got.shape == want.shape and [g.decode() for g in got.ravel()] == list(want.ravel())
    return got.dtype == want.dtype and np.array_equal(got, want)


def request(mod, x):
    i = mod.InferInput("INPUT", [1, 1], "INT32")
    i.set_data_from_numpy(x)
    return [i]


answers = queue.Queue()
stream_client.start_stream(callback=lambda result, error: answers.put((result, error)))


def put(box, result, error):
    box.put((result, error))


def send_all(model, chunk):
    """Sends one chunk of every sequence, concurrently where the protocol allows; returns {sid: result}."""
    pending, got = {}, {}
    for sid, (proto, x, start, end) in chunk.items():
        flags = dict(sequence_id=sid, sequence_start=start, sequence_end=end)
        if proto == "http":
            pending[sid] = http.async_infer(model, request(httpclient, x), **flags)
        elif proto == "grpc":
            box = queue.Queue()
            grpc.async_infer(model, request(grpcclient, x), partial(put, box), **flags)
            pending[sid] = box
        else:
            stream_client.async_stream_infer(model, request(grpcclient, x), request_id=str(sid), **flags)
            pending[sid] = None
    streamed = {str(sid): sid for sid, p in pending.items() if p is None}
    for _ in streamed:
        result, error = answers.get(timeout=60)
        check(error is None, f"{model} stream: {error}")
        got[streamed[result.get_response().id]] = result
    for sid, p in pending.items():
        if isinstance(p, queue.Queue):
            result, error = p.get(timeout=60)
            check(error is None, f"{model} gRPC sequence {sid}: {error}")
            got[sid] = result
        elif p is not None:
            got[sid] = p.get_result()
    return got


# Six sequences, two per path (HTTP, gRPC, gRPC streaming), one chunk of each per round, sent together.
INT_IDS = {11: "http", 12: "http", 21: "grpc", 22: "grpc", 31: "stream", 32: "stream"}
# String ids: "12" is a string here, not the integer 12; ids differ only in their last character.
STR_IDS = {"seq-a": "http", "seq-b": "http", "12": "grpc", "séq-é": "grpc", "stream/1": "stream", "stream/2": "stream"}


def run_sequences(model, protos):
    state = {sid: np.zeros((1, 1), np.int32) for sid in protos}
    for k in range(STEPS):
        chunk = {sid: (p, rng.integers(-50, 50, (1, 1), dtype=np.int32), k == 0, k == STEPS - 1)
                 for sid, p in protos.items()}
        got = send_all(model, chunk)
        for sid, (p, x, start, end) in chunk.items():
            want, corrid, end_out, state[sid] = reference(model, sid, start, end, x, state[sid])
            r = got[sid]
            check(np.array_equal(r.as_numpy("OUTPUT"), want), f"{model} {p} sequence {sid!r} step {k}: "
                  f"{r.as_numpy('OUTPUT')} != {want}")
            check(same_corrid(r.as_numpy("CORRID_OUT"), corrid), f"{model} {sid!r} step {k}: CORRID {r.as_numpy('CORRID_OUT')}")
            check(np.array_equal(r.as_numpy("END_OUT"), end_out), f"{model} {sid!r} step {k}: END {r.as_numpy('END_OUT')}")


def string_ids():
    """seq_string: interleaved string sequences keep independent accumulators; ids of the wrong type are refused."""
    run_sequences("seq_string", STR_IDS)
    x = np.array([[3]], np.int32)
    raises(lambda: http.infer("seq_string", request(httpclient, x), sequence_id="seq-a"), "400",
           'unknown sequence "seq-a"', "seq_string ended")
    raises(lambda: grpc.infer("seq_string", request(grpcclient, x), sequence_id="never"), "StatusCode.INVALID_ARGUMENT",
           'unknown sequence "never"', "seq_string never opened over gRPC")
    raises(lambda: http.infer("seq_string", request(httpclient, x), sequence_id=5, sequence_start=True), "400",
           "takes string sequence ids (its CORRID control input `CORRID` is TYPE_STRING); sequence_id 5 is an integer",
           "an integer id on seq_string")
    raises(lambda: grpc.infer("seq_direct", request(grpcclient, x), sequence_id="abc", sequence_start=True),
           "StatusCode.INVALID_ARGUMENT", "takes unsigned integer sequence ids (its CORRID control input `CORRID` is "
           'TYPE_INT64); sequence_id "abc" is a string', "a string id on seq_direct over gRPC")
    # A one-chunk sequence (start and end together), and a restart under the same string.
    r = http.infer("seq_string", request(httpclient, x), sequence_id="once", sequence_start=True, sequence_end=True)
    check(r.as_numpy("OUTPUT")[0, 0] == 3 and r.as_numpy("CORRID_OUT")[0, 0] == b"once", f"one chunk: {r.get_response()}")
    http.infer("seq_string", request(httpclient, x), sequence_id="again", sequence_start=True)
    http.infer("seq_string", request(httpclient, x), sequence_id="again")
    r = http.infer("seq_string", request(httpclient, x), sequence_id="again", sequence_start=True, sequence_end=True)
    check(r.as_numpy("OUTPUT")[0, 0] == 3, f"restarted string sequence: {r.as_numpy('OUTPUT')}")


for model in ("seq_direct", "seq_oldest"):
    run_sequences(model, INT_IDS)
    x = np.array([[3]], np.int32)
    # Ended sequences: a chunk without start is refused, over each protocol.
    raises(lambda: http.infer(model, request(httpclient, x), sequence_id=11), "400", "unknown stream 11", f"{model} ended")
    raises(lambda: grpc.infer(model, request(grpcclient, x), sequence_id=21), "StatusCode.INVALID_ARGUMENT",
           "unknown stream 21", f"{model} ended over gRPC")
    # Never opened; no sequence id; a control input sent by the client.
    raises(lambda: http.infer(model, request(httpclient, x), sequence_id=999), "400", "unknown stream 999", f"{model} never opened")
    raises(lambda: http.infer(model, request(httpclient, x)), "400", "is a sequence model", f"{model} without sequence_id")
    start = httpclient.InferInput("START", [1, 1], "INT32")
    start.set_data_from_numpy(np.array([[1]], np.int32))
    raises(lambda: http.infer(model, request(httpclient, x) + [start], sequence_id=5, sequence_start=True), "400",
           "unknown input `START`", f"{model} with a control input sent")
    # The metadata shows the data inputs only; the config keeps the sequence batcher.
    meta = http.get_model_metadata(model)
    check([i["name"] for i in meta["inputs"]] == ["INPUT"], f"{model} metadata inputs: {meta['inputs']}")
    cfg = http.get_model_config(model)
    sb = cfg["sequence_batching"]
    check([c["name"] for c in sb["control_input"]] == ["START", "END", "READY", "CORRID"], f"{model} config: {sb}")
    check(("direct" if model == "seq_direct" else "oldest") in sb, f"{model} strategy: {sb}")
    g = grpc.get_model_config(model).config
    check(g.sequence_batching.state[0].input_name == "STATE_IN", f"{model} gRPC config: {g.sequence_batching}")

string_ids()


def unsigned_ids():
    """seq_u64 and seq_u32: CORRID filled with the integer id in the model's unsigned type."""
    # HTTP carries ids past INT64 (JSON numbers); tritonclient's gRPC sends ids as int64_param.
    u64 = {2**64 - 1: "http", 2**63 + 5: "http", 2**62: "grpc", 2**40 + 1: "grpc", 2**33: "stream", 7: "stream"}
    run_sequences("seq_u64", u64)
    u32 = {2**32 - 1: "http", 1: "http", 2**31: "grpc", 3: "grpc", 2**32 - 2: "stream", 9: "stream"}
    run_sequences("seq_u32", u32)
    x = np.array([[3]], np.int32)
    for mod, client, code in ((httpclient, http, "400"), (grpcclient, grpc, "StatusCode.INVALID_ARGUMENT")):
        raises(lambda: client.infer("seq_u32", request(mod, x), sequence_id=2**32, sequence_start=True), code,
               "sequence_id 4294967296 does not fit control input `CORRID` (TYPE_UINT32)",
               f"an id past UINT32 on seq_u32 over {mod.__name__}")


unsigned_ids()

# A restarted sequence (start again) begins from its first value; an error on the stream comes back on it.
x = np.array([[7]], np.int32)
r = http.infer("seq_direct", request(httpclient, x), sequence_id=40, sequence_start=True)
r = http.infer("seq_direct", request(httpclient, x), sequence_id=40)
check(r.as_numpy("OUTPUT")[0, 0] == 14, f"continued: {r.as_numpy('OUTPUT')}")
r = http.infer("seq_direct", request(httpclient, x), sequence_id=40, sequence_start=True, sequence_end=True)
check(r.as_numpy("OUTPUT")[0, 0] == 7, f"restarted: {r.as_numpy('OUTPUT')}")
stream_client.async_stream_infer("seq_direct", request(grpcclient, x), sequence_id=40, request_id="late")
result, error = answers.get(timeout=60)
check(result is None and error is not None and "unknown stream 40" in str(error), f"stream error: {result} {error}")
stream_client.stop_stream()
print("triton sequences: ok")
