#!/usr/bin/env python3
"""The demo model's training corpus (issue 17): generated English stories
(stories.py) and generated agent conversations (chats.py). Deterministic for
a seed. Training uses seed 1; seed 2026 is the held-out evaluation seed and
must never be used for training.

    /usr/bin/python3 reference/demo/corpus.py --seed 1 --out build/demo-data

writes
    DIR/prose.jsonl   one story per line, as a JSON string
    DIR/chats.jsonl   one conversation per line: {"tools": [...], "messages": [...]}
                      (render with chatfmt.render / chatfmt.render_with_spans)

From Python (sys.path holding reference/demo):
    stories(seed, n) -> [str]                     the first n stories of a seed
    chats(seed, n, max_turns=None, family=1, call2_boost=0.0) -> [{"tools", "messages"}]
                                                  the first n conversations of a seed
    heldout(seed, n) -> [{"tools", "messages", "kind", "expected"}]
        conversations cut where the assistant must answer: render
        chatfmt.render(messages, tools, add_generation_prompt=True) and compare
        the model's reply (after any <think>...</think>) with expected, which is
        {"call": [{"name": str, "arguments": dict}, ...]} or {"direct": str};
        kind is "call", "call2", "answer", "smalltalk", "fact", "tools" or "refusal".
    read_prose(dir) -> [str], read_chats(dir) -> [dict]
"""
import argparse
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatfmt  # noqa: E402
import chats as _chats  # noqa: E402
import drills as _drills  # noqa: E402
import stories as _stories  # noqa: E402

TRAIN_SEED = 1
HELDOUT_SEED = 2026


def stories(seed, n):
    rng = random.Random(f"prose-{seed}")
    return [_stories.story(rng) for _ in range(n)]


def drills(seed, n):
    rng = random.Random(f"drill-{seed}")
    return [_drills.drill(rng) for _ in range(n)]


def _conversations(seed, max_turns=None, family=1, call2_boost=0.0):
    """family > 1: runs of that many conversations share one tool list and
    system prompt (each conversation is otherwise drawn as usual)."""
    rng = random.Random(f"chat-{seed}")
    while True:
        if family <= 1:
            yield _chats.conversation(rng, max_turns, None, call2_boost)
            continue
        offered = _chats.offer(rng)
        for _ in range(family):
            yield _chats.conversation(rng, max_turns, offered, call2_boost)


def chats(seed, n, max_turns=None, family=1, call2_boost=0.0):
    out = []
    for conv, _ in _conversations(seed, max_turns, family, call2_boost):
        if len(out) == n:
            break
        out.append(conv)
    return out


def heldout(seed, n):
    pick = random.Random(f"heldout-{seed}")
    out = []
    for conv, kinds in _conversations(seed):
        if len(out) == n:
            break
        idx = pick.choice(sorted(kinds))
        m = conv["messages"][idx]
        if m.get("tool_calls"):
            expected = {"call": [{"name": c["function"]["name"], "arguments": c["function"]["arguments"]}
                                 for c in m["tool_calls"]]}
        else:
            expected = {"direct": m["content"]}
        out.append({"tools": conv["tools"], "messages": conv["messages"][:idx], "kind": kinds[idx],
                    "expected": expected})
    return out


def read_prose(d):
    with open(os.path.join(d, "prose.jsonl"), encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def read_chats(d):
    with open(os.path.join(d, "chats.jsonl"), encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=TRAIN_SEED)
    ap.add_argument("--out", required=True)
    ap.add_argument("--prose-docs", type=int, default=10000)
    ap.add_argument("--chats", type=int, default=40000)
    ap.add_argument("--max-turns", type=int, default=None,
                    help="requests per conversation drawn from 1..N (default: the generator's mix, mostly 1)")
    ap.add_argument("--family", type=int, default=1,
                    help="write the conversations in runs of N that share one tool list and system prompt "
                         "(train.py --share-prefix computes such a prompt once for the run; default 1: "
                         "every conversation draws its own, as before)")
    ap.add_argument("--call2-boost", type=float, default=0.0,
                    help="training corpora only: this share of the requests that offer tools ask for two calls "
                         "before the usual mix is drawn (the demo's weakest kind; 0, the default, leaves every "
                         "seed's conversations exactly as before)")
    ap.add_argument("--drills", type=int, default=0,
                    help="also N copy/look-up drills (drills.py), shuffled into prose.jsonl")
    ap.add_argument("--rendered", action="store_true",
                    help="also write DIR/chats.rendered.jsonl: each conversation rendered by chatfmt.render, as a JSON string")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    n_prose = 0
    with open(os.path.join(args.out, "prose.jsonl"), "w", encoding="utf-8") as f:
        docs = stories(args.seed, args.prose_docs)
        if args.drills:  # without drills the file stays as the tokenizer was trained on, byte for byte
            docs += drills(args.seed, args.drills)
            random.Random(f"mix-{args.seed}").shuffle(docs)
        for s in docs:
            f.write(json.dumps(s, ensure_ascii=False) + "\n")
            n_prose += len(s)
    n_chat = 0
    rendered = open(os.path.join(args.out, "chats.rendered.jsonl"), "w", encoding="utf-8") if args.rendered else None
    with open(os.path.join(args.out, "chats.jsonl"), "w", encoding="utf-8") as f:
        for c in chats(args.seed, args.chats, args.max_turns, args.family, args.call2_boost):
            f.write(json.dumps(c, ensure_ascii=False) + "\n")
            if rendered:
                rendered.write(json.dumps(chatfmt.render(c["messages"], c["tools"]), ensure_ascii=False) + "\n")
            n_chat += 1
    if rendered:
        rendered.close()
    print(f"wrote {args.out}/prose.jsonl ({args.prose_docs} stories, {args.drills} drills, {n_prose} chars) and "
          f"{args.out}/chats.jsonl ({n_chat} conversations), seed {args.seed}")


if __name__ == "__main__":
    main()
