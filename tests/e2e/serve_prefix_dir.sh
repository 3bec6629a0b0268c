#!/usr/bin/env bash
# `ember serve --prefix-cache-dir DIR`: the prefix cache survives a restart.
# A conversation's first turn leaves a prompt-cache file in DIR; a new
# server on the same DIR runs its second turn from the cached prefix
# (cached_tokens covers the first prompt) with the reply of a server that
# runs it from scratch. With a 1 MiB bound, twenty conversations leave at
# most 1 MiB of files, and after a restart the latest resumes while the
# first (least recently used, evicted) runs from scratch.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
tmp=$(mktemp -d)
SPID=""
trap '[ -n "$SPID" ] && kill -9 $SPID 2>/dev/null; rm -rf "$tmp"' EXIT
M=models/tiny

# turn BASE N K: conversation K's turn N (1 or 2) -> "cached prompt reply"
turn() {
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys, urllib.request
base, n, k = sys.argv[1], int(sys.argv[2]), sys.argv[3]
messages = [{"role": "system", "content": "You answer briefly. Conversation %s." % k},
            {"role": "user", "content": "Tell me about the weather in city number %s, please." % k}]
if n == 2:
    messages += [{"role": "assistant", "content": "It is sunny."},
                 {"role": "user", "content": "And tomorrow?"}]
body = json.dumps({"model": "tiny", "messages": messages, "max_tokens": 6, "temperature": 0}).encode()
req = urllib.request.Request(base + "/v1/chat/completions", body, {"Content-Type": "application/json"})
o = json.load(urllib.request.urlopen(req, timeout=60))
u = o["usage"]
print(u["prompt_tokens_details"]["cached_tokens"], u["prompt_tokens"],
      json.dumps(o["choices"][0]["message"].get("content") or ""))
PY
}

if start_server "$tmp/s1.log" -m $M --threads 1 --prefix-cache-dir "$tmp/pc"; then
  read -r c1 p1 _ <<<"$(turn "$BASE" 1 a)"
  stop_server
  n_files=$(ls "$tmp/pc"/*.ekv 2>/dev/null | wc -l)
  start_server "$tmp/s2.log" -m $M --threads 1 --prefix-cache-dir "$tmp/pc"
  read -r c2 p2 r2 <<<"$(turn "$BASE" 2 a)"
  stop_server
  start_server "$tmp/s3.log" -m $M --threads 1 --prefix-cache 0
  read -r c3 p3 r3 <<<"$(turn "$BASE" 2 a)"
  stop_server
  if [ "$c1" = 0 ] && [ "$n_files" = 1 ] && [ "$c2" -ge "$p1" ] && [ "$c3" = 0 ] && [ "$r2" = "$r3" ]
  then pass prefix_cache_survives_restart
  else fail prefix_cache_survives_restart "turn 1 cached $c1 of $p1, files $n_files" \
            "after restart: cached $c2 of $p2, reply $r2; from scratch: $r3" "$(tail -3 "$tmp/s2.log")"; fi
else fail prefix_cache_survives_restart "server did not start: $(tail -3 "$tmp/s1.log")"; fi

# The bound on disk: least recently used first.
if start_server "$tmp/s4.log" -m $M --threads 1 --prefix-cache 1 --prefix-cache-dir "$tmp/lru"; then
  for k in $(seq 1 20); do turn "$BASE" 1 "c$k" >/dev/null; done
  stop_server
  n_files=$(ls "$tmp/lru"/*.ekv | wc -l)
  bytes=$(cat "$tmp/lru"/*.ekv | wc -c)
  start_server "$tmp/s5.log" -m $M --threads 1 --prefix-cache 1 --prefix-cache-dir "$tmp/lru"
  read -r latest _ <<<"$(turn "$BASE" 2 c20)"
  read -r first _ <<<"$(turn "$BASE" 2 c1)"
  stop_server
  if [ "$n_files" -gt 1 ] && [ "$n_files" -lt 20 ] && [ "$bytes" -le 1048576 ] && [ "$latest" -gt 0 ] && [ "$first" = 0 ]
  then pass prefix_cache_dir_bounded_lru
  else fail prefix_cache_dir_bounded_lru "$n_files files, $bytes bytes; cached: latest $latest, first $first"; fi
else fail prefix_cache_dir_bounded_lru "server did not start: $(tail -3 "$tmp/s4.log")"; fi
exit $e2e_failed
