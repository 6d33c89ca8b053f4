"""Restricted endpoint groups, every group x (no key, wrong key, right key) over HTTP and gRPC.

The server runs with every group restricted (run by server/tests/access.rs): --keys is a JSON
object {"http": {GROUP: [KEY, VALUE]}, "grpc": {...}}. A call without its group's key, or
with a wrong value, must be refused (HTTP 403, gRPC PERMISSION_DENIED) with a message naming
the group; with the right key it runs as usual (groups Baton does not implement then answer
501 / UNIMPLEMENTED). Prints the number of inferences the right keys ran, for the Rust side
to compare with the engine's runs.
"""
import json
import sys

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from common import args as base_args, check, close, raises, session

MODEL = "mlp"


def calls(client, proto, infer_inputs):
    """One representative call per group: group -> fn(headers)."""
    def infer(headers):
        inputs = infer_inputs()
        return client.infer(MODEL, inputs, headers=headers).as_numpy("output")

    return {
        "health": lambda h: client.is_server_live(headers=h) if proto == "grpc" else live_http(client, h),
        "metadata": lambda h: client.get_server_metadata(headers=h),
        "inference": infer,
        "shared-memory": lambda h: client.get_system_shared_memory_status(headers=h),
        "model-config": lambda h: client.get_model_config(MODEL, headers=h),
        "model-repository": lambda h: client.get_model_repository_index(headers=h),
        "statistics": lambda h: client.get_inference_statistics(MODEL, headers=h),
        "trace": lambda h: client.get_trace_settings(headers=h),
        "logging": lambda h: client.get_log_settings(headers=h),
    }


def live_http(client, headers):
    """tritonclient.http answers is_server_live with a bool (False on 403): raise instead, to see the status."""
    from tritonclient.utils import InferenceServerException

    response = client._get("v2/health/live", headers=headers, query_params=None)
    if response.status_code != 200:
        body = json.loads(response.read() or b"{}")
        raise InferenceServerException(msg=body.get("error", ""), status=str(response.status_code))
    return True


UNIMPLEMENTED = {"shared-memory", "trace", "logging"}


def main():
    sys.argv, keys = split_keys(sys.argv)
    a = base_args()
    x = np.random.default_rng(7).standard_normal((1, 256)).astype(np.float32)
    want = session("mlp").run(["output"], {"input": x})[0]

    def http_inputs():
        i = httpclient.InferInput("input", list(x.shape), "FP32")
        i.set_data_from_numpy(x, binary_data=True)
        return [i]

    def grpc_inputs():
        i = grpcclient.InferInput("input", list(x.shape), "FP32")
        i.set_data_from_numpy(x)
        return [i]

    clients = {
        "http": (httpclient.InferenceServerClient(a.http), "403", "501", http_inputs),
        "grpc": (grpcclient.InferenceServerClient(a.grpc), "StatusCode.PERMISSION_DENIED",
                 "StatusCode.UNIMPLEMENTED", grpc_inputs),
    }
    ran = 0
    cells = 0
    for proto, (client, denied, unimplemented, inputs) in clients.items():
        for group, call in calls(client, proto, inputs).items():
            key, value = keys[proto][group]
            for offered in [{}, {key: value + "x"}, {key: value[:-1]}, {"other-key": value}]:
                raises(lambda: call(offered), denied, f"the {group} endpoints are restricted",
                       f"{proto} {group} with {list(offered)}")
                cells += 1
            right = {key: value}
            if group in UNIMPLEMENTED:
                raises(lambda: call(right), unimplemented, "", f"{proto} {group} with the right key")
            else:
                got = call(right)
                if group == "inference":
                    close(got, want, f"{proto} inference with the right key")
                    ran += 1
                elif group == "health":
                    check(got is True, f"{proto} health with the right key: {got}")
            cells += 1
    print(f"cells {cells}")
    print(f"inferences {ran}")


def split_keys(argv):
    """Takes --keys JSON out of argv (common.args knows only the addresses)."""
    i = argv.index("--keys")
    keys = json.loads(argv[i + 1])
    return argv[:i] + argv[i + 2:], keys


if __name__ == "__main__":
    main()
