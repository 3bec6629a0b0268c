#!/usr/bin/python3
"""Train the small Spark-X2.5 demo model (issue 17) on the CPU.

  /usr/bin/python3 reference/demo/train.py --check
      Build a tiny random model, save it, and compare its logits with
      reference/spark_ref.py on the saved checkpoint (float32). Seconds; exit
      status 1 on failure.
  /usr/bin/python3 reference/demo/train.py --bench [--threads 2]
      Tokens/s of one training step at the demo size (random tokens) in fp32
      and in bf16 autocast; prints JSON lines.
  LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread \\
  /usr/bin/python3 reference/demo/train.py --data build/demo-corpus --out models/demo
      Tokenize the corpus (cached), train, export the best model.

BLAS.  Debian's python3-torch links the reference (netlib) BLAS, a few
GFLOP/s; every fp32 nn.Linear goes through it.  Install libopenblas0-pthread
and run with LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread (as
above): libblas.so.3 then resolves to OpenBLAS for this process only and
fp32 linears get 10-20x faster.  Do not switch the system's BLAS alternative:
the tests rely on the reference BLAS.  At start the script times a matmul and
warns loudly under 10 GFLOP/s.  Training runs in bf16 autocast by default
(oneDNN, fast on CPUs with AVX512_BF16, and independent of the BLAS): on this
2-core host --bench measured 2080 tok/s against 1077 tok/s for fp32 with
OpenBLAS (8 layers x 256, 16 x 512 tokens a step, quiet machine; 1.2-2.6x
under load).  --precision fp32 forces fp32, --precision auto times both and
takes the faster.  Master weights and the optimizer stay fp32 either way.

Model.  SparkLM computes exactly the function of reference/spark_ref.py (3
sliding : 1 full layers, per-type partial NeoX RoPE with fp32 angles, fused
q_k_v_proj, head-wise sigmoid gate, GeGLU with erf GELU, RMSNorm, tied
embeddings); its state_dict keys are the checkpoint tensor names of
reference/make_checkpoint.py.  Sliding layers: key j is visible to query i
iff 0 <= i - j < sliding_window (the query sees itself and window-1 earlier
keys).  Sliding layers run block-local attention (blocks of `window` queries
against the previous and the current block) when the length is a multiple of
the window, else a dense masked attention; --check covers both.

Data (--data DIR).  DIR/prose.jsonl (one document a line: a JSON string or
{"text": ...}) or DIR/prose.txt (documents separated by <|endoftext|>, or,
without any, by blank lines), and DIR/chats.jsonl (lines {"tools": [...],
"messages": [...]}, rendered with chatfmt.render_with_spans(messages, tools)
-> (text, [(start, end) char spans of assistant turns]), chatfmt.py being
next to this file).  The whole corpus is tokenized by ember itself in one
process (`ember tokenize --jsonl --no-special`, one JSON string per
document), and cached as .npy under --cache (rebuilt when an input changes).
Loss: prose on every token; chats only on tokens that start inside an
assistant span (token byte offsets come from the tokenizer.json pieces).
With --arg-weight W, the chat tokens that start inside a tool call's
arguments JSON (chatfmt's arg_spans; cached as loss-mask value 2) weigh W
and every other trained token 1, the loss divided by the total weight; the
misses of the demo model are argument values, not function names.  Every
evaluation also logs val_chat_args, the held-out loss on those tokens alone.
Documents are sampled ~30% prose / 70% chat by tokens (--prose-frac), each
ends with <|endoftext|> (a target of its last token: prose learns to stop),
and they are packed first-fit into rows of --seq-len tokens (default 1024:
with the demo tokenizer ~28% of the chats are longer than 512 tokens, the
longest ~1200).  Attention is
RESET at document boundaries and positions restart at 0 for each document,
so training sees each chat exactly as inference does (prompt at position
0, no foreign context).  A document longer than a row is cut into row-sized
pieces that keep their true positions but lose the earlier context (the
script reports how many there are; raise --seq-len if it is many).  Left
over slots are padding without loss.  A seeded 2% of the documents of each
kind (--val-frac) is held out, or --val-data DIR (another corpus, e.g.
another seed) is the held-out set and all of --data trains, so that runs
on different corpora report comparable losses; held-out loss = prose_frac *
prose loss + (1 - prose_frac) * chat loss, both per trained token.

Shared prefixes (--share-prefix, with corpus.py --family K).  A chat's
system block (the tool list) is ~55-65% of its tokens and carries no loss.
With --share-prefix, runs of consecutive chats whose system block is the
same (corpus.py --family writes them) are cut into trees of at most
--seq-len slots (reference/demo/shared_prefix.py): the tokens they share
once at the start of a row, then each chat's remaining tokens with the
positions they have alone; a continuation attends to the shared prefix and
to itself only (sliding layers by position: every block also gets the
prefix's last `window` slots as keys).  Logits and gradients equal those of
the chats trained one by one (--check tests both); the held-out rows stay
plain.  The log's loss_tok_s gives targets with loss per second of training
by kind and chat_sharing the slots the chats would take alone over the
slots they took.

Training.  AdamW (betas 0.9/0.95, weight decay on matrices), linear warmup
then cosine decay to --min-lr-frac, grad-norm clip 1.0, all seeded.  It
stops at --steps, at the --minutes wall-clock budget (the cosine length is
then estimated from the measured step and eval time, and printed so that a
run can be repeated with --steps), or when held-out loss has not improved
for --patience evaluations.  Each evaluation prints a JSON line; each new
best is exported at once to --out (config.json, generation_config.json,
model.safetensors in bf16, tied: no lm_head.weight; tokenizer files there
are left alone) and the training state goes to --state (resume with
--resume), so an interrupted run still leaves a usable model.
"""
import argparse
import hashlib
import json
import math
import os
import random
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))          # reference/: make_checkpoint, spark_ref
sys.path.insert(1, HERE)                           # reference/demo/: chatfmt
import make_checkpoint as mc  # noqa: E402
import shared_prefix  # noqa: E402

OPENBLAS_DIR = "/usr/lib/x86_64-linux-gnu/openblas-pthread"
EOT = "<|endoftext|>"
IM_END = "<|im_end|>"


def log(obj):
    print(json.dumps(obj) if isinstance(obj, dict) else obj, flush=True)


# ----------------------------------------------------------------------------
# model
# ----------------------------------------------------------------------------
class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        x = x.float()
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rope_inv_freq(theta, rot):
    # the reference's expression, float32
    return 1.0 / (theta ** (torch.arange(0, rot, 2, dtype=torch.int64).float() / rot))


def apply_rope(x, cos, sin, rot):
    """NeoX rotate-half on the leading rot dims. x [B, H, T, d]; cos/sin [B, 1, T, rot]."""
    if rot < x.shape[-1]:
        xr, xp = x.split([rot, x.shape[-1] - rot], dim=-1)
        return torch.cat([apply_rope(xr, cos, sin, rot), xp], dim=-1)
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat([-x2, x1], dim=-1) * sin


def mask_bias(mask):
    """bool visibility mask -> additive fp32 bias (0 or -inf), built once a forward."""
    return torch.zeros(mask.shape).masked_fill_(~mask, float("-inf"))


def visibility(qi, kj, pos, doc, W, pre, tree):
    """Which keys each query sees (bool [B, ..., Q, K]) for query row indices
    qi [..., Q] and key row indices kj [..., K] (negative: no key).  Key j is
    visible to query i iff j <= i and either both are in one document, or j
    is in the row's shared prefix (its first pre[b] slots) and i is in one of
    the continuations of that prefix (tree[b, i]); sliding layers (W) also
    need pos[i] - pos[j] < W, in positions, since a continuation's positions
    go on from its prefix's and not from the slot before it."""
    B = pos.shape[0]
    kc = kj.clamp(min=0)
    flat = lambda x, ix: x[:, ix.reshape(-1)].view(B, *ix.shape)  # noqa: E731  [B, ..., n]
    causal = (kj >= 0)[..., None, :] & (kj[..., None, :] <= qi[..., :, None])          # [..., Q, K]
    m = flat(doc, qi)[..., :, None] == flat(doc, kc)[..., None, :]                     # [B, ..., Q, K]
    if pre is not None:
        in_prefix = kj[None] < pre.view(B, *([1] * kj.dim()))                          # [B, ..., K]
        m = m | (in_prefix[..., None, :] & flat(tree, qi)[..., :, None])
    m = m & causal
    if W:
        m = m & (flat(pos, qi)[..., :, None] - flat(pos, kc)[..., None, :] < W)
    return m


def attn_context(c, ltype, pos, doc, inv_freq, pre=None, tree=None):
    """What every layer of one type shares in a forward: cos/sin and the mask bias.
    Sliding layers use block-local attention when T is a multiple of the window;
    rows with a shared prefix (pre, tree: see visibility) add, for every block,
    the last W slots of the row's prefix as keys (a continuation far from its
    prefix in the row still needs the prefix's last tokens in its window)."""
    B, T = pos.shape
    W = c["sliding_window"]
    if pre is not None and not bool((pre > 0).any()):
        pre = tree = None
    ang = pos.float()[..., None] * inv_freq                  # fp32 angles, as the reference
    emb = torch.cat([ang, ang], dim=-1)[:, None]             # [B, 1, T, rot]
    ctx = {"cos": emb.cos(), "sin": emb.sin(), "blocked": False, "tail": None}
    sliding = ltype == "sliding_attention"
    if sliding and T % W == 0 and T > W:
        nb = T // W
        qi = torch.arange(T).view(nb, W)                     # query row index
        kj = qi[:, :1] - W + torch.arange(2 * W)[None]       # key row index [nb, 2W]: blocks n-1, n
        if pre is None:
            m = visibility(qi, kj, pos, doc, W, None, None)  # [B, nb, W, 2W]
        else:
            tail = pre[:, None] - W + torch.arange(W)[None]  # [B, W] the prefix's last W slots
            # a tail slot already inside blocks n-1, n is not a second key
            tk = torch.where(tail[:, None, :] < kj[None, :, :1], tail[:, None, :], torch.tensor(-1))
            keys = torch.cat([tk, kj[None].expand(B, nb, 2 * W)], dim=-1)     # [B, nb, 3W]
            m = torch.stack([visibility(qi, keys[b], pos[b:b + 1], doc[b:b + 1], W, pre[b:b + 1],
                                        tree[b:b + 1])[0] for b in range(B)])  # [B, nb, W, 3W]
            ctx["tail"] = tail.clamp(min=0)
        ctx["bias"] = mask_bias(m)[:, None, :, None]         # [B, 1, nb, 1, W, 2W or 3W]
        ctx["blocked"] = True
    else:
        i = torch.arange(T)
        m = visibility(i, i, pos, doc, W if sliding else 0, pre, tree)   # [B, T, T]
        ctx["bias"] = mask_bias(m)[:, None, None]            # [B, 1, 1, T, T]
    return ctx


class Attention(nn.Module):
    def __init__(self, c, sliding):
        super().__init__()
        self.H, self.KV, self.d = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
        hid, ab = c["hidden_size"], c["attention_bias"]
        self.q_k_v_proj = nn.Linear(hid, (self.H + 2 * self.KV) * self.d, bias=ab)
        self.g_proj = nn.Linear(hid, self.H, bias=ab)
        self.out_proj = nn.Linear(self.H * self.d, hid, bias=ab)
        self.window = c["sliding_window"]
        self.gate_mode = c["gate_attn_act_mode"]
        self.ltype = "sliding_attention" if sliding else "full_attention"
        p = c["rope_parameters"][self.ltype]
        self.rot = int(self.d * float(p.get("partial_rotary_factor", 1.0)))
        self.register_buffer("inv_freq", rope_inv_freq(float(p.get("rope_theta", 10000.0)), self.rot),
                             persistent=False)

    def forward(self, h, ctx):
        B, T, _ = h.shape
        H, KV, d = self.H, self.KV, self.d
        G = H // KV
        q, k, v = self.q_k_v_proj(h).split([H * d, KV * d, KV * d], dim=-1)
        q = q.reshape(B, T, H, d).transpose(1, 2)
        k = k.reshape(B, T, KV, d).transpose(1, 2)
        v = v.reshape(B, T, KV, d).transpose(1, 2)
        g = self.g_proj(h)
        gate = torch.sigmoid(g) if self.gate_mode == "sigmoid" else F.silu(g)   # [B, T, H]
        cos, sin = ctx["cos"], ctx["sin"]
        # the reference scales the scores; scaling q instead is exact when
        # 1/sqrt(d) is a power of two (d = 64, 256) and fp32 noise otherwise
        q = apply_rope(q, cos, sin, self.rot) * (1.0 / math.sqrt(d))
        k = apply_rope(k, cos, sin, self.rot)
        if ctx["blocked"]:
            o = self._blocked(q, k, v, ctx["bias"], ctx["tail"])
        else:
            s = torch.matmul(q.reshape(B, KV, G * T, d), k.transpose(-1, -2)).view(B, KV, G, T, T)
            p = torch.softmax(s + ctx["bias"], dim=-1)     # fp32 (the bias is fp32)
            o = torch.matmul(p.view(B, KV, G * T, T).to(v.dtype), v).view(B, H, T, d)
        o = o * gate.transpose(1, 2)[..., None].to(o.dtype)
        o = o.transpose(1, 2).reshape(B, T, H * d)
        return self.out_proj(o)

    def _blocked(self, q, k, v, bias, tail=None):
        """Sliding attention in blocks of W queries against the previous and
        the current block of W keys (everything a window of W can reach in
        one document); tail [B, W]: row slots of a shared prefix's end, keys
        of every block too."""
        B, H, T, d = q.shape
        KV, W = self.KV, self.window
        G, nb = H // KV, T // W
        qb = q.reshape(B, KV, G, nb, W, d).permute(0, 1, 3, 2, 4, 5).reshape(B, KV, nb, G * W, d)

        def two_blocks(x):                                   # [B, KV, T, d] -> [B, KV, nb, 2W, d]
            xb = x.reshape(B, KV, nb, W, d)
            prev = F.pad(xb[:, :, :-1], (0, 0, 0, 0, 1, 0))  # block n-1 (zeros before block 0)
            xs = [prev, xb]
            if tail is not None:
                t = x.gather(2, tail[:, None, :, None].expand(B, KV, W, d))   # [B, KV, W, d]
                xs.insert(0, t[:, :, None].expand(B, KV, nb, W, d))
            return torch.cat(xs, dim=3)
        kk, vv = two_blocks(k), two_blocks(v)
        nk = kk.shape[3]
        s = torch.matmul(qb, kk.transpose(-1, -2)).view(B, KV, nb, G, W, nk)
        p = torch.softmax(s + bias, dim=-1)
        o = torch.matmul(p.view(B, KV, nb, G * W, nk).to(vv.dtype), vv)   # [B, KV, nb, G*W, d]
        return o.view(B, KV, nb, G, W, d).permute(0, 1, 3, 2, 4, 5).reshape(B, H, T, d)


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        hid, inter, mb = c["hidden_size"], c["intermediate_size"], c["mlp_bias"]
        self.gate_proj = nn.Linear(hid, inter, bias=mb)
        self.up_proj = nn.Linear(hid, inter, bias=mb)
        self.down_proj = nn.Linear(inter, hid, bias=mb)

    def forward(self, h):
        return self.down_proj(F.gelu(self.gate_proj(h)) * self.up_proj(h))   # exact erf GELU


class Layer(nn.Module):
    def __init__(self, c, sliding):
        super().__init__()
        eps = c["rms_norm_eps"]
        self.input_layernorm = RMSNorm(c["hidden_size"], eps)
        self.self_attn = Attention(c, sliding)
        self.post_attention_layernorm = RMSNorm(c["hidden_size"], eps)
        self.mlp = MLP(c)

    def forward(self, x, ctx):
        x = x + self.self_attn(self.input_layernorm(x), ctx)
        return x + self.mlp(self.post_attention_layernorm(x))


class Body(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embedding = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = nn.ModuleList(Layer(c, t == "sliding_attention") for t in c["layer_types"])
        self.norm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])


class SparkLM(nn.Module):
    """state_dict keys == make_checkpoint.tensor_specs names."""

    def __init__(self, c):
        super().__init__()
        assert c["hidden_act"] == "gelu" and c["headwise_attn_output_gate"]
        self.cfg = c
        self.model = Body(c)
        if not c["tie_word_embeddings"]:
            self.lm_head = nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)

    def init_weights(self, seed):
        g = torch.Generator().manual_seed(seed)
        std = self.cfg.get("initializer_range", 0.02)
        resid = std / math.sqrt(2 * self.cfg["num_hidden_layers"])
        with torch.no_grad():
            for name, p in self.named_parameters():
                if name.endswith("norm.weight"):
                    p.fill_(1.0)
                elif name.endswith(".bias"):
                    p.zero_()
                else:
                    s = resid if name.endswith(("out_proj.weight", "down_proj.weight")) else std
                    p.copy_(torch.randn(p.shape, generator=g) * s)

    def hidden(self, ids, pos=None, doc=None, pre=None, tree=None):
        """ids [B, T] -> final-normed hidden states [B, T, hidden] (fp32).
        pos, doc: positions and document ids of packed rows; pre [B], tree
        [B, T]: a shared prefix and its continuations (see visibility)."""
        B, T = ids.shape
        if pos is None:
            pos = torch.arange(T).expand(B, T)
        if doc is None:
            doc = torch.zeros(B, T, dtype=torch.int64)
        x = self.model.embedding(ids).float()
        ctxs = {}
        for layer in self.model.layers:
            at = layer.self_attn
            if at.ltype not in ctxs:
                ctxs[at.ltype] = attn_context(self.cfg, at.ltype, pos, doc, at.inv_freq, pre, tree)
            x = layer(x, ctxs[at.ltype])
        return self.model.norm(x)

    def head(self, h):
        w = self.model.embedding.weight if self.cfg["tie_word_embeddings"] else self.lm_head.weight
        return F.linear(h, w).float()

    def forward(self, ids, pos=None, doc=None, pre=None, tree=None):
        return self.head(self.hidden(ids, pos, doc, pre, tree))

    def _selected(self, ids, tgt, mask, pos, doc, pre, tree):
        """Logits and targets of the slots where mask is set (the output head
        only runs on those rows) and the flattened selection."""
        h = self.hidden(ids, pos, doc, pre, tree)
        sel = mask.reshape(-1)
        return self.head(h.reshape(-1, h.shape[-1])[sel]), tgt.reshape(-1)[sel], sel

    def loss(self, ids, tgt, mask, pos, doc, pre=None, tree=None, arg=None, arg_weight=1.0):
        """Mean cross entropy over the targets where mask is set.  With
        arg_weight != 1, the targets flagged in arg (tool-call arguments)
        weigh arg_weight and the others 1, normalised by the total weight so
        that the loss keeps its scale; arg_weight 1 is the plain mean, the
        same computation as without arg."""
        logits, t, sel = self._selected(ids, tgt, mask, pos, doc, pre, tree)
        if arg is None or arg_weight == 1.0:
            return F.cross_entropy(logits, t)
        w = 1.0 + (arg_weight - 1.0) * arg.reshape(-1)[sel].float()
        return (F.cross_entropy(logits, t, reduction="none") * w).sum() / w.sum()

    def token_losses(self, ids, tgt, mask, pos, doc, pre=None, tree=None, arg=None):
        """Cross entropy of every target where mask is set, and whether each
        is an argument token (all False without arg)."""
        logits, t, sel = self._selected(ids, tgt, mask, pos, doc, pre, tree)
        flags = arg.reshape(-1)[sel] if arg is not None else torch.zeros(len(t), dtype=torch.bool)
        return F.cross_entropy(logits, t, reduction="none"), flags


def init_from(model, model_dir):
    """Start from a trained checkpoint (a second stage on new data): its
    config must match the one built from the flags, its tensors every
    parameter.  bf16 -> fp32 is exact."""
    import spark_ref as sr
    with open(os.path.join(model_dir, "config.json")) as f:
        theirs = json.load(f)
    for k in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
              "head_dim", "intermediate_size", "sliding_window", "layer_types"):
        if theirs.get(k) != model.cfg[k]:
            raise SystemExit(f"--init {model_dir}: {k} is {theirs.get(k)}, the flags give {model.cfg[k]}")
    sd = sr.load_checkpoint_tensors(model_dir)
    if model.cfg["tie_word_embeddings"]:
        sd.pop("lm_head.weight", None)
    model.load_state_dict(sd, strict=True)
    log({"init": model_dir, "tensors": len(sd)})


def count_params(model):
    return sum(p.numel() for p in model.parameters())


# ----------------------------------------------------------------------------
# export (Hugging Face directory, make_checkpoint's config keys)
# ----------------------------------------------------------------------------
def demo_config(a, vocab, special):
    cfg = mc.build_config(
        "tiny", "bf16", layers=a.layers, vocab=vocab, untied=False,
        hidden_size=a.hidden, num_attention_heads=a.heads, num_key_value_heads=a.kv_heads,
        head_dim=a.head_dim, intermediate_size=a.intermediate, sliding_window=a.window,
        max_position_embeddings=a.max_pos)
    if special:   # build_config assumes the 9 specials end the vocabulary; trust the tokenizer
        for key, tok in (("bos_token_id", EOT), ("eos_token_id", IM_END), ("pad_token_id", EOT)):
            if tok in special and special[tok] != cfg[key]:
                log(f"note: {key} {cfg[key]} -> {special[tok]} ({tok} in the tokenizer)")
                cfg[key] = special[tok]
    return cfg


def write_safetensors(path, tensors, dtype):
    """tensors: {name: float32 tensor}; written sorted by name, in dtype
    (make_checkpoint's encoding), atomically (tmp file + rename)."""
    header, off, blobs = {"__metadata__": {"format": "pt"}}, 0, []
    for name in sorted(tensors):
        t = tensors[name].detach().float().contiguous().cpu()
        b = mc.encode(t, dtype)
        header[name] = {"dtype": mc.ST_NAME[dtype], "shape": list(t.shape),
                        "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    hb = json.dumps(header, separators=(",", ":")).encode()
    hb += b" " * (-len(hb) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(hb)))
        f.write(hb)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)
    return 8 + len(hb) + off


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


def export(model, out, dtype="bf16", special=None):
    cfg = dict(model.cfg)
    cfg["torch_dtype"] = cfg["dtype"] = mc.TORCH_NAME[dtype]
    os.makedirs(out, exist_ok=True)
    for fn in os.listdir(out):   # no stale shard set next to the new file
        if fn.startswith("model-") and fn.endswith(".safetensors") or fn == "model.safetensors.index.json":
            os.remove(os.path.join(out, fn))
    write_json(os.path.join(out, "config.json"), cfg)
    special = special or {}
    eos = [cfg["eos_token_id"]] + [special[t] for t in (EOT,) if t in special and special[t] != cfg["eos_token_id"]]
    if len(eos) == 1 and cfg["bos_token_id"] != cfg["eos_token_id"]:
        eos.append(cfg["bos_token_id"])   # <|endoftext|> under make_checkpoint's layout
    write_json(os.path.join(out, "generation_config.json"), {
        "bos_token_id": cfg["bos_token_id"], "eos_token_id": eos, "pad_token_id": cfg["pad_token_id"],
        "do_sample": False, "temperature": 0.7, "top_p": 0.9, "repetition_penalty": 1.0})
    sd = {k: v for k, v in model.state_dict().items() if k != "lm_head.weight" or not cfg["tie_word_embeddings"]}
    return write_safetensors(os.path.join(out, "model.safetensors"), sd, dtype)


# ----------------------------------------------------------------------------
# --check: equivalence with reference/spark_ref.py
# ----------------------------------------------------------------------------
def snr_db(ref, x):
    ref, x = ref.double(), x.double()
    err = (ref - x).pow(2).sum().item()
    return float("inf") if err == 0 else 10 * math.log10(ref.pow(2).sum().item() / err)


def check_shared_prefix(model, T, plain):
    """A row holding a tree (a 40-token prefix longer than the window, two
    continuations of 30 and 26 slots, the second far from its prefix in the
    row) and a plain document of `plain` slots, packed by Packer.add_tree:
    the continuations' logits and the summed loss's gradients must equal
    those of the two chats run one by one.  Returns (logits SNR, gradient SNR)."""
    V, L = model.cfg["vocab_size"], 40
    g = torch.Generator().manual_seed(5)
    shared = torch.randint(0, V, (L,), generator=g)
    chats = [torch.cat([shared, torch.randint(0, V, (n + 1,), generator=g)]).numpy() for n in (30, 26)]
    masks = [np.r_[np.zeros(L + 1, np.uint8), np.ones(len(c) - L - 1, np.uint8)] for c in chats]
    pk = Packer(T, 0)
    pk.add_tree(L, list(zip(chats, masks)))
    if plain:
        x = torch.randint(0, V, (plain + 1,), generator=g).numpy()
        pk.add(x[:-1], x[1:], np.ones(plain, bool), np.arange(plain))
    pk.flush()
    ids, tgt, mask, pos, doc, pre, tree, _ = to_batch(pk.ready)
    keep = mask.clone()
    keep[0, -plain or T:] = False          # the plain document's targets are not part of the comparison
    model.zero_grad()
    h = model.hidden(ids, pos, doc, pre, tree)[0]
    got = model.head(h[keep[0]])
    F.cross_entropy(got, tgt[0][keep[0]], reduction="sum").backward()
    g_tree = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    want = []
    for c in chats:
        x = torch.from_numpy(c).long()
        lg = model(x[None, :-1])[0][L:]
        want.append(lg)
        F.cross_entropy(lg, x[L + 1:], reduction="sum").backward()
    g_alone = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
    model.zero_grad()
    return snr_db(torch.cat(want), got.detach()), snr_db(g_alone, torch.cat([x.reshape(-1) for x in g_tree]))


def calls_in_text(text):
    """Arguments JSON spans found by reading the rendered text itself (not
    chatfmt's bookkeeping): each <tool_call> block's body, from after its
    '"arguments": ' to before its closing brace, after the system block
    (whose tool instructions show a placeholder call)."""
    out, k = [], text.index(IM_END)
    while (a := text.find("<tool_call>\n", k)) >= 0:
        b = text.index("\n</tool_call>", a)
        body_start = a + len("<tool_call>\n")
        s = text.index('"arguments": ', body_start) + len('"arguments": ')
        out.append((s, b - 1))
        k = b
    return out


def check_arg_spans(n_chats=60, seed=3):
    """On generated chats: chatfmt's argument spans are exactly the calls'
    arguments JSON as the text shows them (and parse to the call's
    arguments); span_mask flags exactly those bytes as ARG when token
    boundaries fall on the span edges, and Packer/to_batch carry the flags
    as a subset of the loss mask.  Returns (ok, stats)."""
    import chatfmt
    import chats
    rng, cut_rng = random.Random(seed), np.random.default_rng(seed)
    ok, n_calls, n_two = True, 0, 0
    for _ in range(n_chats):
        conv, kinds = chats.conversation(rng)
        arg_spans = []
        text, spans = chatfmt.render_with_spans(conv["messages"], conv["tools"], arg_spans=arg_spans)
        calls = [c["function"]["arguments"] for m in conv["messages"] if m["role"] == "assistant"
                 for c in m.get("tool_calls") or []]
        n_calls += len(calls)
        n_two += sum(k == "call2" for k in kinds.values())
        ok &= arg_spans == calls_in_text(text) and len(arg_spans) == len(calls)
        ok &= all(json.loads(text[s:e]) == c for (s, e), c in zip(arg_spans, calls))
        ok &= all(any(s0 <= s and e <= e0 for s0, e0 in spans) for s, e in arg_spans)
        # a tokenization with random cuts plus cuts at every span edge
        raw = text.encode()
        edges = {len(text[:x].encode()) for sp in spans + arg_spans for x in sp}
        cuts = sorted(edges | set(cut_rng.integers(1, len(raw), len(raw) // 3).tolist()) | {0, len(raw)})
        nbytes = np.diff(cuts)
        x = np.arange(len(nbytes))
        m = span_mask(text, x, nbytes, spans, arg_spans)
        starts = cuts[:-1]
        got_arg = b"".join(raw[starts[i]:cuts[i + 1]] for i in x if m[i] == ARG)
        got_all = b"".join(raw[starts[i]:cuts[i + 1]] for i in x if m[i])
        ok &= got_arg == b"".join(text[s:e].encode() for s, e in arg_spans)
        ok &= got_all == b"".join(text[s:e].encode() for s, e in spans)
        # through the packer: the row's arg flags are the ARG targets, within the loss mask
        ids = np.append(x, len(x))
        pk = Packer(1 << 16, 0)
        pk.add(*next(doc_pieces(ids, m, 1 << 16)))
        pk.flush()
        b = to_batch(pk.ready)
        ok &= int(b[7].sum()) == int((m[1:] == ARG).sum()) and not bool((b[7] & ~b[2]).any())
    ok &= n_calls > 0 and n_two > 0
    return ok, {"chats": n_chats, "calls": n_calls, "two_call_replies": n_two}


def check_arg_weight(model):
    """loss(arg_weight=1) is the plain loss, bit for bit; loss(arg_weight=3)
    equals the plain mean cross entropy with every argument target counted
    three times (rows repeated: an independent path)."""
    V, T = model.cfg["vocab_size"], 96
    g = torch.Generator().manual_seed(9)
    ids, tgt = torch.randint(0, V, (2, T), generator=g), torch.randint(0, V, (2, T), generator=g)
    mask = torch.rand(2, T, generator=g) < 0.6
    arg = mask & (torch.rand(2, T, generator=g) < 0.3)
    pos, doc = torch.arange(T).expand(2, T), torch.zeros(2, T, dtype=torch.int64)
    with torch.no_grad():
        plain = model.loss(ids, tgt, mask, pos, doc)
        w1 = model.loss(ids, tgt, mask, pos, doc, arg=arg, arg_weight=1.0)
        w3 = model.loss(ids, tgt, mask, pos, doc, arg=arg, arg_weight=3.0)
        logits = model(ids)
        lg = torch.cat([logits[mask], logits[arg], logits[arg]])
        want = F.cross_entropy(lg, torch.cat([tgt[mask], tgt[arg], tgt[arg]]))
    rel = abs(w3.item() - want.item()) / want.item()
    return bool(torch.equal(plain, w1)) and rel < 1e-5, {"w1_equal": bool(torch.equal(plain, w1)),
                                                         "w3_rel_err": float(f"{rel:.2g}")}


def run_check(a):
    import spark_ref as sr
    torch.manual_seed(0)
    ok, stats = check_arg_spans()
    log({"check": "argument spans == the calls' arguments JSON; token flags == those bytes", **stats, "ok": ok})
    for tied in (True, False):
        cfg = mc.build_config("tiny", "f32", untied=not tied)   # hidden 128, 4 layers, window 16
        model = SparkLM(cfg)
        model.init_weights(1)
        with torch.no_grad():   # exercise the norms too
            for n, p in model.named_parameters():
                if n.endswith("norm.weight"):
                    p.add_(0.1 * torch.randn(p.shape))
        tmp = tempfile.mkdtemp(prefix="ember_demo_check_")
        export(model, tmp, "f32")
        ref = sr.SparkRef.load(tmp, torch.float32)
        for T in (96, 70):   # 96: blocked sliding path (multiple of 16), 70: dense path
            ids = torch.randint(0, cfg["vocab_size"], (T,))
            want = ref(ids)
            with torch.no_grad():
                got = model(ids[None])[0]
            db = snr_db(want, got)
            rel = ((want - got).abs().max() / want.abs().max()).item()
            good = db > 100
            ok &= good
            log({"check": "vs spark_ref", "tied": tied, "T": T, "snr_db": round(db, 1),
                 "max_rel": float(f"{rel:.3g}"), "ok": good})
        # packing: two documents in one row == each on its own (reset at the boundary)
        T1 = 48
        with torch.no_grad():
            ids = torch.randint(0, cfg["vocab_size"], (1, 96))
            pos = torch.cat([torch.arange(T1), torch.arange(96 - T1)])[None]
            doc = torch.cat([torch.zeros(T1), torch.ones(96 - T1)]).long()[None]
            packed = model(ids, pos, doc)[0]
            alone = torch.cat([model(ids[:, :T1])[0], model(ids[:, T1:])[0]])
        db = snr_db(alone, packed)
        good = db > 100
        ok &= good
        log({"check": "packed rows == separate documents", "tied": tied, "snr_db": round(db, 1), "ok": good})
        for T, plain in ((96, 0), (100, 4)):   # blocked and dense sliding attention
            db, gdb = check_shared_prefix(model, T, plain)
            good = db > 100 and gdb > 100
            ok &= good
            log({"check": "shared-prefix row == its chats one by one", "tied": tied, "T": T, "snr_db": round(db, 1),
                 "grad_snr_db": round(gdb, 1), "ok": good})
        good, st = check_arg_weight(model)
        ok &= good
        log({"check": "--arg-weight: W=1 == plain loss, W=3 == argument targets counted 3 times", "tied": tied,
             **st, "ok": good})
        for fn in os.listdir(tmp):
            os.remove(os.path.join(tmp, fn))
        os.rmdir(tmp)
    log("check: " + ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


# ----------------------------------------------------------------------------
# BLAS and precision
# ----------------------------------------------------------------------------
def blas_gflops():
    a, b = torch.randn(384, 384), torch.randn(384, 384)
    a @ b
    n, t = 0, time.perf_counter()
    while n < 3 or time.perf_counter() - t < 0.2:
        a @ b
        n += 1
    return 2 * 384 ** 3 * n / (time.perf_counter() - t) / 1e9


def check_blas():
    g = blas_gflops()
    log({"blas_gflops_fp32": round(g, 1), "LD_LIBRARY_PATH": os.environ.get("LD_LIBRARY_PATH", "")})
    if g < 10:
        bar = "!" * 78
        log(f"{bar}\nWARNING: fp32 matmul runs at {g:.1f} GFLOP/s: torch is using the reference BLAS.\n"
            f"  Install OpenBLAS (apt-get install libopenblas0-pthread) and run with\n"
            f"  LD_LIBRARY_PATH={OPENBLAS_DIR} /usr/bin/python3 {' '.join(sys.argv)}\n"
            f"  (fp32 training is then 10-20x faster; do not change the system BLAS alternative).\n"
            f"  bf16 autocast (--precision bf16, the default) runs its matmuls in oneDNN and barely notices.\n{bar}")
    return g


def autocast(prec):
    if prec == "bf16":
        return torch.cpu.amp.autocast(dtype=torch.bfloat16)
    return torch.autocast("cpu", enabled=False)


def random_batch(B, T, V, gen):
    ids = torch.randint(0, V, (B, T), generator=gen)
    tgt = torch.randint(0, V, (B, T), generator=gen)
    mask = torch.ones(B, T, dtype=torch.bool)
    pos = torch.arange(T).expand(B, T)
    doc = torch.zeros(B, T, dtype=torch.int64)
    return ids, tgt, mask, pos, doc


def time_steps(model, opt, prec, batch, n, warm=1):
    """Seconds per training step (forward, backward, optimizer) on one batch."""
    def step():
        with autocast(prec):
            loss = model.loss(*batch)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    for _ in range(warm):
        step()
    t = time.perf_counter()
    for _ in range(n):
        step()
    return (time.perf_counter() - t) / n


def pick_precision(model, a, n=2):
    """Time n steps in each precision on a scratch copy; return the faster."""
    import copy
    scratch = copy.deepcopy(model)
    opt = torch.optim.AdamW(scratch.parameters(), lr=1e-6)
    batch = random_batch(a.batch, a.seq_len, model.cfg["vocab_size"], torch.Generator().manual_seed(0))
    tok = a.batch * a.seq_len
    res = {p: tok / time_steps(scratch, opt, p, batch, n) for p in ("fp32", "bf16")}
    best = max(res, key=res.get)
    log({"precision_probe_tok_s": {k: round(v) for k, v in res.items()}, "use": best})
    return best


# ----------------------------------------------------------------------------
# data
# ----------------------------------------------------------------------------
def load_tokenizer_info(path):
    with open(path) as f:
        tj = json.load(f)
    vocab = tj["model"]["vocab"]
    added = tj.get("added_tokens", [])
    n = max(list(vocab.values()) + [t["id"] for t in added]) + 1
    if n != len(vocab) + len({t["id"] for t in added if t["id"] not in vocab.values()}):
        log(f"note: {path}: ids are not dense ({n} vs {len(vocab)} + {len(added)})")
    # bytes of each token: byte-level pieces map one char -> one byte
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs, k = list(bs), 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + k)
            k += 1
    char_bytes = {chr(c): 1 for c in cs}
    nbytes = np.zeros(n, dtype=np.int64)
    for piece, i in vocab.items():
        nbytes[i] = sum(char_bytes.get(ch, len(ch.encode())) for ch in piece)
    special = {}
    for t in added:
        nbytes[t["id"]] = len(t["content"].encode())
        special[t["content"]] = t["id"]
    return n, nbytes, special


def read_prose(d):
    pj, pt = os.path.join(d, "prose.jsonl"), os.path.join(d, "prose.txt")
    docs = []
    if os.path.exists(pj):
        with open(pj) as f:
            for line in f:
                if line.strip():
                    o = json.loads(line)
                    docs.append(o if isinstance(o, str) else o["text"])
    elif os.path.exists(pt):
        with open(pt) as f:
            text = f.read()
        parts = text.split(EOT) if EOT in text else text.split("\n\n")
        docs = [p.strip() for p in parts]
    return [x for x in docs if x], [p for p in (pj, pt) if os.path.exists(p)]


def read_chats(d):
    path = os.path.join(d, "chats.jsonl")
    if not os.path.exists(path):
        return [], []
    import chatfmt
    out = []
    with open(path) as f:
        for line in f:
            if line.strip():
                o = json.loads(line)
                args = []
                text, spans = chatfmt.render_with_spans(o["messages"], o.get("tools") or [], arg_spans=args)
                out.append((text, spans, args))
    return out, [path, getattr(chatfmt, "__file__", "")]


def ember_tokenize(ember, tok_path, texts):
    """One ember process for all texts: JSON string per line in, id array per line out."""
    inp = "".join(json.dumps(t) + "\n" for t in texts).encode()
    r = subprocess.run([ember, "tokenize", "-m", tok_path, "--jsonl", "--no-special"],
                       input=inp, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode:
        raise SystemExit(f"ember tokenize failed: {r.stderr.decode()[-2000:]}")
    lines = r.stdout.decode().splitlines()
    if len(lines) != len(texts):
        raise SystemExit(f"ember tokenize: {len(lines)} outputs for {len(texts)} inputs")
    return [np.asarray(json.loads(x), dtype=np.int64) for x in lines]


ARG = 2   # loss-mask value of a target inside a tool call's arguments (1: any other trained target)


def span_mask(text, x, nbytes, spans, arg_spans):
    """Loss mask of a chat of tokens x (+1 slot: the closing <|endoftext|>):
    1 on the tokens that start inside an assistant span, ARG on those that
    start inside an arguments span (char spans -> byte offsets of the token
    starts, from each piece's byte length).  None when the token bytes do
    not add up to the text."""
    tb = np.concatenate([[0], np.cumsum(nbytes[x])])    # token start bytes (+ end)
    if tb[-1] != len(text.encode()):
        return None
    m = np.zeros(len(x) + 1, dtype=np.uint8)
    for val, sp in ((1, spans), (ARG, arg_spans)):
        for s, e in sp:
            bs, be = len(text[:s].encode()), len(text[:e].encode())
            m[:len(x)][(tb[:-1] >= bs) & (tb[:-1] < be)] = val
    return m


def file_sig(paths):
    h = hashlib.sha256()
    for p in sorted(paths):
        if p and os.path.exists(p):
            with open(p, "rb") as f:
                h.update(p.encode() + b"\0" + hashlib.sha256(f.read()).digest())
    return h.hexdigest()


def build_cache(a, tok_path, nbytes, special):
    """Tokenize the corpus (or reuse the cache). Returns {kind: (ids, mask, offsets)}."""
    prose, pfiles = read_prose(a.data)
    chat_paths = [os.path.join(a.data, "chats.jsonl")]
    sig = file_sig(pfiles + chat_paths + [tok_path, os.path.join(HERE, "chatfmt.py")])
    os.makedirs(a.cache, exist_ok=True)
    meta_path = os.path.join(a.cache, "meta.json")
    if os.path.exists(meta_path):
        with open(meta_path) as f:
            meta = json.load(f)
        if meta.get("sig") == sig:
            out = {}
            for kind in meta["kinds"]:
                out[kind] = tuple(np.load(os.path.join(a.cache, f"{kind}_{x}.npy")) for x in ("ids", "mask", "off"))
            log({"cache": a.cache, "reused": True, **meta["stats"]})
            return out
    t0 = time.time()
    chats, _ = read_chats(a.data)
    if not prose and not chats:
        raise SystemExit(f"{a.data}: no prose.jsonl/prose.txt and no chats.jsonl")
    eot = special[EOT]
    texts = prose + [c[0] for c in chats]
    ids = ember_tokenize(a.ember, tok_path, texts)
    out, stats = {}, {}
    bad = 0
    for kind, lo, hi in (("prose", 0, len(prose)), ("chat", len(prose), len(texts))):
        if hi == lo:
            continue
        seqs, masks = [], []
        for k in range(lo, hi):
            x = ids[k]
            if kind == "prose":
                m = np.ones(len(x) + 1, dtype=np.uint8)
            else:
                text, spans, arg_spans = chats[k - lo]
                m = span_mask(text, x, nbytes, spans, arg_spans)
                if m is None:
                    bad += 1
                    m = np.zeros(len(x) + 1, dtype=np.uint8)
            seqs.append(np.append(x, eot))
            masks.append(m)
        lens = np.array([len(s) for s in seqs])
        off = np.concatenate([[0], np.cumsum(lens)])
        out[kind] = (np.concatenate(seqs).astype(np.uint16 if len(nbytes) <= 65536 else np.int32),
                     np.concatenate(masks), off)
        stats[kind] = {"docs": hi - lo, "tokens": int(off[-1]), "trained_tokens": int(np.count_nonzero(out[kind][1])),
                       "argument_tokens": int((out[kind][1] == ARG).sum()),
                       "mean_len": round(float(lens.mean()), 1), "max_len": int(lens.max()),
                       "docs_over_seq_len": int((lens - 1 > a.seq_len).sum())}
    if bad:
        raise SystemExit(f"{bad} chats: token bytes do not add up to the text (tokenizer normalizer?); "
                         "cannot map assistant spans to tokens")
    for kind, arrs in out.items():
        for x, arr in zip(("ids", "mask", "off"), arrs):
            np.save(os.path.join(a.cache, f"{kind}_{x}.npy"), arr)
    stats["tokenize_s"] = round(time.time() - t0, 1)
    write_json(meta_path, {"sig": sig, "kinds": sorted(out), "stats": stats})
    log({"cache": a.cache, "reused": False, **stats})
    return out


class Source:
    """Documents of one kind, visited in a seeded shuffled order, reshuffled each epoch."""

    def __init__(self, arrs, doc_idx, rng):
        self.ids, self.mask, self.off = arrs
        self.docs, self.rng, self.pos, self.epoch = np.array(doc_idx), rng, 0, 0
        self.order = self.rng.permutation(self.docs)

    def next(self):
        if self.pos == len(self.order):
            self.order, self.pos = self.rng.permutation(self.docs), 0
            self.epoch += 1
        d = self.order[self.pos]
        self.pos += 1
        s, e = self.off[d], self.off[d + 1]
        return self.ids[s:e].astype(np.int64), self.mask[s:e]


def doc_pieces(ids, mask, T):
    """A document of n+1 tokens (ending in <|endoftext|>) fills n input slots:
    inputs ids[:-1], targets ids[1:], loss mask[1:], positions from 0. Longer
    than a row: row-sized pieces that keep their positions."""
    n = len(ids) - 1
    for s in range(0, n, T):
        e = min(n, s + T)
        yield ids[s:e], ids[s + 1:e + 1], mask[s + 1:e + 1], np.arange(s, e)


class Packer:
    """First-fit packing of document pieces into rows of T slots; a row
    leaves when full or when it is the oldest of `open_rows` rows."""

    def __init__(self, T, pad, open_rows=8):
        self.T, self.pad, self.open_rows = T, pad, open_rows
        self.rows, self.ready = [], []

    def _new(self):
        T = self.T
        return dict(ids=np.full(T, self.pad), tgt=np.full(T, self.pad), mask=np.zeros(T, bool),
                    pos=np.arange(T), doc=np.full(T, -1), tree=np.zeros(T, bool), arg=np.zeros(T, bool), pre=0, fill=0,
                    ndoc=0,
                    chat_loss=0)

    def _open(self):
        if len(self.rows) >= self.open_rows:
            self.ready.append(self.rows.pop(0))
        self.rows.append(self._new())
        return len(self.rows) - 1

    def _put(self, k, x, y, m, p, tree=False, chat=False):
        row = self.rows[k]
        row["chat_loss"] += int(np.count_nonzero(m)) if chat else 0
        f, n = row["fill"], len(x)
        row["ids"][f:f + n], row["tgt"][f:f + n], row["mask"][f:f + n] = x, y, m.astype(bool)
        row["arg"][f:f + n] = m == ARG
        row["pos"][f:f + n], row["doc"][f:f + n], row["tree"][f:f + n] = p, row["ndoc"], tree
        row["fill"] += n
        row["ndoc"] += 1

    def _close_if_full(self, k):
        if self.rows[k]["fill"] == self.T:
            self.ready.append(self.rows.pop(k))

    def add(self, x, y, m, p, chat=False):
        k = next((i for i, r in enumerate(self.rows) if self.T - r["fill"] >= len(x)), None)
        if k is None:
            k = self._open()
        self._put(k, x, y, m, p, chat=chat)
        self._close_if_full(k)

    def add_tree(self, L, members):
        """A shared-prefix tree (shared_prefix.split_trees) at the start of a
        new row: the row's first L slots are the prefix its continuations see."""
        k = self._open()
        for piece in shared_prefix.tree_slots(L, members):
            self._put(k, *piece, tree=True, chat=True)
        self.rows[k]["pre"] = L
        self._close_if_full(k)

    def flush(self):
        self.ready += self.rows
        self.rows = []


def to_batch(rows):
    """(ids, tgt, mask, pos, doc, pre, tree, arg): SparkLM.loss's arguments."""
    st = lambda k, dt: torch.from_numpy(np.stack([r[k] for r in rows]).astype(dt))  # noqa: E731
    pre = torch.tensor([r["pre"] for r in rows], dtype=torch.int64)
    return (st("ids", np.int64), st("tgt", np.int64), st("mask", bool), st("pos", np.int64), st("doc", np.int64),
            pre, st("tree", bool), st("arg", bool))


class Stream:
    """Training batches: documents drawn so that prose is ~prose_frac of the
    tokens, packed into rows, B rows a batch."""

    def __init__(self, data, split, a, seed):
        rng = np.random.default_rng(seed)

        def source(k):
            r = np.random.default_rng(rng.integers(1 << 62))
            if k == "chat" and a.share_prefix:
                return shared_prefix.TreeSource(data[k], split[k], r, a.seq_len, a.system_end_id)
            return Source(data[k], split[k], r)
        self.src = {k: source(k) for k in data if len(split[k])}
        self.frac = a.prose_frac if "chat" in self.src else 1.0
        if "prose" not in self.src:
            self.frac = 0.0
        self.count = {"prose": 0, "chat": 0}
        self.T, self.B, self.pad = a.seq_len, a.batch, a.pad_id
        self.packer = Packer(self.T, self.pad)
        self.slots = self.used = 0
        # what the drawn chats would fill one by one, and the slots they took
        self.chat_alone = self.chat_slots = 0
        self.loss_tok = {"prose": 0, "chat": 0}   # targets with loss handed out, by kind

    def next_batch(self):
        while len(self.packer.ready) < self.B:
            tot = self.count["prose"] + self.count["chat"]
            kind = "prose" if self.count["prose"] <= self.frac * tot and self.frac > 0 else "chat"
            item = self.src[kind].next()
            if isinstance(self.src[kind], Source):
                item = (0, [item])
            L, members = item
            alone = sum(len(x) - 1 for x, _ in members)
            slots = alone - (len(members) - 1) * L
            self.count[kind] += slots + len(members)   # + each document's <|endoftext|>, as always counted
            if kind == "chat":
                self.chat_alone += alone
                self.chat_slots += slots
            if L:
                self.packer.add_tree(L, members)
                continue
            for piece in doc_pieces(*members[0], self.T):
                self.packer.add(*piece, chat=kind == "chat")
        rows, self.packer.ready = self.packer.ready[:self.B], self.packer.ready[self.B:]
        self.slots += self.B * self.T
        self.used += sum(r["fill"] for r in rows)
        chat = sum(r["chat_loss"] for r in rows)
        self.loss_tok["chat"] += chat
        self.loss_tok["prose"] += sum(int(r["mask"].sum()) for r in rows) - chat
        return to_batch(rows)

    def epochs(self):
        return {k: round(s.epoch + s.pos / len(s.order), 3) for k, s in self.src.items()}


def val_batches(data, split, a):
    """Held-out rows per kind (deterministic), at most a.val_rows rows each."""
    out = {}
    for kind, idx in split.items():
        if not len(idx):
            continue
        ids, mask, off = data[kind]
        pk = Packer(a.seq_len, a.pad_id)
        for d in idx:
            for piece in doc_pieces(ids[off[d]:off[d + 1]].astype(np.int64), mask[off[d]:off[d + 1]], a.seq_len):
                pk.add(*piece)
            if len(pk.ready) >= a.val_rows:
                break
        pk.flush()
        rows = pk.ready[:a.val_rows]
        out[kind] = [to_batch(rows[i:i + a.batch]) for i in range(0, len(rows), a.batch)]
    return out


@torch.no_grad()
def evaluate(model, vb, prec):
    model.eval()
    """Mean held-out loss per kind, and chat_args: the chats' loss on the
    targets inside tool-call arguments alone (what --arg-weight aims at)."""
    res = {}
    for kind, batches in vb.items():
        tot, n, tot_arg, n_arg = 0.0, 0, 0.0, 0
        for b in batches:
            if bool(b[2].any()):
                with autocast(prec):
                    ce, arg = model.token_losses(*b)
                tot += ce.sum().item()
                n += len(ce)
                tot_arg += ce[arg].sum().item()
                n_arg += int(arg.sum())
        if n:
            res[kind] = tot / n
        if n_arg:
            res[kind + "_args"] = tot_arg / n_arg
    model.train()
    return res


# ----------------------------------------------------------------------------
# training
# ----------------------------------------------------------------------------
def lr_at(step, a, total):
    warm = min(a.warmup, max(1, total // 10))   # short runs: at most a tenth of the steps
    if step < warm:
        return a.lr * (step + 1) / warm
    t = min(1.0, (step - warm) / max(1, total - warm))
    return a.lr * (a.min_lr_frac + (1 - a.min_lr_frac) * 0.5 * (1 + math.cos(math.pi * t)))


def make_optimizer(model, a):
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    rest = [p for n, p in model.named_parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay},
                              {"params": rest, "weight_decay": 0.0}], lr=a.lr, betas=(0.9, 0.95), eps=1e-8, foreach=True)


def split_docs(data, frac, seed):
    rng = np.random.default_rng(seed + 7919)
    train, val = {}, {}
    for kind, (_, _, off) in data.items():
        n = len(off) - 1
        perm = rng.permutation(n)
        k = max(1, int(round(n * frac))) if n > 1 else 0
        val[kind], train[kind] = np.sort(perm[:k]), np.sort(perm[k:])
    return train, val


def token_budget(arrs, end_id):
    """Where a chat corpus's tokens are: the system block (tool list, up to
    its <|im_end|>), the tokens with loss (assistant replies) and the rest
    (user turns, tool results), as shares of all chat tokens."""
    ids, mask, off = arrs
    system = sum(int(np.argmax(ids[off[d]:off[d + 1]] == end_id)) + 1 for d in range(len(off) - 1))
    tot, trained = int(off[-1]), int(np.count_nonzero(mask))
    return {"tokens": tot, "system_block": round(system / tot, 3), "with_loss": round(trained / tot, 3),
            "arguments": round(int((mask == ARG).sum()) / tot, 3),
            "other_context": round((tot - system - trained) / tot, 3)}


def train(a):
    t_start = time.time()
    torch.manual_seed(a.seed)
    random.seed(a.seed)
    check_blas()
    tok_path = a.tokenizer or os.path.join(a.out, "tokenizer.json")
    if not os.path.exists(tok_path):
        raise SystemExit(f"{tok_path}: no tokenizer (reference/demo/tokenizer.py writes it; or pass --tokenizer)")
    vocab, nbytes, special = load_tokenizer_info(tok_path)
    if a.vocab and a.vocab != vocab:
        raise SystemExit(f"--vocab {a.vocab} but {tok_path} has {vocab} ids")
    if EOT not in special:
        raise SystemExit(f"{tok_path}: no {EOT} added token")
    a.pad_id = special[EOT]
    if not os.path.exists(a.ember):
        raise SystemExit(f"{a.ember}: not built (make -j2 build/ember)")
    a.system_end_id = special[IM_END]
    data = build_cache(a, tok_path, nbytes, special)
    if "chat" in data:
        log({"chat_tokens": token_budget(data["chat"], special[IM_END])})
    if "chat" in data:
        lens = np.diff(data["chat"][2]) - 1
        over = int((lens > a.seq_len).sum())
        if over > 0.05 * len(lens):
            log(f"WARNING: {over} of {len(lens)} chats are longer than --seq-len {a.seq_len} (mean "
                f"{lens.mean():.0f}, p95 {np.percentile(lens, 95):.0f}, max {lens.max()} tokens): their later "
                "pieces train without the system prompt and the tools; consider a longer --seq-len "
                "(a multiple of --window)")
    if a.val_data:   # a separate held-out corpus: every document of --data trains
        val_a = argparse.Namespace(**{**vars(a), "data": a.val_data, "cache": os.path.join(a.val_data, "tokens")})
        val_data = build_cache(val_a, tok_path, nbytes, special)
        train_idx = {k: np.arange(len(off) - 1) for k, (_, _, off) in data.items()}
        val_idx = {k: np.arange(len(off) - 1) for k, (_, _, off) in val_data.items()}
    else:
        val_data = data
        train_idx, val_idx = split_docs(data, a.val_frac, a.seed)

    cfg = demo_config(a, vocab, special)
    model = SparkLM(cfg)
    model.init_weights(a.seed)
    if a.init:
        init_from(model, a.init)
    nparams = count_params(model)
    log({"params": nparams, "non_embedding": nparams - cfg["vocab_size"] * cfg["hidden_size"],
         "config": {k: cfg[k] for k in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                                        "num_key_value_heads", "head_dim", "intermediate_size", "sliding_window")}})
    opt = make_optimizer(model, a)
    step, best, bad_evals, total = 0, float("inf"), 0, a.steps
    if a.resume and os.path.exists(a.state):
        st = torch.load(a.state)
        model.load_state_dict(st["model"])
        opt.load_state_dict(st["opt"])
        step, best = st["step"], st["best"]
        total = a.steps if a.steps is not None else st.get("total")
        log({"resumed": a.state, "step": step, "best": best})
    prec = a.precision if a.precision != "auto" else pick_precision(model, a)

    stream = Stream(data, train_idx, a, a.seed + step)
    vb = val_batches(val_data, val_idx, a)
    log({"val_rows": {k: sum(len(b[0]) for b in v) for k, v in vb.items()},
         "val_tokens": {k: int(sum(b[2].sum() for b in v)) for k, v in vb.items()}})
    budget = a.minutes * 60 - (time.time() - t_start)
    t0 = time.time()

    def val_score(r):
        if "prose" in r and "chat" in r:
            return a.prose_frac * r["prose"] + (1 - a.prose_frac) * r["chat"]
        return next(iter(r.values())) if r else float("nan")

    te = time.time()
    r = evaluate(model, vb, prec)
    t_eval = time.time() - te
    log({"step": step, "val": round(val_score(r), 4), **{f"val_{k}": round(v, 4) for k, v in r.items()},
         "eval_s": round(t_eval, 1)})
    tok_step = a.batch * a.seq_len
    model.train()
    trained_tok, t_train, t_log = 0, 0.0, time.time()
    losses, last_eval, run_steps = [], step, 0
    stop = "steps"
    while total is None or step < total:
        if time.time() - t0 > budget:
            stop = "minutes"
            break
        ts = time.time()
        batch = stream.next_batch()
        if not bool(batch[2].any()):   # no trained token in it (only possible with tiny batches)
            continue
        for g in opt.param_groups:
            g["lr"] = lr_at(step, a, total if total is not None else 1 << 30)
        with autocast(prec):
            loss = model.loss(*batch, arg_weight=a.arg_weight)
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        step += 1
        trained_tok += tok_step
        t_train += time.time() - ts
        losses.append(loss.item())
        run_steps += 1
        if total is None and run_steps == a.estimate_after:
            # cosine length from the measured step and eval time
            per_step = t_train / run_steps + t_eval / a.eval_every
            total = step + int((budget - (time.time() - t0)) / per_step)
            log({"estimated_total_steps": total, "s_per_step": round(t_train / run_steps, 3),
                 "note": "repeat this run deterministically with --steps %d" % total})
        if step % a.log_every == 0:
            now = time.time()
            log({"step": step, "loss": round(sum(losses) / len(losses), 4), "lr": float(f"{opt.param_groups[0]['lr']:.3g}"),
                 "grad_norm": round(float(gn), 3), "tok_s": round(a.log_every * tok_step / (now - t_log)),
                 "pack_eff": round(stream.used / stream.slots, 3), "epochs": stream.epochs(),
                 "loss_tok_s": {k: round(v / t_train) for k, v in stream.loss_tok.items()},
                 "chat_sharing": round(stream.chat_alone / max(1, stream.chat_slots), 3),
                 "elapsed_min": round((now - t_start) / 60, 2)})
            losses, t_log = [], now
        if step % a.eval_every == 0 or step == total:
            te = time.time()
            r = evaluate(model, vb, prec)
            t_eval, last_eval = time.time() - te, step
            v = val_score(r)
            improved = v < best - a.min_delta
            if improved:
                best, bad_evals = v, 0
                export(model, a.out, "bf16", special)
            else:
                bad_evals += 1
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step, "best": best,
                        "total": total, "args": vars(a)}, a.state + ".tmp")
            os.replace(a.state + ".tmp", a.state)
            log({"step": step, "val": round(v, 4), **{f"val_{k}": round(x, 4) for k, x in r.items()},
                 "best": round(best, 4), "saved": improved, "tokens": trained_tok,
                 "tok_s_train": round(trained_tok / max(t_train, 1e-9)),
                 "loss_tokens": dict(stream.loss_tok), "eval_s": round(t_eval, 1),
                 "elapsed_min": round((time.time() - t_start) / 60, 2)})
            t_log = time.time()
            if bad_evals >= a.patience:
                stop = "early (held-out loss stopped improving)"
                break
    if best == float("inf") or (step != last_eval and stop != "early (held-out loss stopped improving)"):
        r = evaluate(model, vb, prec)
        v = val_score(r)
        saved = v < best - a.min_delta or best == float("inf")
        if saved:
            best = v
            export(model, a.out, "bf16", special)
        log({"step": step, "val": round(v, 4), **{f"val_{k}": round(x, 4) for k, x in r.items()},
             "best": round(best, 4), "saved": saved, "tokens": trained_tok})
    log({"done": stop, "steps": step, "tokens": trained_tok, "best_val": round(best, 4), "precision": prec,
         "params": nparams, "minutes": round((time.time() - t_start) / 60, 1), "out": a.out})
    return 0


def bench(a):
    """Training-step throughput at the configured size on random tokens."""
    check_blas()
    vocab = a.vocab or 6144
    cfg = demo_config(a, vocab, None)
    model = SparkLM(cfg)
    model.init_weights(0)
    opt = make_optimizer(model, a)
    batch = random_batch(a.batch, a.seq_len, vocab, torch.Generator().manual_seed(0))
    tok = a.batch * a.seq_len
    n = count_params(model)
    res = {}
    for prec in (("fp32", "bf16") if a.precision == "auto" else (a.precision,)):
        s = time_steps(model, opt, prec, batch, a.bench_steps)
        res[prec] = tok / s
        log({"precision": prec, "s_per_step": round(s, 3), "tok_s": round(tok / s), "batch": a.batch,
             "seq_len": a.seq_len, "threads": torch.get_num_threads(), "params": n,
             "tokens_in_100_min": int(tok / s * 6000)})
    if len(res) == 2:
        log({"faster": max(res, key=res.get), "ratio_bf16_over_fp32": round(res["bf16"] / res["fp32"], 2)})
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="equivalence with spark_ref.py on a tiny model")
    mode.add_argument("--bench", action="store_true", help="tokens/s of fp32 vs bf16 autocast")
    ap.add_argument("--data", default=None, help="corpus directory (corpus.py's output)")
    ap.add_argument("--out", default=os.path.join(ROOT, "models", "demo"))
    ap.add_argument("--tokenizer", default=None, help="tokenizer.json (default: OUT/tokenizer.json)")
    ap.add_argument("--ember", default=os.path.join(ROOT, "build", "ember"))
    ap.add_argument("--cache", default=None, help="token cache (default: DATA/tokens)")
    ap.add_argument("--state", default=os.path.join(ROOT, "build", "demo-train-state.pt"))
    ap.add_argument("--resume", action="store_true", help="continue from --state")
    ap.add_argument("--init", default=None, metavar="DIR",
                    help="start from the weights of a trained model directory (a second stage; fresh optimizer)")
    # model
    ap.add_argument("--vocab", type=int, default=None, help="default: from the tokenizer (6144 for --bench)")
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--intermediate", type=int, default=768)
    ap.add_argument("--window", type=int, default=64)
    ap.add_argument("--max-pos", type=int, default=4096)
    # data
    ap.add_argument("--seq-len", type=int, default=1024,
                    help="row length (a multiple of --window): 1024 holds >99%% of the demo chats whole")
    ap.add_argument("--batch", type=int, default=8, help="rows per step")
    ap.add_argument("--prose-frac", type=float, default=0.3, help="share of prose tokens")
    ap.add_argument("--val-frac", type=float, default=0.02)
    ap.add_argument("--val-data", default=None, metavar="DIR",
                    help="held-out corpus (corpus.py output, another seed): every document of --data then "
                         "trains, and runs on different corpora report comparable held-out losses")
    ap.add_argument("--share-prefix", action="store_true",
                    help="train runs of chats with one system prompt (corpus.py --family) as trees: the "
                         "prompt once a row, each chat's rest attending to it (reference/demo/shared_prefix.py)")
    ap.add_argument("--val-rows", type=int, default=32, help="held-out rows per kind at most")
    # optimisation
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--min-lr-frac", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--arg-weight", type=float, default=1.0, metavar="W",
                    help="loss weight of the targets inside a tool call's arguments JSON (1: every trained "
                         "target alike; the loss is normalised by the total weight)")
    ap.add_argument("--steps", type=int, default=None, help="cosine length and step limit")
    ap.add_argument("--minutes", type=float, default=110.0, help="wall-clock budget")
    ap.add_argument("--estimate-after", type=int, default=20, help="steps timed before fixing the cosine length")
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--log-every", type=int, default=10)
    ap.add_argument("--patience", type=int, default=4, help="evals without improvement before stopping")
    ap.add_argument("--min-delta", type=float, default=1e-3)
    ap.add_argument("--precision", choices=["auto", "fp32", "bf16"], default="bf16",
                    help="bf16 autocast measured ~1.9x faster than fp32 + OpenBLAS here; auto: time both")
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--bench-steps", type=int, default=3)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.check:
        return run_check(a)
    if a.bench:
        return bench(a)
    if not a.data:
        ap.error("--data DIR is required for training (or --check / --bench)")
    a.cache = a.cache or os.path.join(a.data, "tokens")
    return train(a)


if __name__ == "__main__":
    sys.exit(main())
