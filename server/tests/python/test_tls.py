"""TLS on both endpoints, driven by tritonclient with ssl=True (run by server/tests/access.rs).

--ca: the CA file the server's certificate chains to. With --mutual, the server wants a client
certificate (--client-cert, --client-key, signed by the same CA): a gRPC call without one must
fail, and one with it must succeed. Answers must equal onnxruntime's.
"""
import argparse

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from common import check, close, session

p = argparse.ArgumentParser()
for name in ("--http", "--grpc", "--metrics", "--ca"):
    p.add_argument(name, required=True)
p.add_argument("--client-cert")
p.add_argument("--client-key")
p.add_argument("--mutual", action="store_true")
a = p.parse_args()

# The certificate names localhost: connect by that name.
http_url = "localhost:" + a.http.rsplit(":", 1)[1]
grpc_url = "localhost:" + a.grpc.rsplit(":", 1)[1]
x = np.random.default_rng(3).standard_normal((4, 256)).astype(np.float32)
want = session("mlp").run(["output"], {"input": x})[0]


def grpc_infer(client):
    i = grpcclient.InferInput("input", list(x.shape), "FP32")
    i.set_data_from_numpy(x)
    return client.infer("mlp", [i]).as_numpy("output")


def http_infer(client):
    i = httpclient.InferInput("input", list(x.shape), "FP32")
    i.set_data_from_numpy(x, binary_data=True)
    return client.infer("mlp", [i]).as_numpy("output")


if a.mutual:
    anonymous = grpcclient.InferenceServerClient(grpc_url, ssl=True, root_certificates=a.ca)
    try:
        grpc_infer(anonymous)
        raise AssertionError("gRPC without a client certificate was served under mutual TLS")
    except InferenceServerException as e:
        check("UNAVAILABLE" in str(e.status()), f"gRPC without a client certificate: {e.status()} {e.message()}")
    signed = grpcclient.InferenceServerClient(
        grpc_url, ssl=True, root_certificates=a.ca, private_key=a.client_key, certificate_chain=a.client_cert
    )
    close(grpc_infer(signed), want, "gRPC with a client certificate under mutual TLS")
else:
    grpc = grpcclient.InferenceServerClient(grpc_url, ssl=True, root_certificates=a.ca)
    check(grpc.is_server_live(), "gRPC over TLS: live")
    close(grpc_infer(grpc), want, "gRPC over TLS")
    http = httpclient.InferenceServerClient(http_url, ssl=True, ssl_options={"ca_certs": a.ca})
    check(http.is_server_live(), "HTTP over TLS: live")
    close(http_infer(http), want, "HTTP over TLS")
    plain = grpcclient.InferenceServerClient(grpc_url)
    try:
        plain.is_server_live()
        raise AssertionError("a plain-text gRPC client was served on the TLS port")
    except InferenceServerException:
        pass
print("tls ok")
