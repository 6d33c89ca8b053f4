#!/usr/bin/env python3
"""Fetch Baton's real pretrained models from pinned, hash-checked PyPI wheels into models/real/.

Usage: fetch_real_models.py [OUTDIR]   (default models/real; run from anywhere, with the project's
.venv python: it needs `onnx` to build the batch-first VAD wrapper). Called by scripts/setup.sh.

Idempotent and cached: wheels are kept in .cache/wheels/ (downloaded with
`pip download --no-deps --only-binary=:all:`, sha256 checked against the pins below; a wheel whose
hash does not match is deleted and the script fails), and every output is rewritten only when it
is missing or its sha256 differs from what the wheel holds.

Outputs (all in OUTDIR):
  silero_vad.onnx              silero-vad 6.2.3 (MIT), `silero_vad/data/silero_vad.onnx`, unchanged:
                               input[B,576] f32, state[2,B,128] f32, sr int64 scalar ->
                               output[B,1] f32, stateN[2,B,128] f32
  silero_vad.LICENSE           its license text
  vad_batched.onnx             made here from silero_vad.onnx (see build_vad_batched):
                               chunk[N,576] f32, state[N,2,128] f32 (batch FIRST) ->
                               prob[N,1] f32, new_state[N,2,128] f32; sr baked in as 16000
  ch_PP-OCRv4_det_infer.onnx   rapidocr-onnxruntime 1.4.4 (Apache-2.0), PP-OCRv4 text detection
  ch_PP-OCRv4_rec_infer.onnx   PP-OCRv4 text recognition (dictionary in metadata key `character`)
  ch_ppocr_mobile_v2.0_cls_infer.onnx  text-direction classifier (0/180 degrees), optional stage
  rapidocr_config.yaml         rapidocr's own config.yaml (pre/post-processing settings)
  manifest.json                name -> {sha256, bytes, source}
"""
import hashlib
import json
import os
import subprocess
import sys
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WHEEL_DIR = os.path.join(ROOT, ".cache", "wheels")

# package, version, wheel file, sha256 of the wheel, {member in wheel: output name}
WHEELS = [
    ("silero-vad", "6.2.3", "silero_vad-6.2.3-py3-none-any.whl",
     "7b7f5436cfcb02fae583a05b512ea96467fd449fe54cb49a5e4f06c51a1e43b8",
     {"silero_vad/data/silero_vad.onnx": "silero_vad.onnx",
      "silero_vad-6.2.3.dist-info/licenses/LICENSE": "silero_vad.LICENSE"}),
    ("rapidocr-onnxruntime", "1.4.4", "rapidocr_onnxruntime-1.4.4-py3-none-any.whl",
     "971d7d5f223a7a808662229df1ef69893809d8457d834e6373d3854bc1782cbf",
     {"rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx": "ch_PP-OCRv4_det_infer.onnx",
      "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx": "ch_PP-OCRv4_rec_infer.onnx",
      "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx":
          "ch_ppocr_mobile_v2.0_cls_infer.onnx",
      "rapidocr_onnxruntime/config.yaml": "rapidocr_config.yaml"}),
]

VAD_SR = 16000
VAD_NEW = 512      # new samples per chunk at 16 kHz
VAD_CONTEXT = 64   # samples of context carried over from the previous chunk
VAD_CHUNK = VAD_NEW + VAD_CONTEXT


def sha256_bytes(data):
    return hashlib.sha256(data).hexdigest()


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch_wheel(package, version, wheel, want):
    os.makedirs(WHEEL_DIR, exist_ok=True)
    path = os.path.join(WHEEL_DIR, wheel)
    if not os.path.isfile(path):
        print(f"==> downloading {package}=={version}")
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check",
                        "--no-deps", "--only-binary=:all:", f"{package}=={version}", "-d", WHEEL_DIR],
                       check=True)
    got = sha256_file(path)
    if got != want:
        os.remove(path)
        sys.exit(f"error: sha256 mismatch for {path}\n  expected {want}\n  got      {got}\n"
                 "  removed it; re-run to download again (or fix the pin in scripts/fetch_real_models.py)")
    return path


def write_if_changed(path, data):
    if os.path.isfile(path) and sha256_file(path) == sha256_bytes(data):
        return False
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
    return True


def rename_inputs(graph, old, new):
    """Rename every use of value `old` as a node input, in graph and all nested subgraphs."""
    import onnx
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name == old:
                node.input[i] = new
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                rename_inputs(attr.g, old, new)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for g in attr.graphs:
                    rename_inputs(g, old, new)


def build_vad_batched(src_bytes):
    """silero_vad.onnx -> batch-first wrapper with sr fixed at 16000.

    The original graph is kept whole (same nodes, same weights); around it:
      chunk[N,576]      --Identity-->            input   (original name)
      state[N,2,128]    --Transpose(1,0,2)-->    state__in_2n128 (every use of `state` renamed)
      Constant int64 16000                   ->  sr
      output            --Identity-->            prob[N,1]
      stateN            --Transpose(1,0,2)-->    new_state[N,2,128]
    so that wrapper(chunk, state) == original(chunk, state^T, 16000) bit for bit.
    """
    import onnx
    from onnx import TensorProto, helper

    model = onnx.load_from_string(src_bytes)
    g = model.graph
    names = [i.name for i in g.input]
    assert names == ["input", "state", "sr"], names
    assert [o.name for o in g.output] == ["output", "stateN"], [o.name for o in g.output]

    internal_state = "state__in_2n128"
    rename_inputs(g, "state", internal_state)
    pre = [
        helper.make_node("Identity", ["chunk"], ["input"], name="wrap_chunk"),
        helper.make_node("Transpose", ["state"], [internal_state], perm=[1, 0, 2], name="wrap_state_in"),
        helper.make_node("Constant", [], ["sr"], name="wrap_sr",
                         value=helper.make_tensor("sr_value", TensorProto.INT64, [], [VAD_SR])),
    ]
    post = [
        helper.make_node("Identity", ["output"], ["prob"], name="wrap_prob"),
        helper.make_node("Transpose", ["stateN"], ["new_state"], perm=[1, 0, 2], name="wrap_state_out"),
    ]
    nodes = pre + list(g.node) + post
    del g.node[:]
    g.node.extend(nodes)
    del g.input[:]
    g.input.extend([
        helper.make_tensor_value_info("chunk", TensorProto.FLOAT, ["N", VAD_CHUNK]),
        helper.make_tensor_value_info("state", TensorProto.FLOAT, ["N", 2, 128]),
    ])
    del g.output[:]
    g.output.extend([
        helper.make_tensor_value_info("prob", TensorProto.FLOAT, ["N", 1]),
        helper.make_tensor_value_info("new_state", TensorProto.FLOAT, ["N", 2, 128]),
    ])
    g.name = "silero_vad_batched"
    del model.metadata_props[:]
    for k, v in [("source", "silero-vad 6.2.3 silero_vad/data/silero_vad.onnx (MIT)"),
                 ("made_by", "scripts/fetch_real_models.py"),
                 ("chunk", "512 new 16 kHz samples preceded by the previous chunk's last 64 samples "
                           "(zeros for a stream's first chunk); samples = int16 / 32768"),
                 ("state", "batch-first [N,2,128]; zeros for a new stream; feed new_state back")]:
        model.metadata_props.add(key=k, value=v)
    onnx.checker.check_model(model)
    return model.SerializeToString()


def main():
    outdir = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "models", "real"))
    os.makedirs(outdir, exist_ok=True)
    manifest, changed = {}, []
    for package, version, wheel, want, members in WHEELS:
        path = fetch_wheel(package, version, wheel, want)
        with zipfile.ZipFile(path) as z:
            for member, name in members.items():
                data = z.read(member)
                if write_if_changed(os.path.join(outdir, name), data):
                    changed.append(name)
                manifest[name] = {"sha256": sha256_bytes(data), "bytes": len(data),
                                  "source": f"{package}=={version}:{member}"}
                if name == "silero_vad.onnx":
                    vad_src = data
    data = build_vad_batched(vad_src)
    if write_if_changed(os.path.join(outdir, "vad_batched.onnx"), data):
        changed.append("vad_batched.onnx")
    manifest["vad_batched.onnx"] = {"sha256": sha256_bytes(data), "bytes": len(data),
                                    "source": "built by scripts/fetch_real_models.py from silero_vad.onnx"}
    text = (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()
    if write_if_changed(os.path.join(outdir, "manifest.json"), text):
        changed.append("manifest.json")
    print(f"models/real: {len(manifest)} files, " + (f"updated {', '.join(changed)}" if changed else "up to date"))


if __name__ == "__main__":
    main()
