#!/usr/bin/python3
"""Speculative decoding on the demo model's held-out agent conversations
(issue 22): decode tokens/s with and without prompt lookup, the acceptance
and the ids per verify pass, and whether the replies equal plain decoding's.

    /usr/bin/python3 bench/speculate_demo.py [--model models/demo] [--n 100] [--seed 2026]
        [--kinds call,call2] [--draft-max 1,2,4,8] [--reps 3] [--max-tokens 128]
        [--temp 0 --sample-seed 0] [--threads N] [--draft DIR [--draft-dtype q4_0]] [--json out.json]

Prompts: reference/demo/corpus.py heldout(seed, n) (seed 2026 is never
trained on), cut where the assistant must reply, rendered with the chat
template (chatfmt.render, add_generation_prompt) and tokenized by `ember
tokenize`, exactly as bench/demo_eval.py does; --kinds keeps the
conversations of those kinds (call, call2: the tool-call ones; all: every
kind). build/bench/speculate (bench/speculate.c) then answers them with each
variant, alternating, and prints the JSON this script passes on with the
machine's load (`uptime`) added. Needs only the standard library.
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "reference", "demo"))
import chatfmt  # noqa: E402
import corpus  # noqa: E402
from demo_eval import ember_tokenize  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "demo"))
    ap.add_argument("--n", type=int, default=100, help="held-out conversations drawn (before --kinds)")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--kinds", default="call,call2")
    ap.add_argument("--draft-max", default="1,2,4,8")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--temp", type=float, default=0.0)
    ap.add_argument("--sample-seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--ember", default=os.path.join(ROOT, "build", "ember"))
    ap.add_argument("--bench", default=os.path.join(ROOT, "build", "bench", "speculate"))
    ap.add_argument("--draft", help="a draft model (same tokenizer) instead of prompt lookup")
    ap.add_argument("--draft-dtype", default="none")
    ap.add_argument("--json")
    a = ap.parse_args()
    items = corpus.heldout(a.seed, a.n)
    if a.kinds != "all":
        keep = set(a.kinds.split(","))
        items = [it for it in items if it["kind"] in keep]
    if not items:
        raise SystemExit("speculate_demo: no conversation of those kinds")
    prompts = [chatfmt.render(it["messages"], it["tools"], add_generation_prompt=True) for it in items]
    ids = ember_tokenize(a.ember, a.model, prompts)
    inp = "".join(json.dumps({"ids": x}) + "\n" for x in ids)
    cmd = [a.bench, "-m", a.model, "--draft-max", a.draft_max, "--reps", str(a.reps),
           "-n", str(a.max_tokens), "--temp", str(a.temp), "--seed", str(a.sample_seed),
           "--threads", str(a.threads)]
    if a.draft:
        cmd += ["--draft", a.draft, "--draft-dtype", a.draft_dtype]
    load_before = subprocess.run(["uptime"], stdout=subprocess.PIPE, text=True).stdout.strip()
    out = subprocess.run(cmd, input=inp, stdout=subprocess.PIPE, text=True, check=True).stdout
    r = json.loads(out)
    r["kinds"] = a.kinds
    r["heldout_seed"] = a.seed
    r["prompt_tokens"] = [min(map(len, ids)), max(map(len, ids))]
    r["load_before"] = load_before
    r["load_after"] = subprocess.run(["uptime"], stdout=subprocess.PIPE, text=True).stdout.strip()
    text = json.dumps(r, indent=1)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
