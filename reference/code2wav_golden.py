#!/usr/bin/python3
"""Golden codes and waveform of the Code2Wav decoder on the committed tiny model.

  /usr/bin/python3 reference/code2wav_golden.py [--model models/tts-tiny] [--frames 24]
      [--seed 2026] [--codes tests/data/code2wav-tiny-codes.json]
      [--wave tests/data/code2wav-tiny-wave.f32]

Draws --frames frames of 16 uniform random codes in [0, codebook_size) from a
torch.Generator seeded with --seed, writes them as a JSON list of 16-int frames
(frame-major, the shape of `ember tts-codes --json`'s "frames"), and the
reference's one-shot float32 decode of them (reference/code2wav_ref.py) as raw
little-endian float32, frames * 1920 samples, and beside the waveform
(--wave with .json for .f32) its float32 noise floor: the SNR of that float32
decode against the float64 decode of the same codes. Tests hold other float32
decoders (ember's) to that floor, so the bar moves with the arithmetic and not
with the machine the golden was made on.  Prints the waveform statistics and
how many codes are "dead" rows (cluster_usage below the 1e-5 clamp).
"""
import argparse
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import code2wav_ref as ref  # noqa: E402

DEFAULT_SEED = 2026


def random_codes(n_q, frames, size, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, size, (n_q, frames), generator=g, dtype=torch.int64)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "tts-tiny"))
    ap.add_argument("--frames", type=int, default=24)
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--codes", default=os.path.join(ROOT, "tests", "data", "code2wav-tiny-codes.json"))
    ap.add_argument("--wave", default=os.path.join(ROOT, "tests", "data", "code2wav-tiny-wave.f32"))
    a = ap.parse_args()
    m = ref.load(a.model)
    codes = random_codes(m.n_q, a.frames, m.cfg["codebook_size"], a.seed)
    wav = m.decode(codes)
    with open(a.codes + ".part", "w", encoding="utf-8") as f:
        f.write("[\n" + ",\n".join(json.dumps(fr) for fr in codes.T.tolist()) + "\n]\n")
    wav.numpy().astype("<f4").tofile(a.wave + ".part")
    wav64 = ref.load(a.model, torch.float64).decode(codes)
    floor = float(10 * torch.log10(wav64.pow(2).sum() / (wav.double() - wav64).pow(2).sum()))
    floor_path = os.path.splitext(a.wave)[0] + ".json"
    with open(floor_path + ".part", "w", encoding="utf-8") as f:
        json.dump({"float32_floor_snr_db": round(floor, 2),
                   "note": "SNR of the float32 golden against the float64 decode of the same codes"}, f)
        f.write("\n")
    os.replace(a.codes + ".part", a.codes)
    os.replace(a.wave + ".part", a.wave)
    os.replace(floor_path + ".part", floor_path)
    usage = torch.stack([m.get(p + ".cluster_usage") for p in m.codebook_prefixes()])
    dead = int((usage.gather(1, codes) < ref.USAGE_EPS).sum())
    print(json.dumps({"codes": a.codes, "wave": a.wave, "frames": a.frames, "seed": a.seed,
                      "dead_codes": dead, **ref.wave_stats(wav)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
