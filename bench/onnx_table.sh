#!/usr/bin/env bash
# Issue 21's table: for each model and each exported form (f32, f16, qdq8, qdq4),
# the graph files' and their shared weight file's sizes and the per-step times of the decode step
# and one prefill chunk on ONNX Runtime's CPU provider against ember's native
# steps (build/bench/onnx_steps). One JSON object per line; nothing is
# asserted (shared, noisy machines; the CPU provider is not the target).
#   bench/onnx_table.sh [MODEL_DIR...]   (default: models/tiny models/demo)
#   env: THREADS (1), REPS (10), CTX (1024), CHUNK (128), AT (200), FORMS ("f32 f16 qdq8 qdq4")
# A full-size model (e.g. the 1.7B shape bench/bench_llm.sh generates) may
# be passed by path; its f32 graphs take about 2 x 4 bytes per parameter.
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${THREADS:-1} reps=${REPS:-10} ctx=${CTX:-1024} chunk=${CHUNK:-128} at=${AT:-200}
forms=${FORMS:-f32 f16 qdq8 qdq4}
make -s -j2 build/ember build/bench/onnx_steps
lib=$(tests/onnx/install.sh)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
[ $# -gt 0 ] || set -- models/tiny models/demo
for model in "$@"; do
  for form in $forms; do
    dir="$work/$(basename "$model")_$form"
    t0=$(date +%s.%N)
    build/ember export onnx -m "$model" -o "$dir" --context "$ctx" --prefill-chunk "$chunk" --dtype "$form" >/dev/null
    t1=$(date +%s.%N)
    sizes=""
    for f in decode.onnx prefill.onnx weights.onnx.data; do
      sizes="$sizes${sizes:+, }\"$f\": $(stat -c %s "$dir/$f")"
    done
    printf '{"model": "%s", "form": "%s", "context": %s, "export_s": %.2f, "bytes": {%s}}\n' \
      "$model" "$form" "$ctx" "$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')" "$sizes"
    build/bench/onnx_steps -m "$model" -x "$dir" --ort "$lib" --at "$at" --reps "$reps" \
      --threads "$threads" 2>/dev/null
    rm -rf "$dir"
  done
done
