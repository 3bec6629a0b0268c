#!/usr/bin/env bash
# `ember serve` benchmark at the 1.7B shape (issue 7): aggregate decode tok/s
# at 1, 4 and 8 concurrent streams, TTFT p50/p99, and the second turn of a
# ~2k-token agent prompt with and without prefix reuse. Uses the random
# 1.7B checkpoint of bench_llm.sh with the tiny model's tokenizer files (any
# ids below the vocabulary size are valid input). One JSON line.
#   bench/serve.sh [OUT_DIR]     env: DTYPE (q4_0), THREADS (2), BUILD (build)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/out}
src="$out/spark-1.7b-bf16" dir="$out/spark-1.7b-serve"
bin=${BUILD:-build}/ember
make -s -j2 BUILD="${BUILD:-build}" "$bin"
[ -f "$src/config.json" ] ||
  /usr/bin/python3 reference/make_checkpoint.py --preset 1.7b --dtype bf16 --shards 2 --out "$src" >&2
mkdir -p "$dir"
for f in "$src"/*; do ln -sf "$(realpath "$f")" "$dir/$(basename "$f")"; done
cp models/tiny/tokenizer.json models/tiny/tokenizer_config.json "$dir/"
args=(-m "$dir" --dtype "${DTYPE:-q4_0}" --threads "${THREADS:-2}" --max-seqs 8 --ctx 4096)
log1=$(mktemp) log2=$(mktemp)
"$bin" serve --port 0 "${args[@]}" 2>"$log1" & p1=$!
"$bin" serve --port 0 "${args[@]}" --prefix-cache 0 2>"$log2" & p2=$!
trap 'kill $p1 $p2 2>/dev/null; rm -f "$log1" "$log2"' EXIT
port() { grep -o 'listening on http://127.0.0.1:[0-9]*' "$1" | grep -o '[0-9]*$'; }
for _ in $(seq 1 600); do [ -n "$(port "$log1")" ] && [ -n "$(port "$log2")" ] && break; sleep 0.1; done
node bench/serve_bench.mjs "http://127.0.0.1:$(port "$log1")" spark-1.7b-serve \
  "http://127.0.0.1:$(port "$log2")"
