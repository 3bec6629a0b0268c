#!/usr/bin/python3
"""Self-checks of the Qwen3-TTS reference (run: /usr/bin/python3 reference/test_tts_reference.py).

Prints PASS/FAIL per case and exits non-zero on any failure.  Needs
models/tts-tiny (reference/make_tts_checkpoint.py --preset tiny --out models/tts-tiny --seed 6)
and tests/data/tts-tiny-golden.json; a few seconds on one core.
"""
import json
import os
import struct
import sys
import traceback

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import make_tts_checkpoint as mk  # noqa: E402
import qwen3_tts_ref as ref  # noqa: E402

TINY = os.path.join(ROOT, "models", "tts-tiny")
GOLDEN = os.path.join(ROOT, "tests", "data", "tts-tiny-golden.json")
REAL = mk.REAL_DIR

_cache = {}


def tiny():
    if "tiny" not in _cache:
        _cache["tiny"] = ref.load_model_dir(TINY)
    return _cache["tiny"]


def tokenizer():
    if "tok" not in _cache:
        _cache["tok"] = ref.Qwen2BPE(REAL)
    return _cache["tok"]


def real_cfg():
    return mk.load_real_config()


# ------------------------------------------------------------------ RoPE

def test_mrope_equals_1d_rope():
    pos = torch.tensor([0, 1, 2, 7, 100, 4095, 32767])
    for d, section in ((128, [24, 20, 20]), (16, [4, 2, 2])):
        c1, s1 = ref.rope_cos_sin_1d(pos, d, 1e6, torch.float64)
        for interleaved in (True, False):
            c3, s3 = ref.rope_cos_sin_mrope(pos[None].expand(3, -1), d, 1e6, section, interleaved, torch.float64)
            assert torch.equal(c1, c3) and torch.equal(s1, s3), (d, interleaved)
        # The general form really mixes streams when they differ.
        p3 = torch.stack([pos, pos + 5, pos + 9])
        c3, _ = ref.rope_cos_sin_mrope(p3, d, 1e6, section, True, torch.float64)
        assert not torch.equal(c1, c3)


def test_talker_mrope_model_equals_1d_model():
    cfg, _, w = tiny()
    a = ref.DecoderStack(w, "talker.model", cfg["talker_config"], torch.float64, rope="mrope",
                         mrope_section=cfg["talker_config"]["rope_scaling"]["mrope_section"], interleaved=True)
    b = ref.DecoderStack(w, "talker.model", cfg["talker_config"], torch.float64, rope="1d")
    x = torch.randn(9, cfg["talker_config"]["hidden_size"], dtype=torch.float64,
                    generator=torch.Generator().manual_seed(3))
    ya = a.forward(x, a.new_cache(), torch.arange(9))
    yb = b.forward(x, b.new_cache(), torch.arange(9))
    assert torch.equal(ya, yb)


def test_rope_rotate_half_formula():
    # x_i' = x_i cos - x_{i+d/2} sin ; x_{i+d/2}' = x_{i+d/2} cos + x_i sin
    d = 8
    x = torch.arange(1, d + 1, dtype=torch.float64)[None, None]
    cos, sin = ref.rope_cos_sin_1d(torch.tensor([3]), d, 1e6, torch.float64)
    y = ref.apply_rope(x, cos, sin)[0, 0]
    for i in range(d // 2):
        th = 3 * 1e6 ** (-2 * i / d)
        assert abs(y[i] - (x[0, 0, i] * np.cos(th) - x[0, 0, i + d // 2] * np.sin(th))) < 1e-12
        assert abs(y[i + d // 2] - (x[0, 0, i + d // 2] * np.cos(th) + x[0, 0, i] * np.sin(th))) < 1e-12


# ------------------------------------------------------------------ layers

def test_looped_layer_equals_batched():
    cfg, _, w = tiny()
    for prefix, c in (("talker.model", cfg["talker_config"]),
                      ("talker.code_predictor.model", cfg["talker_config"]["code_predictor_config"])):
        st = ref.DecoderStack(w, prefix, c, torch.float64, rope="1d")
        T = 11
        x = torch.randn(T, c["hidden_size"], dtype=torch.float64, generator=torch.Generator().manual_seed(5))
        batched = st.forward(x, st.new_cache(), torch.arange(T))
        cache = st.new_cache()
        looped = torch.cat([st.forward(x[i:i + 1], cache, torch.tensor([i])) for i in range(T)])
        err = float((batched - looped).abs().max())
        assert err < 1e-12, (prefix, err)
        # Mixed: prefill 4, then single rows.
        cache = st.new_cache()
        mixed = [st.forward(x[:4], cache, torch.arange(4))]
        mixed += [st.forward(x[i:i + 1], cache, torch.tensor([i])) for i in range(4, T)]
        assert float((batched - torch.cat(mixed)).abs().max()) < 1e-12


def test_gqa_head_mapping():
    # Query head h must read kv head h // (nh/nkv): zero every kv head but one
    # and check which query heads still see non-zero values.
    cfg, _, w = tiny()
    c = cfg["talker_config"]
    st = ref.DecoderStack(w, "talker.model", c, torch.float64, rope="1d")
    L = dict(st.layers[0])
    d, nkv, nh = st.d, st.nkv, st.nh
    vw = torch.zeros_like(L["self_attn.v_proj"])
    vw[d:2 * d] = L["self_attn.v_proj"][d:2 * d]  # only kv head 1 non-zero
    L["self_attn.v_proj"] = vw
    L["self_attn.o_proj"] = torch.eye(nh * d, dtype=torch.float64)  # expose the per-head outputs
    x = torch.randn(3, c["hidden_size"], dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    cos, sin = st.cos_sin(torch.arange(3))
    out = st.attention(L, x, [None, None], cos, sin).view(3, nh, d)
    live = [h for h in range(nh) if float(out[:, h].abs().max()) > 0]
    group = nh // nkv
    assert live == [h for h in range(nh) if h // group == 1], live


# ------------------------------------------------------------------ prompt layout

def _ids(text):
    return tokenizer().encode(ref.tts_text(text))


def test_prompt_language_layout():
    cfg = real_cfg()
    ids = _ids("Hello there, general.")
    body = ids[3:-5]
    N = len(body)
    p = ref.build_prompt(cfg, ids, "ryan", "english")
    rows = [(r["text"], r["codec"]) for r in p["rows"]]
    expect = [(151644, None), (77091, None), (198, None),
              (151671, 2154), (151671, 2156), (151671, 2050), (151671, 2157), (151671, 3061), (151672, 2148)]
    expect += [(t, 2148) for t in body] + [(151673, 2148), (151671, 2149)]
    assert rows == expect, rows
    assert len(rows) == N + 11
    assert p["trailing_text"] == []
    assert ids[:3] == [151644, 77091, 198] and ids[-5:] == [151645, 198, 151644, 77091, 198]


def test_prompt_auto_layout():
    cfg = real_cfg()
    ids = _ids("Bonjour.")
    p = ref.build_prompt(cfg, ids, "vivian", "auto")
    rows = [(r["text"], r["codec"]) for r in p["rows"]]
    assert rows[3:8] == [(151671, 2155), (151671, 2156), (151671, 2157), (151671, 3065), (151672, 2148)], rows
    assert len(rows) == len(ids[3:-5]) + 10


def test_prompt_dialect_rules():
    cfg = real_cfg()
    ids = _ids("hi")
    codecs = lambda p: [r["codec"] for r in p["rows"] if r["codec"] is not None]  # noqa: E731
    # Chinese with a dialect speaker: the dialect id replaces the language id.
    assert codecs(ref.build_prompt(cfg, ids, "eric", "chinese"))[:5] == [2154, 2156, 2062, 2157, 2875]
    assert codecs(ref.build_prompt(cfg, ids, "dylan", "chinese"))[:5] == [2154, 2156, 2074, 2157, 2878]
    # auto with a dialect speaker: the think form with the dialect id.
    assert codecs(ref.build_prompt(cfg, ids, "Dylan", "Auto"))[:5] == [2154, 2156, 2074, 2157, 2878]
    # Other languages keep their id; non-dialect speakers keep chinese.
    assert codecs(ref.build_prompt(cfg, ids, "eric", "english"))[:5] == [2154, 2156, 2050, 2157, 2875]
    assert codecs(ref.build_prompt(cfg, ids, "serena", "chinese"))[:5] == [2154, 2156, 2055, 2157, 3066]
    # No speaker: the speaker row is absent.
    p = ref.build_prompt(cfg, ids, None, "german")
    assert codecs(p)[:6] == [2154, 2156, 2053, 2157, 2148, 2148]
    assert len(p["rows"]) == len(ids[3:-5]) + 10


def test_prompt_streaming_layout():
    cfg = real_cfg()
    ids = _ids("Streaming text mode works.")
    body = ids[3:-5]
    p = ref.build_prompt(cfg, ids, "aiden", "english", non_streaming=False)
    rows = [(r["text"], r["codec"]) for r in p["rows"]]
    assert len(rows) == 3 + 6 + 1
    assert rows[-2] == (151672, 2148) and rows[-1] == (body[0], 2149)
    assert p["trailing_text"] == body[1:] + [151673]


def test_prompt_errors():
    cfg = real_cfg()
    ids = _ids("x")
    for spk, lang in (("nobody", "english"), ("ryan", "klingon")):
        try:
            ref.build_prompt(cfg, ids, spk, lang)
        except ValueError:
            continue
        raise AssertionError((spk, lang))


# ------------------------------------------------------------------ tokenizer

def test_pretokenizer_cases():
    cases = {
        "Hello world": ["Hello", " world"],
        "I'm fine, it's OK": ["I", "'m", " fine", ",", " it", "'s", " OK"],
        "x  y": ["x", " ", " y"],
        "abc123": ["abc", "1", "2", "3"],
        "hi!!\n\nok": ["hi", "!!\n\n", "ok"],
        "end   ": ["end", "   "],
        " ,x": [" ,", "x"],
        "a\n\n  b": ["a", "\n\n", " ", " b"],
        "héllo wörld": ["héllo", " wörld"],
        "\tTab": ["\tTab"],
        "WE'LL": ["WE", "'LL"],
    }
    for s, want in cases.items():
        got = ref.pretokenize(s)
        assert got == want, (s, got)


def test_bpe_hand_checked_ids():
    tok = tokenizer()
    v = tok.vocab
    assert v["Hello"] == 9707 and v["Ġworld"] == 1879 and v["Ċ"] == 198 and v["assistant"] == 77091
    assert tok.encode("Hello world") == [9707, 1879]
    assert tok.encode("2024") == [v["2"], v["0"], v["2"], v["4"]]
    assert tok.encode("<|im_start|>assistant\n") == [151644, 77091, 198]
    assert tok.encode("a<tts_pad>b<|im_end|>") == [v["a"], 151671, v["b"], 151645]
    assert tok.encode("Hello from the tiny talker.") == [9707, 504, 279, 13673, 3061, 261, 13]
    # UTF-8 bytes through the byte map: every id decodes back to the text.
    inv = {i: s for s, i in v.items()}
    u2b = {c: b for b, c in ref._byte_to_unicode().items()}
    for text in ("Grüße aus Köln!", "naïve café — ok?", "日本語のテキスト"):
        ids = tok.encode(text)
        assert bytes(u2b[ch] for i in ids for ch in inv[i]).decode("utf-8") == text, text


# ------------------------------------------------------------------ checkpoint

def test_checkpoint_specs():
    specs = mk.tensor_specs(real_cfg())
    assert len(specs) == 402
    assert sum(int(np.prod(s[1])) for s in specs) == 905788672
    assert not any("small_to_mtp" in s[0] for s in specs)
    tiny_specs = {s[0]: s[1] for s in mk.tensor_specs(mk.tiny_config())}
    assert tiny_specs["talker.code_predictor.small_to_mtp_projection.weight"] == (24, 32)
    assert tiny_specs["talker.code_predictor.model.codec_embedding.14.weight"] == (2048, 32)
    assert tiny_specs["talker.code_predictor.lm_head.0.weight"] == (2048, 24)
    assert tiny_specs["talker.model.text_embedding.weight"] == (151936, 8)


def test_tiny_safetensors_layout():
    path = os.path.join(TINY, "model.safetensors")
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        raw = f.read(n)
    assert (8 + n) % 8 == 0
    h = json.loads(raw)
    assert list(h)[0] == "__metadata__" and h["__metadata__"] == {"format": "pt"}
    names = [k for k in h if k != "__metadata__"]
    assert names == sorted(names, key=lambda s: s.encode())
    off = 0
    for k in names:
        assert h[k]["dtype"] == "BF16"
        a, b = h[k]["data_offsets"]
        assert a == off and b - a == 2 * int(np.prod(h[k]["shape"])), k
        off = b
    assert os.path.getsize(path) == 8 + n + off
    for rel in mk.COPIED_FILES:
        with open(os.path.join(TINY, rel), "rb") as x, open(os.path.join(REAL, rel), "rb") as y:
            assert x.read() == y.read(), rel


def test_weights_deterministic():
    a = mk.draw("talker.codec_head.weight", (8, 4), "head", 4, 3, 7)
    b = mk.draw("talker.codec_head.weight", (8, 4), "head", 4, 3, 7)
    c = mk.draw("talker.codec_head.weight", (8, 4), "head", 4, 3, 8)
    assert torch.equal(a, b) and not torch.equal(a, c)
    _, _, w = tiny()
    again = mk.draw("talker.model.norm.weight", (32,), "norm", 0, 3, mk.TINY_SEED).to(torch.bfloat16).float().numpy()
    assert np.array_equal(w["talker.model.norm.weight"], again)


# ------------------------------------------------------------------ model runs

def test_golden_reproduces():
    cfg, gen, w = tiny()
    with open(GOLDEN, encoding="utf-8") as f:
        g = json.load(f)
    s = g["settings"]
    ids = ref.Qwen2BPE(TINY).encode(ref.tts_text(s["text"]))
    assert ids == g["text_ids"]
    p = ref.build_prompt(cfg, ids, s["speaker"], s["language"], non_streaming=s["non_streaming"])
    assert p["rows"] == g["prompt"]["rows"]
    m = ref.TTSModel(cfg, w, torch.float64)
    out = m.generate(p, s["frames"], gen)
    assert out["frames"] == g["frames"]
    # float64 on both sides (~1e-13 apart on any machine); the golden stores 7
    # significant digits, i.e. up to 5e-7 relative: rtol 1e-6 is that
    # rounding, atol 1e-6 the same for values near zero
    for a, b in zip(out["talker_logits"], g["talker_logits"]):
        assert np.allclose(a.numpy(), b, rtol=1e-6, atol=1e-6)
    assert np.allclose(out["predictor_logits"][1][14].numpy(), g["predictor_logits"][1][14], rtol=1e-6, atol=1e-6)


def test_frames_not_degenerate():
    with open(GOLDEN, encoding="utf-8") as f:
        g = json.load(f)
    frames = g["frames"]
    assert len(frames) == 50 and all(len(fr) == 16 for fr in frames)
    assert len({tuple(fr) for fr in frames}) > 40
    assert len({fr[0] for fr in frames}) > 30
    assert all(0 <= c < 2048 for fr in frames for c in fr)
    assert g["snr_db"]["talker_min"] > 100 and g["snr_db"]["predictor_min"] > 100


def test_streaming_and_sampling_run():
    cfg, gen, w = tiny()
    ids = tokenizer().encode(ref.tts_text("Two modes."))
    m = ref.TTSModel(cfg, w, torch.float32)
    ns = m.generate(ref.build_prompt(cfg, ids, "ryan", "english"), 6, gen)
    st = m.generate(ref.build_prompt(cfg, ids, "ryan", "english", non_streaming=False), 6, gen)
    assert len(ns["frames"]) == len(st["frames"]) == 6 and ns["frames"] != st["frames"]
    a = m.generate(ref.build_prompt(cfg, ids, "ryan", "english"), 6, gen, greedy=False, seed=1)
    b = m.generate(ref.build_prompt(cfg, ids, "ryan", "english"), 6, gen, greedy=False, seed=1)
    c = m.generate(ref.build_prompt(cfg, ids, "ryan", "english"), 6, gen, greedy=False, seed=2)
    assert a["frames"] == b["frames"] and a["frames"] != c["frames"]


def test_eos_rules():
    # EOS made the best logit everywhere: banned for 2 frames, then it stops.
    cfg, gen, w = tiny()
    m = ref.TTSModel(cfg, w, torch.float64)
    eos = cfg["talker_config"]["codec_eos_token_id"]
    plain = m.talker_logits

    def eos_first(h):
        z = plain(h).clone()
        z[eos] = float(z.abs().max()) + 100.0
        return z

    m.talker_logits = eos_first
    ids = tokenizer().encode(ref.tts_text("Stop."))
    out = m.generate(ref.build_prompt(cfg, ids, "ryan", "english"), 10, gen)
    assert out["stopped_at_eos"] and len(out["frames"]) == 2, (out["stopped_at_eos"], len(out["frames"]))


def main():
    torch.set_num_threads(1)
    tests = [(k, v) for k, v in globals().items() if k.startswith("test_") and callable(v)]
    failed = 0
    for name, fn in tests:
        try:
            fn()
            print(f"PASS {name}")
        except Exception:  # noqa: BLE001 - report every failure and keep going
            failed += 1
            print(f"FAIL {name}")
            traceback.print_exc()
    print(f"{len(tests) - failed}/{len(tests)} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
