#!/usr/bin/python3
"""Self-checks of the Code2Wav reference (run: /usr/bin/python3 reference/test_code2wav_reference.py).

Prints PASS/FAIL per case and exits non-zero on any failure.  Needs
models/tts-tiny/speech_tokenizer (reference/make_tts_checkpoint.py --preset tiny
--out models/tts-tiny --seed 6) and, for the golden case, tests/data/code2wav-tiny-*
(reference/code2wav_golden.py).  A few seconds on one core.

What the checks pin down, beyond "it runs":
- exact dependency ranges: a code change reaches the transformer output exactly
  2 + (window - 1) * layers frames later (k3 pre_conv, then each windowed layer
  one query sees itself and window - 1 earlier keys), and a change of one
  transformer frame reaches exactly the waveform samples the conv/transposed-conv
  chain predicts from the config (causal pads, the k - stride trims);
- causality of the whole decoder and the chunked decode with enough left context
  (RoPE enters only through position differences);
- every decoder tensor but the unused rvq input_proj changes the waveform, and
  every branch (attention, MLP, ConvNeXt, each residual unit, RoPE, the window,
  the cluster_usage clamp) moves it by a measurable amount with these weights;
- the building blocks against direct loops in float64.
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import code2wav_ref as ref  # noqa: E402
import code2wav_golden as golden  # noqa: E402
import make_tts_checkpoint as mk  # noqa: E402

TINY = os.path.join(ROOT, "models", "tts-tiny")
GOLDEN_CODES = os.path.join(ROOT, "tests", "data", "code2wav-tiny-codes.json")
GOLDEN_WAVE = os.path.join(ROOT, "tests", "data", "code2wav-tiny-wave.f32")
ST_FILE = os.path.join(TINY, "speech_tokenizer", "model.safetensors")

_cache = {}


def tiny():
    if "m" not in _cache:
        _cache["m"] = ref.load(TINY)
    return _cache["m"]


def tiny64():
    """float64 copy: dependency-range checks need changes that float32 would round away."""
    if "m64" not in _cache:
        _cache["m64"] = ref.Code2Wav(tiny().cfg, tiny_weights(), torch.float64)
    return _cache["m64"]


def tiny_weights():
    if "w" not in _cache:
        _cache["w"] = ref.read_safetensors(ST_FILE)
    return _cache["w"]


def codes(frames, seed=1):
    return golden.random_codes(16, frames, 2048, seed)


def rel_change(a, b):
    return float((a - b).double().pow(2).mean().sqrt() / b.double().pow(2).mean().sqrt())


# Two float32 decodes that should agree (other lengths, chunkings, another
# machine's kernels) differ only by rounding. The bound for that is measured,
# not assumed: this machine's float32 decode against the float64 one of the
# same codes (the float32 noise floor), times 4 (12 dB): each float32 result
# is within about the floor of the float64 one, so two are within twice it,
# and twice again leaves room for another summation order.
FLOAT32_MARGIN = 4.0


def float32_floor(c):
    """max |float32 decode - float64 decode| of codes c on this machine."""
    return float((tiny().decode(c).double() - tiny64().decode(c)).abs().max())


# ------------------------------------------------------------ building blocks

def test_causal_conv_matches_loop():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(3, 20, generator=g, dtype=torch.float64)
    w = torch.randn(4, 3, 5, generator=g, dtype=torch.float64)
    b = torch.randn(4, generator=g, dtype=torch.float64)
    for dil in (1, 3):
        want = torch.zeros(4, 20, dtype=torch.float64)
        for o in range(4):
            for t in range(20):
                acc = b[o].clone()
                for k in range(5):
                    src = t - (4 - k) * dil  # the last tap is the current sample
                    if src >= 0:
                        acc += (w[o, :, k] * x[:, src]).sum()
                want[o, t] = acc
        assert torch.allclose(ref.causal_conv(x, w, b, dil), want, atol=1e-12), dil


def test_causal_conv_transpose_matches_overlap_add():
    g = torch.Generator().manual_seed(4)
    x = torch.randn(3, 7, generator=g, dtype=torch.float64)
    for k, s in ((2, 2), (10, 5), (6, 3)):
        w = torch.randn(3, 2, k, generator=g, dtype=torch.float64)
        b = torch.randn(2, generator=g, dtype=torch.float64)
        full = torch.zeros(2, (7 - 1) * s + k, dtype=torch.float64)
        for i in range(7):
            full[:, i * s:i * s + k] += torch.einsum("c,cok->ok", x[:, i], w)
        want = full[:, :7 * s] + b[:, None]  # keep L*s: the last k-s samples go
        got = ref.causal_conv_transpose(x, w, b, s)
        assert got.shape == (2, 7 * s) and torch.allclose(got, want, atol=1e-12), (k, s)


def test_rope_is_rotate_half():
    d = 16
    cos, sin = ref.rope_cos_sin(5, d, 1e4, torch.float64)
    x = torch.randn(5, d, dtype=torch.float64)
    y = x * cos + ref.rotate_half(x) * sin
    for p in range(5):
        for i in range(d // 2):
            ang = p * 1e4 ** (-2 * i / d)
            a, c = x[p, i], x[p, i + d // 2]
            assert abs(y[p, i] - (a * np.cos(ang) - c * np.sin(ang))) < 1e-9
            assert abs(y[p, i + d // 2] - (c * np.cos(ang) + a * np.sin(ang))) < 1e-9


def test_sliding_window_mask():
    m = ref.sliding_window_mask(100, 72)
    for i in (0, 5, 71, 72, 99):
        seen = [j for j in range(100) if m[i, j]]
        assert seen == list(range(max(0, i - 71), i + 1)), i  # itself and 71 before


def test_snake_beta():
    x = torch.linspace(-3, 3, 7, dtype=torch.float64)[None]
    la, lb = torch.tensor([0.3], dtype=torch.float64), torch.tensor([-0.4], dtype=torch.float64)
    want = x + torch.sin(x * np.exp(0.3)) ** 2 / (np.exp(-0.4) + 1e-9)
    assert torch.allclose(ref.snake_beta(x, la, lb), want, atol=1e-12)


# ------------------------------------------------------------ whole decoder

def test_output_length_and_range():
    m = tiny()
    assert m.total_upsample == 1920
    for t in (1, 2, 5, 24):
        w = m.decode(codes(t, seed=t))
        assert w.shape == (t * 1920,) and w.dtype == torch.float32, (t, w.shape)
        assert torch.isfinite(w).all() and float(w.abs().max()) <= 1.0


def test_causality_prefix_decode():
    c = codes(24)
    # float32 differs only by rounding (other lengths, other conv blocking);
    # float64 pins the structure (its own rounding is ~1e-16 of the signal).
    for m, tol in ((tiny(), FLOAT32_MARGIN * float32_floor(c)), (tiny64(), 1e-12)):
        full = m.decode(c)
        worst = 0.0
        for k in (1, 5, 13, 23):
            part = m.decode(c[:, :k])
            worst = max(worst, float((part - full[:k * 1920]).abs().max()))
        assert worst <= tol, (m.dtype, worst)


def test_chunked_equals_decode_within_one_chunk():
    m = tiny()
    c = codes(24)
    assert torch.equal(m.chunked_decode(c), m.decode(c))


def full_receptive_frames(cfg):
    """Frames of left context that make a re-decode exact: pre_conv + the
    windowed layers + a bound on the post-transformer convolutions."""
    return 2 + (cfg["sliding_window"] - 1) * cfg["num_hidden_layers"] + 12


def test_chunked_with_full_context_equals_decode():
    m = tiny()
    c = codes(190, seed=5)
    full = m.decode(c)
    ctx = full_receptive_frames(m.cfg)
    exact = m.chunked_decode(c, chunk=60, left_context=ctx)
    assert exact.shape == full.shape
    err = float((exact - full).abs().max())
    # RoPE positions restart per chunk: only differences matter, so the two
    # float32 decodes differ by rounding alone
    assert err <= FLOAT32_MARGIN * float32_floor(c), err
    # The official 25 frames of context are less than the receptive field.
    approx = m.chunked_decode(c, chunk=60, left_context=25)
    assert float((approx - full).abs().max()) > 1e-3


def test_window_reach_in_transformer():
    m = tiny64()
    cfg = m.cfg
    c = codes(200, seed=7)
    c2 = c.clone()
    c2[:, 0] = (c2[:, 0] + 1) % 2048
    with torch.no_grad():
        h1 = m.transformer(m.pre_conv(m.dequantize(c)))
        h2 = m.transformer(m.pre_conv(m.dequantize(c2)))
    diff = (h1 - h2).abs().amax(0)
    last = 2 + (cfg["sliding_window"] - 1) * cfg["num_hidden_layers"]
    assert last + 1 < 200
    assert bool((diff[:last + 1] > 0).all()), "every frame up to the reach must change"
    assert float(diff[last + 1:].max()) == 0.0, "a frame beyond the window changed"


def post_transformer_span(cfg, frame):
    """First and last sample index of the unclamped waveform that transformer
    output frame `frame` can reach, derived from the layer list alone."""
    lo, hi = frame, frame
    for r in cfg["upsampling_ratios"]:
        lo, hi = lo * r, hi * r + r - 1        # ConvTranspose k = stride
        hi += 6                                # ConvNeXt causal depthwise k7
    hi += 6                                    # decoder.0 k7
    for r in cfg["upsample_rates"]:
        lo, hi = lo * r, hi * r + 2 * r - 1    # ConvTranspose k = 2 stride (tail trimmed)
        hi += sum(6 * d for d in ref.RESIDUAL_DILATIONS)
    return lo, hi + 6                          # final conv k7


def test_post_transformer_reach():
    m = tiny64()  # along the longest path the change halves every sample: float32 loses its tail
    c = codes(24, seed=8)
    f = 3
    with torch.no_grad():
        h = m.transformer(m.pre_conv(m.dequantize(c)))
        w1 = m.vocoder(m.upsample(h))
        h2 = h.clone()
        h2[:, f] += 1.0
        w2 = m.vocoder(m.upsample(h2))
    d = (w1 - w2).abs()
    lo, hi = post_transformer_span(m.cfg, f)
    assert lo == f * 1920 and hi == f * 1920 + 19928, (lo, hi)
    assert float(d[:lo].max()) == 0.0 and float(d[hi + 1:].max()) == 0.0
    assert float(d[lo]) > 0 and float(d[hi]) > 0, (float(d[lo]), float(d[hi]))


def perturbed(weights, name, fn):
    w = dict(weights)
    w[name] = fn(w[name])
    return ref.Code2Wav(tiny().cfg, w)


def test_every_tensor_matters():
    base_w = tiny_weights()
    c = codes(3, seed=9)
    base = tiny().decode_unclamped(c)
    unused = [n for n in base_w if n.startswith("decoder.quantizer.") and ".input_proj." in n]
    assert len(unused) == 2
    names = [n for n in base_w if n.startswith("decoder.")]
    dead = []
    for n in names:
        out = perturbed(base_w, n, lambda a: a * np.float32(1.25) + np.float32(0.05)).decode_unclamped(c)
        changed = float((out - base).abs().max()) > 0
        if changed == (n in unused):
            dead.append(n)
    assert not dead, dead


def test_branches_contribute():
    m = tiny()
    w = tiny_weights()
    cfg = m.cfg
    c = codes(100, seed=10)  # longer than the window
    base = m.decode_unclamped(c)
    changes = {}

    def zeroed(names, value=0.0):
        ww = dict(w)
        for n in names:
            ww[n] = np.full_like(ww[n], value)
        return ref.Code2Wav(cfg, ww).decode_unclamped(c)

    layers = range(cfg["num_hidden_layers"])
    p = "decoder.pre_transformer.layers."
    changes["attention"] = rel_change(zeroed([f"{p}{i}.self_attn_layer_scale.scale" for i in layers]), base)
    changes["mlp"] = rel_change(zeroed([f"{p}{i}.mlp_layer_scale.scale" for i in layers]), base)
    for u in range(len(cfg["upsampling_ratios"])):
        changes[f"convnext{u}"] = rel_change(zeroed([f"decoder.upsample.{u}.1.gamma"]), base)
    for b in range(1, len(cfg["upsample_rates"]) + 1):
        for u in (2, 3, 4):
            q = f"decoder.decoder.{b}.block.{u}.conv2.conv."
            changes[f"res{b}.{u}"] = rel_change(zeroed([q + "weight", q + "bias"]), base)
    betas = [n for n in w if n.startswith("decoder.decoder.") and n.endswith(".beta")]
    changes["snake_sin2"] = rel_change(zeroed(betas, 30.0), base)  # 1/exp(beta) ~ 0
    orig_rope, orig_mask = ref.rope_cos_sin, ref.sliding_window_mask
    try:
        ref.rope_cos_sin = lambda n, d, th, dt: (torch.ones(n, d, dtype=dt), torch.zeros(n, d, dtype=dt))
        changes["rope"] = rel_change(m.decode_unclamped(c), base)
        ref.rope_cos_sin = orig_rope
        ref.sliding_window_mask = lambda n, win: orig_mask(n, 10 ** 9)
        changes["window"] = rel_change(m.decode_unclamped(c), base)
    finally:
        ref.rope_cos_sin, ref.sliding_window_mask = orig_rope, orig_mask
    unclamped = ref.Code2Wav(cfg, w)
    unclamped.codebooks = [unclamped.get(p + ".embedding_sum") / unclamped.get(p + ".cluster_usage")[:, None]
                           for p in unclamped.codebook_prefixes()]
    changes["usage_clamp"] = rel_change(unclamped.decode_unclamped(c), base)
    small = {k: round(v, 4) for k, v in changes.items() if v < 0.01}
    print("  relative waveform change per branch (min %.3f): %s" % (
        min(changes.values()), json.dumps({k: round(v, 3) for k, v in changes.items()})))
    assert not small, small


def test_float64_floor():
    m32, m64 = tiny(), tiny64()
    c = codes(24, seed=11)
    d = float((m32.decode_unclamped(c).double() - m64.decode_unclamped(c)).abs().max())
    print(f"  float32 vs float64 max abs diff on 24 frames: {d:.2e}")
    # A forward-error bound, not a measurement: each sample is a chain of sums
    # of up to ~1e3 products (1024-channel convolutions, k7), and n terms
    # summed in float32 err by at most ~n * 2^-24 of their magnitudes (~6e-5
    # for the ~1 magnitudes here). 1e-4 is that; a real bug is far above it.
    assert d <= 1e-4, d


def test_golden_reproduces():
    """The committed waveform is the reference's float32 decode of the committed
    codes, made on some machine; this one's float32 decode rounds differently
    (oneDNN picks its convolution kernels, blocking and thread split per CPU:
    6.5e-6 apart between a Zen 4 and a Zen 5 host). So both are held to the
    float64 decode of the same codes: each float32 decode sits at the float32
    noise floor, measured here as this machine's own distance to float64, and
    the golden may be at most 4x (12 dB) further from float64 than that. A
    change of the decoder's semantics moves the waveform by orders of magnitude
    more (test_branches_contribute: the smallest branch moves it >= 1%)."""
    m, m64 = tiny(), tiny64()
    c = ref.read_codes(GOLDEN_CODES, 16)
    assert c.shape == (16, 24)
    want = torch.from_numpy(np.fromfile(GOLDEN_WAVE, dtype="<f4")).double()
    got = m.decode(c)
    truth = m64.decode(c)
    assert got.shape == want.shape == truth.shape
    floor = float((got.double() - truth).abs().max())
    golden_err = float((want - truth).abs().max())
    print(f"  float32 here vs float64 {floor:.2e}, golden vs float64 {golden_err:.2e} (bound 4x the first)")
    assert floor > 0, "a float32 decode equal to the float64 one: the float64 path is not float64"
    assert golden_err <= FLOAT32_MARGIN * floor, (golden_err, floor)


def test_cli_and_codes_json_forms():
    c = codes(3, seed=12)
    frames = c.T.tolist()
    want = tiny().decode(c)
    with tempfile.TemporaryDirectory() as d:
        bare, obj, wav = (os.path.join(d, n) for n in ("bare.json", "obj.json", "w.f32"))
        with open(bare, "w") as f:
            json.dump(frames, f)
        with open(obj, "w") as f:
            json.dump({"prompt_length": 9, "frames": frames, "n_frames": 3}, f)
        assert torch.equal(ref.read_codes(bare, 16), ref.read_codes(obj, 16))
        out = subprocess.run([sys.executable, os.path.join(HERE, "code2wav_ref.py"), "--model", TINY,
                              "--codes", obj, "--out", wav], capture_output=True, text=True, check=True)
        summary = json.loads(out.stdout)
        got = torch.from_numpy(np.fromfile(wav, dtype="<f4"))
        assert summary["frames"] == 3 and summary["samples"] == 5760 and torch.equal(got, want)
        for bad in ([[1] * 15], [], {"frames": [[1.5] * 16]}):
            with open(bare, "w") as f:
                json.dump(bad, f)
            try:
                ref.read_codes(bare, 16)
            except ValueError:
                continue
            raise AssertionError(f"accepted {bad}")
    for bad in (torch.full((16, 2), 2048), torch.full((16, 2), -1), torch.zeros(15, 2, dtype=torch.int64)):
        try:
            tiny().decode(bad)
        except ValueError:
            continue
        raise AssertionError("decode accepted bad codes")


def test_checkpoint_layout():
    with open(mk.os.path.join(mk.REAL_DIR, "speech_tokenizer", "config.json")) as f:
        real = json.load(f)
    specs = mk.speech_tensor_specs(real)
    dec = [s for s in specs if s[0].startswith("decoder.")]
    enc = [s for s in specs if s[0].startswith("encoder.")]
    n_params = sum(int(np.prod(s[1])) for s in specs)
    assert (len(dec), len(enc), n_params) == (271, 225, 170557441), (len(dec), len(enc), n_params)
    tiny_w = tiny_weights()
    tiny_specs = mk.speech_tensor_specs(mk.tiny_speech_config())
    assert sorted(tiny_w) == [s[0] for s in tiny_specs]
    assert all(tuple(tiny_w[n].shape) == shp for n, shp, *_ in tiny_specs)
    with tempfile.TemporaryDirectory() as d:
        mk.write_speech_tokenizer("tiny", d, mk.TINY_SEED)
        with open(os.path.join(d, "speech_tokenizer", "model.safetensors"), "rb") as f, open(ST_FILE, "rb") as g:
            assert f.read() == g.read(), "models/tts-tiny speech tokenizer is not the seed's output"


def main():
    tests = [(n, f) for n, f in globals().items() if n.startswith("test_") and callable(f)]
    timing = "--time" in sys.argv
    only = [a for a in sys.argv[1:] if a != "--time"]
    failed = 0
    for name, fn in tests:
        if only and name not in only:
            continue
        try:
            t0 = time.time()
            fn()
            print(f"PASS {name}" + (f" ({time.time() - t0:.1f} s)" if timing else ""))
        except Exception:  # noqa: BLE001 - report every failure and go on
            failed += 1
            print(f"FAIL {name}")
            traceback.print_exc()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
