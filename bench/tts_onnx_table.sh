#!/usr/bin/env bash
# Issue 21's speech rows: for each Qwen3-TTS checkpoint and exported form,
# the graphs' and their shared weight file's sizes, the export time, and
# per frame the milliseconds of the talker (one step, with the sampling of
# codebook 0) and of the code predictor (its 16 positions and 15 samples)
# on ONNX Runtime's CPU provider against ember's native steps: the median
# over REPS runs of build/tests/tts_onnx_parity (FRAMES greedy frames each,
# 1 thread). One JSON object per line; nothing is asserted (shared, noisy
# machines; the CPU provider is not the target).
#   bench/tts_onnx_table.sh [MODEL_DIR...]   (default: models/tts-tiny)
#   env: REPS (5), FRAMES (16), CTX (256), FORMS ("f32 f16 qdq8")
# A full-size checkpoint (reference/make_tts_checkpoint.py --preset full)
# may be passed by path; its f32 graphs take about 4 bytes per parameter.
# weights.onnx.data also holds the speech decoder's graphs' weights where
# the checkpoint has its speech tokenizer (exports since the decoder graphs:
# +2.5 MB tiny f32, +460 MB full-size f32; docs/ONNX.md).
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${REPS:-5} frames=${FRAMES:-16} ctx=${CTX:-256}
forms=${FORMS:-f32 f16 qdq8}
make -s -j2 build/ember build/tests/tts_onnx_parity
lib=$(tests/onnx/install.sh)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
[ $# -gt 0 ] || set -- models/tts-tiny
for model in "$@"; do
  for form in $forms; do
    dir="$work/$(basename "$model")_$form"
    t0=$(date +%s.%N)
    build/ember export onnx -m "$model" -o "$dir" --context "$ctx" --dtype "$form" >/dev/null
    t1=$(date +%s.%N)
    sizes=""
    for f in talker.onnx predictor.onnx weights.onnx.data; do
      sizes="$sizes${sizes:+, }\"$f\": $(stat -c %s "$dir/$f")"
    done
    : >"$work/times"
    for _ in $(seq "$reps"); do
      # "per frame, talker native A ms / ORT B ms, predictor native C ms / ORT D ms"
      build/tests/tts_onnx_parity "$model" "$dir" "$lib" "$frames" -1000 0 |
        sed -n 's/.*talker native \([0-9.]*\) ms \/ ORT \([0-9.]*\) ms, predictor native \([0-9.]*\) ms \/ ORT \([0-9.]*\) ms/\1 \2 \3 \4/p' \
        >>"$work/times"
    done
    col() { awk -v c="$1" '{print $c}' "$work/times" | median; }
    printf '{"model": "%s", "form": "%s", "context": %s, "export_s": %.2f, "bytes": {%s}, "frames": %s, "reps": %s, ' \
      "$model" "$form" "$ctx" "$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')" "$sizes" "$frames" "$reps"
    printf '"talker_ms": {"native": %s, "ort": %s}, "predictor_ms": {"native": %s, "ort": %s}}\n' \
      "$(col 1)" "$(col 2)" "$(col 3)" "$(col 4)"
    rm -rf "$dir"
  done
done
