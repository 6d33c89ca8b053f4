"""silero-vad helpers shared by make_speech.py and check_real_models.py (numpy + onnxruntime only).

The chunking is exactly that of silero_vad.utils_vad.OnnxWrapper (silero-vad 6.2.3) at 16 kHz:
  - samples are float32 = int16 / 32768 (what torchaudio.load gives for 16-bit PCM);
  - the audio is cut into 512-sample chunks; a short last chunk is zero-padded to 512 (audio_forward);
  - the model's input for chunk k is 576 samples: the 64 samples before the chunk followed by the
    chunk's 512 samples, i.e. padded_audio[512k-64 : 512k+512], with zeros in place of the
    (non-existent) samples before the stream start, so chunk 0 has 64 leading zeros
    (OnnxWrapper keeps `_context = x[..., -64:]` of the previous 576-sample input, which is the last
    64 samples of the previous chunk);
  - state starts as zeros [2,B,128] (original model; [B,2,128] for vad_batched.onnx) and the
    model's new state is fed back for the next chunk; sr = 16000 (int64 scalar).
"""
import wave

import numpy as np

SR = 16000
NEW = 512
CONTEXT = 64
CHUNK = NEW + CONTEXT


def read_wav_int16(path):
    with wave.open(path, "rb") as w:
        assert w.getnchannels() == 1 and w.getsampwidth() == 2 and w.getframerate() == SR, path
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").copy()


def write_wav_int16(path, samples):
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SR)
        w.writeframes(np.asarray(samples, dtype="<i2").tobytes())


def to_f32(samples_i16):
    return samples_i16.astype(np.float32) / np.float32(32768.0)


def model_inputs(audio_f32):
    """[K, 576] float32: the model input for each chunk of the stream (context + new samples)."""
    n = len(audio_f32)
    k = -(-n // NEW)
    padded = np.zeros(CONTEXT + k * NEW, dtype=np.float32)
    padded[CONTEXT:CONTEXT + n] = audio_f32
    return np.stack([padded[i * NEW:i * NEW + CHUNK] for i in range(k)])


def session(path, threads=1):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(path, sess_options=opts, providers=["CPUExecutionProvider"])


def run_original(sess, chunks):
    """Run the original silero_vad.onnx over one stream's [K,576] chunks at batch 1.
    Returns (probs [K] float32, states [K,2,1,128] after each chunk)."""
    state = np.zeros((2, 1, 128), dtype=np.float32)
    sr = np.array(SR, dtype=np.int64)
    probs, states = [], []
    for x in chunks:
        out, state = sess.run(None, {"input": x[None, :], "state": state, "sr": sr})
        probs.append(out[0, 0])
        states.append(state)
    return np.array(probs, dtype=np.float32), np.array(states)
