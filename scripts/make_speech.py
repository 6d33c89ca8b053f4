#!/usr/bin/env python3
"""Make the committed speech inputs and their VAD reference (standalone; NOT run by setup.sh).

Usage (from the repository root, after scripts/setup.sh):
    .venv/bin/python scripts/make_speech.py
(as root on Debian it apt-get installs espeak-ng and sox first when they are missing; the committed
data was made with Debian 12's espeak-ng 1.51 and SoX 14.4.2)

For each session of scripts/session_defs.py:
  1. espeak-ng -v en-us -s 165 speaks the sentence (22050 Hz), SoX resamples it to 16 kHz 16-bit
     mono without dither (-D, so it is repeatable);
  2. espeak's own leading/trailing near-silence is cut: the speech is the samples from the first to
     the last one with |x| >= TRIM_THRESHOLD (1% of full scale);
  3. the WAV is: lead_s seconds of silence + that speech + >= 0.5 s of trailing silence, the tail
     lengthened to a whole number of 512-sample chunks; then low white noise (std NOISE_STD LSB,
     seeded per session) is added to every sample, so "silence" is not digital zero.
  -> data/speech/<id>.wav (16 kHz mono PCM16), and in data/sessions.json per session: the sentence,
     speech_start_sample (first speech sample, inclusive), speech_end_sample (exclusive), and
     onset_chunk = start // 512, offset_chunk = (end - 1) // 512 (512-sample chunks from sample 0).
  4. silero-vad (original models/real/silero_vad.onnx, onnxruntime, chunked with state and the
     64-sample context exactly as silero_vad's OnnxWrapper; see vadlib.py) gives a speech
     probability per chunk -> data/reference/vad/<id>.json. The check: the first chunk with
     prob > 0.5 is within +-1 chunk of onset_chunk (and the last one is reported against
     offset_chunk). The script exits non-zero if any session fails the onset check.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vadlib  # noqa: E402
from session_defs import CATEGORIES, SESSIONS, load_sessions_json, save_sessions_json, session_entry  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOICE, SPEED = "en-us", 165
TRIM_THRESHOLD = 328          # |sample| >= 1% of int16 full scale counts as speech when trimming
TRAIL_S = 0.5
NOISE_STD = 8.0               # LSB (about -72 dBFS)
MAX_SAMPLES = 4 * vadlib.SR
THRESHOLD = 0.5


def speak(sentence, tmp):
    raw, res = os.path.join(tmp, "raw.wav"), os.path.join(tmp, "16k.wav")
    subprocess.run(["espeak-ng", "-v", VOICE, "-s", str(SPEED), "-w", raw, sentence], check=True)
    subprocess.run(["sox", "-D", raw, "-r", str(vadlib.SR), "-b", "16", "-c", "1", res], check=True)
    x = vadlib.read_wav_int16(res).astype(np.int32)
    loud = np.nonzero(np.abs(x) >= TRIM_THRESHOLD)[0]
    return x[loud[0]:loud[-1] + 1]


def build(idx, speech, lead):
    """lead samples of silence + speech + >= 0.5 s silence (to a whole chunk), plus seeded noise."""
    total = lead + len(speech) + int(TRAIL_S * vadlib.SR)
    total = -(-total // vadlib.NEW) * vadlib.NEW
    x = np.zeros(total, dtype=np.float64)
    x[lead:lead + len(speech)] = speech
    x += np.random.default_rng(3000 + idx).normal(0.0, NOISE_STD, total)
    return np.clip(np.round(x), -32768, 32767).astype(np.int16)


def vad(sess, pcm):
    probs, _ = vadlib.run_original(sess, vadlib.model_inputs(vadlib.to_f32(pcm)))
    on = np.nonzero(probs > THRESHOLD)[0]
    return probs, (int(on[0]) if len(on) else None), (int(on[-1]) if len(on) else None)


def search_leads(sess):
    """Dev aid (--search-leads): for each sentence, a lead (in samples, 16-sample steps) near an
    evenly spread target in 0.4-1.2 s for which the VAD's first/last chunk above 0.5 is within
    +-1 chunk of the known onset/offset chunks, also with the lead moved by +-48 samples (robust).
    The chosen values are then written into session_defs.py by hand."""
    with tempfile.TemporaryDirectory() as tmp:
        for idx, (sid, _cat, lead0, sentence, _lines) in enumerate(SESSIONS):
            speech = speak(sentence, tmp)
            target = int(round((0.4 + 0.8 * ((idx * 7) % 16) / 15) * vadlib.SR))
            limit = MAX_SAMPLES - len(speech) - int(TRAIL_S * vadlib.SR) - vadlib.NEW
            best = None
            for step in range(0, 1600):
                lead = target + (step // 2) * 16 * (1 if step % 2 else -1)
                if not 6400 <= lead <= min(19200, limit):
                    continue
                ok = True
                for d in (0, -48, 48):
                    pcm = build(idx, speech, lead + d)
                    _, first_on, last_on = vad(sess, pcm)
                    s, e = lead + d, lead + d + len(speech)
                    if (first_on is None or not 0 <= first_on - s // vadlib.NEW <= 1
                            or abs(last_on - (e - 1) // vadlib.NEW) > 1):
                        ok = False
                        break
                if ok:
                    best = lead
                    break
            print(f"{sid} speech {len(speech) / vadlib.SR:.2f} s target {target} -> lead {best} "
                  f"(now {lead0})  {sentence}")


def tool_versions():
    esp = subprocess.run(["espeak-ng", "--version"], capture_output=True, text=True).stdout.split()
    sox = subprocess.run(["sox", "--version"], capture_output=True, text=True).stdout.split()
    return {"espeak-ng": esp[3] if len(esp) > 3 else "?", "sox": sox[-1] if sox else "?"}


def main():
    missing = [t for t in ("espeak-ng", "sox") if not shutil.which(t)]
    if missing and shutil.which("apt-get") and os.geteuid() == 0:
        print(f"==> apt-get install {' '.join(missing)}")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        if subprocess.run(["apt-get", "install", "-y", "-q"] + missing, env=env).returncode != 0:
            subprocess.run(["apt-get", "update", "-q"], env=env, check=True)
            subprocess.run(["apt-get", "install", "-y", "-q"] + missing, env=env, check=True)
    for tool in ("espeak-ng", "sox"):
        if not shutil.which(tool):
            sys.exit(f"error: {tool} not found (apt-get install -y espeak-ng sox)")
    vad_path = os.path.join(ROOT, "models/real/silero_vad.onnx")
    if not os.path.isfile(vad_path):
        sys.exit("error: models/real/silero_vad.onnx missing: run scripts/setup.sh first")
    sess = vadlib.session(vad_path)
    if "--search-leads" in sys.argv[1:]:
        return search_leads(sess)
    os.makedirs(os.path.join(ROOT, "data/speech"), exist_ok=True)
    os.makedirs(os.path.join(ROOT, "data/reference/vad"), exist_ok=True)

    doc = load_sessions_json(ROOT)
    doc["speech"] = {
        "sample_rate": vadlib.SR, "chunk_samples": vadlib.NEW, "context_samples": vadlib.CONTEXT,
        "made_by": "scripts/make_speech.py", "tts": f"espeak-ng -v {VOICE} -s {SPEED}, sox -D to 16 kHz",
        "tools": tool_versions(), "trim_threshold_abs_int16": TRIM_THRESHOLD,
        "trailing_silence_s_min": TRAIL_S, "noise_std_int16": NOISE_STD,
        "speech_end_sample": "exclusive", "onset_chunk": "speech_start_sample // 512",
        "offset_chunk": "(speech_end_sample - 1) // 512",
        "paths": "relative to data/",
        "vad_first/last_chunk_above_threshold": "from data/reference/vad (original model, prob > 0.5)",
    }
    doc["categories"] = list(CATEGORIES)
    failures, rows = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for idx, (sid, category, lead, sentence, _lines) in enumerate(SESSIONS):
            speech = speak(sentence, tmp)
            pcm = build(idx, speech, lead)
            total = len(pcm)
            if total > MAX_SAMPLES:
                failures.append(f"{sid}: {total / vadlib.SR:.2f} s > 4 s (shorten the sentence or lead)")
            wav_rel = f"speech/{sid}.wav"
            vadlib.write_wav_int16(os.path.join(ROOT, "data", wav_rel), pcm)

            start, end = lead, lead + len(speech)
            onset, offset = start // vadlib.NEW, (end - 1) // vadlib.NEW
            probs, first_on, last_on = vad(sess, pcm)
            onset_ok = first_on is not None and abs(first_on - onset) <= 1
            offset_ok = last_on is not None and abs(last_on - offset) <= 1
            if not onset_ok:
                failures.append(f"{sid}: VAD first on-chunk {first_on}, onset chunk {onset}")

            e = session_entry(doc, sid)
            e.update({
                "category": category, "wav": wav_rel, "sentence": sentence,
                "num_samples": int(total), "num_chunks": int(len(probs)),
                "lead_silence_samples": int(lead),
                "speech_start_sample": int(start), "speech_end_sample": int(end),
                "onset_chunk": int(onset), "offset_chunk": int(offset),
                "vad_first_chunk_above_threshold": first_on, "vad_last_chunk_above_threshold": last_on,
            })
            ref = {
                "session": sid, "wav": wav_rel,
                "model": "models/real/silero_vad.onnx (silero-vad 6.2.3)",
                "method": "onnxruntime, batch 1, state [2,1,128] fed back, 64-sample context, sr=16000 "
                          "(silero_vad OnnxWrapper); see scripts/vadlib.py",
                "threshold": THRESHOLD, "num_chunks": int(len(probs)),
                "onset_chunk": int(onset), "offset_chunk": int(offset),
                "first_chunk_above_threshold": first_on, "last_chunk_above_threshold": last_on,
                "chunks_above_threshold": int((probs > THRESHOLD).sum()),
                "probs": [float(p) for p in probs],
            }
            with open(os.path.join(ROOT, f"data/reference/vad/{sid}.json"), "w") as f:
                json.dump(ref, f, indent=1)
                f.write("\n")
            rows.append((sid, total / vadlib.SR, start, end, onset, offset, first_on, last_on,
                         "ok" if onset_ok else "FAIL", "ok" if offset_ok else "off",
                         int((probs > THRESHOLD).sum()), sentence))
    save_sessions_json(ROOT, doc)

    print("id   dur_s  start    end onset offset vad_on vad_last onset_chk offset_chk n_on  sentence")
    for r in rows:
        print(f"{r[0]}  {r[1]:.2f} {r[2]:6d} {r[3]:6d} {r[4]:5d} {r[5]:6d} {str(r[6]):>6} {str(r[7]):>8} "
              f"{r[8]:>9} {r[9]:>10} {r[10]:4d}  {r[11]}")
    if failures:
        print("\n".join(["FAILED:"] + failures))
        sys.exit(1)
    print("all sessions: VAD switches on within +-1 chunk of the known onset")


if __name__ == "__main__":
    main()
