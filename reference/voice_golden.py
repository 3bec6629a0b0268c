#!/usr/bin/python3
"""Golden mel and x-vector of the Qwen3-TTS Base speaker path (reference/voice_ref.py).

  /usr/bin/python3 reference/voice_golden.py [--model BASE_DIR] [--out-dir tests/data]

Writes into --out-dir:
  voice-ref-24k.wav    a 1.2 s mono 16-bit PCM 24 kHz clip made here (seeded, so
                       it is the same every run): a voiced tone gliding 110 ->
                       190 Hz with 12 harmonics under three formant bumps,
                       breathy noise, a noise burst, 0.1 s of digital silence
                       (where the mel meets its 1e-5 clamp) and fades.
                       Written with Python's wave module, not ember's writer.
  voice-mel.f32        the float64 log mel of that clip, [T][128] as
                       little-endian float32 (T = 112)
  voice-golden.json    {"mel": {"frames", "float32_floor_snr_db"},
                        "xvector": {"model", "enc_dim", "values" (float64, 9
                        significant digits), "float32_floor_snr_db"},
                        "codes": the speech tokenizer encoder's reference codes
                        of the clip (reference/speech_encoder_ref.py) on the
                        committed models/tts-tiny: {"model", "frames" [F][16]
                        (float64 run), "gaps" [F][16] (each choice's margin to
                        the second nearest codebook row), "min_gap",
                        "float32_mismatches" (codes the float32 run chose
                        otherwise), "latent" [F][hidden] (float64, before the
                        quantizer), "latent_float32_floor_snr_db"}}
The floors are the SNR of the same computation in float32 against float64
(the x-vector's runs the whole path, waveform to x-vector): tests hold ember's
float32 results to them less a margin, so the bar follows the arithmetic.

The x-vector needs the tiny Base checkpoint (MODEL_COMMAND below, made in a
temporary directory when --model is not given; it is ~8 MB, so tests make it
the same way instead of committing it).
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import wave

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import voice_ref as ref  # noqa: E402
from speech_encoder_ref import SpeechEncoder  # noqa: E402

CLIP_SEED = 2027
CODES_MODEL = "models/tts-tiny"
MODEL_SEED = 1
MODEL_ARGS = ["--preset", "tiny", "--variant", "0.6b-base", "--seed", str(MODEL_SEED)]
MODEL_COMMAND = "reference/make_tts_checkpoint.py " + " ".join(MODEL_ARGS)


def make_clip(seconds=1.2, sr=ref.SAMPLE_RATE, seed=CLIP_SEED):
    """int16 samples of the synthetic clip described at the top."""
    g = np.random.default_rng(seed)
    n = int(seconds * sr)
    t = np.arange(n) / sr
    f0 = 110.0 + 80.0 * t / seconds + 3.0 * np.sin(2 * np.pi * 5.0 * t)
    phase = 2 * np.pi * np.cumsum(f0) / sr
    voiced = np.zeros(n)
    for h in range(1, 13):
        fh = h * f0
        gain = sum(a * np.exp(-((fh - fc) / bw) ** 2) for fc, bw, a in
                   ((700, 150, 1.0), (1200, 200, 0.6), (2600, 300, 0.3))) + 0.05 / h
        voiced += gain * np.sin(h * phase)
    x = 0.25 * voiced / np.abs(voiced).max() + 0.01 * g.standard_normal(n)
    burst = (t > 0.85) & (t < 0.95)
    x[burst] += 0.2 * g.standard_normal(int(burst.sum()))
    fade = np.minimum(1.0, np.minimum(t, seconds - t) / 0.05)
    x *= fade
    x[(t > 0.6) & (t < 0.7)] = 0.0
    return np.clip(np.round(x * 32768.0), -32768, 32767).astype("<i2")


def write_wav16(path, samples, sr=ref.SAMPLE_RATE):
    with wave.open(path, "wb") as f:
        f.setnchannels(1)
        f.setsampwidth(2)
        f.setframerate(sr)
        f.writeframes(samples.tobytes())


def sig9(v):
    return [float(f"{x:.9g}") for x in np.asarray(v, dtype=np.float64).ravel()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", help="tiny Base checkpoint (default: made with MODEL_COMMAND)")
    ap.add_argument("--out-dir", default=os.path.join(ROOT, "tests", "data"))
    a = ap.parse_args()
    wav_path = os.path.join(a.out_dir, "voice-ref-24k.wav")
    write_wav16(wav_path, make_clip())
    wave64 = ref.read_wav_pcm16(wav_path)
    mel64 = ref.log_mel(wave64, torch.float64)
    mel32 = ref.log_mel(wave64, torch.float32)
    mel64.numpy().astype("<f4").tofile(os.path.join(a.out_dir, "voice-mel.f32"))

    with tempfile.TemporaryDirectory() as tmp:
        model = a.model
        if not model:
            model = os.path.join(tmp, "base")
            subprocess.run([sys.executable, os.path.join(HERE, "make_tts_checkpoint.py"), *MODEL_ARGS,
                            "--out", model], check=True, stdout=subprocess.DEVNULL)
        x64 = ref.SpeakerEncoder(model, torch.float64).xvector(mel64)
        x32 = ref.SpeakerEncoder(model, torch.float32).xvector(mel32)
    golden = {
        "format": "ember-voice-golden-1",
        "wav": "voice-ref-24k.wav",
        "mel": {"frames": int(mel64.shape[0]), "bins": int(mel64.shape[1]), "file": "voice-mel.f32",
                "float32_floor_snr_db": round(ref.snr_db(mel32, mel64), 2)},
        "xvector": {"model": MODEL_COMMAND, "enc_dim": int(x64.numel()), "values": sig9(x64),
                    "norm": round(float(x64.norm()), 6),
                    "float32_floor_snr_db": round(ref.snr_db(x32, x64), 2)},
        "note": "float32_floor_snr_db: the reference's float32 run against its float64 run "
                "(x-vector: waveform to x-vector in float32)",
    }
    enc64 = SpeechEncoder(os.path.join(ROOT, CODES_MODEL), torch.float64)
    enc32 = SpeechEncoder(os.path.join(ROOT, CODES_MODEL), torch.float32)
    codes64, gaps = enc64.codes(wave64)
    codes32, _ = enc32.codes(wave64)
    lat64, lat32 = enc64.latent(wave64), enc32.latent(wave64)
    golden["codes"] = {"model": CODES_MODEL, "frames": codes64.tolist(),
                       "gaps": [sig9(g) for g in gaps], "min_gap": float(f"{float(gaps.min()):.6g}"),
                       "float32_mismatches": int((codes32 != codes64).sum()),
                       "latent": [sig9(v) for v in lat64],
                       "latent_float32_floor_snr_db": round(ref.snr_db(lat32, lat64), 2)}
    with open(os.path.join(a.out_dir, "voice-golden.json"), "w", encoding="utf-8") as f:
        json.dump(golden, f, indent=1)
        f.write("\n")
    print(json.dumps({"frames": golden["mel"]["frames"], "mel_floor": golden["mel"]["float32_floor_snr_db"],
                      "xvector_floor": golden["xvector"]["float32_floor_snr_db"],
                      "xvector_norm": golden["xvector"]["norm"],
                      "code_frames": len(golden["codes"]["frames"]), "code_min_gap": golden["codes"]["min_gap"],
                      "code_float32_mismatches": golden["codes"]["float32_mismatches"],
                      "latent_floor": golden["codes"]["latent_float32_floor_snr_db"],
                      "mel_range": [float(mel64.min()), float(mel64.max())]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
