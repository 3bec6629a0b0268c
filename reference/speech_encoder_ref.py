#!/usr/bin/python3
"""PyTorch reference of the Qwen3-TTS speech tokenizer's encoder: 24 kHz audio -> 16 codes per 80 ms.

Follows QwenLM/Qwen3-TTS qwen_tts/core/tokenizer_12hz/modeling_qwen3_tts_tokenizer_v2.py
(Qwen3TTSTokenizerV2Model.encode: MimiModel.encode, the first
encoder_valid_num_quantizers codes, cut to ceil(samples / 1920) frames) and
transformers' Mimi (modeling_mimi.py: MimiConv1d, MimiResnetBlock, MimiEncoder,
MimiTransformerModel, the split RVQ); facts in ../shared/spec/qwen3-tts-voices.md
section 3.  No transformers package: written out here over the `encoder.*`
tensors of speech_tokenizer/model.safetensors, in float32 or float64.

  SpeechEncoder(model_dir, dtype)
    .latent(wave)   [T12, hidden]: SEANet convs -> transformer -> downsample
    .codes(wave)    (codes [T12, 16] int64, gaps [T12, 16] float64): each
                    code's nearest-codebook choice and its margin (distance to
                    the second nearest minus the nearest, in the run's dtype):
                    a small margin is a near tie a float32 port may flip.

Every conv is causal (MimiConv1d): zeros (the downsample conv: the edge value
repeated) on the left for k_eff - stride samples, and on the right what makes
the output ceil(L / stride) long.  The transformer is pre-norm LayerNorm
(eps norm_eps) with LayerScale on both branches, RoPE (rotate-half, theta
rope_theta) from position 0, full causal attention (transformers 4.57's sdpa
path builds a plain causal mask: the 250-frame sliding window only applies
under flash-attention-2), exact-erf GELU MLP, no final norm.
CLI: speech_encoder_ref.py --wav A.wav --model DIR [--float64]  (prints JSON)
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from code2wav_ref import speech_tokenizer_dir  # noqa: E402
from qwen3_tts_ref import read_safetensors  # noqa: E402
from voice_ref import read_wav_pcm16  # noqa: E402

USAGE_EPS = 1e-5  # MimiEuclideanCodebook: embed = embed_sum / max(cluster_usage, eps)


class SpeechEncoder:
    def __init__(self, model_dir, dtype=torch.float32):
        st = speech_tokenizer_dir(model_dir)
        with open(os.path.join(st, "config.json"), encoding="utf-8") as f:
            top = json.load(f)
        self.cfg = top["encoder_config"]
        self.n_codes = top["encoder_valid_num_quantizers"]
        self.samples_per_frame = top["encode_downsample_rate"]
        self.dtype = dtype
        self.w = {k[len("encoder."):]: torch.from_numpy(np.array(v)).to(dtype)
                  for k, v in read_safetensors(os.path.join(st, "model.safetensors")).items()
                  if k.startswith("encoder.")}

    # ---- convolutions

    def conv(self, x, name, stride=1, dilation=1, mode="constant"):
        """MimiConv1d (causal) on x [C, L]."""
        w = self.w[name + ".conv.weight"]
        b = self.w.get(name + ".conv.bias")
        k_eff = (w.shape[-1] - 1) * dilation + 1
        pad_total = k_eff - stride
        length = x.shape[-1]
        n_frames = math.ceil((length - k_eff + pad_total) / stride + 1) - 1
        extra = n_frames * stride + k_eff - pad_total - length
        x = F.pad(x.unsqueeze(0), (pad_total, extra), mode=mode)
        return F.conv1d(x, w, b, stride=stride, dilation=dilation)[0]

    def seanet(self, wave):
        c = self.cfg
        x = self.conv(torch.as_tensor(wave).to(self.dtype).view(1, -1), "encoder.layers.0")
        idx = 1
        for ratio in reversed(c["upsampling_ratios"]):
            for j in range(c["num_residual_layers"]):
                h = self.conv(F.elu(x), f"encoder.layers.{idx}.block.1", dilation=c["dilation_growth_rate"] ** j)
                x = x + self.conv(F.elu(h), f"encoder.layers.{idx}.block.3")
                idx += 1
            x = self.conv(F.elu(x), f"encoder.layers.{idx + 1}", stride=ratio)  # idx is the ELU
            idx += 2
        return self.conv(F.elu(x), f"encoder.layers.{idx + 1}")

    # ---- transformer

    def rope(self, n, d):
        inv = 1.0 / (self.cfg["rope_theta"] ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
        ang = torch.arange(n, dtype=torch.float64)[:, None] * inv[None, :]
        ang = torch.cat([ang, ang], dim=-1)
        return ang.cos().to(self.dtype), ang.sin().to(self.dtype)

    @staticmethod
    def rotate_half(x):
        h = x.shape[-1] // 2
        return torch.cat([-x[..., h:], x[..., :h]], dim=-1)

    def transformer(self, h):
        """h [T, hidden] -> [T, hidden]."""
        c = self.cfg
        T, nh, nkv, hd = h.shape[0], c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
        cos, sin = self.rope(T, hd)
        mask = torch.full((T, T), float("-inf"), dtype=self.dtype).triu(1)
        for i in range(c["num_hidden_layers"]):
            p = f"encoder_transformer.layers.{i}."
            w = self.w
            a = F.layer_norm(h, (h.shape[1],), w[p + "input_layernorm.weight"], w[p + "input_layernorm.bias"],
                             c["norm_eps"])
            q = (a @ w[p + "self_attn.q_proj.weight"].T).view(T, nh, hd).transpose(0, 1)
            k = (a @ w[p + "self_attn.k_proj.weight"].T).view(T, nkv, hd).transpose(0, 1)
            v = (a @ w[p + "self_attn.v_proj.weight"].T).view(T, nkv, hd).transpose(0, 1)
            q = q * cos + self.rotate_half(q) * sin
            k = k * cos + self.rotate_half(k) * sin
            k = k.repeat_interleave(nh // nkv, dim=0)
            v = v.repeat_interleave(nh // nkv, dim=0)
            att = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(hd) + mask, dim=-1)
            o = (att @ v).transpose(0, 1).reshape(T, nh * hd) @ w[p + "self_attn.o_proj.weight"].T
            h = h + w[p + "self_attn_layer_scale.scale"] * o
            m = F.layer_norm(h, (h.shape[1],), w[p + "post_attention_layernorm.weight"],
                             w[p + "post_attention_layernorm.bias"], c["norm_eps"])
            m = F.gelu(m @ w[p + "mlp.fc1.weight"].T) @ w[p + "mlp.fc2.weight"].T
            h = h + w[p + "mlp_layer_scale.scale"] * m
        return h

    def latent(self, wave):
        x = self.seanet(wave)                      # [hidden, T25]
        x = self.transformer(x.T.contiguous()).T   # [hidden, T25]
        return self.conv(x, "downsample", stride=2, mode="replicate").T.contiguous()  # [T12, hidden]

    # ---- split residual vector quantizer

    def codebook(self, part, layer):
        p = f"quantizer.{part}_residual_vector_quantizer.layers.{layer}.codebook."
        return self.w[p + "embed_sum"] / self.w[p + "cluster_usage"].clamp(min=USAGE_EPS)[:, None]

    def nearest(self, r, embed):
        """Index of the nearest row of embed for each row of r (lowest index
        on an exact tie), and the margin to the second nearest."""
        d = torch.cdist(r.unsqueeze(0), embed.unsqueeze(0))[0] if self.dtype == torch.float32 else \
            (r[:, None, :] - embed[None, :, :]).pow(2).sum(-1).sqrt()
        two = d.topk(2, dim=1, largest=False)
        return d.argmin(dim=1), (two.values[:, 1] - two.values[:, 0]).double()

    def codes(self, wave):
        z = self.latent(wave)
        out, gaps = [], []
        for part, levels in (("semantic", 1), ("acoustic", self.n_codes - 1)):
            proj = self.w[f"quantizer.{part}_residual_vector_quantizer.input_proj.weight"][:, :, 0]
            r = z @ proj.T
            for q in range(levels):
                e = self.codebook(part, q)
                idx, gap = self.nearest(r, e)
                out.append(idx)
                gaps.append(gap)
                r = r - e[idx]
        frames = -(-len(wave) // self.samples_per_frame)
        return torch.stack(out, dim=1)[:frames], torch.stack(gaps, dim=1)[:frames]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--wav", required=True, help="mono 16-bit PCM, 24 kHz")
    ap.add_argument("--model", required=True, help="a model directory (or its speech_tokenizer/)")
    ap.add_argument("--float64", action="store_true")
    a = ap.parse_args()
    enc = SpeechEncoder(a.model, torch.float64 if a.float64 else torch.float32)
    codes, gaps = enc.codes(read_wav_pcm16(a.wav))
    print(json.dumps({"frames": codes.tolist(), "min_gap": float(gaps.min())}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
