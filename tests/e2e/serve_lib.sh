#!/usr/bin/env bash
# Helpers for the `ember serve` end-to-end scripts (source after lib.sh):
# start a server on a free loopback port, call it with curl, check SSE.

# start_server LOGFILE ARGS...: starts `$EMBER serve` in the background on a
# free port; sets SPID and BASE (http://127.0.0.1:PORT). 1 when it does not
# come up.
start_server() {
  local log=$1 port="" i; shift
  SLOG=$log
  "$EMBER" serve --port 0 "$@" 2>"$log" >/dev/null &
  SPID=$!
  for i in $(seq 1 300); do
    port=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$log" 2>/dev/null | grep -o '[0-9]*$')
    [ -n "$port" ] && break
    kill -0 $SPID 2>/dev/null || break
    sleep 0.1
  done
  BASE=http://127.0.0.1:$port
  [ -n "$port" ]
}

# stop_server: SIGTERM, then waits; SRC is the server's exit status. A
# sanitizer report in the server's log (an ASan build) is a failure.
stop_server() {
  kill -TERM $SPID 2>/dev/null
  wait $SPID
  SRC=$?
  if grep -qE 'Sanitizer|runtime error' "$SLOG" 2>/dev/null; then
    fail "server_sanitizer_report ($SLOG)" "$(grep -A30 -E 'Sanitizer|runtime error' "$SLOG" | head -40)"
  fi
}

# status_of METHOD PATH [BODY] [CURL ARGS...]: the HTTP status code.
status_of() {
  local method=$1 path=$2 body=${3-}; shift 3 2>/dev/null || shift $#
  if [ -n "$body" ]; then
    curl -s -o /dev/null -w '%{http_code}' -X "$method" "$@" -H 'Content-Type: application/json' \
      --data-binary "$body" "$BASE$path"
  else
    curl -s -o /dev/null -w '%{http_code}' -X "$method" "$@" "$BASE$path"
  fi
}

# sse_ok FILE: a well-framed stream: events separated by blank lines, each
# one `data: JSON` (chat.completion.chunk or text_completion), exactly one
# finish_reason, and `data: [DONE]` last. Prints why not.
sse_ok() {
  python3 - "$1" <<'PY'
import json, sys
raw = open(sys.argv[1], encoding='utf-8').read()
if not raw.endswith('\n\n'):
    sys.exit('stream does not end with a blank line')
events = raw[:-2].split('\n\n')
if events[-1] != 'data: [DONE]':
    sys.exit('last event is not [DONE]: %r' % events[-1][:80])
finishes = 0
for e in events[:-1]:
    if not e.startswith('data: ') or '\n' in e:
        sys.exit('bad event: %r' % e[:80])
    o = json.loads(e[6:])
    if o.get('object') not in ('chat.completion.chunk', 'text_completion'):
        sys.exit('bad object: %r' % e[:80])
    finishes += sum(1 for c in o['choices'] if c.get('finish_reason'))
if finishes != 1:
    sys.exit('%d finish reasons' % finishes)
PY
}

# metric NAME: the value of a metric line (first match, labels included in NAME).
metric() {
  curl -s "$BASE/metrics" | awk -v n="$1" '$1 == n { print $2; exit }'
}
