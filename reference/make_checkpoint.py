#!/usr/bin/python3
"""Write a random Spark-X2.5 checkpoint in real Hugging Face format.

  /usr/bin/python3 reference/make_checkpoint.py --preset tiny|mid|1.7b --out DIR
      [--dtype f32|bf16|f16] [--shards N] [--untied] [--seed S]
      [--attention-bias] [--mlp-bias] [--gate-mode sigmoid|silu]
      [--layers N] [--vocab V] [--hidden H] [--intermediate I] [--head-dim D]

Output: DIR/config.json and DIR/model.safetensors, or with --shards N>1
DIR/model-0000k-of-0000N.safetensors + DIR/model.safetensors.index.json.
Tensors are generated one at a time (float32, torch.Generator seeded per
tensor from --seed and the tensor name, so the same seed gives the same
weights whatever the dtype, shard count or tying), cast, and streamed to disk;
peak memory is about one tensor (1 GiB for the 1.7b embedding).
"""
import argparse
import json
import os
import struct
import sys
import time
import zlib

import numpy as np
import torch

PRESETS = {
    "tiny": dict(hidden_size=128, num_hidden_layers=4, num_attention_heads=4,
                 num_key_value_heads=2, head_dim=32, intermediate_size=256,
                 vocab_size=512, sliding_window=16, max_position_embeddings=4096),
    "mid": dict(hidden_size=2048, num_hidden_layers=4, num_attention_heads=8,
                num_key_value_heads=2, head_dim=256, intermediate_size=6144,
                vocab_size=32768, sliding_window=512, max_position_embeddings=32768),
    "1.7b": dict(hidden_size=2048, num_hidden_layers=28, num_attention_heads=8,
                 num_key_value_heads=2, head_dim=256, intermediate_size=6144,
                 vocab_size=131072, sliding_window=512, max_position_embeddings=1048576),
}
DEFAULT_DTYPE = {"tiny": "f32", "mid": "bf16", "1.7b": "bf16"}
ST_NAME = {"f32": "F32", "bf16": "BF16", "f16": "F16"}
TORCH_NAME = {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}
NBYTES = {"f32": 4, "bf16": 2, "f16": 2}


def default_layer_types(n):
    """3 x sliding then 1 x full, repeated."""
    return ["full_attention" if (i + 1) % 4 == 0 else "sliding_attention" for i in range(n)]


def build_config(preset="tiny", dtype="f32", layers=None, vocab=None, untied=False,
                 attention_bias=False, mlp_bias=False, gate_mode="sigmoid",
                 layer_types=None, **overrides):
    c = dict(PRESETS[preset])
    if layers is not None:
        c["num_hidden_layers"] = layers
    if vocab is not None:
        c["vocab_size"] = vocab
    c.update(overrides)
    n = c["num_hidden_layers"]
    cfg = {
        "architectures": ["Spark2_5ForCausalLM"],
        "model_type": "spark2_5",
        **c,
        "layer_types": list(layer_types) if layer_types else default_layer_types(n),
        "rope_parameters": {
            "full_attention": {"rope_type": "default", "rope_theta": 5000000.0,
                               "partial_rotary_factor": 0.25},
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0,
                                  "partial_rotary_factor": 1.0},
        },
        "rms_norm_eps": 1e-6,
        "hidden_act": "gelu",
        "headwise_attn_output_gate": True,
        "gate_attn_act_mode": gate_mode,
        "attention_bias": bool(attention_bias),
        "mlp_bias": bool(mlp_bias),
        "attention_dropout": 0.0,
        "tie_word_embeddings": not untied,
        # the ids of reference/make_tokenizer.py's layout: its 9 special tokens
        # end the vocabulary, <|endoftext|> (bos, pad) first, <|im_end|> (eos) third
        "bos_token_id": c["vocab_size"] - 9,
        "eos_token_id": c["vocab_size"] - 7,
        "pad_token_id": c["vocab_size"] - 9,
        "initializer_range": 0.02,
        "use_cache": True,
        "torch_dtype": TORCH_NAME[dtype],
        "dtype": TORCH_NAME[dtype],
    }
    assert len(cfg["layer_types"]) == n
    return cfg


def tensor_specs(cfg):
    """[(name, shape, kind, fan_in)] for every tensor; kind in
    embed | linear | norm | bias. Exact names from the spec."""
    H, KV, d = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    hid, inter, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    s = [("model.embedding.weight", (V, hid), "embed", hid),
         ("model.norm.weight", (hid,), "norm", 0)]
    if not cfg["tie_word_embeddings"]:
        s.append(("lm_head.weight", (V, hid), "linear", hid))
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        s += [(p + "input_layernorm.weight", (hid,), "norm", 0),
              (p + "post_attention_layernorm.weight", (hid,), "norm", 0)]
        lin = [("self_attn.q_k_v_proj", ((H + 2 * KV) * d, hid), cfg["attention_bias"]),
               ("self_attn.g_proj", (H, hid), cfg["attention_bias"]),
               ("self_attn.out_proj", (hid, H * d), cfg["attention_bias"]),
               ("mlp.gate_proj", (inter, hid), cfg["mlp_bias"]),
               ("mlp.up_proj", (inter, hid), cfg["mlp_bias"]),
               ("mlp.down_proj", (hid, inter), cfg["mlp_bias"])]
        for n, shp, bias in lin:
            s.append((p + n + ".weight", shp, "linear", shp[1]))
            if bias:
                s.append((p + n + ".bias", (shp[0],), "bias", 0))
    return sorted(s)  # safetensors files list tensors sorted by name


def gen_tensor(name, shape, kind, fan_in, seed):
    """float32 random tensor; the generator is seeded from (seed, name)."""
    g = torch.Generator().manual_seed((seed * 1000003 + zlib.crc32(name.encode())) % (1 << 62))
    x = torch.randn(shape, generator=g, dtype=torch.float32)
    if kind == "linear":
        x *= 1.0 / fan_in ** 0.5
    elif kind == "norm":
        x = 1.0 + 0.1 * x
    elif kind == "bias":
        x *= 0.1
    return x


def f32_to_bf16_bits(a):
    """float32 ndarray -> bf16 bit patterns (uint16), round to nearest even."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    u = u + (np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1)))
    return (u >> np.uint32(16)).astype("<u2")


def encode(x, dtype):
    a = x.numpy()
    if dtype == "f32":
        return a.astype("<f4").tobytes()
    if dtype == "f16":
        return a.astype("<f2").tobytes()
    return f32_to_bf16_bits(a).tobytes()


def write_safetensors(path, specs, dtype, seed):
    """Header: 8-byte LE length, JSON padded with spaces to a multiple of 8,
    then the tensors back to back in the order of specs (sorted by name)."""
    header, off = {"__metadata__": {"format": "pt"}}, 0
    for name, shape, _, _ in specs:
        n = NBYTES[dtype] * int(np.prod(shape))
        header[name] = {"dtype": ST_NAME[dtype], "shape": list(shape), "data_offsets": [off, off + n]}
        off += n
    hb = json.dumps(header, separators=(",", ":")).encode()
    hb += b" " * (-len(hb) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb)))
        f.write(hb)
        for name, shape, kind, fan_in in specs:
            f.write(encode(gen_tensor(name, shape, kind, fan_in, seed), dtype))
    return off


def split_shards(specs, dtype, n):
    """Split the sorted tensor list into n contiguous runs of roughly equal bytes."""
    sizes = [NBYTES[dtype] * int(np.prod(s[1])) for s in specs]
    n = max(1, min(n, len(specs)))
    total, shards, cur, acc = sum(sizes), [], [], 0
    for i, (sp, sz) in enumerate(zip(specs, sizes)):
        after = n - len(shards) - 1          # shards still to fill if we close cur now
        if cur and after > 0:
            must = len(specs) - i <= after    # every later shard needs >= 1 tensor
            want = acc + sz / 2 > total * (len(shards) + 1) / n
            if must or want:
                shards.append(cur)
                cur = []
        cur.append(sp)
        acc += sz
    shards.append(cur)
    return shards


def write_checkpoint(cfg, out, dtype="f32", shards=1, seed=0):
    os.makedirs(out, exist_ok=True)
    for fn in os.listdir(out):  # never leave a stale single file / shard set behind
        if fn.endswith(".safetensors") or fn == "model.safetensors.index.json":
            os.remove(os.path.join(out, fn))
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    specs = tensor_specs(cfg)
    if shards <= 1:
        total = write_safetensors(os.path.join(out, "model.safetensors"), specs, dtype, seed)
        return total, 1
    parts = split_shards(specs, dtype, shards)
    total, wmap = 0, {}
    for k, part in enumerate(parts):
        fn = f"model-{k + 1:05d}-of-{len(parts):05d}.safetensors"
        total += write_safetensors(os.path.join(out, fn), part, dtype, seed)
        wmap.update({sp[0]: fn for sp in part})
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": dict(sorted(wmap.items()))}, f, indent=2)
        f.write("\n")
    return total, len(parts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", choices=sorted(PRESETS), required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--dtype", choices=["f32", "bf16", "f16"], default=None,
                    help="default: f32 for tiny, bf16 for mid and 1.7b")
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--untied", action="store_true", help="write a separate lm_head.weight")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--attention-bias", action="store_true")
    ap.add_argument("--mlp-bias", action="store_true")
    ap.add_argument("--gate-mode", choices=["sigmoid", "silu"], default="sigmoid")
    ap.add_argument("--layers", type=int, default=None)
    ap.add_argument("--vocab", type=int, default=None)
    ap.add_argument("--hidden", type=int, default=None, help="hidden_size (e.g. a multiple of 256 for K-quants)")
    ap.add_argument("--intermediate", type=int, default=None, help="intermediate_size")
    ap.add_argument("--head-dim", type=int, default=None, help="head_dim")
    ap.add_argument("--kv-heads", type=int, default=None,
                    help="num_key_value_heads (a divisor of the preset's num_attention_heads)")
    a = ap.parse_args()
    dtype = a.dtype or DEFAULT_DTYPE[a.preset]
    t0 = time.time()
    sizes = {k: v for k, v in (("hidden_size", a.hidden), ("intermediate_size", a.intermediate),
                               ("head_dim", a.head_dim), ("num_key_value_heads", a.kv_heads)) if v}
    cfg = build_config(a.preset, dtype, a.layers, a.vocab, a.untied, a.attention_bias,
                       a.mlp_bias, a.gate_mode, **sizes)
    total, nfiles = write_checkpoint(cfg, a.out, dtype, a.shards, a.seed)
    nparams = sum(int(np.prod(s[1])) for s in tensor_specs(cfg))
    print(f"wrote {a.out}: spark2_5 preset={a.preset} layers={cfg['num_hidden_layers']} "
          f"vocab={cfg['vocab_size']} {'untied' if a.untied else 'tied'} dtype={dtype} "
          f"params={nparams} bytes={total} files={nfiles} seed={a.seed} "
          f"({time.time() - t0:.1f}s)")


if __name__ == "__main__":
    sys.exit(main())
