#!/usr/bin/python3
"""Self-check of the Python reference:  /usr/bin/python3 reference/test_reference.py
Last line: "N passed, N failed"; exit status 1 on any failure."""
import json
import math
import os
import shutil
import struct
import sys
import tempfile
import traceback

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_checkpoint as mc  # noqa: E402
import spark_ref as sr  # noqa: E402

TMP = tempfile.mkdtemp(prefix="spark_ref_test_")
CKPTS = {}


def f32_ckpt():
    return ckpt("f32")


def sharded_ckpt():  # bf16, 3 shards, untied, all biases, silu gate
    return ckpt("bf16_sharded", "bf16", shards=3, untied=True, attention_bias=True,
                mlp_bias=True, gate_mode="silu")


def ckpt(name, dtype="f32", shards=1, seed=0, **cfg_kw):
    """Write (once) a tiny checkpoint; return its directory."""
    if name not in CKPTS:
        out = os.path.join(TMP, name)
        mc.write_checkpoint(mc.build_config("tiny", dtype, **cfg_kw), out, dtype, shards, seed)
        CKPTS[name] = out
    return CKPTS[name]


def snr(ref, test):
    ref, test = ref.double(), test.double()
    err = float(((test - ref) ** 2).sum())
    return float("inf") if err == 0 else 10 * math.log10(float((ref ** 2).sum()) / err)


def ids(n, vocab=512, seed=1):
    return torch.randint(0, vocab, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


# ---------------------------------------------------------------- (a) files
def test_safetensors_layout():
    d = sharded_ckpt()
    index = json.load(open(os.path.join(d, "model.safetensors.index.json")))
    files = sorted(set(index["weight_map"].values()))
    assert files == [f"model-0000{k}-of-00003.safetensors" for k in (1, 2, 3)], files
    total = 0
    for fn in files:
        raw = open(os.path.join(d, fn), "rb").read()
        (n,) = struct.unpack("<Q", raw[:8])
        assert n % 8 == 0, "header not padded to 8"
        hdr = json.loads(raw[8:8 + n])
        assert hdr.pop("__metadata__") == {"format": "pt"}
        names = list(hdr)
        assert names == sorted(names), "tensors not sorted by name"
        off = 0
        for nm in names:
            b, e = hdr[nm]["data_offsets"]
            assert b == off and hdr[nm]["dtype"] == "BF16", nm
            off = e
        assert 8 + n + off == len(raw), "data section not contiguous / exact"
        total += off
    assert total == index["metadata"]["total_size"]
    assert "lm_head.weight" in index["weight_map"]
    assert "model.layers.0.self_attn.q_k_v_proj.bias" in index["weight_map"]


def test_reload_matches_generated():
    for d, dt in ((f32_ckpt(), "f32"), (sharded_ckpt(), "bf16")):
        cfg = json.load(open(os.path.join(d, "config.json")))
        t = sr.load_checkpoint_tensors(d)
        for nm, shp, kind, fan in mc.tensor_specs(cfg):
            x = mc.gen_tensor(nm, shp, kind, fan, 0)
            want = x if dt == "f32" else x.to(torch.bfloat16).float()  # torch RNE as oracle
            assert torch.equal(t[nm], want), f"{dt}: {nm} differs after reload"


def test_fp32_vs_fp64_snr():
    for d in (f32_ckpt(), sharded_ckpt()):
        seq = ids(60)
        l32 = sr.SparkRef.load(d, torch.float32)(seq)
        l64 = sr.SparkRef.load(d, torch.float64)(seq)
        worst = min(snr(l64[i], l32[i]) for i in range(len(seq)))
        print(f"    {os.path.basename(d)}: fp32 vs fp64 worst-position SNR {worst:.1f} dB")
        # A bound from the arithmetic: one float32 rounding is ~144 dB under
        # the value (2^-24); sums of ~100-1000 terms per layer over a few
        # layers lose at most ~40 dB of that. Below 100 dB something in the
        # float32 path is not float32 (a half-precision cast, a lost upcast).
        assert worst > 100, worst


# ------------------------------------------------------- (b) naive layer
def naive_layer(model, i, x):
    """Independent numpy float64 layer; attention, RoPE, GQA and gate done
    with explicit loops over heads, queries, keys and rotary pairs."""
    c, p = model.cfg, f"model.layers.{i}."
    W = {k[len(p):]: v.double().numpy() for k, v in model.t.items() if k.startswith(p)}
    b = lambda n: W.get(n + ".bias", 0.0)  # noqa: E731
    x = x.numpy()
    T, H, KV, d = x.shape[0], c.heads, c.kv_heads, c.head_dim
    theta, rot = c.rope[c.layer_types[i]]
    sliding = c.layer_types[i] == "sliding_attention"

    def norm(v, w):
        return w * (v / np.sqrt((v * v).mean(-1, keepdims=True) + c.eps))
    h = norm(x, W["input_layernorm.weight"])
    qkv = h @ W["self_attn.q_k_v_proj.weight"].T + b("self_attn.q_k_v_proj")
    g = h @ W["self_attn.g_proj.weight"].T + b("self_attn.g_proj")
    gate = 1 / (1 + np.exp(-g))
    if c.gate_mode == "silu":
        gate = g * gate
    inv = sr.rope_inv_freq(theta, rot).numpy()  # the table itself is torch's; see spark_ref

    def rope(vec, pos):
        out = vec.copy()
        for m in range(rot // 2):
            ang = float(np.float32(pos) * inv[m])  # float32 angle, float64 trig
            a, bb = vec[m], vec[m + rot // 2]
            out[m] = a * math.cos(ang) - bb * math.sin(ang)
            out[m + rot // 2] = bb * math.cos(ang) + a * math.sin(ang)
        return out
    q = [[rope(qkv[t, hh * d:(hh + 1) * d], t) for t in range(T)] for hh in range(H)]
    k = [[rope(qkv[t, (H + kk) * d:(H + kk + 1) * d], t) for t in range(T)] for kk in range(KV)]
    v = [[qkv[t, (H + KV + kk) * d:(H + KV + kk + 1) * d] for t in range(T)] for kk in range(KV)]
    o = np.zeros((T, H * d))
    for hh in range(H):
        kv = hh // (H // KV)
        for t in range(T):
            js = [j for j in range(t + 1) if not sliding or t - j < c.window]
            s = np.array([np.dot(q[hh][t], k[kv][j]) / math.sqrt(d) for j in js])
            pr = np.exp(s - s.max())
            pr /= pr.sum()
            o[t, hh * d:(hh + 1) * d] = gate[t, hh] * sum(pj * v[kv][j] for pj, j in zip(pr, js))
    x = x + o @ W["self_attn.out_proj.weight"].T + b("self_attn.out_proj")
    h2 = norm(x, W["post_attention_layernorm.weight"])
    a = h2 @ W["mlp.gate_proj.weight"].T + b("mlp.gate_proj")
    u = h2 @ W["mlp.up_proj.weight"].T + b("mlp.up_proj")
    ge = 0.5 * a * (1 + np.vectorize(math.erf)(a / math.sqrt(2)))
    return torch.from_numpy(x + (ge * u) @ W["mlp.down_proj.weight"].T + b("mlp.down_proj"))


def test_naive_layer_equals_vectorized():
    for d in (f32_ckpt(), sharded_ckpt()):
        m = sr.SparkRef.load(d, torch.float64)
        T = 40  # > 2 x window (16): the sliding mask really bites
        x = m.t["model.embedding.weight"][torch.tensor(ids(T))].double()
        for i in (0, 3):  # layer 0 sliding (rot 32), layer 3 full (rot 8, theta 5e6)
            fast, _ = m.layer(i, x, torch.arange(T))
            slow = naive_layer(m, i, x)
            rel = float((fast - slow).abs().max() / slow.abs().max())
            # both float64: rounding is ~1e-16 per operation, 1e-12 leaves 1e4
            # for the sums; any semantic difference is many orders above it
            assert rel < 1e-12, f"{os.path.basename(d)} layer {i}: rel err {rel:.3g}"


def test_incremental_past_equals_full():
    m = sr.SparkRef.load(sharded_ckpt(), torch.float64)
    seq = ids(45)
    full = m(seq)
    l, past = m.forward(seq[:30])
    rows = [l]
    for tok in seq[30:]:
        l, past = m.forward([tok], past=past)
        rows.append(l)
    inc = torch.cat(rows)
    assert float((inc - full).abs().max() / full.abs().max()) < 1e-12


# ------------------------------------------------------------ (c) mask
def test_sliding_mask_reach():
    # one all-sliding layer: the logits at position i depend on token j only
    # through attention, i.e. iff i - window < j <= i
    d = ckpt("one_sliding", "f32", layers=1, layer_types=["sliding_attention"], untied=True)
    m = sr.SparkRef.load(d, torch.float64)
    W, i = m.cfg.window, 39
    base = ids(48, seed=7)
    ref = m(base)[i]

    def changed(j):
        s = list(base)
        s[j] = (s[j] + 1) % m.cfg.vocab
        return not torch.equal(m(s)[i], ref)
    assert not changed(i - W), "token window positions back still visible"
    assert not changed(i - W - 5), "token far outside the window visible"
    assert changed(i - W + 1), "oldest in-window token (i - (window-1)) not visible"
    assert changed(i - 3) and changed(i), "in-window tokens not visible"
    assert not changed(i + 1), "future token visible (causality)"


def test_full_layer_sees_everything():
    d = ckpt("one_full", "f32", layers=1, layer_types=["full_attention"], untied=True)
    m = sr.SparkRef.load(d, torch.float64)
    base = ids(48, seed=7)
    s = list(base)
    s[0] = (s[0] + 1) % m.cfg.vocab
    assert not torch.equal(m(s)[39], m(base)[39])


# ---------------------------------------------------- options and errors
def test_gelu_tanh_option_differs_slightly():
    d = f32_ckpt()
    seq = ids(50)
    e = sr.SparkRef.load(d, torch.float64)(seq)
    t = sr.SparkRef.load(d, torch.float64, gelu_mode="tanh")(seq)
    s = snr(e, t)
    # a property of the two functions, not of the machine: tanh-GELU departs
    # from erf-GELU by up to ~3e-4 absolute, ~50-80 dB under the logits here;
    # float64 rounding (~300 dB) cannot reach either bound
    assert 40 < s < 120, s


def test_config_rejections():
    base = json.load(open(os.path.join(f32_ckpt(), "config.json")))
    for key, val in (("hidden_act", "relu"), ("kv_sharpening", True), ("use_int4_layers", True),
                     ("gate_attn_act_mode", "tanh"), ("headwise_attn_output_gate", False)):
        bad = dict(base, **{key: val})
        try:
            sr.SparkConfig(bad)
        except ValueError as e:
            assert key in str(e), f"error for {key} does not name it: {e}"
        else:
            raise AssertionError(f"{key}={val!r} accepted")
    sr.SparkConfig(dict(base, kv_sharpening=False))  # a flag that is off is fine


def main():
    tests = [(n, f) for n, f in globals().items() if n.startswith("test_") and callable(f)]
    passed = failed = 0
    for n, f in tests:
        try:
            f()
            print(f"PASS {n}")
            passed += 1
        except Exception:
            print(f"FAIL {n}")
            traceback.print_exc()
            failed += 1
    shutil.rmtree(TMP, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
