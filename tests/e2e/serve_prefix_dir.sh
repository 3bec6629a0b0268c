#!/usr/bin/env bash
# `ember serve --prefix-cache-dir DIR`: the prefix cache survives a restart.
# A conversation's first turn leaves a prompt-cache file in DIR; a new
# server on the same DIR runs its second turn from the cached prefix
# (cached_tokens covers the first prompt) with the reply of a server that
# runs it from scratch. With a 1 MiB bound, twenty conversations leave at
# most 1 MiB of files, and after a restart the least recently used one has
# been evicted (runs from scratch).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
# in memory where there is a tmpfs: every put fsyncs its file, which costs
# ~0.5 s a request on a busy disk (durability is not what this tests)
tmp=$(mktemp -d -p /dev/shm 2>/dev/null || mktemp -d)
SPID=""
trap '[ -n "$SPID" ] && kill -9 $SPID 2>/dev/null; rm -rf "$tmp"' EXIT
M=models/tiny

# turn BASE N K: conversation K's turn N (1 or 2) -> "cached prompt reply"
# (curl and grep: a Python start costs seconds on a busy machine)
turn() {
  local msgs='{"role": "system", "content": "You answer briefly. Conversation '$3'."},
    {"role": "user", "content": "Tell me about the weather in city number '$3', please."}' out
  [ "$2" = 2 ] && msgs+=', {"role": "assistant", "content": "It is sunny."},
    {"role": "user", "content": "And tomorrow?"}'
  out=$(curl -s -H 'Content-Type: application/json' "$1/v1/chat/completions" \
    -d '{"model": "tiny", "max_tokens": 6, "temperature": 0, "messages": ['"$msgs"']}')
  printf '%s %s %s\n' "$(grep -o '"cached_tokens": *[0-9]*' <<<"$out" | tr -dc 0-9)" \
    "$(grep -o '"prompt_tokens": *[0-9]*' <<<"$out" | tr -dc 0-9)" \
    "$(grep -o '"content": *"\([^"\\]\|\\.\)*"' <<<"$out" | head -1 | tr ' ' _)"
}

# One server: conversation a, then nineteen more under a 1 MiB bound (a is
# the least recently used). A second on the same DIR resumes the latest and
# has evicted a; a third without a cache runs the latest from scratch.
if start_server "$tmp/s1.log" -m $M --threads 1 --prefix-cache 1 --prefix-cache-dir "$tmp/pc"; then
  read -r c1 p1 _ <<<"$(turn "$BASE" 1 a)"
  n_first=$(ls "$tmp/pc"/*.ekv 2>/dev/null | wc -l)
  read -r c19 p19 _ <<<"$(turn "$BASE" 1 c19)"
  for k in $(seq 1 18); do turn "$BASE" 1 "c$k" >/dev/null; done
  read -r _ <<<"$(turn "$BASE" 1 c19)" # c19 is used last
  stop_server
  n_files=$(ls "$tmp/pc"/*.ekv | wc -l)
  bytes=$(cat "$tmp/pc"/*.ekv | wc -c)
  start_server "$tmp/s2.log" -m $M --threads 1 --prefix-cache 1 --prefix-cache-dir "$tmp/pc"
  read -r c2 p2 r2 <<<"$(turn "$BASE" 2 c19)"
  read -r ca _ <<<"$(turn "$BASE" 2 a)"
  stop_server
  start_server "$tmp/s3.log" -m $M --threads 1 --prefix-cache 0
  read -r c3 p3 r3 <<<"$(turn "$BASE" 2 c19)"
  stop_server
  if [ "$c1" = 0 ] && [ "$n_first" = 1 ] && [ "$c2" -ge "$p19" ] && [ "$c3" = 0 ] && [ "$r2" = "$r3" ]
  then pass prefix_cache_survives_restart
  else fail prefix_cache_survives_restart "turn 1 cached $c1 of $p1, files $n_first" \
            "after restart: cached $c2 of $p2 (turn 1: $p19), reply $r2; from scratch: $r3" "$(tail -3 "$tmp/s2.log")"; fi
  if [ "$n_files" -gt 1 ] && [ "$n_files" -lt 20 ] && [ "$bytes" -le 1048576 ] && [ "$ca" = 0 ]
  then pass prefix_cache_dir_bounded_lru
  else fail prefix_cache_dir_bounded_lru "$n_files files, $bytes bytes; the evicted one cached $ca"; fi
else fail prefix_cache_survives_restart "server did not start: $(tail -3 "$tmp/s1.log")"; fi
exit $e2e_failed
