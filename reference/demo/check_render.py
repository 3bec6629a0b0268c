#!/usr/bin/env python3
"""Checks chatfmt.render against `ember template` byte for byte on generated
conversations: each whole conversation, and its held-out prefixes with the
generation prompt (one with enable_thinking=false). Exit 1 on any difference.

    /usr/bin/python3 reference/demo/check_render.py --ember build/ember -m models/demo [--n 200] [--seed 7]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatfmt  # noqa: E402
import corpus  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ember", default="build/ember")
    ap.add_argument("-m", "--model", required=True, help="directory whose tokenizer_config.json has the chat template")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    cases = []
    for c in corpus.chats(args.seed, args.n):
        cases.append({"messages": c["messages"], "tools": c["tools"]})
    for i, h in enumerate(corpus.heldout(args.seed, args.n)):
        case = {"messages": h["messages"], "tools": h["tools"], "add_generation_prompt": True}
        if i % 4 == 0:
            case["enable_thinking"] = False
        cases.append(case)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "cases.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(cases, f, ensure_ascii=False)
        got = json.loads(subprocess.run([args.ember, "template", "-m", args.model, "--cases", path],
                                        check=True, capture_output=True).stdout)
    bad = 0
    for i, (case, g) in enumerate(zip(cases, got)):
        want = chatfmt.render(case["messages"], case["tools"], case.get("add_generation_prompt", False),
                              case.get("enable_thinking"))
        if g != want:
            if bad < 3:
                k = next((j for j in range(min(len(g), len(want))) if g[j] != want[j]), min(len(g), len(want)))
                print(f"  case {i} differs at char {k}:\n    ember:   {json.dumps(g[max(0, k - 60):k + 60])}\n"
                      f"    chatfmt: {json.dumps(want[max(0, k - 60):k + 60])}")
            bad += 1
    if len(got) != len(cases):
        print(f"  ember rendered {len(got)} cases of {len(cases)}")
        bad += 1
    print(f"{'FAIL' if bad else 'PASS'} chatfmt.render == ember template on {len(cases)} renderings "
          f"({args.n} conversations, {args.n} held-out prompts; {bad} differences)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
