#!/usr/bin/python3
"""Golden codec frames and logits of the Qwen3-TTS talker + code predictor.

  /usr/bin/python3 reference/tts_golden.py --model DIR --text "..." \
      [--speaker ryan|none] [--language english] [--frames 50] [--streaming] [--threads 1] \
      [--instruct TEXT] [--xvector-seed S] --out F.json

--instruct prepends the instruction block (1.7B CustomVoice and VoiceDesign;
a 0.6B model drops it, as the official code does). --xvector-seed makes a
Base model's prompt with a deterministic random x-vector in the speaker slot
(its float32 values are stored, so both sides add the same vector).

Runs reference/qwen3_tts_ref.py three times on the checkpoint's weights:
float64 greedy (the golden), float32 greedy (free-running, to report frame
agreement), and float32 forced along the float64 frames (same inputs, to
measure the float32 numeric floor of each recorded logit vector).

Output JSON (floats have 7 significant digits):
  format                 "ember-tts-golden-1"
  model                  the --model path as given
  settings               text, speaker, language, non_streaming, frames (asked),
                         greedy true, repetition_penalty, min_new_tokens 2,
                         suppress [2048, 3072) except eos, eos, reference_dtype
                         "float64", weights_dtype (of model.safetensors)
  text_ids               ids of "<|im_start|>assistant\\n{text}<|im_end|>\\n<|im_start|>assistant\\n"
  settings.instruct, settings.instruct_ids
                         the instruction and the ids of its block (null: none)
  xvector                the x-vector in the speaker slot (null: none)
  prompt.rows            the prefill, one {"text": id|null, "codec": id|null}
                         per position; input = P(text) + E(codec)
  prompt.n_rows          len(rows) (N + 11 for a language, non-streaming)
  prompt.trailing_text   text ids added one per decode step (empty in
                         non-streaming mode: every step adds P(tts_pad))
  frames                 greedy frames, 16 ids each (c0, then predictor c1..c15)
  n_frames, stopped_at_eos
  talker_logits          [frame][3072] raw codec_head outputs for the first 4
                         frames (before penalty / suppression / EOS ban)
  predictor_logits       [frame][sub-step 0..14][2048] raw lm_head[j] outputs
                         for the first 2 frames
  c0_top2_margins        per frame, gap between the two best c0 logits after
                         penalty/suppression (small gaps are fragile)
  predictor_top2_margin_min
                         per frame, the smallest best-minus-second gap over
                         its 15 predictor sub-steps
  snr_db                 float32 vs float64 on the same inputs:
                         talker (per recorded frame), predictor (per frame and
                         sub-step), talker_min, predictor_min
  fp32_free_run          {"frames_equal": k, "first_mismatch": frame|null}
The wall time of each run is printed with a summary, not stored.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qwen3_tts_ref as ref  # noqa: E402


def sig7(v):
    return [float(f"{x:.7g}") for x in np.asarray(v, dtype=np.float64).ravel()]


def weights_dtype(model_dir):
    import struct
    with open(os.path.join(model_dir, "model.safetensors"), "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        h = json.loads(f.read(n))
    return sorted({v["dtype"] for k, v in h.items() if k != "__metadata__"})


def random_xvector(cfg, weights, seed):
    """A speaker slot vector at the scale of the codec embedding rows,
    rounded to float32 (what the C side reads back from the golden)."""
    table = torch.as_tensor(np.asarray(weights["talker.model.codec_embedding.weight"], dtype=np.float64))
    g = torch.Generator().manual_seed(seed)
    v = torch.randn(cfg["talker_config"]["hidden_size"], generator=g, dtype=torch.float64) * float(table.std())
    return [float(f"{x:.9g}") for x in v.to(torch.float32).tolist()]


def random_ref_codes(cfg, seed, n):
    """n reference frames of codes (below the codebook size), deterministic."""
    g = torch.Generator().manual_seed(seed)
    groups = cfg["talker_config"]["num_code_groups"]
    size = cfg["talker_config"]["code_predictor_config"]["vocab_size"]
    return torch.randint(0, size, (n, groups), generator=g).tolist()


def run(model_dir, text, speaker, language, frames, non_streaming=True, instruct=None, xvector_seed=None,
        ref_text=None, ref_frames=0):
    cfg, gen, weights = ref.load_model_dir(model_dir)
    tok = ref.Qwen2BPE(model_dir)
    text_ids = tok.encode(ref.tts_text(text))
    # the official wrapper drops a 0.6B model's instruction
    instruct_ids = tok.encode(ref.instruct_text(instruct)) if instruct and cfg.get("tts_model_size") != "0b6" else None
    xvector = random_xvector(cfg, weights, xvector_seed) if xvector_seed is not None else None
    ref_ids = tok.encode(ref.ref_text(ref_text)) if ref_text is not None else None
    ref_codes = random_ref_codes(cfg, xvector_seed or 0, ref_frames) if ref_text is not None else None
    prompt = ref.build_prompt(cfg, text_ids, speaker, language, non_streaming=non_streaming,
                            instruct_ids=instruct_ids, xvector=xvector is not None, ref_ids=ref_ids,
                            n_ref_frames=ref_frames)
    times = {}

    t0 = time.time()
    m64 = ref.TTSModel(cfg, weights, torch.float64)
    m64.xvector = torch.tensor(xvector, dtype=torch.float64) if xvector else None
    m64.ref_codes = ref_codes
    g64 = m64.generate(prompt, frames, gen, greedy=True)
    del m64
    times["float64_greedy"] = round(time.time() - t0, 2)

    t0 = time.time()
    m32 = ref.TTSModel(cfg, weights, torch.float32)
    m32.xvector = torch.tensor(xvector, dtype=torch.float64) if xvector else None
    m32.ref_codes = ref_codes
    g32 = m32.generate(prompt, frames, gen, greedy=True, record_talker=0, record_predictor=0)
    times["float32_greedy"] = round(time.time() - t0, 2)
    t0 = time.time()
    n_rec = max(len(g64["talker_logits"]), len(g64["predictor_logits"]))
    forced = m32.generate(prompt, n_rec, gen, greedy=True, force_frames=g64["frames"][:n_rec])
    del m32
    times["float32_forced"] = round(time.time() - t0, 2)

    snr_t = [ref.snr_db(a.numpy(), b.numpy()) for a, b in zip(g64["talker_logits"], forced["talker_logits"])]
    snr_p = [[ref.snr_db(a.numpy(), b.numpy()) for a, b in zip(fa, fb)]
             for fa, fb in zip(g64["predictor_logits"], forced["predictor_logits"])]
    equal = 0
    for a, b in zip(g64["frames"], g32["frames"]):
        if a != b:
            break
        equal += 1
    mismatch = None if equal == len(g64["frames"]) == len(g32["frames"]) else equal

    return {
        "format": "ember-tts-golden-1",
        "model": model_dir,
        "settings": {"text": text, "speaker": speaker, "language": language, "non_streaming": non_streaming,
                     "frames": frames, "greedy": True,
                     "repetition_penalty": gen.get("repetition_penalty", 1.0), "min_new_tokens": 2,
                     "suppress": [cfg["talker_config"]["vocab_size"] - 1024, cfg["talker_config"]["vocab_size"]],
                     "eos": cfg["talker_config"]["codec_eos_token_id"], "reference_dtype": "float64",
                     "weights_dtype": weights_dtype(model_dir),
                     "instruct": instruct, "instruct_ids": instruct_ids,
                     "ref_text": ref_text, "ref_ids": ref_ids},
        "text_ids": text_ids,
        "xvector": xvector,
        "ref_codes": [c for f in ref_codes for c in f] if ref_codes else None,
        "prompt": {"rows": prompt["rows"], "n_rows": len(prompt["rows"]),
                   "trailing_text": prompt["trailing_text"]},
        "frames": g64["frames"],
        "n_frames": len(g64["frames"]),
        "stopped_at_eos": g64["stopped_at_eos"],
        "talker_logits": [sig7(x.numpy()) for x in g64["talker_logits"]],
        "predictor_logits": [[sig7(x.numpy()) for x in fr] for fr in g64["predictor_logits"]],
        "c0_top2_margins": [float(f"{x:.4g}") for x in g64["c0_top2_margins"]],
        "predictor_top2_margin_min": [float(f"{x:.4g}") for x in g64["predictor_top2_margin_min"]],
        "snr_db": {"talker": [round(x, 2) for x in snr_t],
                   "predictor": [[round(x, 2) for x in fr] for fr in snr_p],
                   "talker_min": round(min(snr_t), 2) if snr_t else None,
                   "predictor_min": round(min(min(fr) for fr in snr_p), 2) if snr_p else None},
        "fp32_free_run": {"frames_equal": equal, "first_mismatch": mismatch},
        "seconds": times,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--text", required=True)
    ap.add_argument("--speaker", default="ryan", help='"none": no built-in speaker (VoiceDesign, Base)')
    ap.add_argument("--instruct", default=None)
    ap.add_argument("--xvector-seed", type=int, default=None)
    ap.add_argument("--ref-text", default=None, help="in-context cloning: what the reference says (needs --xvector-seed)")
    ap.add_argument("--ref-frames", type=int, default=0, help="its frames (random codes from the x-vector seed)")
    ap.add_argument("--language", default="english")
    ap.add_argument("--frames", type=int, default=50)
    ap.add_argument("--streaming", action="store_true", help="streaming-text mode (default: non-streaming)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads; >1 only pays off for the 0.6b shapes on an idle machine")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    speaker = None if a.speaker == "none" else a.speaker
    g = run(a.model, a.text, speaker, a.language, a.frames, non_streaming=not a.streaming, instruct=a.instruct,
            xvector_seed=a.xvector_seed, ref_text=a.ref_text, ref_frames=a.ref_frames)
    seconds = g.pop("seconds")  # printed, not stored: the golden stays byte-stable
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(g, f, separators=(",", ":"))
        f.write("\n")
    summary = {k: g[k] for k in ("n_frames", "stopped_at_eos", "snr_db", "fp32_free_run")}
    summary["seconds"] = seconds
    summary["snr_db"] = {k: g["snr_db"][k] for k in ("talker_min", "predictor_min")}
    summary["bytes"] = os.path.getsize(a.out)
    summary["distinct_frames"] = len({tuple(f) for f in g["frames"]})
    summary["distinct_c0"] = len({f[0] for f in g["frames"]})
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
