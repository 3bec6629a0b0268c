#!/usr/bin/env bash
# `ember serve --speculate ngram` and `--speculate draft:DIR` (issue 22): the
# replies equal those of the same server without speculation, byte for byte
# (message content, tool calls, finish reason, token counts), for held-out
# demo conversations (seed 2026, never trained on) asked greedily and
# sampled with a seed, four at a time so speculating sequences share the
# engine's steps, and asked twice (the second round resumes the prompts from
# the prefix cache that the first round's sequences, speculated or not, were
# stored in: a draft session begins from what the target holds after the
# resume); and the speculative counters of /metrics move (drafts run, some
# accepted) and equal the sums of the replies' usage.speculative counts. The
# draft model is the demo quantized to q4_0 (`ember quantize`): the same
# tokenizer, and it disagrees now and then, so draft sessions are rolled
# back as well as fed through. A request's "speculate" chooses within what
# the server loaded: "off" and "ngram" on the draft server give the same
# replies, and only speculating requests move the counters; "draft" on a
# server without a draft model is a 400. Speed is the benchmark's business,
# never asserted here.
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

ask_all() { # OUT [JSON]: every request (with JSON's fields added), 4 at a time; the replies' choices and usage as JSON
  $PY - "$BASE" "$tmp/requests.json" "$1" "${2:-{\}}" <<'PY'
import json, sys, urllib.request
from concurrent.futures import ThreadPoolExecutor
base, reqs, out = sys.argv[1], json.load(open(sys.argv[2])), sys.argv[3]
extra = json.loads(sys.argv[4])
def ask(body):
    body = dict(body, **extra)
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

# usage_sum FILE: the verify passes ask_all printed (the replies' usage)
usage_sum() { awk '$1 == "usage" { print $2 }' "$1"; }

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
# a request for the draft model on a server that has none
code=$(curl -s -o "$tmp/no_draft.json" -w '%{http_code}' "$BASE/v1/chat/completions" \
  -H 'Content-Type: application/json' --data-binary \
  '{"model":"demo","max_tokens":8,"speculate":"draft","messages":[{"role":"user","content":"hi"}]}')
if [ "$code" = 400 ] && grep -q '"code":"drafter_not_loaded"' "$tmp/no_draft.json" &&
   grep -q 'no draft model' "$tmp/no_draft.json"; then
  pass serve_speculate_unloaded_drafter_400
else fail serve_speculate_unloaded_drafter_400 "$code $(cat "$tmp/no_draft.json")"; fi
code=$(curl -s -o "$tmp/bad_mode.json" -w '%{http_code}' "$BASE/v1/chat/completions" \
  -H 'Content-Type: application/json' --data-binary \
  '{"model":"demo","max_tokens":8,"speculate":"lookahead","draft_max":3,"messages":[{"role":"user","content":"hi"}]}')
if [ "$code" = 400 ] && grep -q '"param":"speculate"' "$tmp/bad_mode.json"; then
  pass serve_speculate_bad_request_mode
else fail serve_speculate_bad_request_mode "$code $(cat "$tmp/bad_mode.json")"; fi
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

# the draft model: the demo at q4_0
if ! "$EMBER" quantize "$model" "$tmp/draft.gguf" --type q4_0 >/dev/null 2>"$tmp/q.err"; then
  fail serve_speculate_draft_quantize "$(cat "$tmp/q.err")"; exit 1
fi
if ! start_server "$tmp/draft.log" -m "$model" --max-seqs 4 --threads 2 \
     --speculate "draft:$tmp/draft.gguf" --draft-max 4; then
  fail serve_speculate_draft_start "$(cat "$tmp/draft.log")"; exit 1
fi
ask_all "$tmp/draft.json" >"$tmp/dusage1" && ask_all "$tmp/draft2.json" >"$tmp/dusage2" ||
  fail serve_speculate_draft_requests "$(tail -5 "$tmp/draft.log")"
dpasses=$(metric ember_speculative_verify_passes_total)
ddrafted=$(metric ember_speculative_drafted_tokens_total)
daccepted=$(metric ember_speculative_accepted_tokens_total)
if [ -s "$tmp/plain.json" ] && cmp -s "$tmp/plain.json" "$tmp/draft.json" &&
   cmp -s "$tmp/plain2.json" "$tmp/draft2.json"; then
  pass serve_speculate_draft_replies_equal_plain
else
  fail serve_speculate_draft_replies_equal_plain "plain: $(head -c 600 "$tmp/plain.json")" \
    "draft: $(head -c 600 "$tmp/draft.json")"
fi
dusage=$(( $(usage_sum "$tmp/dusage1") + $(usage_sum "$tmp/dusage2") ))
if [ "$dusage" = "$dpasses" ] && [ "${dpasses:-0}" -gt 0 ] 2>/dev/null && [ "${daccepted:-0}" -gt 0 ] &&
   [ "$daccepted" -lt "$ddrafted" ]; then
  pass serve_speculate_draft_metrics
  echo "     $dpasses verify passes, $daccepted of $ddrafted drafted ids accepted"
else
  fail serve_speculate_draft_metrics "passes $dpasses (replies' usage: $dusage), drafted $ddrafted," \
    "accepted $daccepted"
fi
# per request: "off" runs plain (no counts, counters still), "ngram" looks up
ask_all "$tmp/off.json" '{"speculate":"off"}' >"$tmp/ousage" || fail serve_speculate_off_requests "$(tail -5 "$tmp/draft.log")"
opasses=$(metric ember_speculative_verify_passes_total)
ask_all "$tmp/ngram.json" '{"speculate":"ngram","draft_max":3}' >"$tmp/nusage" ||
  fail serve_speculate_ngram_requests "$(tail -5 "$tmp/draft.log")"
npasses=$(metric ember_speculative_verify_passes_total)
if cmp -s "$tmp/plain2.json" "$tmp/off.json" && cmp -s "$tmp/plain2.json" "$tmp/ngram.json"; then
  pass serve_speculate_per_request_replies_equal_plain
else
  fail serve_speculate_per_request_replies_equal_plain "plain: $(head -c 400 "$tmp/plain2.json")" \
    "off: $(head -c 400 "$tmp/off.json")" "ngram: $(head -c 400 "$tmp/ngram.json")"
fi
if [ ! -s "$tmp/ousage" ] && [ "$opasses" = "$dpasses" ] && [ "$(usage_sum "$tmp/nusage")" -gt 0 ] 2>/dev/null &&
   [ "$npasses" = $(( opasses + $(usage_sum "$tmp/nusage") )) ]; then
  pass serve_speculate_per_request_counters
else
  fail serve_speculate_per_request_counters "off: usage '$(cat "$tmp/ousage")', passes $dpasses -> $opasses;" \
    "ngram: usage '$(cat "$tmp/nusage")', passes -> $npasses"
fi
stop_server; SPID=""

expect_error serve_speculate_bad_mode "bad value" "$EMBER" serve -m "$model" --speculate lookahead
expect_error serve_speculate_draft_other_vocabulary "vocabulary" "$EMBER" serve -m "$model" --speculate draft:models/tiny
expect_error serve_speculate_bad_draft_max "bad value" "$EMBER" serve -m "$model" --speculate ngram --draft-max 0
exit $e2e_failed
