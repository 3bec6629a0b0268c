"""PyTorch reference for the Spark-X2.5 decoder (model_type "spark2_5").

Follows the public modeling_spark.py semantics as pinned by
../shared/spec/spark-x2.5.md (beside the repository): whole-sequence forward (an optional K/V
"past" exists only to make greedy decoding affordable), compute dtype float32
or float64, weights upcast from the checkpoint dtype to the compute dtype.

Numerics that matter (see the spec, "Numerics worth knowing"):
  * RoPE angles are ALWAYS float32 (fp32 position x fp32 inv_freq), like the
    modeling code. In float64 mode only cos/sin and the rotation are float64.
  * RMSNorm: x * rsqrt(mean(x^2) + eps), then weight * normed.
  * softmax subtracts the row max first, in the compute dtype.
  * GELU is the exact erf form unless gelu="tanh".

Matmul backends (this host has only netlib BLAS, ~2 GFLOP/s): float32 linears
with more than 8 rows go through oneDNN (mkldnn) when torch has it; float64
linears split rows across threads (same per-element accumulation order as one
call). Set EMBER_REF_PLAIN=1 to force plain torch matmuls everywhere. The
backend changes only fp32 rounding, i.e. noise at the ~120 dB floor.
"""
import json
import math
import os
import struct
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
import torch.nn.functional as F

_NTHREADS = max(1, len(os.sched_getaffinity(0)))
torch.set_num_threads(_NTHREADS)
_PLAIN = os.environ.get("EMBER_REF_PLAIN", "") not in ("", "0")
_ONEDNN = (not _PLAIN) and torch.backends.mkldnn.is_available()
_POOL = ThreadPoolExecutor(_NTHREADS) if (_NTHREADS > 1 and not _PLAIN) else None

# ----------------------------------------------------------------------------
# safetensors reader (written from the format description, no dependency)
# ----------------------------------------------------------------------------
_ST_DTYPES = {"F64": ("<f8", 8), "F32": ("<f4", 4), "F16": ("<f2", 2),
              "BF16": ("<u2", 2), "I64": ("<i8", 8), "I32": ("<i4", 4)}


def read_safetensors_header(path):
    """Return (header dict without __metadata__, metadata, data_start)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n).decode("utf-8"))
    meta = header.pop("__metadata__", None)
    return header, meta, 8 + n


def bf16_bits_to_f32(u16):
    """bf16 -> float32 exactly: the bf16 bits are the top half of the f32."""
    return (u16.astype(np.uint32) << 16).view(np.float32)


def load_safetensors(path, out=None):
    """Load every tensor of one file as a float32 (or float64 for F64) torch
    tensor. bf16/f16 -> f32 is exact, so nothing is lost by storing f32."""
    out = {} if out is None else out
    header, _, start = read_safetensors_header(path)
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    for name, ent in header.items():
        dt = ent["dtype"]
        if dt not in _ST_DTYPES:
            raise ValueError(f"{path}: tensor {name}: unsupported dtype {dt}")
        b, e = ent["data_offsets"]
        npdt, size = _ST_DTYPES[dt]
        shape = tuple(ent["shape"])
        if e - b != size * int(np.prod(shape, dtype=np.int64)):
            raise ValueError(f"{path}: tensor {name}: byte size mismatch")
        a = raw[start + b:start + e].view(npdt).reshape(shape)
        if dt == "BF16":
            a = bf16_bits_to_f32(a)
        elif dt == "F16":
            a = a.astype(np.float32)
        out[name] = torch.from_numpy(np.array(a, dtype=a.dtype.newbyteorder("=")))
    del raw
    return out


def load_checkpoint_tensors(model_dir):
    single = os.path.join(model_dir, "model.safetensors")
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
        out = {}
        for fn in files:
            load_safetensors(os.path.join(model_dir, fn), out)
        return out
    if os.path.exists(single):
        return load_safetensors(single)
    raise FileNotFoundError(f"{model_dir}: no model.safetensors(.index.json)")


# ----------------------------------------------------------------------------
# config
# ----------------------------------------------------------------------------
LAYER_TYPES = ("sliding_attention", "full_attention")
# flags of the re-uploaded variant ("KV sharpening", int4 layers) and any
# quantisation config: this reference cannot run them, so refuse loudly.
_UNSUPPORTED_SUBSTRINGS = ("sharpen", "int4", "quantiz")


class SparkConfig:
    def __init__(self, d):
        def need(k):
            if k not in d:
                raise ValueError(f"config.json: missing key {k!r}")
            return d[k]
        mt = d.get("model_type", "spark2_5")
        if mt != "spark2_5":
            raise ValueError(f"config.json: model_type {mt!r} is not 'spark2_5'")
        for k, v in d.items():
            if any(s in k.lower() for s in _UNSUPPORTED_SUBSTRINGS) and v:
                raise ValueError(f"config.json: unsupported feature key {k!r}={v!r}")
        if d.get("rope_scaling"):
            raise ValueError("config.json: unsupported key 'rope_scaling'")
        self.hidden = int(need("hidden_size"))
        self.n_layers = int(need("num_hidden_layers"))
        self.heads = int(need("num_attention_heads"))
        self.kv_heads = int(need("num_key_value_heads"))
        self.head_dim = int(need("head_dim"))  # decoupled: never hidden/heads
        self.inter = int(need("intermediate_size"))
        self.vocab = int(need("vocab_size"))
        self.eps = float(d.get("rms_norm_eps", 1e-6))
        self.window = int(need("sliding_window"))
        self.attn_bias = bool(d.get("attention_bias", False))
        self.mlp_bias = bool(d.get("mlp_bias", False))
        self.tied = bool(d.get("tie_word_embeddings", True))
        if d.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"config.json: hidden_act {d['hidden_act']!r} (must be 'gelu')")
        if not d.get("headwise_attn_output_gate", True):
            raise ValueError("config.json: headwise_attn_output_gate=false is not supported")
        self.gate_mode = d.get("gate_attn_act_mode", "sigmoid")
        if self.gate_mode not in ("sigmoid", "silu"):
            raise ValueError(f"config.json: gate_attn_act_mode {self.gate_mode!r}")
        if self.heads % self.kv_heads:
            raise ValueError("config.json: num_attention_heads % num_key_value_heads != 0")
        self.layer_types = list(need("layer_types"))
        if len(self.layer_types) != self.n_layers or any(t not in LAYER_TYPES for t in self.layer_types):
            raise ValueError(f"config.json: bad layer_types {self.layer_types!r}")
        rp = d.get("rope_parameters") or {}
        self.rope = {}
        for t in LAYER_TYPES:
            p = rp.get(t) or {}
            if p.get("rope_type", "default") != "default":
                raise ValueError(f"config.json: rope_parameters.{t}.rope_type {p['rope_type']!r}")
            theta = float(p.get("rope_theta", 10000.0))  # spec: missing theta = 1e4
            factor = float(p.get("partial_rotary_factor", 1.0))
            rot = int(self.head_dim * factor)
            if rot % 2 or not 0 < rot <= self.head_dim:
                raise ValueError(f"config.json: rope_parameters.{t}: rotary dims {rot}")
            self.rope[t] = (theta, rot)
        self.raw = d

    @classmethod
    def from_dir(cls, model_dir):
        with open(os.path.join(model_dir, "config.json")) as f:
            return cls(json.load(f))


# ----------------------------------------------------------------------------
# building blocks
# ----------------------------------------------------------------------------
def linear(x, w, b=None):
    """x @ w^T (+ b); x [T, in], w [out, in], both already in compute dtype."""
    if x.dtype == torch.float32 and _ONEDNN and x.shape[0] > 8:   # GEMV: plain is faster
        y = torch._C._nn.mkldnn_linear(x.contiguous().to_mkldnn(), w.contiguous(), None).to_dense()
    elif _POOL is not None and x.dtype == torch.float64 and x.shape[0] >= 2 * _NTHREADS:
        wt = w.t()
        parts = _POOL.map(lambda c: c @ wt, x.split(-(-x.shape[0] // _NTHREADS)))
        y = torch.cat(list(parts))
    else:
        y = x @ w.t()
    return y if b is None else y + b


def rmsnorm(x, w, eps):
    normed = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return w * normed


def rope_inv_freq(theta, rot):
    """float32 [rot/2], the modeling code's expression. NOTE: torch's float32
    pow is not correctly rounded (1 ulp off at j=111 of theta 1e4, rot 256 on
    this host), so bit-exact RoPE needs this table; golden.py records it."""
    return 1.0 / (theta ** (torch.arange(0, rot, 2, dtype=torch.int64).float() / rot))


def rope_cos_sin(positions, theta, rot, dtype):
    """cos/sin [T, rot]. Angles in float32 exactly as the modeling code does
    (fp32 position x fp32 inv_freq, one rounding), cos/sin in compute dtype."""
    inv_freq = rope_inv_freq(theta, rot)
    t = positions.to(torch.float32)
    freqs = torch.outer(t, inv_freq)                     # float32 angles
    emb = torch.cat([freqs, freqs], dim=-1).to(dtype)    # float64: cast the fp32 angles
    return emb.cos(), emb.sin()


def apply_rope(x, cos, sin, rot):
    """NeoX rotate-half on the leading rot dims of x [..., T, head_dim]."""
    xr, xp = x[..., :rot], x[..., rot:]
    x1, x2 = xr[..., :rot // 2], xr[..., rot // 2:]
    rotated = torch.cat([-x2, x1], dim=-1)
    return torch.cat([xr * cos + rotated * sin, xp], dim=-1)


def attention_mask(q_pos, k_pos, sliding, window):
    """bool [Tq, Tk]: key j visible to query i iff j <= i (and i-j < window)."""
    diff = q_pos[:, None] - k_pos[None, :]
    m = diff >= 0
    if sliding:
        m &= diff < window
    return m


def attend(q, k, v, mask, scale):
    """q [H, T, d], k/v [KV, S, d] -> [H, T, d]. GQA by grouping query heads:
    query head h uses kv head h // (H // KV)."""
    H, T, d = q.shape
    KV = k.shape[0]
    G = H // KV
    out = torch.empty_like(q)
    for kv in range(KV):           # per kv head keeps the [G*T, S] score block small
        qg = q[kv * G:(kv + 1) * G].reshape(G * T, d)
        s = linear(qg, k[kv]).view(G, T, -1) * scale
        s = s.masked_fill(~mask, float("-inf"))
        s = s - s.amax(-1, keepdim=True)
        p = s.exp()
        p = p / p.sum(-1, keepdim=True)
        o = linear(p.reshape(G * T, -1), v[kv].t().contiguous())
        out[kv * G:(kv + 1) * G] = o.view(G, T, d)
    return out


def gelu(x, mode):
    return F.gelu(x, approximate="tanh" if mode == "tanh" else "none")


# ----------------------------------------------------------------------------
# model
# ----------------------------------------------------------------------------
class SparkRef:
    """model = SparkRef.load(dir, dtype=torch.float32); logits = model(ids)."""

    def __init__(self, cfg, tensors, dtype=torch.float32, gelu_mode="erf"):
        if dtype not in (torch.float32, torch.float64):
            raise ValueError("dtype must be torch.float32 or torch.float64")
        self.cfg, self.t, self.dtype, self.gelu_mode = cfg, tensors, dtype, gelu_mode
        self._check_tensors()

    @classmethod
    def load(cls, model_dir, dtype=torch.float32, gelu_mode="erf", tensors=None):
        cfg = SparkConfig.from_dir(model_dir)
        return cls(cfg, tensors if tensors is not None else load_checkpoint_tensors(model_dir),
                   dtype, gelu_mode)

    def expected_shapes(self):
        c = self.cfg
        qkv = (c.heads + 2 * c.kv_heads) * c.head_dim
        s = {"model.embedding.weight": (c.vocab, c.hidden), "model.norm.weight": (c.hidden,)}
        if not c.tied:
            s["lm_head.weight"] = (c.vocab, c.hidden)
        for i in range(c.n_layers):
            p = f"model.layers.{i}."
            s[p + "input_layernorm.weight"] = (c.hidden,)
            s[p + "post_attention_layernorm.weight"] = (c.hidden,)
            s[p + "self_attn.q_k_v_proj.weight"] = (qkv, c.hidden)
            s[p + "self_attn.g_proj.weight"] = (c.heads, c.hidden)
            s[p + "self_attn.out_proj.weight"] = (c.hidden, c.heads * c.head_dim)
            if c.attn_bias:
                s[p + "self_attn.q_k_v_proj.bias"] = (qkv,)
                s[p + "self_attn.g_proj.bias"] = (c.heads,)
                s[p + "self_attn.out_proj.bias"] = (c.hidden,)
            for n, shp in (("gate_proj", (c.inter, c.hidden)), ("up_proj", (c.inter, c.hidden)),
                           ("down_proj", (c.hidden, c.inter))):
                s[p + f"mlp.{n}.weight"] = shp
                if c.mlp_bias:
                    s[p + f"mlp.{n}.bias"] = (shp[0],)
        return s

    def _check_tensors(self):
        exp = self.expected_shapes()
        for n, shp in exp.items():
            if n not in self.t:
                raise ValueError(f"checkpoint: missing tensor {n}")
            if tuple(self.t[n].shape) != shp:
                raise ValueError(f"checkpoint: {n} has shape {tuple(self.t[n].shape)}, want {shp}")
        extra = sorted(set(self.t) - set(exp))
        if extra:
            raise ValueError(f"checkpoint: unexpected tensors {extra[:5]}")

    def w(self, name):
        """Weight in compute dtype. Converted on use (no cached copy), so a
        float64 run only ever holds one layer's float64 weights."""
        t = self.t.get(name)
        return None if t is None else t.to(self.dtype)

    def layer(self, i, x, positions, past=None, return_parts=False):
        """One decoder layer. x [T, hidden] (compute dtype), positions int64 [T]
        absolute. past: (k, v) [KV, S, d] already rotated, for earlier tokens.
        Returns (x_out, (k_all, v_all)) and optionally the intermediates."""
        c, p = self.cfg, f"model.layers.{i}."
        H, KV, d, T = c.heads, c.kv_heads, c.head_dim, x.shape[0]
        ltype = c.layer_types[i]
        theta, rot = c.rope[ltype]

        h = rmsnorm(x, self.w(p + "input_layernorm.weight"), c.eps)
        qkv = linear(h, self.w(p + "self_attn.q_k_v_proj.weight"), self.w(p + "self_attn.q_k_v_proj.bias"))
        q = qkv[:, :H * d].reshape(T, H, d).transpose(0, 1)
        k = qkv[:, H * d:(H + KV) * d].reshape(T, KV, d).transpose(0, 1)
        v = qkv[:, (H + KV) * d:].reshape(T, KV, d).transpose(0, 1)
        g = linear(h, self.w(p + "self_attn.g_proj.weight"), self.w(p + "self_attn.g_proj.bias"))
        gate = torch.sigmoid(g) if c.gate_mode == "sigmoid" else F.silu(g)   # [T, H]

        cos, sin = rope_cos_sin(positions, theta, rot, self.dtype)
        q = apply_rope(q, cos, sin, rot)
        k = apply_rope(k, cos, sin, rot)
        if past is not None:
            k = torch.cat([past[0], k], dim=1)
            v = torch.cat([past[1], v], dim=1)
        k_pos = torch.arange(k.shape[1], dtype=torch.int64)
        mask = attention_mask(positions, k_pos, ltype == "sliding_attention", c.window)
        o = attend(q, k, v, mask, 1.0 / math.sqrt(d))             # [H, T, d]
        o = o * gate.t()[:, :, None]                              # head-wise gate
        o = o.transpose(0, 1).reshape(T, H * d)
        attn_out = linear(o, self.w(p + "self_attn.out_proj.weight"), self.w(p + "self_attn.out_proj.bias"))
        x = x + attn_out

        h2 = rmsnorm(x, self.w(p + "post_attention_layernorm.weight"), c.eps)
        a = linear(h2, self.w(p + "mlp.gate_proj.weight"), self.w(p + "mlp.gate_proj.bias"))
        u = linear(h2, self.w(p + "mlp.up_proj.weight"), self.w(p + "mlp.up_proj.bias"))
        x = x + linear(gelu(a, self.gelu_mode) * u, self.w(p + "mlp.down_proj.weight"),
                       self.w(p + "mlp.down_proj.bias"))
        if return_parts:
            return x, (k, v), dict(h=h, q=q, k=k, v=v, gate=gate, attn_out=attn_out)
        return x, (k, v)

    @torch.no_grad()
    def forward(self, ids, rows=None, past=None):
        """ids: int sequence [T]. rows: optional positions (indices into ids)
        whose logits to return (default all). past: list of per-layer (k, v)
        from an earlier call (positions continue after it). Returns logits
        [len(rows) or T, vocab] in compute dtype, and the new past."""
        ids = torch.as_tensor(ids, dtype=torch.int64).reshape(-1)
        start = 0 if past is None else past[0][0].shape[1]
        positions = torch.arange(start, start + ids.shape[0], dtype=torch.int64)
        x = self.t["model.embedding.weight"][ids].to(self.dtype)   # residual in compute dtype
        new_past = []
        for i in range(self.cfg.n_layers):
            x, kv = self.layer(i, x, positions, None if past is None else past[i])
            new_past.append(kv)
        if rows is not None:
            x = x[torch.as_tensor(rows, dtype=torch.int64)]
        h = rmsnorm(x, self.w("model.norm.weight"), self.cfg.eps)
        head = "model.embedding.weight" if self.cfg.tied else "lm_head.weight"
        return linear(h, self.w(head)), new_past

    def __call__(self, ids, rows=None):
        return self.forward(ids, rows)[0]
