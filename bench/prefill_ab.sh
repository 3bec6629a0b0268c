#!/usr/bin/env bash
# Prefill tokens/s of two ember binaries on the same files, alternating run
# by run (the fair comparison on a shared host): OLD, NEW, and NEW with a
# 128-token prefill chunk, ROUNDS rounds per file. One JSON line per run.
#   bench/prefill_ab.sh OLD_EMBER NEW_EMBER ROUNDS MODEL...
#   env: THREADS (2), PROMPT (512)
# e.g. the merge base against this tree, at the 1.7B shape:
#   git worktree add /some/where BASE && make -C /some/where -j2 build/ember
#   bench/prefill_ab.sh /some/where/build/ember build/ember 3 bench/out/spark-1.7b-{q8_0,q4_0,q4_k_m}.gguf
set -uo pipefail
[ $# -ge 4 ] || { sed -n '2,9p' "$0" >&2; exit 2; }
old=$1 new=$2 rounds=$3; shift 3
threads=${THREADS:-2} prompt=${PROMPT:-512}
for m in "$@"; do
  for ((r = 0; r < rounds; r++)); do
    for side in old new new_chunk128; do
      bin=$new; extra=()
      [ $side = old ] && bin=$old
      [ $side = new_chunk128 ] && extra=(--chunk 128)
      "$bin" bench llm -m "$m" --prompt "$prompt" --gen 2 --reps 1 --ctx 0 --threads "$threads" --json "${extra[@]}" \
        2>/dev/null | tail -1 | /usr/bin/python3 -c '
import json, sys
d = json.loads(sys.stdin.read()); r = d["results"][0]
print(json.dumps({"model": sys.argv[1], "side": sys.argv[2], "round": int(sys.argv[3]),
                  "prefill_tok_s": round(r["prefill_tok_s"], 1),
                  "prefill_peak_fraction": r["prefill_peak_fraction"], "read_bw_gbs": d["read_bw_gbs"]}))' \
        "$(basename "$m")" "$side" "$r" || echo "{\"model\": \"$(basename "$m")\", \"side\": \"$side\", \"error\": true}"
    done
  done
done
