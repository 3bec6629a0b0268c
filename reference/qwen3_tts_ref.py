#!/usr/bin/python3
"""PyTorch reference of the Qwen3-TTS talker and code predictor (token half).

Follows QwenLM/Qwen3-TTS qwen_tts/core/models/modeling_qwen3_tts.py (generate,
Qwen3TTSTalkerForConditionalGeneration, the code predictor) and
qwen_tts/inference/qwen3_tts_model.py (generate_custom_voice: non_streaming_mode
defaults to True).  Everything runs in float32 or float64 on the checkpoint's
weights widened exactly from BF16/F32; no transformers package is used.

Pieces (each usable on its own; reference/tts_golden.py drives them):
  read_safetensors(path)     -> {name: np.float32 array} (BF16 widened exactly)
  Qwen2BPE(model_dir)        byte-level BPE over vocab.json + merges.txt with the
                             Qwen2 pre-tokenizer split written out by hand (the
                             \\p{L} / \\p{N} classes come from unicodedata), NFC,
                             and the added tokens of tokenizer_config.json.
  build_prompt(...)          the talker prefill layout of spec section 6 as rows
                             {"text": id|None, "codec": id|None}; a row's input is
                             P(text) + E(codec) (a missing side adds nothing).
  rope_cos_sin_1d / rope_cos_sin_mrope
                             plain NeoX RoPE and the general M-RoPE form (section
                             and interleaved layouts); equal when the three
                             position streams are equal.
  TTSModel(model_dir, dtype) talker + code predictor; generate(...) runs frames.

Per frame (generate):
  talker logits = codec_head(final_norm(h_last))  (recorded raw)
  -> repetition penalty over the earlier c0 values (HF rule: positive / p,
     negative * p), ids 2048..3071 except EOS 2150 set to -inf, EOS -inf while
     fewer than min_new_tokens frames exist -> argmax (greedy) or temperature /
     top-k / top-p sampling -> c0; EOS ends generation and is not emitted.
  code predictor, fresh cache, positions from 0: prefill [h_last, E(c0)] through
  small_to_mtp_projection (identity when absent), lm_head[0] -> c1; then
  codec_embedding[j-1](c_j) -> lm_head[j] -> c_{j+1} for j = 1..14.
  next talker input = E(c0) + sum_g predictor.codec_embedding[g](c_{g+1})
                      + trailing text term (P(tts_pad) in non-streaming mode).
"""
import json
import os
import struct
import sys
import unicodedata

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_tokenizer import bytes_to_unicode  # noqa: E402

# ---------------------------------------------------------------- safetensors


def read_safetensors(path):
    """All tensors of one safetensors file as float32 numpy arrays."""
    with open(path, "rb") as f:
        (hlen,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(hlen))
    raw = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + hlen)
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        chunk = raw[a:b]
        if info["dtype"] == "BF16":
            bits = chunk.view("<u2").astype(np.uint32) << np.uint32(16)
            arr = bits.view(np.float32)
        elif info["dtype"] == "F32":
            arr = np.array(chunk.view("<f4"), dtype=np.float32)
        else:
            raise ValueError(f"{path}: {name}: unsupported dtype {info['dtype']}")
        out[name] = arr.reshape(info["shape"])
    return out


# ---------------------------------------------------------------- tokenizer

# Unicode White_Space (what \s matches in the tokenizers' regex engine).
_WHITESPACE = set("\t\n\v\f\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000") | \
    {chr(c) for c in range(0x2000, 0x200B)}
_CONTRACTIONS = ("s", "t", "re", "ve", "m", "ll", "d")


def _is_letter(c):
    return unicodedata.category(c)[0] == "L"


def _is_number(c):
    return unicodedata.category(c)[0] == "N"


def _is_space(c):
    return c in _WHITESPACE


def _is_other(c):
    """[^\\s\\p{L}\\p{N}]"""
    return not (_is_space(c) or _is_letter(c) or _is_number(c))


def _match_at(s, i):
    """End of the Qwen2 pre-tokenizer match starting at i.  The pattern is
    (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}
    | ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+
    tried alternative by alternative as a backtracking engine would."""
    n, c = len(s), s[i]
    if c == "'":
        low = s[i + 1:i + 3].lower()
        for suf in _CONTRACTIONS:
            if low.startswith(suf):
                return i + 1 + len(suf)
    j = i
    if c not in "\r\n" and not _is_letter(c) and not _is_number(c) and i + 1 < n and _is_letter(s[i + 1]):
        j = i + 1
    if _is_letter(s[j]):
        while j < n and _is_letter(s[j]):
            j += 1
        return j
    if _is_number(c):
        return i + 1
    j = i + 1 if c == " " and i + 1 < n and _is_other(s[i + 1]) else i
    if _is_other(s[j]):
        while j < n and _is_other(s[j]):
            j += 1
        while j < n and s[j] in "\r\n":
            j += 1
        return j
    # c is whitespace from here on.
    end = i
    while end < n and _is_space(s[end]):
        end += 1
    last_nl = max((k for k in range(i, end) if s[k] in "\r\n"), default=-1)
    if last_nl >= 0:
        return last_nl + 1
    if end == n or end - 1 == i:
        return end
    return end - 1


def pretokenize(s):
    pieces, i = [], 0
    while i < len(s):
        j = _match_at(s, i)
        pieces.append(s[i:j])
        i = j
    return pieces


def _byte_to_unicode():
    """GPT-2's reversible byte -> printable character map (shared with the
    Spark tokenizer generator, which is the same ByteLevel alphabet)."""
    return bytes_to_unicode()


class Qwen2BPE:
    """Encoder only; exactness matters, speed does not."""

    def __init__(self, model_dir):
        with open(os.path.join(model_dir, "vocab.json"), encoding="utf-8") as f:
            self.vocab = json.load(f)
        self.ranks = {}
        with open(os.path.join(model_dir, "merges.txt"), encoding="utf-8") as f:
            for line in f:
                line = line.rstrip("\n")
                if not line or line.startswith("#version"):
                    continue
                a, b = line.split(" ")
                self.ranks[(a, b)] = len(self.ranks)
        with open(os.path.join(model_dir, "tokenizer_config.json"), encoding="utf-8") as f:
            tc = json.load(f)
        self.added = {v["content"]: int(k) for k, v in tc["added_tokens_decoder"].items()}
        # Longest first so a token that prefixes another never wins wrongly.
        self.added_sorted = sorted(self.added, key=len, reverse=True)
        self.b2u = _byte_to_unicode()
        self.cache = {}

    def _bpe(self, word):
        if word in self.cache:
            return self.cache[word]
        parts = list(word)
        while len(parts) > 1:
            best, best_rank = None, None
            for k in range(len(parts) - 1):
                r = self.ranks.get((parts[k], parts[k + 1]))
                if r is not None and (best_rank is None or r < best_rank):
                    best, best_rank = k, r
            if best is None:
                break
            a, b = parts[best], parts[best + 1]
            merged, k = [], 0
            while k < len(parts):
                if k < len(parts) - 1 and parts[k] == a and parts[k + 1] == b:
                    merged.append(a + b)
                    k += 2
                else:
                    merged.append(parts[k])
                    k += 1
            parts = merged
        ids = [self.vocab[p] for p in parts]
        self.cache[word] = ids
        return ids

    def _encode_plain(self, text):
        ids = []
        for piece in pretokenize(unicodedata.normalize("NFC", text)):
            mapped = "".join(self.b2u[b] for b in piece.encode("utf-8"))
            ids += self._bpe(mapped)
        return ids

    def encode(self, text):
        ids, i, start = [], 0, 0
        while i < len(text):
            hit = next((t for t in self.added_sorted if text.startswith(t, i)), None)
            if hit is None:
                i += 1
                continue
            ids += self._encode_plain(text[start:i])
            ids.append(self.added[hit])
            i += len(hit)
            start = i
        ids += self._encode_plain(text[start:])
        return ids


# ---------------------------------------------------------------- prompt layout


def tts_text(text):
    return f"<|im_start|>assistant\n{text}<|im_end|>\n<|im_start|>assistant\n"


def ref_text(text):
    return f"<|im_start|>assistant\n{text}<|im_end|>\n"


def instruct_text(instruct):
    return f"<|im_start|>user\n{instruct}<|im_end|>\n"


def codec_prefix(tcfg, speaker, language, xvector=False):
    """[think, think_bos, lang, think_eos, (spk), pad, bos], or the nothink
    form for "auto"; Chinese/auto with a dialect speaker uses the dialect id.
    xvector: the speaker slot holds a Base model's x-vector (marked "xvector")."""
    lang = language.lower()
    if lang == "auto":
        lang_id = None
    else:
        if lang not in tcfg["codec_language_id"]:
            raise ValueError(f"language {language!r} not in config.codec_language_id")
        lang_id = tcfg["codec_language_id"][lang]
    spk = speaker.lower() if speaker else None
    if spk is not None and spk not in tcfg["spk_id"]:
        raise ValueError(f"speaker {speaker!r} not in config.spk_id")
    if lang in ("chinese", "auto") and spk is not None and tcfg["spk_is_dialect"][spk] is not False:
        lang_id = tcfg["codec_language_id"][tcfg["spk_is_dialect"][spk]]
    if lang_id is None:
        ids = [tcfg["codec_nothink_id"], tcfg["codec_think_bos_id"], tcfg["codec_think_eos_id"]]
    else:
        ids = [tcfg["codec_think_id"], tcfg["codec_think_bos_id"], lang_id, tcfg["codec_think_eos_id"]]
    if xvector:
        if spk is not None:
            raise ValueError("an x-vector takes the speaker's place: not both")
        ids.append("xvector")
    elif spk is not None:
        ids.append(tcfg["spk_id"][spk])
    return ids + [tcfg["codec_pad_id"], tcfg["codec_bos_id"]]


def build_prompt(cfg, text_ids, speaker, language, non_streaming=True, instruct_ids=None, xvector=False,
                 ref_ids=None, n_ref_frames=0):
    """Rows of the talker prefill and the per-step trailing text ids.

    text_ids: ids of tts_text(text) (3 role ids, the text, a 5-id suffix).
    Returns {"rows": [{"text": id|None, "codec": id|None}], "trailing_text": [ids]}:
    decode step g adds P(trailing_text[g]) while g < len, else P(tts_pad).
    instruct_ids: all ids of instruct_text(...), rows of text alone before
    everything; xvector: the speaker slot's codec is "xvector" (the model's
    x-vector is added there as it is, in place of a codec embedding).
    ref_ids, n_ref_frames: in-context cloning (the official
    generate_icl_prompt): ref_ids are those of ref_text(...), its text
    ref_ids[3:-2]; a row {"ref_frame": f} adds reference frame f's codes
    embedded as a generated frame is fed back."""
    tcfg = cfg["talker_config"]
    pad_t, bos_t, eos_t = cfg["tts_pad_token_id"], cfg["tts_bos_token_id"], cfg["tts_eos_token_id"]
    if len(text_ids) < 9:
        raise ValueError("text_ids must hold the 3-id role, at least one text id and the 5-id suffix")
    rows = [{"text": t, "codec": None} for t in (instruct_ids or [])]
    rows += [{"text": t, "codec": None} for t in text_ids[:3]]
    codec = codec_prefix(tcfg, speaker, language, xvector)
    for k, c in enumerate(codec[:-1]):
        rows.append({"text": pad_t if k < len(codec) - 2 else bos_t, "codec": c})
    body = text_ids[3:-5]
    if ref_ids is not None:
        q = list(ref_ids[3:-2]) + list(body) + [eos_t]
        bos_c = codec[-1]
        if non_streaming:  # layout C
            rows += [{"text": t, "codec": tcfg["codec_pad_id"]} for t in q]
            rows.append({"text": pad_t, "codec": bos_c})
            rows += [{"text": pad_t, "codec": None, "ref_frame": f} for f in range(n_ref_frames)]
            trailing = []
        else:  # layout D: Q beside [bos, frames], Q padded or its rest trailing
            for j in range(n_ref_frames + 1):
                row = {"text": q[j] if j < len(q) else pad_t, "codec": bos_c if j == 0 else None}
                if j:
                    row["ref_frame"] = j - 1
                rows.append(row)
            trailing = q[n_ref_frames + 1:]
        return {"rows": rows, "trailing_text": trailing}
    if non_streaming:
        rows += [{"text": t, "codec": tcfg["codec_pad_id"]} for t in body]
        rows.append({"text": eos_t, "codec": tcfg["codec_pad_id"]})
        rows.append({"text": pad_t, "codec": codec[-1]})
        trailing = []
    else:
        rows.append({"text": body[0], "codec": codec[-1]})
        trailing = list(body[1:]) + [eos_t]
    return {"rows": rows, "trailing_text": trailing}


# ---------------------------------------------------------------- numerics


def rms_norm(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def inv_freq(head_dim, theta, dtype):
    return 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)).to(dtype)


def rope_cos_sin_1d(pos, head_dim, theta, dtype):
    """cos/sin [T, head_dim] for NeoX rotate-half, positions pos [T]."""
    f = pos.to(dtype)[:, None] * inv_freq(head_dim, theta, dtype)[None, :]
    emb = torch.cat([f, f], dim=-1)
    return emb.cos(), emb.sin()


def rope_cos_sin_mrope(pos3, head_dim, theta, section, interleaved, dtype):
    """General M-RoPE: pos3 [3, T] (temporal, height, width streams).  Each of
    the head_dim/2 frequencies takes its angle from one stream: interleaved
    layout gives frequency k>0 with k % 3 == s (s=1,2, k < 3*section[s]) to
    stream s and the rest to stream 0; the contiguous layout gives the first
    section[0] frequencies to stream 0, the next section[1] to 1, and so on."""
    half = head_dim // 2
    f = pos3.to(dtype)[:, :, None] * inv_freq(head_dim, theta, dtype)[None, None, :]  # [3,T,half]
    if interleaved:
        chosen = f[0].clone()
        for s in (1, 2):
            idx = list(range(s, min(section[s] * 3, half), 3))
            chosen[:, idx] = f[s][:, idx]
    else:
        parts, start = [], 0
        for s, width in enumerate(section):
            parts.append(f[s % 3][:, start:start + width])
            start += width
        chosen = torch.cat(parts, dim=-1)
    emb = torch.cat([chosen, chosen], dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


def apply_rope(x, cos, sin):
    """x [heads, T, d]; cos/sin [T, d]."""
    return x * cos[None] + rotate_half(x) * sin[None]


# ---------------------------------------------------------------- decoder stack


class DecoderStack:
    """Qwen3 decoder layers + final norm (talker or code predictor)."""

    def __init__(self, w, prefix, c, dtype, rope="1d", mrope_section=None, interleaved=True):
        self.dtype = dtype
        self.nh, self.nkv, self.d = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
        self.eps, self.theta = c["rms_norm_eps"], float(c["rope_theta"])
        self.rope, self.section, self.interleaved = rope, mrope_section, interleaved
        names = ["input_layernorm", "post_attention_layernorm", "self_attn.q_proj", "self_attn.k_proj",
                 "self_attn.v_proj", "self_attn.o_proj", "self_attn.q_norm", "self_attn.k_norm",
                 "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"]
        self.layers = []
        for i in range(c["num_hidden_layers"]):
            self.layers.append({n: torch.from_numpy(np.asarray(w[f"{prefix}.layers.{i}.{n}.weight"])).to(dtype)
                                for n in names})
        self.norm = torch.from_numpy(np.asarray(w[f"{prefix}.norm.weight"])).to(dtype)

    def new_cache(self):
        return [[None, None] for _ in self.layers]

    def cos_sin(self, positions):
        if self.rope == "mrope":
            return rope_cos_sin_mrope(positions[None].expand(3, -1), self.d, self.theta, self.section,
                                      self.interleaved, self.dtype)
        return rope_cos_sin_1d(positions, self.d, self.theta, self.dtype)

    def attention(self, L, x, cache_slot, cos, sin):
        T = x.shape[0]
        q = (x @ L["self_attn.q_proj"].T).view(T, self.nh, self.d)
        k = (x @ L["self_attn.k_proj"].T).view(T, self.nkv, self.d)
        v = (x @ L["self_attn.v_proj"].T).view(T, self.nkv, self.d)
        q = rms_norm(q, L["self_attn.q_norm"], self.eps).transpose(0, 1)
        k = rms_norm(k, L["self_attn.k_norm"], self.eps).transpose(0, 1)
        v = v.transpose(0, 1)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        past = 0 if cache_slot[0] is None else cache_slot[0].shape[1]
        if cache_slot[0] is not None:
            k = torch.cat([cache_slot[0], k], dim=1)
            v = torch.cat([cache_slot[1], v], dim=1)
        cache_slot[0], cache_slot[1] = k, v
        group = self.nh // self.nkv
        k = k.repeat_interleave(group, dim=0)  # query head h reads kv head h // group
        v = v.repeat_interleave(group, dim=0)
        scores = (q @ k.transpose(1, 2)) * (self.d ** -0.5)
        S = k.shape[1]
        visible = torch.arange(S)[None, :] <= (past + torch.arange(T))[:, None]
        scores = scores.masked_fill(~visible[None], float("-inf"))
        probs = torch.softmax(scores, dim=-1)
        out = (probs @ v).transpose(0, 1).reshape(T, self.nh * self.d)
        return out @ L["self_attn.o_proj"].T

    def forward(self, x, cache, positions):
        """x [T, hidden] -> final-normed hidden [T, hidden]; cache is updated."""
        cos, sin = self.cos_sin(positions)
        for L, slot in zip(self.layers, cache):
            h = rms_norm(x, L["input_layernorm"], self.eps)
            x = x + self.attention(L, h, slot, cos, sin)
            h = rms_norm(x, L["post_attention_layernorm"], self.eps)
            act = torch.nn.functional.silu(h @ L["mlp.gate_proj"].T) * (h @ L["mlp.up_proj"].T)
            x = x + act @ L["mlp.down_proj"].T
        return rms_norm(x, self.norm, self.eps)


# ---------------------------------------------------------------- model


def snr_db(ref, x):
    ref = np.asarray(ref, dtype=np.float64)
    err = ref - np.asarray(x, dtype=np.float64)
    num, den = float((ref * ref).sum()), float((err * err).sum())
    return float("inf") if den == 0.0 else 10.0 * np.log10(num / den)


def load_model_dir(model_dir):
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    with open(os.path.join(model_dir, "generation_config.json"), encoding="utf-8") as f:
        gen = json.load(f)
    weights = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    return cfg, gen, weights


class TTSModel:
    def __init__(self, cfg, weights, dtype=torch.float64, talker_rope="mrope"):
        def t(name):
            return torch.from_numpy(np.asarray(weights[name])).to(dtype)

        self.cfg, self.dtype = cfg, dtype
        tc = cfg["talker_config"]
        cp = tc["code_predictor_config"]
        self.tc, self.cp = tc, cp
        rs = tc.get("rope_scaling") or {}
        self.talker = DecoderStack(weights, "talker.model", tc, dtype, rope=talker_rope,
                                   mrope_section=rs.get("mrope_section"),
                                   interleaved=bool(rs.get("interleaved", False)))
        self.predictor = DecoderStack(weights, "talker.code_predictor.model", cp, dtype, rope="1d")
        # The text table is huge for real sizes: keep it float32 (exact for
        # BF16 values) and widen only the gathered rows.
        self.text_table = weights["talker.model.text_embedding.weight"]
        self.fc1_w, self.fc1_b = t("talker.text_projection.linear_fc1.weight"), t("talker.text_projection.linear_fc1.bias")
        self.fc2_w, self.fc2_b = t("talker.text_projection.linear_fc2.weight"), t("talker.text_projection.linear_fc2.bias")
        self.codec_embedding = t("talker.model.codec_embedding.weight")
        self.xvector = None  # a Base model's speaker x-vector (set before generate), float64
        self.ref_codes = None  # in-context cloning: the reference frames, [F][16]
        self.codec_head = t("talker.codec_head.weight")
        groups = cp["num_code_groups"] - 1
        self.pred_embedding = [t(f"talker.code_predictor.model.codec_embedding.{g}.weight") for g in range(groups)]
        self.pred_heads = [t(f"talker.code_predictor.lm_head.{g}.weight") for g in range(groups)]
        if "talker.code_predictor.small_to_mtp_projection.weight" in weights:
            self.mtp_w = t("talker.code_predictor.small_to_mtp_projection.weight")
            self.mtp_b = t("talker.code_predictor.small_to_mtp_projection.bias")
        else:
            self.mtp_w = self.mtp_b = None

    # P(t): text_projection(text_embedding[t]) = fc2(silu(fc1 x + b1)) + b2
    def project_text(self, ids):
        x = torch.from_numpy(np.asarray(self.text_table[np.asarray(ids, dtype=np.int64)])).to(self.dtype)
        h = torch.nn.functional.silu(x @ self.fc1_w.T + self.fc1_b)
        return h @ self.fc2_w.T + self.fc2_b

    def embed_rows(self, rows):
        out = torch.zeros(len(rows), self.tc["hidden_size"], dtype=self.dtype)
        text_idx = [i for i, r in enumerate(rows) if r["text"] is not None]
        if text_idx:
            out[text_idx] += self.project_text([rows[i]["text"] for i in text_idx])
        for i, r in enumerate(rows):
            if r.get("ref_frame") is not None:
                out[i] += self.frame_feedback(self.ref_codes[r["ref_frame"]])
            if r["codec"] == "xvector":  # a Base model's speaker, raw (no projection)
                out[i] += self.xvector.to(self.dtype)
            elif r["codec"] is not None:
                out[i] += self.codec_embedding[r["codec"]]
        return out

    def talker_logits(self, h_last):
        return h_last @ self.codec_head.T

    def to_mtp(self, x):
        return x if self.mtp_w is None else x @ self.mtp_w.T + self.mtp_b

    def predict_codes(self, h_last, c0, pick, record=None):
        """15 codebooks for one frame.  pick(logits, step) -> id."""
        cache = self.predictor.new_cache()
        x = torch.stack([h_last, self.codec_embedding[c0]])
        hid = self.predictor.forward(self.to_mtp(x), cache, torch.arange(2))
        codes, pos = [], 2
        for j in range(len(self.pred_heads)):
            if j > 0:
                e = self.pred_embedding[j - 1][codes[-1]][None]
                hid = self.predictor.forward(self.to_mtp(e), cache, torch.tensor([pos]))
                pos += 1
            logits = hid[-1] @ self.pred_heads[j].T
            if record is not None:
                record.append(logits)
            codes.append(pick(logits, j))
        return codes

    def frame_feedback(self, codes):
        x = self.codec_embedding[codes[0]].clone()
        for g, c in enumerate(codes[1:]):
            x += self.pred_embedding[g][c]
        return x

    def generate(self, prompt, max_frames, gen, greedy=True, seed=0, record_talker=4, record_predictor=2,
                 force_frames=None):
        """Frames for a prompt from build_prompt.  gen: generation_config dict.
        force_frames: feed these codes instead of the picked ones (the logits are
        still computed and recorded) to compare numerics on one trajectory."""
        tc = self.tc
        eos, lo, hi = tc["codec_eos_token_id"], tc["vocab_size"] - 1024, tc["vocab_size"]
        penalty = float(gen.get("repetition_penalty", 1.0))
        min_new = 2
        rng = torch.Generator().manual_seed(seed)

        def sample(logits, temperature, top_k, top_p):
            if greedy:
                return int(torch.argmax(logits))
            z = logits.to(torch.float64) / temperature
            if top_k and top_k < z.numel():
                kth = torch.topk(z, top_k).values[-1]
                z = z.masked_fill(z < kth, float("-inf"))
            if top_p < 1.0:
                order = torch.argsort(z, descending=True)
                probs = torch.softmax(z[order], dim=-1)
                cum = torch.cumsum(probs, dim=-1)
                drop = (cum - probs) > top_p
                z[order[drop]] = float("-inf")
            return int(torch.multinomial(torch.softmax(z, dim=-1), 1, generator=rng))

        sub_margins = []

        def pick_sub(logits, _j):
            top2 = torch.topk(logits, 2).values
            sub_margins.append(float(top2[0] - top2[1]))
            return sample(logits, gen.get("subtalker_temperature", 0.9), gen.get("subtalker_top_k", 50),
                          gen.get("subtalker_top_p", 1.0))

        rows = prompt["rows"]
        trailing = prompt["trailing_text"]
        pad_vec = self.project_text([self.cfg["tts_pad_token_id"]])[0]
        trail_vecs = self.project_text(trailing) if trailing else None
        cache = self.talker.new_cache()
        hid = self.talker.forward(self.embed_rows(rows), cache, torch.arange(len(rows)))
        pos = len(rows)
        frames, talker_logits, pred_logits, margins, pred_margins = [], [], [], [], []
        history = []
        stopped = False
        for step in range(max_frames):
            h_last = hid[-1]
            raw = self.talker_logits(h_last)
            if step < record_talker:
                talker_logits.append(raw)
            z = raw.clone()
            for c in set(history):
                z[c] = z[c] / penalty if z[c] > 0 else z[c] * penalty
            keep_eos = z[eos].clone()
            z[lo:hi] = float("-inf")
            z[eos] = keep_eos if step >= min_new else float("-inf")
            top2 = torch.topk(z, 2).values
            margins.append(float(top2[0] - top2[1]))
            c0 = sample(z, gen.get("temperature", 0.9), gen.get("top_k", 50), gen.get("top_p", 1.0))
            if force_frames is not None:
                if step >= len(force_frames):
                    break
                c0 = force_frames[step][0]
            if c0 == eos:
                stopped = True
                break
            rec = [] if step < record_predictor else None
            if force_frames is not None:
                forced = force_frames[step]
                codes = [c0] + self.predict_codes(h_last, c0, lambda lg, j: forced[j + 1], rec)
            else:
                codes = [c0] + self.predict_codes(h_last, c0, pick_sub, rec)
            if rec is not None:
                pred_logits.append(rec)
            if sub_margins:
                pred_margins.append(min(sub_margins))
                sub_margins.clear()
            history.append(c0)
            frames.append(codes)
            x = self.frame_feedback(codes)
            x = x + (trail_vecs[step] if step < len(trailing) else pad_vec)
            hid = self.talker.forward(x[None], cache, torch.tensor([pos]))
            pos += 1
        return {"frames": frames, "stopped_at_eos": stopped, "talker_logits": talker_logits,
                "predictor_logits": pred_logits, "c0_top2_margins": margins,
                "predictor_top2_margin_min": pred_margins}
