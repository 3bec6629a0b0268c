#!/usr/bin/env bash
# `ember serve` on the committed tiny model, over real loopback sockets:
# routes and OpenAI error objects (400 naming the field, 401, 404, 413),
# greedy replies equal to the CLI's, well-framed SSE, 16 concurrent streams
# equal to their one-at-a-time replies, a killed client freeing its slot, a
# full queue answering 503 + Retry-After, a queued request timing out (504),
# /metrics, tool_choice (named, required), --stats counts matching the
# requests, and the official `openai` npm client (tests/js/serve_openai.mjs).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
tmp=$(mktemp -d)
SPID=""
cleanup() { [ -n "$SPID" ] && kill -9 $SPID 2>/dev/null; jobs -p | xargs -r kill -9 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
M=models/tiny
chat() { # chat BODY-SUFFIX: a chat request body for the tiny model
  printf '{"model":"tiny","messages":[{"role":"user","content":"%s"}]%s}' "$1" "$2"
}

# command-line errors, before anything listens
expect_error serve_needs_model "usage: ember serve" "$EMBER" serve
expect_error serve_bad_port "bad value '70000' for --port" "$EMBER" serve -m $M --port 70000
expect_error serve_bad_host "cannot listen on" "$EMBER" serve -m $M --host not-an-address --port 0
expect_error serve_missing_model "ember serve:" "$EMBER" serve -m "$tmp/none" --port 0

if ! start_server "$tmp/server.log" -m $M --threads 2 --max-seqs 8 --max-queue 16 --ctx 2048 --max-body 65536; then
  fail serve_starts "$(cat "$tmp/server.log")"; exit 1
fi
pass serve_starts

# --- routes and errors -------------------------------------------------------
body=$(curl -s "$BASE/health")
[ "$body" = '{"status":"ok"}' ] && pass health || fail health "$body"
body=$(curl -s "$BASE/v1/models")
grep -q '"id":"tiny"' <<<"$body" && pass models_list || fail models_list "$body"

# expect_status NAME STATUS PARAM METHOD PATH BODY: status and error.param
expect_status() {
  local name=$1 want=$2 param=$3 method=$4 path=$5 data=$6 got out
  out=$(curl -s -w '\n%{http_code}' -X "$method" -H 'Content-Type: application/json' \
        --data-binary @- "$BASE$path" <<<"$data")
  got=$(tail -1 <<<"$out")
  out=$(sed '$d' <<<"$out")
  if [ "$got" = "$want" ] && python3 -c '
import json, sys
e = json.loads(sys.argv[1])["error"]
assert isinstance(e["message"], str) and e["message"] and "type" in e and "code" in e
assert sys.argv[2] == "-" or e["param"] == sys.argv[2], e' "$out" "$param" 2>/dev/null
  then pass "$name"; else fail "$name" "status $got (want $want), param want $param" "$out"; fi
}
expect_status unknown_route_404 404 - GET /v1/nothing ''
expect_status unknown_model_404 404 model POST /v1/chat/completions '{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}'
expect_status invalid_json_400 400 - POST /v1/chat/completions '{"model":"tiny","messages":['
expect_status not_an_object_400 400 - POST /v1/chat/completions '[1,2]'
expect_status missing_messages_400 400 messages POST /v1/chat/completions '{"model":"tiny"}'
expect_status bad_role_400 400 'messages[0]' POST /v1/chat/completions "$(chat x '' | sed 's/"user"/"wizard"/')"
expect_status temperature_range_400 400 temperature POST /v1/chat/completions "$(chat hi ',"temperature":3')"
expect_status max_tokens_type_400 400 max_tokens POST /v1/chat/completions "$(chat hi ',"max_tokens":"ten"')"
expect_status n_2_400 400 n POST /v1/chat/completions "$(chat hi ',"n":2')"
expect_status stop_type_400 400 stop POST /v1/chat/completions "$(chat hi ',"stop":[1]')"
expect_status tools_shape_400 400 'tools[0]' POST /v1/chat/completions "$(chat hi ',"tools":[{"type":"function"}]')"
expect_status stream_options_400 400 stream_options.include_usage POST /v1/chat/completions "$(chat hi ',"stream":true,"stream_options":{"include_usage":1}')"
expect_status context_exceeded_400 400 max_tokens POST /v1/chat/completions "$(chat hi ',"max_tokens":5000')"
expect_status prompt_id_range_400 400 prompt POST /v1/completions '{"model":"tiny","prompt":[1,99999]}'
expect_status logit_bias_400 400 logit_bias POST /v1/completions '{"model":"tiny","prompt":"a","logit_bias":{"x":1}}'
deep=$(printf '[%.0s' $(seq 1 200))$(printf ']%.0s' $(seq 1 200))
expect_status nesting_cap_400 400 - POST /v1/chat/completions "{\"model\":\"tiny\",\"messages\":$deep}"
big=$(head -c 70000 /dev/zero | tr '\0' 'a')
expect_status body_cap_413 413 - POST /v1/chat/completions "$(chat "$big" '')"
expect_status speech_not_yet_501 501 - POST /v1/audio/speech '{"model":"tiny","input":"hi","voice":"x"}'
tools2='"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}},{"type":"function","function":{"name":"get_time"}}]'
expect_status tool_choice_unknown_function_400 400 tool_choice POST /v1/chat/completions "$(chat hi ",$tools2,\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"get_date\"}}")"
expect_status tool_choice_without_tools_400 400 tool_choice POST /v1/chat/completions "$(chat hi ',"tool_choice":"required"')"

# --- replies -----------------------------------------------------------------
# A greedy completion is the CLI's greedy continuation of the same prompt.
prompt="The model reads the prompt and"
want=$("$EMBER" generate -m $M -p "$prompt" -n 16 --greedy --threads 2 2>/dev/null)
got=$(curl -s "$BASE/v1/completions" -d "{\"model\":\"tiny\",\"prompt\":\"$prompt\",\"max_tokens\":16,\"temperature\":0}" |
      python3 -c 'import json,sys; o=json.load(sys.stdin); print(o["choices"][0]["text"]); print(o["choices"][0]["finish_reason"], o["usage"]["completion_tokens"])')
if [ "$(head -1 <<<"$got")" = "$want" ] && [ "$(tail -1 <<<"$got")" = "length 16" ]; then pass completion_equals_cli_greedy
else fail completion_equals_cli_greedy "server: $got" "cli: $want"; fi

curl -sN "$BASE/v1/chat/completions" -d "$(chat hello ',"max_tokens":20,"temperature":0,"stream":true,"stream_options":{"include_usage":true}')" >"$tmp/one.sse"
if err=$(sse_ok "$tmp/one.sse" 2>&1) && grep -q '"usage":{"prompt_tokens"' "$tmp/one.sse"; then pass chat_stream_framing_and_usage
else fail chat_stream_framing_and_usage "$err" "$(head -c 600 "$tmp/one.sse")"; fi

# tool_choice: whatever the tiny random model would say, a named function
# is called (and only it, once), "required" calls one of the tools; sampled
# with several seeds, streamed and not. The arguments are what the model
# wrote after the forced opening (not JSON from random weights).
bad=""
for seed in 1 2 3 4 5; do
  for choice in '{"type":"function","function":{"name":"get_time"}}' '"required"'; do
    body=$(chat "What time is it in Paris?" ",$tools2,\"tool_choice\":$choice,\"max_tokens\":40,\"temperature\":1,\"seed\":$seed")
    curl -s "$BASE/v1/chat/completions" -d "$body" >"$tmp/tc.json"
    curl -sN "$BASE/v1/chat/completions" -d "${body%\}},\"stream\":true}" >"$tmp/tc.sse"
    err=$(python3 - "$tmp/tc.json" "$tmp/tc.sse" "$choice" <<'PY' 2>&1
import json, sys
o = json.load(open(sys.argv[1]))
named = sys.argv[3] != '"required"'
allowed = {"get_time"} if named else {"get_time", "get_weather"}
c = o["choices"][0]
calls = c["message"].get("tool_calls") or []
assert calls and calls[0]["function"]["name"] in allowed, o
assert isinstance(calls[0]["function"]["arguments"], str) and calls[0]["id"] == "call_0", o
assert c["finish_reason"] in ("tool_calls", "length"), o
if named:
    assert len(calls) == 1 and c["message"]["content"] is None, o
ev = [json.loads(e[6:]) for e in open(sys.argv[2]).read().split("\n\n") if e.startswith("data: {")]
deltas = [tc for e in ev for tc in (e["choices"][0]["delta"].get("tool_calls") or [])]
assert deltas and deltas[0]["function"]["name"] in allowed and deltas[0]["index"] == 0, ev
PY
)
    [ -n "$err" ] && bad="$bad seed $seed $choice: $(tail -1 <<<"$err")"
    sse_ok "$tmp/tc.sse" >/dev/null 2>&1 || bad="$bad seed $seed: stream framing"
  done
done
[ -z "$bad" ] && pass tool_choice_forces_the_call || fail tool_choice_forces_the_call "$bad"

# 16 concurrent streams (8 rows per step, 8 queued): each is well framed and
# equals the same request answered alone.
for k in 0 1 2 3; do
  curl -s "$BASE/v1/completions" -d "{\"model\":\"tiny\",\"prompt\":\"Story $k: once\",\"max_tokens\":40,\"temperature\":0}" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["choices"][0]["text"], end="")' >"$tmp/alone.$k"
done
pids=()
for i in $(seq 0 15); do
  k=$((i % 4))
  curl -sN "$BASE/v1/completions" -d "{\"model\":\"tiny\",\"prompt\":\"Story $k: once\",\"max_tokens\":40,\"temperature\":0,\"stream\":true}" >"$tmp/c.$i" &
  pids+=($!)
done
wait "${pids[@]}"
bad=""
for i in $(seq 0 15); do
  k=$((i % 4))
  if ! err=$(sse_ok "$tmp/c.$i" 2>&1); then bad="$bad $i:$err"; continue; fi
  text=$(python3 -c '
import json, sys
ev = open(sys.argv[1]).read().split("\n\n")
print("".join(json.loads(e[6:])["choices"][0]["text"] for e in ev if e.startswith("data: {")), end="")' "$tmp/c.$i")
  [ "$text" = "$(cat "$tmp/alone.$k")" ] || bad="$bad $i:text"
done
[ -z "$bad" ] && pass concurrent_16_streams_equal_alone || fail concurrent_16_streams_equal_alone "$bad"

# --- metrics -----------------------------------------------------------------
ok=$(metric 'ember_requests_total{status="200"}'); bad400=$(metric 'ember_requests_total{status="400"}')
ttft=$(metric ember_time_to_first_token_seconds_count); kv=$(metric ember_kv_bytes_in_use)
out=$(metric ember_completion_tokens_total)
# every completed request generated at least one token and had a first token
if [ "${ok:-0}" -ge 22 ] && [ "${bad400:-0}" -ge 15 ] && [ "${ttft:-0}" -ge 22 ] && [ "$kv" = 0 ] &&
   [ "${out:-0}" -ge 22 ]; then pass metrics_counts
else fail metrics_counts "200: $ok 400: $bad400 ttft: $ttft kv: $kv out: $out"; fi
stop_server
[ "$SRC" = 0 ] && pass serve_stops_on_sigterm || fail serve_stops_on_sigterm "exit $SRC"

# --- one row: a stalled reader pins it, a killed client frees it ------------
# The reader takes 2 KB, then stops reading (for `pause` seconds, then reads
# the rest into $tmp/rest); the server pauses a stream once 256 KB wait
# unread, so the request holds its row until the client dies or times out.
start_server "$tmp/server2.log" -m $M --threads 2 --max-seqs 1 --max-queue 1 --ctx 4096 --timeout 60 ||
  { fail serve_one_row_starts "$(cat "$tmp/server2.log")"; exit 1; }
stalled() { # stalled PAUSE: sets CURL_PID and READER_PID
  rm -f "$tmp/fifo" "$tmp/rest"; mkfifo "$tmp/fifo"
  curl -sN "$BASE/v1/completions" -d '{"model":"tiny","prompt":"a","max_tokens":4000,"temperature":0,"stream":true}' \
    >"$tmp/fifo" &
  CURL_PID=$!
  { head -c 2000 >/dev/null; sleep "$1"; cat >"$tmp/rest"; } <"$tmp/fifo" >/dev/null 2>&1 &
  READER_PID=$!
}
wait_metric() { # wait_metric NAME VALUE: polls /metrics up to 30 s
  for _ in $(seq 1 300); do [ "$(metric "$1")" = "$2" ] && return 0; sleep 0.1; done; return 1
}
stalled 300
wait_metric ember_active_sequences 1 || fail stalled_stream_is_active
# a second request waits in the queue; a third finds the queue full
curl -s -o "$tmp/queued.json" -w '%{http_code}' "$BASE/v1/completions" \
  -d '{"model":"tiny","prompt":"b","max_tokens":4,"temperature":0}' >"$tmp/queued.code" &
qpid=$!
wait_metric ember_queue_depth 1 || fail request_is_queued
hdr=$(curl -s -D - -o "$tmp/full.json" "$BASE/v1/completions" -d '{"model":"tiny","prompt":"c","max_tokens":4}')
if grep -q '^HTTP/1.1 503' <<<"$hdr" && grep -qi '^Retry-After: 1' <<<"$hdr" && grep -q '"code":"queue_full"' "$tmp/full.json"
then pass queue_full_503_retry_after; else fail queue_full_503_retry_after "$hdr" "$(cat "$tmp/full.json")"; fi
# kill the stalled client: its row is freed and the queued request runs
{ pkill -9 -P $READER_PID; kill -9 $CURL_PID $READER_PID; wait $CURL_PID $READER_PID; } 2>/dev/null
wait $qpid
if [ "$(cat "$tmp/queued.code")" = 200 ] && wait_metric ember_active_sequences 0 &&
   [ "$(metric ember_cancelled_total)" = 1 ] && [ "$(metric ember_kv_bytes_in_use)" = 0 ]; then
  pass killed_client_frees_its_row
else fail killed_client_frees_its_row "queued: $(cat "$tmp/queued.code") $(cat "$tmp/queued.json")" \
  "active $(metric ember_active_sequences) cancelled $(metric ember_cancelled_total)"; fi
stop_server; SPID=""

# --- a stream past its deadline is freed and ends with an error event --------
# (4000 tokens take the tiny model longer than 0.2 s, and a stalled reader
# pauses the stream anyway once the socket buffers are full)
start_server "$tmp/server3.log" -m $M --threads 2 --max-seqs 1 --timeout 0.2 ||
  { fail serve_timeout_starts "$(cat "$tmp/server3.log")"; exit 1; }
stalled 2
wait $READER_PID
if grep -q '"code":"timeout"' "$tmp/rest" && [ "$(tail -c 14 "$tmp/rest")" = "$(printf 'data: [DONE]\n\n')" ] &&
   [ "$(metric ember_active_sequences)" = 0 ] && [ "$(metric ember_cancelled_total)" = 0 ]; then
  pass stream_timeout_frees_row_and_reports
else fail stream_timeout_frees_row_and_reports "$(tail -c 300 "$tmp/rest")"; fi
stop_server; SPID=""

# --- --stats: the engine's step statistics, written at a clean shutdown -------
# Requests one after the other, so every decode step has one row: each
# request is one queue wait and one prefill, each generated token one
# sampler call, and every token but the last of a reply one decode step.
start_server "$tmp/server_stats.log" -m $M --threads 2 --stats "$tmp/stats.json" ||
  { fail serve_stats_starts "$(cat "$tmp/server_stats.log")"; exit 1; }
: >"$tmp/usage"
for n in 9 5 3; do
  curl -s "$BASE/v1/completions" -d "{\"model\":\"tiny\",\"prompt\":\"Count $n\",\"max_tokens\":$n,\"temperature\":0}" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["usage"]["completion_tokens"])' >>"$tmp/usage"
done
curl -sN "$BASE/v1/chat/completions" -d "$(chat hello ',"max_tokens":7,"stream":true,"stream_options":{"include_usage":true}')" |
  python3 -c '
import json, sys
for e in sys.stdin.read().split("\n\n"):
    if e.startswith("data: {") and json.loads(e[6:]).get("usage"): print(json.loads(e[6:])["usage"]["completion_tokens"])' >>"$tmp/usage"
[ -e "$tmp/stats.json" ] && fail serve_stats_written_at_shutdown "the file exists before the shutdown"
stop_server; SPID=""
if [ "$SRC" = 0 ] && err=$(python3 - "$tmp/stats.json" "$tmp/usage" <<'PY' 2>&1
import json, sys
c = json.load(open(sys.argv[1]))["counters"]
usage = [int(x) for x in open(sys.argv[2]).read().split()]
assert len(usage) == 4 and all(u > 0 for u in usage), usage
def count(name): return c[name]["count"]
assert count("queue_wait") == 4 and count("prefill") == 4, (count("queue_wait"), count("prefill"))
assert count("sampler") == sum(usage), (count("sampler"), usage)
steps = sum(u - 1 for u in usage)
for name in ("decode_step", "decode_full", "decode_sliding", "token"):
    assert count(name) == steps, (name, count(name), steps)
assert 0 < count("detokenize") <= count("sampler")
assert c["decode_step"]["sum_ms"] >= c["decode_full"]["sum_ms"] > 0
PY
) && grep -q 'decode_full' "$tmp/server_stats.log"; then pass serve_stats_counts_match_requests
else fail serve_stats_counts_match_requests "exit $SRC: $err" "$(tail -20 "$tmp/server_stats.log")"; fi

# --- API key -------------------------------------------------------------------
start_server "$tmp/server4.log" -m $M --threads 2 --api-key s3cret ||
  { fail serve_key_starts "$(cat "$tmp/server4.log")"; exit 1; }
a=$(status_of GET /v1/models ''); b=$(status_of GET /v1/models '' -H 'Authorization: Bearer wrong')
c=$(status_of GET /v1/models '' -H 'Authorization: Bearer s3cret'); d=$(status_of GET /health '')
if [ "$a$b$c$d" = 401401200200 ]; then pass api_key_401
else fail api_key_401 "none $a, wrong $b, right $c, health $d"; fi
# the browser UI needs no key (the page asks for it), each file under a
# Content-Security-Policy with its type; /capabilities needs the key
ui_ok=1 ui_why=""
for f in /:text/html /ui.js:text/javascript /ui.css:text/css /favicon.svg:image/svg+xml; do
  h=$(curl -s -D - -o "$tmp/ui.body" "$BASE${f%%:*}")
  if ! grep -q '^HTTP/1.1 200' <<<"$h" || ! grep -qi "^Content-Type: ${f#*:}" <<<"$h" ||
     ! grep -qi "^Content-Security-Policy: default-src 'self'; script-src 'self'" <<<"$h" ||
     grep -qi 'unsafe-' <<<"$h" || ! cmp -s "$tmp/ui.body" "src/serve/ui/$( [ "${f%%:*}" = / ] && echo index.html || echo "${f%%:*}" | cut -c2-)"; then
    ui_ok=0; ui_why+="${f%%:*}: $(head -1 <<<"$h") "
  fi
done
[ $ui_ok = 1 ] && pass serve_ui_files_with_csp || fail serve_ui_files_with_csp "$ui_why"
a=$(status_of GET /capabilities ''); caps=$(curl -s -H 'Authorization: Bearer s3cret' "$BASE/capabilities")
if [ "$a" = 401 ] && $PY -c '
import json, sys
c = json.loads(sys.argv[1])
assert c["model"] == "tiny" and c["auth"] is True and c["speech"] is None and c["max_model_len"] > 0
assert set(c["sampling"]) == {"temperature", "top_p", "top_k"}' "$caps"; then pass serve_capabilities
else fail serve_capabilities "no key: $a; $caps"; fi

# --- the official openai client ---------------------------------------------
if ! command -v node >/dev/null 2>&1; then
  echo "SKIP serve_openai_client (node is not installed)"
elif ! nm=$(tests/js/serve_install.sh); then
  echo "SKIP serve_openai_client (npm registry unreachable: openai not installed)"
else
  out=$(node tests/js/serve_openai.mjs "$nm" "$BASE/v1" tiny s3cret 2>&1)
  echo "$out" | grep -E '^(PASS|FAIL) ' | sed 's/^/  /' | sed 's/^  //'
  grep -q '^FAIL ' <<<"$out" && e2e_failed=1
  grep -qE '^(PASS|FAIL) ' <<<"$out" || fail serve_openai_client "$out"
fi
stop_server; SPID=""
exit $e2e_failed
