#!/usr/bin/env bash
# The soak's client (bench/soak.mjs), unchanged, against llama.cpp's
# llama-server and against `ember serve` on the same GGUF file, one after the
# other, on loopback: what docs/DEPLOYMENT.md means by "the client side moves
# as is". The client finds out what each server offers from the OpenAI API
# alone (llama-server has no /capabilities and no speech, so its speech share
# becomes streamed chat); both servers get the same admitted concurrency and
# twice as many clients. One JSON line per server (the soak's report plus
# "server"), then one line comparing them.
#
# llama-server is built once from the node-llama-cpp npm bundle into a cache
# outside the repository (scripts/llama_cpp_build.sh).
#   bench/soak_side.sh [SECONDS]
#   env: MODEL (models/demo), TYPE (q8_0), MAX_SEQS (4), THREADS (2), CTX (2048 per sequence),
#        SERVERS ("llama-server ember": which to run, in that order)
# Each server's own log is kept in bench/out/soak/SERVER.log.
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
model=${MODEL:-models/demo}
type=${TYPE:-q8_0}
seqs=${MAX_SEQS:-4}
threads=${THREADS:-2}
ctx=${CTX:-2048}
make -s -j2 build/ember || exit 1
bld=$(scripts/llama_cpp_build.sh llama-server) || exit 1

out=bench/out/soak
mkdir -p "$out"
gguf="$out/$(basename "$model")-$type.gguf"
[ -f "$gguf" ] || build/ember quantize "$model" "$gguf" --type "$type" >&2 || exit 1

res=$(mktemp)
pid=""
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -f "$res"' EXIT
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Waits until GET URL answers 200 (the server has loaded) or the server died.
wait_ready() { # wait_ready URL LOG
  for _ in $(seq 1 600); do
    curl -sf -o /dev/null "$1" && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "soak_side: the server did not come up:" >&2; tail -20 "$2" >&2; return 1
}

# Runs the soak against the server in $pid on $port, then stops the server;
# appends its report, with "server", to $res.
soak() { # soak NAME
  node bench/soak.mjs --base "http://127.0.0.1:$port" --seconds "$seconds" --pid "$pid" \
    --clients $((2 * seqs)) | /usr/bin/python3 -c '
import json, sys
r = json.loads(sys.stdin.read().strip().splitlines()[-1]); r["server"] = sys.argv[1]
r["requests_per_s"] = round(r["requests"] / r["seconds"], 2); print(json.dumps(r))' "$1" >>"$res"
  local rc=${PIPESTATUS[0]}
  kill -TERM "$pid"; wait "$pid" 2>/dev/null; pid=""
  return "$rc"
}

rc=0
for server in ${SERVERS:-llama-server ember}; do
  port=$(free_port)
  log="$out/$server.log"
  case $server in
    llama-server)
      "$bld/bin/llama-server" -m "$gguf" --host 127.0.0.1 --port "$port" -t "$threads" -np "$seqs" \
        -c $((ctx * seqs)) --jinja --no-webui --threads-http $((2 * seqs + 4)) >"$log" 2>&1 &
      pid=$!; ready=/health ;;
    ember)
      build/ember serve --port "$port" -m "$gguf" --threads "$threads" --max-seqs "$seqs" >/dev/null 2>"$log" &
      pid=$!; ready=/v1/models ;;
    *) echo "soak_side: unknown server $server" >&2; exit 2 ;;
  esac
  wait_ready "http://127.0.0.1:$port$ready" "$log" || exit 1
  soak "$server" || rc=1
done

cat "$res"
/usr/bin/python3 -c '
import json, sys
r = {x["server"]: x for x in map(json.loads, sys.stdin)}
l, e = r.get("llama-server"), r.get("ember")
if l and e:
    ratio = lambda a, b: round(a / b, 2) if a and b else None
    print(json.dumps({"compare": "ember / llama-server", "requests_per_s": ratio(e["requests_per_s"], l["requests_per_s"]),
                      "ttft_p50": ratio(e["ttft_ms"]["p50"], l["ttft_ms"]["p50"]),
                      "ttft_p99": ratio(e["ttft_ms"]["p99"], l["ttft_ms"]["p99"]),
                      "rss_end": ratio(e["rss_mib"]["end"], l["rss_mib"]["end"])}))' <"$res"
exit $rc
