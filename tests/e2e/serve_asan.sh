#!/usr/bin/env bash
# `ember serve` built with ASan+UBSan (build-san/ember) survives a burst of
# malformed, oversized, truncated and unauthorised requests, a few good ones
# (one streamed, one dropped mid-stream, forced tool calls, a prompt resumed
# from a message-boundary snapshot), and exits on SIGTERM with no sanitizer
# report (leaks included), its --stats file written.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
SAN_EMBER=${SAN_EMBER:-build-san/ember}
if [ ! -x "$SAN_EMBER" ]; then
  echo "SKIP serve_asan ($SAN_EMBER not built: make SAN=1 all)"; exit 0
fi
EMBER=$SAN_EMBER
tmp=$(mktemp -d)
SPID=""
trap '[ -n "$SPID" ] && kill -9 $SPID 2>/dev/null; rm -rf "$tmp"' EXIT
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1
if ! start_server "$tmp/server.log" -m models/tiny --threads 2 --max-seqs 4 --max-queue 4 --ctx 512 \
     --max-body 8192 --api-key k --stats "$tmp/stats.json"; then
  fail serve_asan_starts "$(cat "$tmp/server.log")"; exit 1
fi
auth=(-H 'Authorization: Bearer k')
post() { curl -s -o /dev/null -m 30 "${auth[@]}" -H 'Content-Type: application/json' --data-binary "$2" "$BASE$1"; }
bodies=(
  '' '{' '[' 'null' '"x"' '{"model":1}' '{"model":"tiny","messages":{}}'
  '{"model":"tiny","messages":[null]}' '{"model":"tiny","messages":[{"role":"user","content":[{"type":"image_url"}]}]}'
  '{"model":"tiny","messages":[{"role":"assistant","content":null,"tool_calls":[{"function":{"name":"f","arguments":"{bad"}}]}]}'
  '{"model":"tiny","messages":[{"role":"assistant","content":null,"tool_calls":7}]}'
  '{"model":"tiny","messages":[{"role":"user","content":"hi"}],"stop":["a","b","c","d","e"]}'
  '{"model":"tiny","messages":[{"role":"user","content":"hi"}],"logit_bias":{"1":1000}}'
  '{"model":"tiny","messages":[{"role":"user","content":"hi"}],"seed":1e300}'
  '{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":-1}'
  '{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":100000}'
  '{"model":"tiny","messages":[{"role":"user","content":"hi"}],"tool_choice":{"type":"function"}}'
  '{"model":"tiny","messages":[{"role":"user","content":"hi"}],"tool_choice":"required"}'
  '{"model":"tiny","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"g"}}}'
  '{"model":"tiny","prompt":[]}' '{"model":"tiny","prompt":[[1,2],[3]]}' '{"model":"tiny","prompt":[-1]}'
  '{"model":"tiny","prompt":"\u0000\ud800"}' '{"model":"tiny","prompt":"x","max_tokens":2,"stream":"yes"}'
  "{\"model\":\"tiny\",\"prompt\":\"$(head -c 9000 /dev/zero | tr '\0' 'x')\"}"
  "$(printf '{"a":%.0s' $(seq 1 100))"
)
for b in "${bodies[@]}"; do
  post /v1/chat/completions "$b"; post /v1/completions "$b"
done
curl -s -o /dev/null "$BASE/v1/models"                       # no key: 401
for p in / /ui.js /ui.css /favicon.svg /capabilities /ui /ui.js/; do   # the browser UI
  curl -s -o /dev/null "$BASE$p"; curl -s -o /dev/null "${auth[@]}" "$BASE$p"
done
curl -s -o /dev/null -X DELETE "${auth[@]}" "$BASE/v1/models" # no such route
printf 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"model"' |
  timeout 5 python3 -c 'import socket,sys; s=socket.create_connection(("127.0.0.1", int(sys.argv[1]))); s.sendall(sys.stdin.buffer.read()); s.close()' "${BASE##*:}"
# good requests: plain, forced tool calls, a conversation resumed inside a
# message, streamed, and one dropped mid-stream
post /v1/chat/completions '{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":8}'
tools='"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"g"}}]'
post /v1/chat/completions "{\"model\":\"tiny\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],$tools,\"tool_choice\":\"required\",\"max_tokens\":24,\"temperature\":1}"
post /v1/chat/completions "{\"model\":\"tiny\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],$tools,\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"g\"}},\"max_tokens\":3,\"stream\":true}"
for q in "what is up" "what is down"; do
  post /v1/chat/completions "{\"model\":\"tiny\",\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},{\"role\":\"user\",\"content\":\"hi\"},{\"role\":\"assistant\",\"content\":\"hello\"},{\"role\":\"user\",\"content\":\"$q\"}],\"max_tokens\":4}"
done
curl -sN -m 30 "${auth[@]}" "$BASE/v1/completions" -d '{"model":"tiny","prompt":"a","max_tokens":8,"stream":true}' >"$tmp/s.sse"
curl -sN -m 30 "${auth[@]}" "$BASE/v1/completions" -d '{"model":"tiny","prompt":"a","max_tokens":400,"stream":true}' |
  head -c 300 >/dev/null
status=$(curl -s -o /dev/null -w '%{http_code}' "${auth[@]}" "$BASE/health")
[ "$status" = 200 ] && sse_ok "$tmp/s.sse" && pass serve_asan_survives_bad_requests ||
  fail serve_asan_survives_bad_requests "health $status" "$(tail -20 "$tmp/server.log")"
stop_server; SPID=""
if [ "$SRC" = 0 ] && ! grep -qE 'Sanitizer|runtime error' "$tmp/server.log" && [ -s "$tmp/stats.json" ]; then pass serve_asan_no_report
else fail serve_asan_no_report "exit $SRC" "$(grep -A30 -E 'Sanitizer|runtime error' "$tmp/server.log" | head -60)"; fi
exit $e2e_failed
