#!/usr/bin/env bash
# Decode/prefill table at the Spark-X2.5 1.7B shape (random weights, tied,
# bf16 on disk, 28 layers, vocab 131072), for the weight formats of issue 3,
# plus the all-full-attention baseline at 4096. One JSON object per line.
#   bench/bench_llm.sh [OUT_DIR]     env: THREADS (2), REPS (3), PROMPT (512), GEN (64), CTX
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/out}
model="$out/spark-1.7b-bf16"
threads=${THREADS:-2}
reps=${REPS:-3}
prompt=${PROMPT:-512}
gen=${GEN:-64}
ctx=${CTX:-0,4096,32768}
mkdir -p "$out"
make -s -j2 build/ember
[ -f "$model/config.json" ] ||
  /usr/bin/python3 reference/make_checkpoint.py --preset 1.7b --dtype bf16 --shards 2 --out "$model" >&2
for dtype in q8_0 q4_0; do
  build/ember bench llm -m "$model" --dtype "$dtype" --ctx "$ctx" --prompt "$prompt" --gen "$gen" \
    --threads "$threads" --reps "$reps" --json
done
# hybrid vs flat: the same weights with every layer as full attention
build/ember bench llm -m "$model" --dtype q8_0 --ctx 4096 --prompt 0 --gen "$gen" \
  --threads "$threads" --reps "$reps" --json
build/ember bench llm -m "$model" --dtype q8_0 --ctx 4096 --prompt 0 --gen "$gen" \
  --threads "$threads" --reps "$reps" --all-full --json
