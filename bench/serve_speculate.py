#!/usr/bin/python3
"""`ember serve` with and without speculative decoding (issue 22): the
aggregate throughput of concurrent requests on the demo model's held-out
agent conversations, plain against --speculate ngram (and draft:DIR when
given), for one or more ember binaries (a build before and after a change),
the variants alternating round by round. One JSON object on stdout.

    /usr/bin/python3 bench/serve_speculate.py [--ember build/ember ...] [--model models/demo]
        [--requests 16] [--concurrency 4] [--max-tokens 64] [--rounds 3] [--threads 2]
        [--draft-max 4] [--draft DIR]

Each variant starts its own server (--max-seqs = concurrency, prefix cache
off so every round runs the same prompts), warms it with one request, then
times the requests (greedy, the first user turn of the held-out seed-2026
conversations, with their tools) `concurrency` at a time: completion
tokens per second of wall time, and per second of the server's CPU time
(less sensitive to a loaded machine). The replies of every variant are
compared with the first one's (speculation must not change them). Never
asserts anything about speed. Needs only the standard library.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "reference", "demo"))
import corpus  # noqa: E402


def requests_of(n, max_tokens):
    out = []
    for conv, _kinds in corpus._conversations(corpus.HELDOUT_SEED):
        msgs = conv["messages"]
        i = 1 if msgs[0]["role"] == "system" else 0
        out.append({"model": os.path.basename(ARGS.model.rstrip("/")), "messages": msgs[:i + 1],
                    "tools": conv["tools"], "max_tokens": max_tokens, "temperature": 0})
        if len(out) == n:
            return out
    return out


def server_cpu_s(pid):
    fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(binary, extra, reqs):
    with tempfile.NamedTemporaryFile("w+", suffix=".log") as log:
        p = subprocess.Popen([binary, "serve", "--port", "0", "-m", ARGS.model, "--max-seqs",
                              str(ARGS.concurrency), "--threads", str(ARGS.threads), "--prefix-cache", "0"]
                             + extra, stderr=log, stdout=subprocess.DEVNULL)
        try:
            port = None
            for _ in range(600):
                m = re.search(r"listening on http://127.0.0.1:(\d+)", open(log.name).read())
                if m:
                    port = m.group(1)
                    break
                if p.poll() is not None:
                    break
                time.sleep(0.1)
            if not port:
                sys.exit("server did not start: " + open(log.name).read()[-500:])
            base = "http://127.0.0.1:" + port

            def ask(body):
                r = urllib.request.Request(base + "/v1/chat/completions", json.dumps(body).encode(),
                                           {"Content-Type": "application/json"})
                with urllib.request.urlopen(r, timeout=600) as f:
                    o = json.loads(f.read())
                return o["usage"]["completion_tokens"], json.dumps(o["choices"], sort_keys=True)

            ask(reqs[0])
            c0, t0 = server_cpu_s(p.pid), time.time()
            with ThreadPoolExecutor(ARGS.concurrency) as ex:
                replies = list(ex.map(ask, reqs))
            wall, cpu = time.time() - t0, server_cpu_s(p.pid) - c0
        finally:
            p.terminate()
            p.wait()
    tokens = sum(r[0] for r in replies)
    return {"tokens": tokens, "wall_s": wall, "cpu_s": cpu}, [r[1] for r in replies]


def main():
    modes = [("plain", []), ("ngram", ["--speculate", "ngram", "--draft-max", str(ARGS.draft_max)])]
    if ARGS.draft:
        modes.append(("draft", ["--speculate", "draft:" + ARGS.draft, "--draft-max", str(ARGS.draft_max)]))
    reqs = requests_of(ARGS.requests, ARGS.max_tokens)
    runs, first, same = {}, None, True
    for _ in range(ARGS.rounds):
        for binary in ARGS.ember:
            for mode, extra in modes:
                r, replies = run(binary, extra, reqs)
                first = first or replies
                same = same and replies == first
                runs.setdefault((binary, mode), []).append(r)
    variants = []
    for (binary, mode), rs in runs.items():
        variants.append({"ember": binary, "mode": mode, "runs": rs,
                         "tok_per_s": statistics.median(r["tokens"] / r["wall_s"] for r in rs),
                         "tok_per_cpu_s": statistics.median(r["tokens"] / r["cpu_s"] for r in rs)})
    print(json.dumps({"model": ARGS.model, "requests": len(reqs), "concurrency": ARGS.concurrency,
                      "max_tokens": ARGS.max_tokens, "threads": ARGS.threads, "draft_max": ARGS.draft_max,
                      "replies_identical": same, "load": os.getloadavg(), "variants": variants}, indent=1))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ember", action="append")
    ap.add_argument("--model", default="models/demo")
    ap.add_argument("--requests", type=int, default=16)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--draft-max", type=int, default=4)
    ap.add_argument("--draft")
    ARGS = ap.parse_args()
    ARGS.ember = ARGS.ember or [os.path.join(ROOT, "build", "ember")]
    main()
