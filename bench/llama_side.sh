#!/usr/bin/env bash
# ember and llama.cpp side by side on the same GGUF files at the Spark-X2.5
# 1.7B shape (random weights, reference/make_checkpoint.py --preset 1.7b):
# prefill and decode tokens/s, median of REPS runs, the two programs
# alternating run by run, and the ratio ember / llama.cpp. One JSON line per
# (file, program) and one per file with the ratios.
#
# llama.cpp is built from the source in the npm package node-llama-cpp
# (scripts/llama_cpp_build.sh) into a cache outside the repository, once.
# Files: for each TYPE, the file ember writes (`ember quantize --type TYPE`)
# and, for the types llama-quantize knows, the file llama.cpp writes from the
# same bf16 GGUF, so each program also runs the other's files.
#
#   bench/llama_side.sh [OUT_DIR]
#   env: THREADS (2), REPS (3), PROMPT (512), GEN (64),
#        TYPES ("q8_0 q4_0 q4_k_m q5_k_m q6_k q3_k_m"), EMBER_LLAMA_BUILD (build dir)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/out}
threads=${THREADS:-2}
reps=${REPS:-3}
prompt=${PROMPT:-512}
gen=${GEN:-64}
types=${TYPES:-q8_0 q4_0 q4_k_m q5_k_m q6_k q3_k_m}
mkdir -p "$out"
make -s -j2 build/ember

bld=$(scripts/llama_cpp_build.sh llama-bench llama-quantize) || exit 1

model="$out/spark-1.7b-bf16"
[ -f "$model/config.json" ] ||
  /usr/bin/python3 reference/make_checkpoint.py --preset 1.7b --dtype bf16 --shards 2 --out "$model" >&2
[ -f "$out/spark-1.7b-bf16.gguf" ] || build/ember quantize "$model" "$out/spark-1.7b-bf16.gguf" --type bf16 >&2

files=()
for t in $types; do
  f="$out/spark-1.7b-ember-$t.gguf"
  [ -f "$f" ] || build/ember quantize "$model" "$f" --type "$t" >&2
  files+=("$f")
  T=$(tr '[:lower:]' '[:upper:]' <<<"$t")
  f="$out/spark-1.7b-llama-$t.gguf"
  if [ ! -f "$f" ] && ! "$bld/bin/llama-quantize" "$out/spark-1.7b-bf16.gguf" "$f" "$T" "$threads" \
       >"$out/llama-quantize-$t.log" 2>&1; then
    echo "llama-quantize $T failed: see $out/llama-quantize-$t.log" >&2; rm -f "$f"; continue
  fi
  files+=("$f")
done

# One run each: prints "prefill_tok_s decode_tok_s" (ember: and its decode's
# fraction of the read bandwidth measured in the same run).
run_ember() {
  build/ember bench llm -m "$1" --ctx 0 --prompt "$prompt" --gen "$gen" --threads "$threads" --reps 1 --json |
    /usr/bin/python3 -c 'import json,sys; r=json.loads(sys.stdin.read().strip().splitlines()[-1])["results"][0]; print(r["prefill_tok_s"], r["decode_tok_s"], r["roofline_fraction"])'
}
run_llama() {
  "$bld/bin/llama-bench" -m "$1" -p "$prompt" -n "$gen" -t "$threads" -r 1 -o json 2>/dev/null |
    /usr/bin/python3 -c '
import json, sys
rows = json.load(sys.stdin)
pp = [r["avg_ts"] for r in rows if r["n_prompt"] > 0 and r["n_gen"] == 0]
tg = [r["avg_ts"] for r in rows if r["n_gen"] > 0 and r["n_prompt"] == 0]
print(pp[0], tg[0])'
}

for f in "${files[@]}"; do
  e_pp=(); e_tg=(); e_rf=(); l_pp=(); l_tg=()
  for ((r = 0; r < reps; r++)); do
    read -r a b c < <(run_ember "$f"); e_pp+=("$a"); e_tg+=("$b"); e_rf+=("$c")
    read -r a b < <(run_llama "$f"); l_pp+=("$a"); l_tg+=("$b")
  done
  /usr/bin/python3 - "$f" "$threads" "$prompt" "$gen" "${e_pp[*]}" "${e_tg[*]}" "${l_pp[*]}" "${l_tg[*]}" "${e_rf[*]}" <<'PY'
import json, os, statistics, sys
f, threads, prompt, gen = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
med = lambda s: statistics.median(float(v) for v in s.split())
e_pp, e_tg, l_pp, l_tg, e_rf = (med(s) for s in sys.argv[5:10])
name = os.path.basename(f)
print(json.dumps({"file": name, "bytes": os.path.getsize(f), "threads": threads, "prompt": prompt, "gen": gen,
                  "ember": {"prefill_tok_s": round(e_pp, 1), "decode_tok_s": round(e_tg, 2),
                            "decode_roofline_fraction": round(e_rf, 3)},
                  "llama.cpp": {"prefill_tok_s": round(l_pp, 1), "decode_tok_s": round(l_tg, 2)},
                  "ratio_prefill": round(e_pp / l_pp, 3), "ratio_decode": round(e_tg / l_tg, 3)}))
PY
done
