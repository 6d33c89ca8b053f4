"""A stateful sequence (configs/stateful.toml: models/stateful.onnx with its
new_state written back as state) over sequence_id / sequence_start /
sequence_end, from tritonclient over HTTP and gRPC, interleaved with other
sequences, with integer and string sequence ids; answers must equal running the
model step by step with onnxruntime."""
import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from common import args, check, close, raises, session

a = args()
http = httpclient.InferenceServerClient(a.http)
grpc = grpcclient.InferenceServerClient(a.grpc)
ref = session("stateful")
rng = np.random.default_rng(11)
STEPS = 6

# Four sequences, two over each protocol, advanced in turns.
sequences = {101: "http", 102: "grpc", 103: "http", 104: "grpc"}
xs = {sid: [rng.standard_normal((1, 8)).astype(np.float32) for _ in range(STEPS)] for sid in sequences}
state = {sid: np.zeros((1, 16), np.float32) for sid in sequences}


def step(sid, k, x):
    start, end = k == 0, k == STEPS - 1
    if sequences[sid] == "http":
        i = httpclient.InferInput("x", [1, 8], "FP32")
        i.set_data_from_numpy(x, binary_data=k % 2 == 0)
        r = http.infer("stateful", [i], sequence_id=sid, sequence_start=start, sequence_end=end)
    else:
        i = grpcclient.InferInput("x", [1, 8], "FP32")
        i.set_data_from_numpy(x)
        r = grpc.infer("stateful", [i], sequence_id=sid, sequence_start=start, sequence_end=end)
    return r.as_numpy("y")


for k in range(STEPS):
    for sid in sequences:
        y_ref, new_state = ref.run(["y", "new_state"], {"x": xs[sid][k], "state": state[sid]})
        state[sid] = new_state
        close(step(sid, k, xs[sid][k]), y_ref, f"sequence {sid} ({sequences[sid]}) step {k}")

# A restarted sequence (sequence_start again) starts from zero state.
x = xs[101][0]
i = httpclient.InferInput("x", [1, 8], "FP32")
i.set_data_from_numpy(x)
y0 = ref.run(["y"], {"x": x, "state": np.zeros((1, 16), np.float32)})[0]
close(http.infer("stateful", [i], sequence_id=101, sequence_start=True).as_numpy("y"), y0, "restart")
close(http.infer("stateful", [i], sequence_id=101, sequence_start=True, sequence_end=True).as_numpy("y"), y0, "restart again")

# sequence_end closed the sequences: a chunk without start is refused.
raises(lambda: http.infer("stateful", [i], sequence_id=102), "400", "not open", "HTTP chunk of a closed sequence")
gi = grpcclient.InferInput("x", [1, 8], "FP32")
gi.set_data_from_numpy(x)
raises(lambda: grpc.infer("stateful", [gi], sequence_id=104), "StatusCode.INVALID_ARGUMENT", "not open", "gRPC closed sequence")
# String sequence ids name sequences too, each its own state: "101" (a string) is not the integer 101.
strings = {"101": "http", "s-b": "grpc"}
sequences.update(strings)
state.update({sid: np.zeros((1, 16), np.float32) for sid in strings})
xs.update({sid: xs[101] for sid in strings})
for k in range(STEPS):
    for sid in strings:
        y_ref, state[sid] = ref.run(["y", "new_state"], {"x": xs[sid][k], "state": state[sid]})
        close(step(sid, k, xs[sid][k]), y_ref, f"string sequence {sid!r} ({sequences[sid]}) step {k}")
raises(lambda: grpc.infer("stateful", [gi], sequence_id="s-b"), "StatusCode.INVALID_ARGUMENT",
       'unknown sequence "s-b"', "gRPC chunk of a closed string sequence")
# Integer ids from 2**63 key string ids on a model taking both; a stateful model needs a sequence.
raises(lambda: http.infer("stateful", [i], sequence_id=2**63, sequence_start=True), "400",
       "keeps integer sequence ids below 9223372036854775808", "an integer id in the string ids' range")
raises(lambda: http.infer("stateful", [i]), "400", "keeps per-stream state", "no sequence")
print("ok: sequences over HTTP and gRPC equal onnxruntime step by step")
