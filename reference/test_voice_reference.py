#!/usr/bin/python3
"""Checks of the voice references (voice_ref.py, speech_encoder_ref.py) by
other paths than their own code: PyTorch's Conv1d modules, lengths and
areas the definitions imply, and the committed golden.  Prints PASS/FAIL per
case (tests/e2e/voice.sh runs it); exit status 1 when one fails.
"""
import json
import math
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import speech_encoder_ref as sref  # noqa: E402
import voice_ref as ref  # noqa: E402

failed = []


def case(fn):
    try:
        fn()
        print(f"PASS {fn.__name__}")
    except Exception as e:  # noqa: BLE001 - report any failure as the case's
        failed.append(fn.__name__)
        print(f"FAIL {fn.__name__}: {type(e).__name__}: {e}")


def same_reflect_conv_is_torchs():
    """conv_same_reflect against nn.Conv1d(padding="same", padding_mode="reflect")
    for every kernel/dilation pair of the speaker encoder."""
    g = torch.Generator().manual_seed(1)
    for k, d in ((5, 1), (3, 2), (3, 3), (3, 4), (1, 1)):
        c = torch.nn.Conv1d(4, 3, k, dilation=d, padding="same", padding_mode="reflect").double()
        x = torch.randn(1, 4, 11, generator=g, dtype=torch.float64)
        err = (c(x) - ref.conv_same_reflect(x, c.weight, c.bias, d)).abs().max().item()
        assert err < 1e-12, (k, d, err)


def slaney_filters_have_unit_area():
    """norm="slaney" scales each triangle to area 1 (in Hz): the bin sum times
    the bin spacing is 1 wherever a filter spans many bins."""
    w = ref.mel_filterbank().astype(np.float64)
    area = w.sum(axis=1) * ref.SAMPLE_RATE / ref.N_FFT
    assert np.all(np.abs(area[96:] - 1) < 0.01), area[96:]  # 8+ bins wide: sampling error < 1%
    assert abs(area.mean() - 1) < 0.01, area.mean()
    assert w.shape == (128, 513) and (w >= 0).all()


def mel_frames_follow_the_formula():
    for n in (385, 640, 1279, 1280, 24000, 28801):
        got = ref.log_mel(np.zeros(n)).shape[0]
        assert got == (n + 768 - 1024) // 256 + 1, (n, got)


def mimi_convs_give_ceil_lengths():
    """A causal MimiConv1d of stride s gives ceil(L / s) outputs, and its
    first output sees k - s padded samples (zeros, or sample 0 repeated)
    before samples 0..s-1."""
    enc = sref.SpeechEncoder.__new__(sref.SpeechEncoder)
    for s in (1, 2, 4, 5, 6, 8):
        k = 2 * s if s > 1 else 7
        enc.w = {"c.conv.weight": torch.ones(1, 1, k, dtype=torch.float64)}
        for n in range(1, 40):
            x = torch.arange(1, n + 1, dtype=torch.float64).view(1, -1)
            y = enc.conv(x, "c", stride=s)
            assert y.shape[-1] == math.ceil(n / s), (s, n, y.shape)
            if n < s:
                continue
            first = s * (s + 1) / 2  # the taps over samples 0..s-1
            assert y[0, 0] == first, (s, n, y[0, 0])  # k - s zeros before sample 0
            y = enc.conv(x, "c", stride=s, mode="replicate")
            assert y[0, 0] == first + (k - s), (s, n, y[0, 0])  # sample 0 repeated


def tiny_codes_match_the_golden():
    with open(os.path.join(ROOT, "tests", "data", "voice-golden.json"), encoding="utf-8") as f:
        golden = json.load(f)["codes"]
    wave = ref.read_wav_pcm16(os.path.join(ROOT, "tests", "data", "voice-ref-24k.wav"))
    enc = sref.SpeechEncoder(os.path.join(ROOT, golden["model"]), torch.float32)
    codes, gaps = enc.codes(wave)
    assert codes.shape == (math.ceil(len(wave) / 1920), 16), codes.shape
    assert int(codes.max()) < enc.cfg["codebook_size"] and int(codes.min()) >= 0
    mism = int((codes != torch.tensor(golden["frames"])).sum())
    assert mism == golden["float32_mismatches"], mism


for c in (same_reflect_conv_is_torchs, slaney_filters_have_unit_area, mel_frames_follow_the_formula,
          mimi_convs_give_ceil_lengths, tiny_codes_match_the_golden):
    case(c)
sys.exit(1 if failed else 0)
