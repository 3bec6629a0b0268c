#!/usr/bin/env bash
# A bounded load run on loopback: 48-128 chat requests, 8 at a time, against a
# server that admits 2 sequences and queues 2 (so 2x its admitted
# concurrency and more): every answer is 200 or 503 with Retry-After, both
# occur, every 200 is a complete chat.completion, and the server is healthy
# and exits cleanly afterwards.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
tmp=$(mktemp -d)
SPID=""
cleanup() { [ -n "$SPID" ] && kill -9 $SPID 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

if ! start_server "$tmp/server.log" -m models/tiny --threads 2 --max-seqs 2 --max-queue 2; then
  fail serve_load_starts "$(cat "$tmp/server.log")"; exit 1
fi
body='{"model":"tiny","messages":[{"role":"user","content":"Tell me a story."}],"max_tokens":512,"temperature":0}'
one() { # one I: a request; its status and headers in $tmp/I.h, body in $tmp/I.json
  curl -s -D "$tmp/$1.h" -o "$tmp/$1.json" -H 'Content-Type: application/json' \
    --data-binary "$body" "$BASE/v1/chat/completions"
}
# Whether 8 requests overlap enough to fill 2 slots and 2 queue places at
# once depends on how fast this machine starts 8 curl processes against how
# fast the tiny model answers: on a busy machine a wave can arrive spread out
# and be served whole. So waves go on (6 at least, 16 at most) until a 503
# has been seen; the replies are long enough (max_tokens 512) that overlap is
# the rule, not the exception.
n=0
for wave in $(seq 0 15); do
  pids=()
  for k in 0 1 2 3 4 5 6 7; do one $n & pids+=($!); n=$((n + 1)); done
  wait "${pids[@]}"
  [ "$wave" -ge 5 ] && grep -qs "^HTTP/1.1 503" "$tmp"/*.h && break
done
verdict=$($PY - "$tmp" "$n" <<'PY'
import json, os, sys
d = sys.argv[1]; ok = busy = 0
for i in range(int(sys.argv[2])):
    head = open(os.path.join(d, "%d.h" % i)).read().splitlines()
    status = int(head[0].split()[1]) if head else 0
    body = open(os.path.join(d, "%d.json" % i)).read()
    if status == 200:
        r = json.loads(body)
        if r.get("object") != "chat.completion" or not r["choices"][0]["finish_reason"]:
            sys.exit("request %d: incomplete 200: %s" % (i, body[:120]))
        ok += 1
    elif status == 503:
        if not any(h.lower().startswith("retry-after:") for h in head):
            sys.exit("request %d: 503 without Retry-After" % i)
        if "error" not in json.loads(body):
            sys.exit("request %d: 503 without an error object" % i)
        busy += 1
    else:
        sys.exit("request %d: status %d: %s" % (i, status, body[:120]))
if not ok or not busy:
    sys.exit("%d answered, %d refused: expected both" % (ok, busy))
print("%d answered, %d refused with 503" % (ok, busy))
PY
)
if [ $? -eq 0 ]; then pass "serve_load_queueing_and_503 ($verdict)"
else fail serve_load_queueing_and_503 "$verdict"; fi
[ "$(status_of GET /health '')" = 200 ] && pass serve_load_healthy_after || fail serve_load_healthy_after
stop_server; SPID=""
[ "$SRC" = 0 ] && pass serve_load_clean_exit || fail serve_load_clean_exit "exit $SRC"
exit $e2e_failed
