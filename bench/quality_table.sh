#!/usr/bin/env bash
# Issue 19's quality table per format: logits SNR, top-1 agreement and KL
# divergence against the unquantized model (bench/quant_quality.c), for
# ember's own q8_0, q6_k, q5_k_m, q5_1, q5_0, q4_k_m, q4_1, q4_0, q3_k_m
# files (or the mixes in TYPES) and, when llama.cpp's llama-quantize is at
# hand, llama.cpp's of the same model.
#   bench/quality_table.sh [OUT_DIR]   (default bench/out/quality)
# Models: the 1.7B width (the `mid` preset: hidden 2048, 8 x 256 heads,
# intermediate 6144, 4 layers, untied; a 32768-token vocab keeps the files
# small, the width is what the formats see) with random ids, and the trained
# models/demo over README.md. LLAMA_QUANTIZE names the llama-quantize binary
# (default: the one bench/llama_side.sh builds under ~/.cache/ember/llama).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/out/quality}
lq=${LLAMA_QUANTIZE:-$HOME/.cache/ember/llama/build-src-3.22.1/bin/llama-quantize}
types=${TYPES:-q8_0 q6_k q5_k_m q5_1 q5_0 q4_k_m q4_1 q4_0 q3_k_m}
mkdir -p "$out"
make -s -j2 build/ember build/bench/quant_quality

mid=$out/mid-v32k
[ -f "$mid/config.json" ] ||
  /usr/bin/python3 reference/make_checkpoint.py --preset mid --untied --vocab 32768 --out "$mid" >&2

# table NAME REF TEXT_ARGS SRC: every format of SRC by ember (and llama.cpp)
table() {
  local name=$1 ref=$2 text=$3 src=$4 files=() t
  for t in $types; do
    [ -f "$out/$name-$t.gguf" ] || build/ember quantize "$src" "$out/$name-$t.gguf" --type $t --threads 2 >&2
    files+=("$out/$name-$t.gguf")
  done
  if [ -x "$lq" ]; then
    [ -f "$out/$name-f32.gguf" ] || build/ember quantize "$src" "$out/$name-f32.gguf" --type f32 >&2
    for t in $types; do
      [ -f "$out/$name-llama-$t.gguf" ] ||
        "$lq" "$out/$name-f32.gguf" "$out/$name-llama-$t.gguf" "${t^^}" 2 >"$out/$name-llama-$t.log" 2>&1
      files+=("$out/$name-llama-$t.gguf")
    done
  fi
  # shellcheck disable=SC2086
  build/bench/quant_quality --ref "$ref@f32" --threads 2 $text "${files[@]}"
}
table mid "$mid" "--tokens 136 --prefix 8 --seed 1" "$mid"
table demo models/demo "--tokens 256 --text README.md" models/demo
