#!/usr/bin/python3
"""PyTorch reference of the Qwen3-TTS Code2Wav decoder (the 12 Hz speech tokenizer's decoder).

  /usr/bin/python3 reference/code2wav_ref.py --model DIR --codes CODES.json --out WAVE.f32
      [--chunked] [--float64]

DIR is a Qwen3-TTS checkpoint (its speech_tokenizer/ is read) or a speech
tokenizer directory itself.  CODES.json is a list of frames of 16 codes each
(frame-major), or an object whose "frames" key holds that list (what
`ember tts-codes --json` prints).  WAVE.f32 receives raw little-endian float32
samples, 1920 per frame at 24 kHz.  One JSON line goes to stdout: frames,
samples, rms, peak, clipped (fraction of samples with |x| >= 1).

Follows QwenLM/Qwen3-TTS qwen_tts/core/tokenizer_12hz/modeling_qwen3_tts_tokenizer_v2.py
(Qwen3TTSTokenizerV2Decoder.forward and chunked_decode), written here from the
description, in plain torch ops on tensors (no nn.Module, no transformers):

  codes [Q, T] (int64, 0 <= c < codebook_size)
  1 dequantise: codebook_k = embedding_sum_k / clamp(cluster_usage_k, min 1e-5);
    z = rvq_first.output_proj(E_0[c_0]) + rvq_rest.output_proj(sum_{k>=1} E_k[c_k])
    (1x1 convolutions without bias, codebook_dim/2 -> codebook_dim)
  2 pre_conv: causal Conv1d codebook_dim -> latent_dim, k3
  3 pre_transformer: input_proj (latent -> hidden, bias); per layer
      h += attn_scale * o_proj(attention(rms_norm(h)))
      h += mlp_scale  * down(silu(gate(rms_norm(h))) * up(rms_norm(h)))
    with NeoX rotate-half RoPE (theta = rope_theta, dim = head_dim, positions
    0..T-1 of this forward call), scale head_dim^-0.5, softmax in float32 and
    the sliding-window causal mask (key j visible to query i iff
    i - sliding_window < j <= i); then rms_norm, output_proj (hidden -> latent, bias)
  4 per upsampling ratio r: ConvTranspose1d k=r stride r (nothing trimmed),
    ConvNeXt: x + gamma * pw2(gelu_erf(pw1(layer_norm_1e-6(causal_dwconv_k7(x)))))
  5 decoder.0: causal Conv1d latent -> decoder_dim, k7
  6 per upsample rate r (block b = 1..4, channels C/2^(b-1) -> C/2^b):
    SnakeBeta, ConvTranspose1d k=2r stride r with the last r samples dropped,
    residual units for dilations 1, 3, 9: x + conv_k1(snake(conv_k7_dil(snake(x))))
  7 SnakeBeta, causal Conv1d -> 1 channel, k7;  8 clamp to [-1, 1]
SnakeBeta(x) = x + sin(x * exp(alpha))^2 / (exp(beta) + 1e-9) (alpha, beta stored as logs).
Causal convolution = zero left pad of (k-1)*dilation, no right pad (stride 1).

Facts of the official code worth knowing (not all in the spec):
- RoPE positions are 0..T-1 of each forward call (cache_position; no cache);
  chunked_decode restarts them per chunk.  Scores depend only on i - j, so an
  offset changes results only by the float32 rounding of pos * inv_freq.
- Qwen3TTSTokenizerV2Model.decode always goes through chunked_decode(300, 25),
  after clamping negative codes to 0 and keeping (codes[0] > -1).sum() * 1920
  samples; this reference takes valid codes only.  Beyond 300 frames the chunked
  result differs from the one-shot decode: the receptive field is
  2 + 71 * layers + ~10 frames, far more than 25.
- The mask is transformers' sliding-window causal mask (every layer is
  "sliding_attention"): kv_idx > q_idx - sliding_window and kv_idx <= q_idx.
- head_dim (64) and codebook_dim reach the config class only through **kwargs;
  16 heads x 64 = 1024 != hidden_size 512.

API: load(dir, dtype) -> Code2Wav;  m.decode(codes) (one forward over all T
frames), m.chunked_decode(codes, chunk=300, left_context=25) (the official
offline path: each chunk re-decoded with up to 25 frames of left context whose
samples are dropped).  The stage methods (dequantize, pre_conv, transformer,
upsample, vocoder) are public so tests can probe one stage at a time.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qwen3_tts_ref import read_safetensors  # noqa: E402

RESIDUAL_DILATIONS = (1, 3, 9)
SNAKE_EPS = 1e-9
USAGE_EPS = 1e-5
CONVNEXT_LN_EPS = 1e-6


def speech_tokenizer_dir(path):
    sub = os.path.join(path, "speech_tokenizer")
    return sub if os.path.isfile(os.path.join(sub, "config.json")) else path


def read_decoder_config(st_dir):
    with open(os.path.join(st_dir, "config.json"), encoding="utf-8") as f:
        dc = json.load(f)["decoder_config"]
    if dc.get("hidden_act", "silu") != "silu" or dc.get("attention_bias", False):
        raise ValueError(f"{st_dir}: decoder_config wants hidden_act silu and no attention_bias")
    dc.setdefault("head_dim", dc["hidden_size"] // dc["num_attention_heads"])
    dc.setdefault("num_key_value_heads", dc["num_attention_heads"])
    return dc


def causal_conv(x, w, b, dilation=1, groups=1):
    """x [C, L] -> [Cout, L]; left zero pad (k-1)*dilation."""
    k = w.shape[-1]
    x = F.pad(x[None], ((k - 1) * dilation, 0))
    return F.conv1d(x, w, b, dilation=dilation, groups=groups)[0]


def causal_conv_transpose(x, w, b, stride):
    """x [Cin, L], w [Cin, Cout, k] -> [Cout, L*stride]: drop the last k - stride samples."""
    y = F.conv_transpose1d(x[None], w, b, stride=stride)[0]
    trim = w.shape[-1] - stride
    return y[:, :y.shape[-1] - trim] if trim > 0 else y


def snake_beta(x, log_alpha, log_beta):
    alpha = torch.exp(log_alpha)[:, None]
    beta = torch.exp(log_beta)[:, None]
    return x + torch.sin(x * alpha).pow(2) * (1.0 / (beta + SNAKE_EPS))


def widen(x):
    """float32 for the steps the official code runs in float32 (float64 stays float64)."""
    return x if x.dtype == torch.float64 else x.float()


def rms_norm(x, w, eps):
    xw = widen(x)
    y = xw * torch.rsqrt(xw.pow(2).mean(-1, keepdim=True) + eps)
    return w * y.to(x.dtype)


def rope_cos_sin(n, dim, theta, dtype):
    """cos, sin [n, dim] for positions 0..n-1 (float32 as HF's default RoPE, unless float64)."""
    ct = torch.float64 if dtype == torch.float64 else torch.float32
    inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.int64).to(ct) / dim))
    freqs = torch.arange(n, dtype=ct)[:, None] * inv_freq[None, :]
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


def sliding_window_mask(n, window):
    """[n, n] bool: query i sees key j iff i - window < j <= i."""
    i = torch.arange(n)[:, None]
    j = torch.arange(n)[None, :]
    return (j <= i) & (j > i - window)


class Code2Wav:
    def __init__(self, cfg, weights, dtype=torch.float32):
        self.cfg = cfg
        self.dtype = dtype
        self.w = {k[len("decoder."):]: torch.from_numpy(v).to(dtype)
                  for k, v in weights.items() if k.startswith("decoder.")}
        self.n_q = cfg["num_quantizers"]
        self.rates = list(cfg["upsample_rates"])
        self.ratios = list(cfg["upsampling_ratios"])
        self.total_upsample = int(np.prod(self.rates + self.ratios))
        self.codebooks = [self._codebook(p) for p in self.codebook_prefixes()]

    def codebook_prefixes(self):
        """Weight-name prefix of codebook k: rvq_first holds code 0, rvq_rest codes 1..Q-1."""
        return (["quantizer.rvq_first.vq.layers.0._codebook"] +
                [f"quantizer.rvq_rest.vq.layers.{k}._codebook" for k in range(self.n_q - 1)])

    def get(self, name, shape=None):
        if name not in self.w:
            raise KeyError(f"decoder.{name} missing from speech_tokenizer/model.safetensors")
        t = self.w[name]
        if shape is not None and tuple(t.shape) != tuple(shape):
            raise ValueError(f"decoder.{name}: shape {tuple(t.shape)}, expected {tuple(shape)}")
        return t

    def _codebook(self, prefix):
        dim = self.cfg["codebook_dim"] // 2
        size = self.cfg["codebook_size"]
        emb_sum = self.get(prefix + ".embedding_sum", (size, dim))
        usage = self.get(prefix + ".cluster_usage", (size,))
        return emb_sum / usage.clamp(min=USAGE_EPS)[:, None]

    # ---------------------------------------------------------------- stages

    def dequantize(self, codes):
        """codes [Q, T] -> [codebook_dim, T]."""
        first = self.codebooks[0][codes[0]].T
        rest = sum(self.codebooks[k][codes[k]] for k in range(1, self.n_q)).T
        out_first = self.get("quantizer.rvq_first.output_proj.weight")
        out_rest = self.get("quantizer.rvq_rest.output_proj.weight")
        return F.conv1d(first[None], out_first)[0] + F.conv1d(rest[None], out_rest)[0]

    def pre_conv(self, z):
        return causal_conv(z, self.get("pre_conv.conv.weight"), self.get("pre_conv.conv.bias"))

    def transformer(self, x):
        """x [latent, T] -> [latent, T]."""
        c = self.cfg
        nh, nkv, hd = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
        eps = c["rms_norm_eps"]
        n = x.shape[1]
        p = "pre_transformer."
        h = F.linear(x.T, self.get(p + "input_proj.weight"), self.get(p + "input_proj.bias"))
        cos, sin = rope_cos_sin(n, hd, float(c["rope_theta"]), self.dtype)
        visible = sliding_window_mask(n, c["sliding_window"])
        for layer in range(c["num_hidden_layers"]):
            lp = f"{p}layers.{layer}."
            a = rms_norm(h, self.get(lp + "input_layernorm.weight"), eps)
            q = F.linear(a, self.get(lp + "self_attn.q_proj.weight")).view(n, nh, hd).transpose(0, 1)
            k = F.linear(a, self.get(lp + "self_attn.k_proj.weight")).view(n, nkv, hd).transpose(0, 1)
            v = F.linear(a, self.get(lp + "self_attn.v_proj.weight")).view(n, nkv, hd).transpose(0, 1)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            k = k.repeat_interleave(nh // nkv, dim=0)
            v = v.repeat_interleave(nh // nkv, dim=0)
            scores = (q @ k.transpose(1, 2)) * (hd ** -0.5)
            scores = scores.masked_fill(~visible, float("-inf"))
            probs = torch.softmax(widen(scores), dim=-1).to(self.dtype)
            att = (probs @ v).transpose(0, 1).reshape(n, nh * hd)
            att = F.linear(att, self.get(lp + "self_attn.o_proj.weight"))
            h = h + self.get(lp + "self_attn_layer_scale.scale") * att
            m = rms_norm(h, self.get(lp + "post_attention_layernorm.weight"), eps)
            gate = F.linear(m, self.get(lp + "mlp.gate_proj.weight"))
            up = F.linear(m, self.get(lp + "mlp.up_proj.weight"))
            mlp = F.linear(F.silu(gate) * up, self.get(lp + "mlp.down_proj.weight"))
            h = h + self.get(lp + "mlp_layer_scale.scale") * mlp
        h = rms_norm(h, self.get(p + "norm.weight"), eps)
        return F.linear(h, self.get(p + "output_proj.weight"), self.get(p + "output_proj.bias")).T

    def convnext(self, x, p):
        y = causal_conv(x, self.get(p + "dwconv.conv.weight"), self.get(p + "dwconv.conv.bias"),
                        groups=x.shape[0])
        y = F.layer_norm(y.T, (x.shape[0],), self.get(p + "norm.weight"), self.get(p + "norm.bias"),
                         eps=CONVNEXT_LN_EPS)
        y = F.linear(y, self.get(p + "pwconv1.weight"), self.get(p + "pwconv1.bias"))
        y = F.gelu(y)  # exact erf form
        y = F.linear(y, self.get(p + "pwconv2.weight"), self.get(p + "pwconv2.bias"))
        return x + (self.get(p + "gamma") * y).T

    def upsample(self, x):
        """[latent, T] -> [latent, T * prod(upsampling_ratios)]."""
        for u, r in enumerate(self.ratios):
            x = causal_conv_transpose(x, self.get(f"upsample.{u}.0.conv.weight"),
                                      self.get(f"upsample.{u}.0.conv.bias"), r)
            x = self.convnext(x, f"upsample.{u}.1.")
        return x

    def snake(self, x, p):
        return snake_beta(x, self.get(p + "alpha"), self.get(p + "beta"))

    def vocoder(self, x):
        """[latent, L] -> waveform [L * prod(upsample_rates)] before the clamp."""
        x = causal_conv(x, self.get("decoder.0.conv.weight"), self.get("decoder.0.conv.bias"))
        for b, r in enumerate(self.rates, start=1):
            p = f"decoder.{b}.block."
            x = self.snake(x, p + "0.")
            x = causal_conv_transpose(x, self.get(p + "1.conv.weight"), self.get(p + "1.conv.bias"), r)
            for u, dil in enumerate(RESIDUAL_DILATIONS, start=2):
                rp = f"{p}{u}."
                y = self.snake(x, rp + "act1.")
                y = causal_conv(y, self.get(rp + "conv1.conv.weight"), self.get(rp + "conv1.conv.bias"), dil)
                y = self.snake(y, rp + "act2.")
                y = causal_conv(y, self.get(rp + "conv2.conv.weight"), self.get(rp + "conv2.conv.bias"))
                x = x + y
        last = len(self.rates) + 1
        x = self.snake(x, f"decoder.{last}.")
        x = causal_conv(x, self.get(f"decoder.{last + 1}.conv.weight"), self.get(f"decoder.{last + 1}.conv.bias"))
        return x[0]

    # ---------------------------------------------------------------- whole

    def check_codes(self, codes):
        codes = torch.as_tensor(codes, dtype=torch.int64)
        if codes.dim() != 2 or codes.shape[0] != self.n_q or codes.shape[1] < 1:
            raise ValueError(f"codes must be [{self.n_q}, T>=1], got {list(codes.shape)}")
        size = self.cfg["codebook_size"]
        if int(codes.min()) < 0 or int(codes.max()) >= size:
            raise ValueError(f"codes must lie in [0, {size})")
        return codes

    def decode_unclamped(self, codes):
        codes = self.check_codes(codes)
        with torch.no_grad():
            x = self.transformer(self.pre_conv(self.dequantize(codes)))
            return self.vocoder(self.upsample(x))

    def decode(self, codes):
        """codes int64 [Q, T] -> waveform [T * total_upsample] (clamped to [-1, 1])."""
        return self.decode_unclamped(codes).clamp(-1.0, 1.0)

    def chunked_decode(self, codes, chunk=300, left_context=25):
        """The official offline decode: chunks of `chunk` frames, each re-decoded with
        up to `left_context` earlier frames whose samples are then dropped."""
        codes = self.check_codes(codes)
        n = codes.shape[1]
        pieces = []
        start = 0
        while start < n:
            end = min(start + chunk, n)
            ctx = left_context if start - left_context > 0 else start
            wav = self.decode(codes[:, start - ctx:end])
            pieces.append(wav[ctx * self.total_upsample:])
            start = end
        return torch.cat(pieces)


def load(model_dir, dtype=torch.float32):
    st = speech_tokenizer_dir(model_dir)
    cfg = read_decoder_config(st)
    return Code2Wav(cfg, read_safetensors(os.path.join(st, "model.safetensors")), dtype)


def read_codes(path, n_q):
    """CODES.json (a list of frames, or {"frames": [...]}) -> int64 [n_q, T]."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    frames = data["frames"] if isinstance(data, dict) else data
    if not isinstance(frames, list) or not frames:
        raise ValueError(f"{path}: expected a non-empty list of frames")
    for i, fr in enumerate(frames):
        if not isinstance(fr, list) or len(fr) != n_q or not all(isinstance(c, int) for c in fr):
            raise ValueError(f"{path}: frame {i} is not a list of {n_q} integers")
    return torch.tensor(frames, dtype=torch.int64).T.contiguous()


def wave_stats(wav):
    x = wav.double()
    return {"samples": int(x.numel()), "rms": round(float(x.pow(2).mean().sqrt()), 6),
            "peak": round(float(x.abs().max()), 6),
            "clipped": round(float((x.abs() >= 1.0).double().mean()), 6)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--codes", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--chunked", action="store_true", help="official chunked decode (300 / 25)")
    ap.add_argument("--float64", action="store_true", help="compute in float64 (written as float32)")
    a = ap.parse_args()
    m = load(a.model, torch.float64 if a.float64 else torch.float32)
    codes = read_codes(a.codes, m.n_q)
    wav = m.chunked_decode(codes) if a.chunked else m.decode(codes)
    wav.float().numpy().astype("<f4").tofile(a.out)
    print(json.dumps({"frames": int(codes.shape[1]), **wave_stats(wav)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
