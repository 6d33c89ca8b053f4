"""Shared helpers of the tritonclient tests (run by server/tests/tritonclient.rs).

Each script takes the server's addresses (--http, --grpc, --metrics HOST:PORT),
talks to it with Triton's own Python clients (tritonclient.http / .grpc), and
compares answers with onnxruntime run directly on the same models. A failed
check raises; the script exits non-zero with the message.
"""
import argparse
import os
import re
import urllib.request

import numpy as np
import onnxruntime as ort

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
MODELS = os.path.join(ROOT, "models")


def args():
    p = argparse.ArgumentParser()
    p.add_argument("--http", required=True)
    p.add_argument("--grpc", required=True)
    p.add_argument("--metrics", required=True)
    p.add_argument("--repo", help="the server's model repository directory, when it has one")
    p.add_argument("--onnx", help="the folder of the models scripts/make_triton_models.py made, when the test has one")
    return p.parse_args()


def session(name):
    """An onnxruntime session of models/NAME.onnx (the reference)."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return ort.InferenceSession(os.path.join(MODELS, name + ".onnx"), so, providers=["CPUExecutionProvider"])


def close(got, want, what):
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        raise AssertionError(f"{what}: got {got.dtype}{got.shape}, want {want.dtype}{want.shape}")
    if not np.allclose(got, want, rtol=1e-5, atol=1e-6):
        raise AssertionError(f"{what}: max abs difference {np.abs(got - want).max()}")


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def raises(fn, status, fragment, what):
    """fn() must raise tritonclient's InferenceServerException with `status` and a message holding `fragment`."""
    from tritonclient.utils import InferenceServerException

    try:
        fn()
    except InferenceServerException as e:
        got = str(e.status())
        check(got == status, f"{what}: status {got}, want {status} ({e.message()})")
        check(fragment in (e.message() or ""), f"{what}: message {e.message()!r} lacks {fragment!r}")
        return e
    raise AssertionError(f"{what}: no error")


def metrics(addr):
    """The /metrics page parsed: {(name, frozenset(labels)): value}."""
    text = urllib.request.urlopen(f"http://{addr}/metrics", timeout=10).read().decode()
    series = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$', line)
        if not m:
            continue
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        series[(m.group(1), labels)] = float(m.group(3))
    return series


def value(series, name, **labels):
    """Sum of the series `name` whose labels include `labels`."""
    want = set(labels.items())
    return sum(v for (n, ls), v in series.items() if n == name and want <= ls)
