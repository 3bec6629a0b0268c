#!/usr/bin/python3
"""PyTorch reference of the Qwen3-TTS Base speaker path: waveform -> mel -> x-vector.

Follows QwenLM/Qwen3-TTS qwen_tts/core/models/modeling_qwen3_tts.py:
`mel_spectrogram` + `dynamic_range_compression_torch` with the arguments
`extract_speaker_embedding` passes, and `Qwen3TTSSpeakerEncoder` (ECAPA-TDNN:
TimeDelayNetBlock, SqueezeExcitationRes2NetBlock, AttentiveStatisticsPooling).
Facts: ../shared/spec/qwen3-tts-voices.md sections 1 and 2.  No librosa and no
transformers: the Slaney mel filterbank is written out here from librosa's
definition (filters.mel with htk=False, norm="slaney").  Everything runs in
float32 or float64 (dtype argument); weights are widened exactly from the
checkpoint's BF16/F32.

  mel_filterbank()           [128, 513] float32, as librosa.filters.mel builds it
  log_mel(wave, dtype)       [T, 128]: reflect pad 384, periodic Hann STFT
                             (n_fft 1024, hop 256, center False), magnitude
                             sqrt(re^2 + im^2 + 1e-9), mel, ln(max(., 1e-5))
  SpeakerEncoder(model_dir, dtype).xvector(mel)
                             [enc_dim] from the speaker_encoder.* tensors of
                             model.safetensors and speaker_encoder_config (over
                             the class defaults)
  read_wav_pcm16(path)       mono 16-bit PCM as float (x / 32768), the scale
                             soundfile/librosa give

CLI (prints JSON): voice_ref.py --wav A.wav [--model BASE_DIR] [--float64]
"""
import argparse
import json
import math
import os
import sys
import wave

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qwen3_tts_ref import read_safetensors  # noqa: E402

SAMPLE_RATE = 24000
N_FFT, HOP, WIN, N_MELS, FMIN, FMAX = 1024, 256, 1024, 128, 0.0, 12000.0
MAG_EPS, LOG_CLAMP = 1e-9, 1e-5
STATS_EPS = 1e-12  # AttentiveStatisticsPooling.eps

# Qwen3TTSSpeakerEncoderConfig's defaults; config.json overrides some.
SPEAKER_DEFAULTS = dict(mel_dim=128, enc_dim=1024, enc_channels=[512, 512, 512, 512, 1536],
                        enc_kernel_sizes=[5, 3, 3, 3, 1], enc_dilations=[1, 2, 3, 4, 1],
                        enc_attention_channels=128, enc_res2net_scale=8, enc_se_channels=128,
                        sample_rate=24000)


# ---------------------------------------------------------------- mel front end

# Slaney's mel scale (librosa htk=False): linear below 1 kHz at 200/3 Hz per
# mel, logarithmic above with 27 mels per factor 6.4.
_F_SP = 200.0 / 3.0
_MIN_LOG_HZ = 1000.0
_MIN_LOG_MEL = _MIN_LOG_HZ / _F_SP
_LOGSTEP = math.log(6.4) / 27.0


def hz_to_mel(f):
    f = np.asarray(f, dtype=np.float64)
    return np.where(f >= _MIN_LOG_HZ, _MIN_LOG_MEL + np.log(np.maximum(f, 1e-300) / _MIN_LOG_HZ) / _LOGSTEP,
                    f / _F_SP)


def mel_to_hz(m):
    m = np.asarray(m, dtype=np.float64)
    return np.where(m >= _MIN_LOG_MEL, _MIN_LOG_HZ * np.exp(_LOGSTEP * (m - _MIN_LOG_MEL)), _F_SP * m)


def mel_filterbank(sr=SAMPLE_RATE, n_fft=N_FFT, n_mels=N_MELS, fmin=FMIN, fmax=FMAX):
    """[n_mels, n_fft/2+1] float32.  librosa builds the triangles in float64,
    stores them in a float32 array, then scales that array in place by the
    float64 Slaney area factor 2/(f[m+2]-f[m]): two roundings, kept here."""
    bins = np.arange(n_fft // 2 + 1, dtype=np.float64) * sr / n_fft
    edges = mel_to_hz(np.linspace(hz_to_mel(fmin), hz_to_mel(fmax), n_mels + 2))
    width = np.diff(edges)
    ramps = edges[:, None] - bins[None, :]
    w = np.zeros((n_mels, len(bins)), dtype=np.float32)
    for m in range(n_mels):
        rise = -ramps[m] / width[m]
        fall = ramps[m + 2] / width[m + 1]
        w[m] = np.maximum(0.0, np.minimum(rise, fall))
    w *= (2.0 / (edges[2:n_mels + 2] - edges[:n_mels]))[:, None]
    return w


def log_mel(wave_1d, dtype=torch.float32):
    """[T, 128] log mel of a mono 24 kHz waveform (any float array)."""
    y = torch.as_tensor(np.asarray(wave_1d, dtype=np.float64)).to(dtype)
    pad = (N_FFT - HOP) // 2
    if y.numel() <= pad:
        raise ValueError(f"waveform of {y.numel()} samples: reflect padding needs more than {pad}")
    y = F.pad(y.view(1, 1, -1), (pad, pad), mode="reflect").view(-1)
    window = torch.hann_window(WIN, periodic=True, dtype=dtype)
    spec = torch.stft(y, N_FFT, hop_length=HOP, win_length=WIN, window=window, center=False,
                      normalized=False, onesided=True, return_complex=True)
    mag = torch.sqrt(torch.view_as_real(spec).pow(2).sum(-1) + MAG_EPS)  # [513, T]
    mel = torch.from_numpy(mel_filterbank()).to(dtype) @ mag
    return torch.log(torch.clamp(mel, min=LOG_CLAMP)).T.contiguous()


# ---------------------------------------------------------------- ECAPA-TDNN


def conv_same_reflect(x, w, b, dilation=1):
    """Conv1d padding="same", padding_mode="reflect": d(k-1) split floor/ceil."""
    total = dilation * (w.shape[-1] - 1)
    if total:
        x = F.pad(x, (total // 2, total - total // 2), mode="reflect")
    return F.conv1d(x, w, b, dilation=dilation)


class SpeakerEncoder:
    def __init__(self, model_dir, dtype=torch.float32):
        with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
            cfg = json.load(f)
        if cfg.get("tts_model_type") != "base":
            raise ValueError(f"{model_dir}: tts_model_type is {cfg.get('tts_model_type')!r}, not 'base'")
        self.cfg = dict(SPEAKER_DEFAULTS, **cfg.get("speaker_encoder_config", {}))
        self.dtype = dtype
        self.w = {k[len("speaker_encoder."):]: torch.from_numpy(np.array(v)).to(dtype)
                  for k, v in read_safetensors(os.path.join(model_dir, "model.safetensors")).items()
                  if k.startswith("speaker_encoder.")}

    def tdnn(self, name, x, dilation=1):
        return torch.relu(conv_same_reflect(x, self.w[name + ".weight"], self.w[name + ".bias"], dilation))

    def se_res2net(self, b, u):
        c = self.cfg
        p = f"blocks.{b}."
        h = self.tdnn(p + "tdnn1.conv", u)
        parts, prev = [], None
        for i, x in enumerate(torch.chunk(h, c["enc_res2net_scale"], dim=1)):
            if i == 0:
                y = x
            else:
                y = self.tdnn(f"{p}res2net_block.blocks.{i - 1}.conv", x if i == 1 else x + prev,
                              c["enc_dilations"][b])
            parts.append(y)
            prev = y
        h = self.tdnn(p + "tdnn2.conv", torch.cat(parts, dim=1))
        s = h.mean(dim=2, keepdim=True)
        s = torch.relu(F.conv1d(s, self.w[p + "se_block.conv1.weight"], self.w[p + "se_block.conv1.bias"]))
        s = torch.sigmoid(F.conv1d(s, self.w[p + "se_block.conv2.weight"], self.w[p + "se_block.conv2.bias"]))
        return h * s + u

    @staticmethod
    def weighted_stats(h, a):
        mean = (a * h).sum(dim=2)
        std = torch.sqrt((a * (h - mean.unsqueeze(2)).pow(2)).sum(dim=2).clamp(min=STATS_EPS))
        return mean, std

    def xvector(self, mel):
        """mel [T, 128] -> x-vector [enc_dim] (batch of one)."""
        c = self.cfg
        x = torch.as_tensor(mel).to(self.dtype).T.unsqueeze(0)  # [1, 128, T]
        h = self.tdnn("blocks.0.conv", x, c["enc_dilations"][0])
        outs = []
        for b in range(1, len(c["enc_channels"]) - 1):
            h = self.se_res2net(b, h)
            outs.append(h)
        h = self.tdnn("mfa.conv", torch.cat(outs, dim=1), c["enc_dilations"][-1])
        T = h.shape[2]
        mean, std = self.weighted_stats(h, torch.full((1, 1, T), 1.0 / T, dtype=self.dtype))
        att = torch.cat([h, mean.unsqueeze(2).expand(-1, -1, T), std.unsqueeze(2).expand(-1, -1, T)], dim=1)
        att = F.conv1d(torch.tanh(self.tdnn("asp.tdnn.conv", att)), self.w["asp.conv.weight"],
                       self.w["asp.conv.bias"])
        mean, std = self.weighted_stats(h, torch.softmax(att, dim=2))
        pooled = torch.cat([mean, std], dim=1).unsqueeze(2)
        return F.conv1d(pooled, self.w["fc.weight"], self.w["fc.bias"]).view(-1)


# ---------------------------------------------------------------- audio files


def read_wav_pcm16(path):
    with wave.open(path, "rb") as f:
        if f.getsampwidth() != 2 or f.getnchannels() != 1:
            raise ValueError(f"{path}: this reader takes mono 16-bit PCM")
        if f.getframerate() != SAMPLE_RATE:
            raise ValueError(f"{path}: {f.getframerate()} Hz, the speaker encoder takes {SAMPLE_RATE}")
        data = np.frombuffer(f.readframes(f.getnframes()), dtype="<i2")
    return data.astype(np.float64) / 32768.0


def snr_db(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    err = ((got - want) ** 2).sum()
    return float("inf") if err == 0 else float(10 * np.log10((want ** 2).sum() / err))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--wav", required=True, help="mono 16-bit PCM, 24 kHz")
    ap.add_argument("--model", help="a Base checkpoint directory: also print the x-vector")
    ap.add_argument("--float64", action="store_true")
    a = ap.parse_args()
    dtype = torch.float64 if a.float64 else torch.float32
    mel = log_mel(read_wav_pcm16(a.wav), dtype)
    out = {"frames": mel.shape[0], "mel_min": float(mel.min()), "mel_max": float(mel.max())}
    if a.model:
        out["xvector"] = [float(v) for v in SpeakerEncoder(a.model, dtype).xvector(mel)]
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
