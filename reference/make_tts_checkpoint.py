#!/usr/bin/python3
"""Random-weight Qwen3-TTS checkpoints (all five models) in the real on-disk layout.

  /usr/bin/python3 reference/make_tts_checkpoint.py --preset tiny|full --out DIR
      [--variant 0.6b-customvoice|0.6b-base|1.7b-base|1.7b-customvoice|1.7b-voicedesign]
      [--dtype bf16|f32] [--seed S] [--speech-only | --speaker-only]

--variant picks the model (default 0.6b-customvoice); its config.json is the
real one (../shared/qwen3-tts-0.6b-customvoice/ or ../shared/qwen3-tts-variants/
Qwen3-TTS-12Hz-<variant>/); every other small file is the same in all five.
--preset full writes the real sizes of that variant (`0.6b` is its old name,
kept for the existing commands); tiny scales the dimensions (TINY_TALKER, or
TINY_TALKER_1B7 for the 1.7B variants, whose talker is twice as wide as the
predictor as in the real ones).

--speaker-only (Base variants) writes just config.json and a model.safetensors
holding only the speaker_encoder.* tensors (full size: 8.9M / 12.0M parameters,
under a second), e.g. for a test of the speaker encoder at its real size; the
real file also holds the talker.
--speech-only writes just DIR/speech_tokenizer/ (a full-size one takes ~3 s:
682 MB of F32), e.g. for a test of the Code2Wav decoder in a temporary directory.

The committed models/tts-tiny is `--preset tiny --out models/tts-tiny --seed 6`
(TINY_SEED): among seeds 0..8 it gives the widest best-minus-second logit gaps
along the 50 greedy golden frames (>= 0.0055 for c0 and the predictor), so
float32 rounding cannot flip an argmax.  Seed 0 had a 3.5e-5 predictor gap.

What lands in DIR
  config.json               full: byte copy of the variant's real file.  tiny: the real file
                            with only dimension keys changed (json, indent 2, key
                            order kept): talker hidden/intermediate/layers/heads/
                            kv heads/head_dim/text_hidden_size and
                            rope_scaling.mrope_section (its sum must be head_dim/2),
                            and the code predictor's hidden/intermediate/layers/
                            heads/kv heads/head_dim/layer_types.  Vocab sizes
                            (3072 / 2048 / 151936), num_code_groups 16 and every
                            special id are the real ones.
  generation_config.json, tokenizer_config.json, vocab.json, merges.txt,
  preprocessor_config.json, speech_tokenizer/{configuration,preprocessor_config}.json
                            byte copies of the real files (both presets).
  model.safetensors         one file, real tensor names and (scaled) shapes,
                            every tensor BF16 (or F32 with --dtype f32).
  speech_tokenizer/config.json
                            0.6b: byte copy.  tiny: decoder_config and
                            encoder_config dimensions patched (TINY_DECODER,
                            TINY_ENCODER; json, indent 2, key order kept).
  speech_tokenizer/model.safetensors
                            all F32 (as shipped): the decoder.* tensors of
                            Qwen3TTSTokenizerV2Decoder (271 at full size) and the
                            encoder.* tensors of the Mimi encoder (225), real
                            names; full size is 170 557 441 parameters, as the
                            real file.  Init: see "Init gains" below; the
                            waveform of uniform random codes has an RMS of ~0.2
                            (tiny ~0.20, full ~0.16-0.17), peak < 1, under 0.01%
                            clipped, and float32 is ~100 dB above the float64
                            decode (reference/code2wav_ref.py).

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
      only when P != H (tiny: H=32 or 64, P=24; 1.7B: H=2048, P=1024; absent
      for the full 0.6B).
  speaker_encoder.*         Base variants only: the ECAPA-TDNN of
                            Qwen3TTSSpeakerEncoder (see speaker_encoder_specs),
                            76 tensors, in the file's dtype like the rest.  Its
                            config is speaker_encoder_config with the class
                            defaults for the keys the real file leaves out; tiny
                            writes scaled channel counts there (TINY_SPEAKER) and
                            enc_dim = the tiny talker hidden, as the real enc_dim
                            equals the real talker hidden.

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

# The real checkpoint's small files, in ../shared/ beside the repository.
SHARED_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                          "shared")
REAL_DIR = os.path.join(SHARED_DIR, "qwen3-tts-0.6b-customvoice")
# The real config.json of each model; the other small files are the same
# git blobs in all five repositories, so they come from REAL_DIR.
VARIANT_CONFIG = {
    "0.6b-customvoice": os.path.join(REAL_DIR, "config.json"),
    "0.6b-base": os.path.join(SHARED_DIR, "qwen3-tts-variants", "Qwen3-TTS-12Hz-0.6B-Base", "config.json"),
    "1.7b-base": os.path.join(SHARED_DIR, "qwen3-tts-variants", "Qwen3-TTS-12Hz-1.7B-Base", "config.json"),
    "1.7b-customvoice": os.path.join(SHARED_DIR, "qwen3-tts-variants", "Qwen3-TTS-12Hz-1.7B-CustomVoice",
                                     "config.json"),
    "1.7b-voicedesign": os.path.join(SHARED_DIR, "qwen3-tts-variants", "Qwen3-TTS-12Hz-1.7B-VoiceDesign",
                                     "config.json"),
}
DEFAULT_VARIANT = "0.6b-customvoice"
COPIED_FILES = ["generation_config.json", "tokenizer_config.json", "vocab.json", "merges.txt",
                "preprocessor_config.json"]
SPEECH_COPIED_FILES = ["speech_tokenizer/configuration.json", "speech_tokenizer/preprocessor_config.json"]

# Dimension overrides of the tiny preset; everything else is the real config.
TINY_TALKER = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=3,
                   num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                   text_hidden_size=8)
# 1.7B: the real talker is 2048 wide (intermediate 6144) over the same
# 1024-wide predictor; tiny keeps "talker twice the 0.6B width".
TINY_TALKER_1B7 = dict(TINY_TALKER, hidden_size=64, intermediate_size=128)
TINY_MROPE_SECTION = [4, 2, 2]  # sums to head_dim/2 = 8, like [24,20,20] for 128
TINY_PREDICTOR = dict(hidden_size=24, intermediate_size=48, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=16)

# Qwen3TTSSpeakerEncoderConfig's defaults (the real config.json sets only
# enc_dim and sample_rate), and the tiny overrides.  Kept real in tiny:
# mel_dim 128 (the front end is fixed), the kernel sizes and dilations (so the
# reflect padding and the minimum length are the real ones) and the Res2Net
# scale 8; the mfa width stays 3x the block width, as it must.
SPEAKER_DEFAULTS = dict(mel_dim=128, enc_dim=1024, enc_channels=[512, 512, 512, 512, 1536],
                        enc_kernel_sizes=[5, 3, 3, 3, 1], enc_dilations=[1, 2, 3, 4, 1],
                        enc_attention_channels=128, enc_res2net_scale=8, enc_se_channels=128,
                        sample_rate=24000)
TINY_SPEAKER = dict(enc_channels=[32, 32, 32, 32, 96], enc_attention_channels=16, enc_se_channels=16)

TINY_SEED = 6  # the seed of the committed models/tts-tiny (see the top)
HEAD_GAIN = 4.0
ST_DTYPE = {"bf16": "BF16", "f32": "F32"}
ELEM_BYTES = {"bf16": 2, "f32": 4}


def load_real_config(variant=DEFAULT_VARIANT):
    with open(VARIANT_CONFIG[variant], encoding="utf-8") as f:
        return json.load(f)


def tiny_config(variant=DEFAULT_VARIANT):
    """The variant's real config dict with the tiny dimensions patched in place."""
    cfg = load_real_config(variant)
    tk = cfg["talker_config"]
    for k, v in (TINY_TALKER_1B7 if cfg["tts_model_size"] == "1b7" else TINY_TALKER).items():
        assert k in tk, k
        tk[k] = v
    tk["rope_scaling"]["mrope_section"] = list(TINY_MROPE_SECTION)
    cp = tk["code_predictor_config"]
    for k, v in TINY_PREDICTOR.items():
        assert k in cp, k
        cp[k] = v
    cp["layer_types"] = ["full_attention"] * TINY_PREDICTOR["num_hidden_layers"]
    if "speaker_encoder_config" in cfg:
        se = cfg["speaker_encoder_config"]
        se["enc_dim"] = tk["hidden_size"]
        se.update(TINY_SPEAKER)
    return cfg


def speaker_config(cfg):
    """speaker_encoder_config over the class defaults, or None (not a Base model)."""
    if cfg.get("tts_model_type") != "base":
        return None
    return dict(SPEAKER_DEFAULTS, **cfg.get("speaker_encoder_config", {}))


def speaker_encoder_specs(sc):
    """(name, shape, kind, fan_in, n_layers) of the speaker_encoder.* tensors:
    Qwen3TTSSpeakerEncoder's module tree (blocks.0 a TDNN; blocks.1..n-2
    SE-Res2Net blocks; mfa; attentive statistics pooling asp; fc).  Every conv
    has a bias.  Weights N(0, 1/fan_in), biases 0.1 N(0, 1)."""
    s = []
    ch, ks = sc["enc_channels"], sc["enc_kernel_sizes"]

    def conv(name, cout, cin, k):
        s.append((f"speaker_encoder.{name}.weight", (cout, cin, k), "linear", cin * k, 1))
        s.append((f"speaker_encoder.{name}.bias", (cout,), "bias", 0, 1))

    conv("blocks.0.conv", ch[0], sc["mel_dim"], ks[0])
    scale = sc["enc_res2net_scale"]
    for b in range(1, len(ch) - 1):
        c, p = ch[b], f"blocks.{b}."
        conv(p + "tdnn1.conv", c, ch[b - 1], 1)
        for j in range(scale - 1):
            conv(f"{p}res2net_block.blocks.{j}.conv", c // scale, c // scale, ks[b])
        conv(p + "tdnn2.conv", c, c, 1)
        conv(p + "se_block.conv1", sc["enc_se_channels"], c, 1)
        conv(p + "se_block.conv2", c, sc["enc_se_channels"], 1)
    conv("mfa.conv", ch[-1], ch[-1], ks[-1])
    conv("asp.tdnn.conv", sc["enc_attention_channels"], ch[-1] * 3, 1)
    conv("asp.conv", ch[-1], sc["enc_attention_channels"], 1)
    conv("fc", sc["enc_dim"], ch[-1] * 2, 1)
    return s


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
    sc = speaker_config(cfg)
    if sc is not None:
        s += speaker_encoder_specs(sc)
    return sorted(s, key=lambda t: t[0].encode())


def generator_for(name, seed):
    return torch.Generator().manual_seed((seed * 2654435761 + zlib.crc32(name.encode())) % (1 << 62))


def draw(name, shape, kind, fan_in, n_layers, seed):
    """float32 tensor for one name; same (seed, name) -> same values."""
    x = torch.randn(shape, generator=generator_for(name, seed), dtype=torch.float32)
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


def write_model(path, specs, dtype, seed, draw_fn=draw):
    """specs: (name, shape, kind, fan_in, extra); draw_fn(name, shape, kind, fan_in, extra, seed)."""
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
        for name, shape, kind, fan_in, extra in specs:
            f.write(to_bytes(draw_fn(name, shape, kind, fan_in, extra, seed), dtype))
    os.replace(path + ".part", path)
    return 8 + len(blob) + off


# ---------------------------------------------------------------- speech tokenizer

# Dimension overrides of the tiny speech tokenizer.  Kept real: codebook_size
# 2048 (the predictor's vocabulary), num_quantizers 16, upsample_rates [8,5,4,3]
# and upsampling_ratios [2,2] (1920 samples per frame), sliding_window 72.
# latent (40), hidden (24) and heads*head_dim (64) all differ, as 1024/512/1024
# do in the real model, so a port that mixes them up fails on tiny too.
TINY_DECODER = dict(codebook_dim=16, latent_dim=40, hidden_size=24, intermediate_size=56,
                    num_attention_heads=4, num_key_value_heads=4, head_dim=16,
                    num_hidden_layers=2, decoder_dim=64)
TINY_ENCODER = dict(num_filters=2, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                    num_attention_heads=2, num_key_value_heads=2, head_dim=8,
                    codebook_size=64, codebook_dim=8, vector_quantization_hidden_dimension=8)

# Init gains of the random decoder (see speech_tensor_specs): chosen so that
# activations stay O(1) through every stage and the waveform of random codes
# has an RMS of ~0.1-0.3 with almost nothing clipped, at tiny and full size.
QK_GAIN = 1.5          # sharper attention: positions and the window matter
RES_BRANCH_GAIN = 0.5  # each of the 12 vocoder residual units adds ~25% variance
BLOCK_UP_GAIN = 0.65   # vocoder ConvTranspose: undoes the residual units' growth
SNAKE_LOG_BETA_MEAN = 0.5  # log beta ~ N(0.5, 0.5^2), log alpha ~ N(0, 0.5^2): with a
                           # mean of 0 the 29 Snakes in series amplified float32
                           # rounding ~100x (floor 5e-5 relative); with 0.5 ~5x
OUT_GAIN = 0.11        # the last conv: sets the waveform level
LAYER_SCALE = 0.3      # transformer layer scales ~U(0.15, 0.45) (real init 0.01)
CONVNEXT_GAMMA = 0.4   # ConvNeXt gamma ~U(0.2, 0.6) (real init 1e-6)
# Every DEAD_PERIOD-th codebook row (from DEAD_OFFSET) is a "dead" code:
# cluster_usage 1e-7, below the 1e-5 clamp, and embedding_sum scaled by 1e-5,
# so only a decoder that clamps the usage gets O(1) vectors for it.
DEAD_PERIOD, DEAD_OFFSET, DEAD_USAGE = 61, 7, 1e-7


def tiny_speech_config():
    with open(os.path.join(REAL_DIR, "speech_tokenizer", "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    for section, patch in (("decoder_config", TINY_DECODER), ("encoder_config", TINY_ENCODER)):
        for k, v in patch.items():
            assert k in cfg[section], (section, k)
            cfg[section][k] = v
    return cfg


def scaled_attention_specs(add, lp, hid, nh, nkv, hd, qk_gain):
    """q/k/v/o projections (no bias) and the two layer scales of one layer."""
    add(lp + "self_attn.q_proj.weight", (nh * hd, hid), "w", hid, qk_gain)
    add(lp + "self_attn.k_proj.weight", (nkv * hd, hid), "w", hid, qk_gain)
    add(lp + "self_attn.v_proj.weight", (nkv * hd, hid), "w", hid)
    add(lp + "self_attn.o_proj.weight", (hid, nh * hd), "w", nh * hd)
    add(lp + "self_attn_layer_scale.scale", (hid,), "scale", 0, LAYER_SCALE)
    add(lp + "mlp_layer_scale.scale", (hid,), "scale", 0, LAYER_SCALE)


def decoder_specs(dc):
    """(name, shape, kind, fan_in, gain) of the 271 decoder.* tensors (real names)."""
    vq, half = dc["codebook_dim"], dc["codebook_dim"] // 2
    lat, hid, inter = dc["latent_dim"], dc["hidden_size"], dc["intermediate_size"]
    nh, nkv, hd = dc["num_attention_heads"], dc["num_key_value_heads"], dc["head_dim"]
    size, nq = dc["codebook_size"], dc["num_quantizers"]
    s = []

    def add(name, shape, kind, fan_in=0, gain=1.0):
        s.append(("decoder." + name, tuple(shape), kind, fan_in, gain))

    for part, n, gain in (("rvq_first", 1, 1.0), ("rvq_rest", nq - 1, (nq - 1) ** -0.5)):
        q = f"quantizer.{part}."
        add(q + "input_proj.weight", (half, vq, 1), "w", vq)
        add(q + "output_proj.weight", (vq, half, 1), "w", half, gain)
        for k in range(n):
            add(f"{q}vq.layers.{k}._codebook.embedding_sum", (size, half), "vq_sum")
            add(f"{q}vq.layers.{k}._codebook.cluster_usage", (size,), "usage")
    add("pre_conv.conv.weight", (lat, vq, 3), "w", vq * 3)
    add("pre_conv.conv.bias", (lat,), "bias")
    p = "pre_transformer."
    add(p + "input_proj.weight", (hid, lat), "w", lat)
    add(p + "input_proj.bias", (hid,), "bias")
    add(p + "norm.weight", (hid,), "norm")
    add(p + "output_proj.weight", (lat, hid), "w", hid)
    add(p + "output_proj.bias", (lat,), "bias")
    for i in range(dc["num_hidden_layers"]):
        lp = f"{p}layers.{i}."
        add(lp + "input_layernorm.weight", (hid,), "norm")
        add(lp + "post_attention_layernorm.weight", (hid,), "norm")
        scaled_attention_specs(add, lp, hid, nh, nkv, hd, QK_GAIN)
        add(lp + "mlp.gate_proj.weight", (inter, hid), "w", hid)
        add(lp + "mlp.up_proj.weight", (inter, hid), "w", hid)
        add(lp + "mlp.down_proj.weight", (hid, inter), "w", inter)
    for u, r in enumerate(dc["upsampling_ratios"]):
        up = f"upsample.{u}."
        add(up + "0.conv.weight", (lat, lat, r), "w", lat)  # k == stride: one tap per output
        add(up + "0.conv.bias", (lat,), "bias")
        add(up + "1.dwconv.conv.weight", (lat, 1, 7), "w", 7)
        add(up + "1.dwconv.conv.bias", (lat,), "bias")
        add(up + "1.norm.weight", (lat,), "norm")
        add(up + "1.norm.bias", (lat,), "bias")
        add(up + "1.pwconv1.weight", (4 * lat, lat), "w", lat)
        add(up + "1.pwconv1.bias", (4 * lat,), "bias")
        add(up + "1.pwconv2.weight", (lat, 4 * lat), "w", 4 * lat)
        add(up + "1.pwconv2.bias", (lat,), "bias")
        add(up + "1.gamma", (lat,), "scale", 0, CONVNEXT_GAMMA)
    ch = dc["decoder_dim"]
    add("decoder.0.conv.weight", (ch, lat, 7), "w", lat * 7)
    add("decoder.0.conv.bias", (ch,), "bias")
    for b, r in enumerate(dc["upsample_rates"], start=1):
        bp = f"decoder.{b}.block."
        add(bp + "0.alpha", (ch,), "snake")
        add(bp + "0.beta", (ch,), "snake")
        add(bp + "1.conv.weight", (ch, ch // 2, 2 * r), "w", ch * 2, BLOCK_UP_GAIN)  # k = 2*stride: two taps
        add(bp + "1.conv.bias", (ch // 2,), "bias")
        ch //= 2
        for u in (2, 3, 4):
            rp = f"{bp}{u}."
            for act in ("act1", "act2"):
                add(f"{rp}{act}.alpha", (ch,), "snake")
                add(f"{rp}{act}.beta", (ch,), "snake")
            add(rp + "conv1.conv.weight", (ch, ch, 7), "w", ch * 7)
            add(rp + "conv1.conv.bias", (ch,), "bias")
            add(rp + "conv2.conv.weight", (ch, ch, 1), "w", ch, RES_BRANCH_GAIN)
            add(rp + "conv2.conv.bias", (ch,), "bias")
    last = len(dc["upsample_rates"]) + 1
    add(f"decoder.{last}.alpha", (ch,), "snake")
    add(f"decoder.{last}.beta", (ch,), "snake")
    add(f"decoder.{last + 1}.conv.weight", (1, ch, 7), "w", ch * 7, OUT_GAIN)
    add(f"decoder.{last + 1}.conv.bias", (1,), "bias", 0, 0.2)  # small DC
    return s


def encoder_specs(ec):
    """(name, shape, kind, fan_in, gain) of the encoder.* tensors: the Mimi encoder
    (HF MimiModel minus its decoder half) as Qwen3TTSTokenizerV2Encoder saves it."""
    s = []

    def add(name, shape, kind, fan_in=0, gain=1.0):
        s.append(("encoder." + name, tuple(shape), kind, fan_in, gain))

    def conv(name, cout, cin, k, bias=True):
        add(name + ".conv.weight", (cout, cin, k), "w", cin * k)
        if bias:
            add(name + ".conv.bias", (cout,), "bias")

    nf, hid = ec["num_filters"], ec["hidden_size"]
    conv("encoder.layers.0", nf, ec["audio_channels"], ec["kernel_size"])
    idx, ch = 1, nf
    for ratio in reversed(ec["upsampling_ratios"]):
        for _ in range(ec["num_residual_layers"]):
            conv(f"encoder.layers.{idx}.block.1", ch // ec["compress"], ch, ec["residual_kernel_size"])
            conv(f"encoder.layers.{idx}.block.3", ch, ch // ec["compress"], 1)
            idx += 1
        conv(f"encoder.layers.{idx + 1}", ch * 2, ch, 2 * ratio)  # idx is the ELU
        idx += 2
        ch *= 2
    conv(f"encoder.layers.{idx + 1}", hid, ch, ec["last_kernel_size"])
    nh, nkv, hd, inter = (ec["num_attention_heads"], ec["num_key_value_heads"], ec["head_dim"],
                          ec["intermediate_size"])
    for i in range(ec["num_hidden_layers"]):
        lp = f"encoder_transformer.layers.{i}."
        for norm in ("input_layernorm", "post_attention_layernorm"):
            add(f"{lp}{norm}.weight", (hid,), "norm")
            add(f"{lp}{norm}.bias", (hid,), "bias")
        scaled_attention_specs(add, lp, hid, nh, nkv, hd, 1.0)
        add(lp + "mlp.fc1.weight", (inter, hid), "w", hid)
        add(lp + "mlp.fc2.weight", (hid, inter), "w", inter)
    # 2 * (encodec frame rate / frame rate) = 2 * (24000/960 / 12.5) = 4 taps
    conv("downsample", hid, hid, 2 * round(ec["sampling_rate"] / np.prod(ec["upsampling_ratios"])
                                           / ec["_frame_rate"]), bias=False)
    vqh, size, dim = ec["vector_quantization_hidden_dimension"], ec["codebook_size"], ec["codebook_dim"]
    n_sem = ec["num_semantic_quantizers"]
    for part, n in (("semantic", n_sem), ("acoustic", ec["num_quantizers"] - n_sem)):
        q = f"quantizer.{part}_residual_vector_quantizer."
        add(q + "input_proj.weight", (vqh, hid, 1), "w", hid)
        add(q + "output_proj.weight", (hid, vqh, 1), "w", vqh)
        for k in range(n):
            add(f"{q}layers.{k}.codebook.initialized", (1,), "ones")
            add(f"{q}layers.{k}.codebook.cluster_usage", (size,), "usage")
            add(f"{q}layers.{k}.codebook.embed_sum", (size, dim), "vq_sum")
    return s


def speech_tensor_specs(st_cfg):
    """Every tensor of speech_tokenizer/model.safetensors, sorted by name (byte order)."""
    specs = decoder_specs(st_cfg["decoder_config"]) + encoder_specs(st_cfg["encoder_config"])
    return sorted(specs, key=lambda t: t[0].encode())


def dead_rows(n):
    return torch.arange(n) % DEAD_PERIOD == DEAD_OFFSET


def draw_speech(name, shape, kind, fan_in, gain, seed):
    """float32 tensor of one speech-tokenizer name; same (seed, name) -> same values."""
    g = generator_for(name, seed)
    if kind == "ones":
        return torch.ones(shape)
    if kind == "usage":  # positive and varied; dead rows below the clamp
        x = torch.rand(shape, generator=g).mul_(3.5).add_(0.5)
        x[dead_rows(shape[0])] = DEAD_USAGE
        return x
    if kind == "scale":  # U(gain/2, 3 gain/2)
        return torch.rand(shape, generator=g).add_(0.5).mul_(gain)
    x = torch.randn(shape, generator=g, dtype=torch.float32)
    if kind == "vq_sum":  # codebook rows ~ N(0, 1.5^2) / U(0.5, 4): about unit scale
        x.mul_(1.5)
        x[dead_rows(shape[0])] *= 1e-5
        return x
    if kind == "snake":  # log alpha, log beta
        return x.mul_(0.5).add_(SNAKE_LOG_BETA_MEAN if name.endswith(".beta") else 0.0)
    if kind == "norm":
        return x.mul_(0.1).add_(1.0)
    if kind == "bias":
        return x.mul_(0.1 * gain)
    assert kind == "w", kind
    return x.mul_(gain * fan_in ** -0.5)


def place_config(preset, out, rel, tiny_fn, real_path=None):
    """full: byte copy of the real file (real_path, else REAL_DIR/rel); tiny:
    tiny_fn()'s dict as JSON (indent 2).  Returns the config dict."""
    dst = os.path.join(out, rel)
    if preset in ("full", "0.6b"):
        shutil.copyfile(real_path or os.path.join(REAL_DIR, rel), dst)
        with open(dst, encoding="utf-8") as f:
            return json.load(f)
    cfg = tiny_fn()
    with open(dst, "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=2, ensure_ascii=False)
        f.write("\n")
    return cfg


def write_speech_tokenizer(preset, out, seed):
    """speech_tokenizer/{config.json, model.safetensors} (+ the small real files)."""
    st = os.path.join(out, "speech_tokenizer")
    os.makedirs(st, exist_ok=True)
    for rel in SPEECH_COPIED_FILES:
        shutil.copyfile(os.path.join(REAL_DIR, rel), os.path.join(out, rel))
    st_cfg = place_config(preset, out, "speech_tokenizer/config.json", tiny_speech_config)
    specs = speech_tensor_specs(st_cfg)
    size = write_model(os.path.join(st, "model.safetensors"), specs, "f32", seed, draw_speech)
    return specs, size


def write_checkpoint(preset, out, dtype="bf16", seed=0, variant=DEFAULT_VARIANT):
    """The talker/predictor (and, for Base, speaker encoder) files: config.json,
    model.safetensors, tokenizer files."""
    os.makedirs(os.path.join(out, "speech_tokenizer"), exist_ok=True)
    for rel in COPIED_FILES:
        shutil.copyfile(os.path.join(REAL_DIR, rel), os.path.join(out, rel))
    cfg = place_config(preset, out, "config.json", lambda: tiny_config(variant), VARIANT_CONFIG[variant])
    specs = tensor_specs(cfg)
    size = write_model(os.path.join(out, "model.safetensors"), specs, dtype, seed)
    return cfg, specs, size


def write_speaker_only(preset, out, dtype="bf16", seed=0, variant=DEFAULT_VARIANT):
    """config.json and a model.safetensors of the speaker_encoder.* tensors alone."""
    os.makedirs(out, exist_ok=True)
    cfg = place_config(preset, out, "config.json", lambda: tiny_config(variant), VARIANT_CONFIG[variant])
    sc = speaker_config(cfg)
    if sc is None:
        raise SystemExit(f"--speaker-only: {variant} has no speaker encoder (Base variants only)")
    specs = sorted(speaker_encoder_specs(sc), key=lambda t: t[0].encode())
    return specs, write_model(os.path.join(out, "model.safetensors"), specs, dtype, seed)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", choices=["tiny", "full", "0.6b"], required=True,
                    help="tiny: scaled dimensions; full (old name 0.6b): the variant's real sizes")
    ap.add_argument("--variant", choices=sorted(VARIANT_CONFIG), default=DEFAULT_VARIANT)
    ap.add_argument("--out", required=True)
    ap.add_argument("--dtype", choices=["bf16", "f32"], default="bf16")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--speech-only", action="store_true",
                    help="write only speech_tokenizer/ (config + F32 weights)")
    ap.add_argument("--speaker-only", action="store_true",
                    help="write only config.json and the speaker_encoder.* tensors (Base variants)")
    a = ap.parse_args()
    t0 = time.time()
    summary = {"out": a.out, "preset": a.preset, "variant": a.variant, "seed": a.seed}
    if a.speaker_only:
        specs, size = write_speaker_only(a.preset, a.out, a.dtype, a.seed, a.variant)
        summary.update(dtype=a.dtype, speaker_encoder_tensors=len(specs),
                       speaker_encoder_params=sum(int(np.prod(s[1])) for s in specs),
                       safetensors_bytes=size, seconds=round(time.time() - t0, 1))
        print(json.dumps(summary))
        return 0
    if not a.speech_only:
        _, specs, size = write_checkpoint(a.preset, a.out, a.dtype, a.seed, a.variant)
        speaker = [s for s in specs if s[0].startswith("speaker_encoder.")]
        summary.update(dtype=a.dtype, tensors=len(specs), params=sum(int(np.prod(s[1])) for s in specs),
                       speaker_encoder_tensors=len(speaker),
                       speaker_encoder_params=sum(int(np.prod(s[1])) for s in speaker),
                       safetensors_bytes=size)
    specs, size = write_speech_tokenizer(a.preset, a.out, a.seed)
    summary.update(speech_tensors=len(specs),
                   speech_decoder_tensors=sum(s[0].startswith("decoder.") for s in specs),
                   speech_params=sum(int(np.prod(s[1])) for s in specs), speech_safetensors_bytes=size,
                   seconds=round(time.time() - t0, 1))
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
