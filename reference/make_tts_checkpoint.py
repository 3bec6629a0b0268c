#!/usr/bin/python3
"""Random-weight Qwen3-TTS (CustomVoice) checkpoint in the real on-disk layout.

  /usr/bin/python3 reference/make_tts_checkpoint.py --preset tiny|0.6b --out DIR
      [--dtype bf16|f32] [--seed S]

The committed models/tts-tiny is `--preset tiny --out models/tts-tiny --seed 6`
(TINY_SEED): among seeds 0..8 it gives the widest best-minus-second logit gaps
along the 50 greedy golden frames (>= 0.0055 for c0 and the predictor), so
float32 rounding cannot flip an argmax.  Seed 0 had a 3.5e-5 predictor gap.

What lands in DIR
  config.json               0.6b: byte copy of the real file.  tiny: the real file
                            with only dimension keys changed (json, indent 2, key
                            order kept): talker hidden/intermediate/layers/heads/
                            kv heads/head_dim/text_hidden_size and
                            rope_scaling.mrope_section (its sum must be head_dim/2),
                            and the code predictor's hidden/intermediate/layers/
                            heads/kv heads/head_dim/layer_types.  Vocab sizes
                            (3072 / 2048 / 151936), num_code_groups 16 and every
                            special id are the real ones.
  generation_config.json, tokenizer_config.json, vocab.json, merges.txt,
  preprocessor_config.json, speech_tokenizer/config.json
                            byte copies of the real files (both presets).  The
                            speech tokenizer weights are not generated here.
  model.safetensors         one file, real tensor names and (scaled) shapes,
                            every tensor BF16 (or F32 with --dtype f32).

safetensors layout written here (the format, not the library):
  u64 little-endian N, then N bytes of JSON (compact, space-padded so the data
  starts 8-byte aligned), then the raw little-endian tensor data back to back.
  JSON: {"__metadata__":{"format":"pt"}, name: {"dtype","shape","data_offsets"}}
  with tensors in byte order of their names (the safetensors library sorts by
  dtype then name; there is one dtype), offsets contiguous from 0.

Tensors (H = talker hidden, T = text hidden, P = predictor hidden):
  talker.model.text_embedding.weight [151936, T]
  talker.text_projection.linear_fc1.{weight [T,T], bias [T]}
  talker.text_projection.linear_fc2.{weight [H,T], bias [H]}
  talker.model.codec_embedding.weight [3072, H]
  talker.model.layers.{i}.{input_layernorm, post_attention_layernorm}.weight [H]
  talker.model.layers.{i}.self_attn.{q_proj [nh*d,H], k_proj/v_proj [nkv*d,H],
      o_proj [H, nh*d], q_norm/k_norm [d]}
  talker.model.layers.{i}.mlp.{gate_proj/up_proj [I,H], down_proj [H,I]}
  talker.model.norm.weight [H];  talker.codec_head.weight [3072, H]
  talker.code_predictor.model.layers.{j}.*  (same names, predictor dims)
  talker.code_predictor.model.norm.weight [P]
  talker.code_predictor.model.codec_embedding.{g}.weight [2048, H], g = 0..14
  talker.code_predictor.lm_head.{g}.weight [2048, P], g = 0..14
  talker.code_predictor.small_to_mtp_projection.{weight [P,H], bias [P]}
      only when P != H (tiny: H=32, P=24; absent for 0.6b).

Weights: each tensor is drawn in float32 from a torch.Generator seeded with
(seed, crc32(name)), so a given seed always gives the same tensor whatever the
dtype, then rounded (round-to-nearest-even for BF16).  Scales keep activations
O(1): embeddings N(0,1); linear weights N(0,1/fan_in); residual outputs (o_proj,
down_proj) further divided by sqrt(2*layers); norm weights 1+0.1*N; biases
0.1*N; the output heads (codec_head, lm_head.*) are multiplied by 4 so the
top-2 logit gaps are wide and greedy decoding is not decided by rounding noise.
One tensor is held in memory at a time (the 0.6b text embedding: 1.2 GB f32).
"""
import argparse
import json
import os
import shutil
import struct
import sys
import time
import zlib

import numpy as np
import torch

REAL_DIR = "/work/shared/qwen3-tts-0.6b-customvoice"
COPIED_FILES = ["generation_config.json", "tokenizer_config.json", "vocab.json", "merges.txt",
                "preprocessor_config.json", "speech_tokenizer/config.json"]

# Dimension overrides of the tiny preset; everything else is the real config.
TINY_TALKER = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=3,
                   num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                   text_hidden_size=8)
TINY_MROPE_SECTION = [4, 2, 2]  # sums to head_dim/2 = 8, like [24,20,20] for 128
TINY_PREDICTOR = dict(hidden_size=24, intermediate_size=48, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=16)

TINY_SEED = 6  # the seed of the committed models/tts-tiny (see the top)
HEAD_GAIN = 4.0
ST_DTYPE = {"bf16": "BF16", "f32": "F32"}
ELEM_BYTES = {"bf16": 2, "f32": 4}


def load_real_config():
    with open(os.path.join(REAL_DIR, "config.json"), encoding="utf-8") as f:
        return json.load(f)


def tiny_config():
    """The real config dict with the tiny dimensions patched in place."""
    cfg = load_real_config()
    tk = cfg["talker_config"]
    for k, v in TINY_TALKER.items():
        assert k in tk, k
        tk[k] = v
    tk["rope_scaling"]["mrope_section"] = list(TINY_MROPE_SECTION)
    cp = tk["code_predictor_config"]
    for k, v in TINY_PREDICTOR.items():
        assert k in cp, k
        cp[k] = v
    cp["layer_types"] = ["full_attention"] * TINY_PREDICTOR["num_hidden_layers"]
    return cfg


def layer_specs(prefix, c, n_layers_total):
    """(name, shape, kind, fan_in) for one Qwen3 decoder stack's layers."""
    hid, inter = c["hidden_size"], c["intermediate_size"]
    nh, nkv, d = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
    out = []
    for i in range(c["num_hidden_layers"]):
        p = f"{prefix}.layers.{i}."
        out += [
            (p + "input_layernorm.weight", (hid,), "norm", 0),
            (p + "post_attention_layernorm.weight", (hid,), "norm", 0),
            (p + "self_attn.q_proj.weight", (nh * d, hid), "linear", hid),
            (p + "self_attn.k_proj.weight", (nkv * d, hid), "linear", hid),
            (p + "self_attn.v_proj.weight", (nkv * d, hid), "linear", hid),
            (p + "self_attn.o_proj.weight", (hid, nh * d), "residual", nh * d),
            (p + "self_attn.q_norm.weight", (d,), "norm", 0),
            (p + "self_attn.k_norm.weight", (d,), "norm", 0),
            (p + "mlp.gate_proj.weight", (inter, hid), "linear", hid),
            (p + "mlp.up_proj.weight", (inter, hid), "linear", hid),
            (p + "mlp.down_proj.weight", (hid, inter), "residual", inter),
        ]
    return [(n, s, k, f, n_layers_total) for n, s, k, f in out]


def tensor_specs(cfg):
    """Every tensor of model.safetensors, sorted by name (byte order)."""
    tk = cfg["talker_config"]
    cp = tk["code_predictor_config"]
    H, T, P = tk["hidden_size"], tk["text_hidden_size"], cp["hidden_size"]
    groups = cp["num_code_groups"] - 1
    nt, npred = tk["num_hidden_layers"], cp["num_hidden_layers"]
    s = [
        ("talker.model.text_embedding.weight", (tk["text_vocab_size"], T), "embed", 0, nt),
        ("talker.text_projection.linear_fc1.weight", (T, T), "linear", T, nt),
        ("talker.text_projection.linear_fc1.bias", (T,), "bias", 0, nt),
        ("talker.text_projection.linear_fc2.weight", (H, T), "linear", T, nt),
        ("talker.text_projection.linear_fc2.bias", (H,), "bias", 0, nt),
        ("talker.model.codec_embedding.weight", (tk["vocab_size"], H), "embed", 0, nt),
        ("talker.model.norm.weight", (H,), "norm", 0, nt),
        ("talker.codec_head.weight", (tk["vocab_size"], H), "head", H, nt),
        ("talker.code_predictor.model.norm.weight", (P,), "norm", 0, npred),
    ]
    s += layer_specs("talker.model", tk, nt)
    s += layer_specs("talker.code_predictor.model", cp, npred)
    for g in range(groups):
        s.append((f"talker.code_predictor.model.codec_embedding.{g}.weight",
                  (cp["vocab_size"], H), "embed", 0, npred))
        s.append((f"talker.code_predictor.lm_head.{g}.weight", (cp["vocab_size"], P), "head", P, npred))
    if P != H:
        s.append(("talker.code_predictor.small_to_mtp_projection.weight", (P, H), "linear", H, npred))
        s.append(("talker.code_predictor.small_to_mtp_projection.bias", (P,), "bias", 0, npred))
    return sorted(s, key=lambda t: t[0].encode())


def draw(name, shape, kind, fan_in, n_layers, seed):
    """float32 tensor for one name; same (seed, name) -> same values."""
    g = torch.Generator().manual_seed((seed * 2654435761 + zlib.crc32(name.encode())) % (1 << 62))
    x = torch.randn(shape, generator=g, dtype=torch.float32)
    if kind == "norm":
        return x.mul_(0.1).add_(1.0)
    if kind == "bias":
        return x.mul_(0.1)
    if kind == "embed":
        return x
    scale = fan_in ** -0.5
    if kind == "residual":
        scale /= (2.0 * n_layers) ** 0.5
    elif kind == "head":
        scale *= HEAD_GAIN
    return x.mul_(scale)


def to_bytes(x, dtype):
    if dtype == "f32":
        return x.numpy().astype("<f4").tobytes()
    # torch's float32 -> bfloat16 cast rounds to nearest even; keep the bits.
    return x.to(torch.bfloat16).view(torch.int16).numpy().astype("<i2").tobytes()


def write_model(path, specs, dtype, seed):
    header = {"__metadata__": {"format": "pt"}}
    off = 0
    for name, shape, *_ in specs:
        nbytes = ELEM_BYTES[dtype] * int(np.prod(shape))
        header[name] = {"dtype": ST_DTYPE[dtype], "shape": list(shape), "data_offsets": [off, off + nbytes]}
        off += nbytes
    blob = json.dumps(header, separators=(",", ":")).encode("utf-8")
    blob += b" " * ((8 - len(blob) % 8) % 8)
    with open(path + ".part", "wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        for name, shape, kind, fan_in, n_layers in specs:
            f.write(to_bytes(draw(name, shape, kind, fan_in, n_layers, seed), dtype))
    os.replace(path + ".part", path)
    return 8 + len(blob) + off


def write_checkpoint(preset, out, dtype="bf16", seed=0):
    os.makedirs(os.path.join(out, "speech_tokenizer"), exist_ok=True)
    for rel in COPIED_FILES:
        shutil.copyfile(os.path.join(REAL_DIR, rel), os.path.join(out, rel))
    if preset == "0.6b":
        shutil.copyfile(os.path.join(REAL_DIR, "config.json"), os.path.join(out, "config.json"))
        cfg = load_real_config()
    else:
        cfg = tiny_config()
        with open(os.path.join(out, "config.json"), "w", encoding="utf-8") as f:
            json.dump(cfg, f, indent=2, ensure_ascii=False)
            f.write("\n")
    specs = tensor_specs(cfg)
    size = write_model(os.path.join(out, "model.safetensors"), specs, dtype, seed)
    return cfg, specs, size


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", choices=["tiny", "0.6b"], required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--dtype", choices=["bf16", "f32"], default="bf16")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    t0 = time.time()
    _, specs, size = write_checkpoint(a.preset, a.out, a.dtype, a.seed)
    n_params = sum(int(np.prod(s[1])) for s in specs)
    print(json.dumps({"out": a.out, "preset": a.preset, "dtype": a.dtype, "seed": a.seed,
                      "tensors": len(specs), "params": n_params, "safetensors_bytes": size,
                      "seconds": round(time.time() - t0, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
