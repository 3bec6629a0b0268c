#!/usr/bin/env bash
# The soak (bench/soak.mjs) against one `ember serve -m models/demo --tts
# models/tts-tiny` on loopback: mixed chat, streamed chat, speech and clients
# that leave, at twice the admitted sequences, for SECONDS (default 600). One
# JSON line on stdout; the server must exit cleanly on SIGTERM afterwards
# (under an ASan build, EMBER=build-san/ember, with no sanitizer report).
#   bench/soak.sh [SECONDS]    env: EMBER (build/ember), MAX_SEQS (4), THREADS (2),
#                              SERVE_ARGS (more `ember serve` flags)
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
bin=${EMBER:-build/ember}
[ -x "$bin" ] || { echo "soak: $bin not built (make -j2 build/ember)" >&2; exit 1; }
log=$(mktemp)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
"$bin" serve --port 0 -m models/demo --tts models/tts-tiny --threads "${THREADS:-2}" \
  --max-seqs "${MAX_SEQS:-4}" ${SERVE_ARGS:-} 2>"$log" >/dev/null &
pid=$!
trap 'kill -9 $pid 2>/dev/null; rm -f "$log"' EXIT
port=""
for _ in $(seq 1 600); do
  port=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$log" | grep -o '[0-9]*$')
  [ -n "$port" ] && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.1
done
[ -n "$port" ] || { cat "$log" >&2; exit 1; }
node bench/soak.mjs --base "http://127.0.0.1:$port" --seconds "$seconds" --pid $pid
rc=$?
kill -TERM $pid; wait $pid; src=$?
if [ $src -ne 0 ] || grep -qE 'Sanitizer|runtime error' "$log"; then
  echo "soak: the server exited $src" >&2
  grep -A30 -E 'Sanitizer|runtime error' "$log" | head -60 >&2
  exit 1
fi
exit $rc
