#!/usr/bin/env bash
# `ember serve --speculate ngram` (issue 22): the replies equal those of the
# same server without speculation, byte for byte (message content, tool
# calls, finish reason, token counts), for held-out demo conversations
# (seed 2026, never trained on) asked greedily and sampled with a seed, four
# at a time so speculating sequences share the engine's steps, and asked
# twice (the second round resumes the prompts from the prefix cache that the
# first round's sequences, speculated or not, were stored in); and the
# speculative counters of /metrics move (drafts run, some accepted) and
# equal the sums of the replies' usage.speculative counts. Speed is
# the benchmark's business, never asserted here.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
model=models/demo
if [ ! -f "$model/model.safetensors" ]; then echo "SKIP serve_speculate ($model has no weights)"; exit 0; fi
tmp=$(mktemp -d)
SPID=""
cleanup() { [ -n "$SPID" ] && kill -9 $SPID 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

# the requests: the first 8 held-out conversations up to their first user
# turn, with their tools; even ones greedy, odd ones sampled with a seed
$PY - "$tmp/requests.json" <<'PY' || { fail serve_speculate_requests "could not build them"; exit 1; }
import json, sys
sys.path.insert(0, "reference/demo")
import corpus
reqs = []
for conv, kinds in corpus._conversations(corpus.HELDOUT_SEED):
    msgs = conv["messages"]
    i = 1 if msgs[0]["role"] == "system" else 0
    body = {"model": "demo", "messages": msgs[:i + 1], "tools": conv["tools"], "max_tokens": 48}
    if len(reqs) % 2:
        body.update(temperature=0.8, seed=100 + len(reqs))
    else:
        body["temperature"] = 0
    reqs.append(body)
    if len(reqs) == 8:
        break
json.dump(reqs, open(sys.argv[1], "w"))
PY

ask_all() { # OUT: every request, 4 at a time; the replies' choices and usage as JSON
  $PY - "$BASE" "$tmp/requests.json" "$1" <<'PY'
import json, sys, urllib.request
from concurrent.futures import ThreadPoolExecutor
base, reqs, out = sys.argv[1], json.load(open(sys.argv[2])), sys.argv[3]
def ask(body):
    r = urllib.request.Request(base + "/v1/chat/completions", json.dumps(body).encode(),
                               {"Content-Type": "application/json"})
    with urllib.request.urlopen(r, timeout=120) as f:
        o = json.loads(f.read())
    u = o["usage"]
    return {"choices": o["choices"], "tokens": [u["prompt_tokens"], u["completion_tokens"]],
            "speculative": u.get("speculative")}
with ThreadPoolExecutor(4) as ex:
    replies = list(ex.map(ask, reqs))
# the speculative counts go aside (the plain server has none) and are summed
spec = [r.pop("speculative") for r in replies]
json.dump(replies, open(out, "w"), sort_keys=True)
if all(spec):
    ok = all(0 <= s["accepted_tokens"] <= s["drafted_tokens"] for s in spec)
    print("usage", sum(s["verify_passes"] for s in spec) if ok else "bad")
elif any(spec):
    print("usage bad")
PY
}

if ! start_server "$tmp/plain.log" -m "$model" --max-seqs 4 --threads 2; then
  fail serve_speculate_start "$(cat "$tmp/plain.log")"; exit 1
fi
ask_all "$tmp/plain.json" && ask_all "$tmp/plain2.json" || fail serve_speculate_plain_requests "$(tail -5 "$tmp/plain.log")"
stop_server; SPID=""

if ! start_server "$tmp/spec.log" -m "$model" --max-seqs 4 --threads 2 \
     --speculate ngram --draft-max 4; then
  fail serve_speculate_start "$(cat "$tmp/spec.log")"; exit 1
fi
passes0=$(metric ember_speculative_verify_passes_total)
ask_all "$tmp/spec.json" >"$tmp/usage1" && ask_all "$tmp/spec2.json" >"$tmp/usage2" || fail serve_speculate_requests "$(tail -5 "$tmp/spec.log")"
passes=$(metric ember_speculative_verify_passes_total)
drafted=$(metric ember_speculative_drafted_tokens_total)
accepted=$(metric ember_speculative_accepted_tokens_total)
# a streamed reply is framed as usual, its usage carrying the counts
curl -sN -m 60 "$BASE/v1/chat/completions" -H 'Content-Type: application/json' --data-binary \
  '{"model":"demo","stream":true,"stream_options":{"include_usage":true},"max_tokens":40,"messages":[{"role":"user","content":"weather in Paris? and Paris?"}]}' \
  >"$tmp/stream.txt"
if why=$(sse_ok "$tmp/stream.txt") && grep -q '"verify_passes":[1-9]' "$tmp/stream.txt"; then
  pass serve_speculate_stream
else fail serve_speculate_stream "$why" "$(tail -c 300 "$tmp/stream.txt")"; fi
stop_server; SPID=""

if [ -s "$tmp/plain.json" ] && cmp -s "$tmp/plain.json" "$tmp/spec.json" &&
   cmp -s "$tmp/plain2.json" "$tmp/spec2.json"; then
  pass serve_speculate_replies_equal_plain
else
  fail serve_speculate_replies_equal_plain "plain: $(head -c 600 "$tmp/plain.json")" \
    "speculative: $(head -c 600 "$tmp/spec.json")"
fi
usage_passes=$(( $(awk '$1 == "usage" { print $2 }' "$tmp/usage1") + $(awk '$1 == "usage" { print $2 }' "$tmp/usage2") ))
if [ "$passes0" = 0 ] && [ "$usage_passes" = "$passes" ] && [ "${passes:-0}" -gt 0 ] 2>/dev/null && [ "${drafted:-0}" -gt 0 ] &&
   [ "${accepted:-0}" -gt 0 ] && [ "$accepted" -lt "$drafted" ]; then
  pass serve_speculate_metrics
  echo "     $passes verify passes, $accepted of $drafted drafted ids accepted"
else
  fail serve_speculate_metrics "passes $passes0 -> $passes (replies' usage: $usage_passes)," \
    "drafted $drafted, accepted $accepted"
fi
expect_error serve_speculate_bad_mode "only ngram" "$EMBER" serve -m "$model" --speculate draft:models/demo
expect_error serve_speculate_bad_draft_max "bad value" "$EMBER" serve -m "$model" --speculate ngram --draft-max 0
exit $e2e_failed
