#!/usr/bin/python3
"""Golden logits for ember parity tests.

  /usr/bin/python3 reference/golden.py --model DIR --out FILE [--prompt-len N]
      [--n-gen 32] [--seed S] [--positions all|sparse] [--gelu erf|tanh]
      [--no-floor]

1. prompt_ids: N ids drawn uniformly from [0, vocab) with --seed
   (default N = 3*sliding_window + 5, so a sliding ring wraps several times).
2. greedy_ids: n-gen greedy tokens from the float32 reference (incremental,
   with a K/V past; then re-checked against the teacher-forced pass below and
   repaired if a near-tie flipped a token).
3. Teacher-forced sequence S = prompt_ids + greedy_ids[:-1]; one float32 and
   one float64 forward over S. Row p of the logits predicts token p+1.
4. logit_positions: "all" = every position of S; "sparse" (default when
   len(S) > 256) = every 32nd prompt position, the last prompt position and
   every generated position.
Output JSON keys: prompt_ids, logit_positions, logits (float32 reference, one
row per position, '%.9g' so each float32 round-trips), greedy_ids,
floor_snr_db (per position, fp32 vs float64 reference; null with --no-floor),
floor_snr_db_aggregate,
top2_gap, model, dtype_note, rope_inv_freq (per layer type, the float32 table
used: torch's powf is not correctly rounded, so copy it for bit-exact angles),
plus gelu, seed, n_gen, seq_len, greedy_repaired.
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spark_ref  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def snr_db(ref, test):
    """10*log10(sum(ref^2) / sum((test-ref)^2)); 999 when identical."""
    err = float(((test - ref) ** 2).sum())
    sig = float((ref ** 2).sum())
    return 999.0 if err == 0.0 else 10.0 * math.log10(sig / err)


def greedy(model, prompt, n_gen):
    """Greedy decode with a K/V past (same layer code as the full forward)."""
    logits, past = model.forward(prompt, rows=[len(prompt) - 1])
    out = []
    for _ in range(n_gen):
        tok = int(logits[-1].argmax())
        out.append(tok)
        if len(out) == n_gen:
            break
        logits, past = model.forward([tok], past=past)
    return out


def fmt_row(row):
    return "[" + ",".join("%.9g" % v for v in row.tolist()) + "]"


def fmt_list(xs, f=repr):
    return "[" + ",".join(f(x) for x in xs) + "]"


def main():
    ap = argparse.ArgumentParser(description="write golden logits JSON for a Spark-X2.5 checkpoint")
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--prompt-len", type=int, default=None)
    ap.add_argument("--prompt-ids", default=None,
                    help="a file of prompt token ids (whitespace or comma separated) instead of "
                         "random ones: a trained model's logits on its own kind of text")
    ap.add_argument("--n-gen", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--positions", choices=["all", "sparse"], default=None)
    ap.add_argument("--gelu", choices=["erf", "tanh"], default="erf")
    ap.add_argument("--no-floor", action="store_true",
                    help="skip the float64 pass (slow: ~2 GFLOP/s here); floor fields become null")
    a = ap.parse_args()
    if a.n_gen < 1:
        ap.error("--n-gen must be >= 1")
    t0 = time.time()
    tensors = spark_ref.load_checkpoint_tensors(a.model)
    m32 = spark_ref.SparkRef.load(a.model, torch.float32, a.gelu, tensors=tensors)
    m64 = spark_ref.SparkRef.load(a.model, torch.float64, a.gelu, tensors=tensors)
    cfg = m32.cfg
    if a.prompt_ids:
        with open(a.prompt_ids, encoding="utf-8") as f:
            prompt = [int(t) for t in f.read().replace(",", " ").split()]
        if not prompt or any(not 0 <= t < cfg.vocab for t in prompt):
            ap.error(f"--prompt-ids: ids must be in [0, {cfg.vocab}) and there must be at least one")
        n = len(prompt)
    else:
        n = a.prompt_len if a.prompt_len is not None else 3 * cfg.window + 5
        g = torch.Generator().manual_seed(a.seed)
        prompt = torch.randint(0, cfg.vocab, (n,), generator=g).tolist()

    gen = greedy(m32, prompt, a.n_gen)
    seq = prompt + gen[:-1]
    mode = a.positions or ("sparse" if len(seq) > 256 else "all")
    if mode == "all":
        pos = list(range(len(seq)))
    else:
        pos = sorted(set(range(0, n, 32)) | {n - 1} | set(range(n, len(seq))))
    t1 = time.time()

    # Teacher-forced fp32 pass; repair greedy ids if incremental decoding and
    # the full pass disagree on an argmax (a near-tie): the golden must be
    # self-consistent, i.e. argmax(logits at n-1+k) == greedy_ids[k].
    repaired = 0
    while True:
        l32 = m32(seq, rows=pos)
        gen_rows = [pos.index(n - 1 + k) for k in range(a.n_gen)]
        tf = [int(l32[r].argmax()) for r in gen_rows]
        bad = [k for k in range(a.n_gen) if tf[k] != gen[k]]
        if not bad or repaired >= 4:
            break
        k = bad[0]
        repaired += 1
        print(f"golden: greedy token {k} flipped ({gen[k]} -> {tf[k]}) between incremental "
              f"and teacher-forced passes; re-decoding from there", file=sys.stderr)
        fixed = gen[:k] + [tf[k]]
        gen = fixed + (greedy(m32, prompt + fixed, a.n_gen - k - 1) if k + 1 < a.n_gen else [])
        seq = prompt + gen[:-1]
    if bad:
        print("golden: WARNING greedy ids still inconsistent after repairs", file=sys.stderr)
    t2 = time.time()
    snrs, agg = None, None
    if not a.no_floor:
        l64 = m64(seq, rows=pos)
        r32 = l32.double()
        snrs = [snr_db(l64[i], r32[i]) for i in range(len(pos))]
        agg = snr_db(l64, r32)
        del l64
    t3 = time.time()
    top2 = l32.topk(2, dim=-1).values
    gaps = (top2[:, 0] - top2[:, 1]).tolist()
    note = ("logits: float32 reference (weights upcast from checkpoint dtype to float32, "
            "float32 residual/softmax, float32 RoPE angles); floor_snr_db: float32 vs "
            "float64 run of the same code (float64 cos/sin of the same float32 angles), "
            f"teacher-forced; GELU {a.gelu}")
    with open(a.out, "w") as f:
        f.write("{\n")
        # the model as a path relative to the repository: no machine's path in a committed golden
        f.write(f'"model": {json.dumps(os.path.relpath(os.path.abspath(a.model), ROOT))},\n')
        f.write(f'"dtype_note": {json.dumps(note)},\n')
        f.write(f'"gelu": "{a.gelu}",\n"seed": {a.seed},\n"n_gen": {a.n_gen},\n'
                f'"seq_len": {len(seq)},\n"greedy_repaired": {repaired},\n')
        # the exact float32 inverse-frequency tables the reference rotated with
        inv = {lt: fmt_list(spark_ref.rope_inv_freq(*cfg.rope[lt]).tolist(), lambda v: "%.9g" % v)
               for lt in spark_ref.LAYER_TYPES}
        f.write('"rope_inv_freq": {' + ",".join(f'"{k}": {v}' for k, v in inv.items()) + "},\n")
        f.write(f'"prompt_ids": {fmt_list(prompt)},\n')
        f.write(f'"greedy_ids": {fmt_list(gen)},\n')
        f.write(f'"logit_positions": {fmt_list(pos)},\n')
        f.write(f'"floor_snr_db": {"null" if snrs is None else fmt_list(snrs)},\n')
        f.write(f'"floor_snr_db_aggregate": {"null" if agg is None else repr(agg)},\n')
        f.write(f'"top2_gap": {fmt_list(gaps, lambda v: "%.9g" % v)},\n')
        f.write('"logits": [\n' + ",\n".join(fmt_row(l32[i]) for i in range(len(pos))) + "\n]\n}\n")
    floor = ("floor SNR skipped" if snrs is None else
             f"floor SNR min={min(snrs):.2f} dB mean={np.mean(snrs):.2f} dB aggregate={agg:.2f} dB")
    print(f"golden: {a.out}: seq_len={len(seq)} positions={len(pos)} ({mode}) {floor}; "
          f"min top2 gap={min(gaps):.4g}; greedy={gen[:8]}{'...' if len(gen) > 8 else ''}; "
          f"time: greedy {t1 - t0:.1f}s fp32 {t2 - t1:.1f}s fp64 {t3 - t2:.1f}s "
          f"total {time.time() - t0:.1f}s", file=sys.stderr)


if __name__ == "__main__":
    main()
