#!/usr/bin/env bash
# The main job in one command: install what is missing, build, make a model
# if none is given, and generate.
#   scripts/run.sh [MODEL_DIR] [--ids 1,2,3] [-n 32]
# Without MODEL_DIR it writes a random-weight tiny Spark-X2.5 checkpoint
# (untied, so greedy output varies) to build/demo-model with the reference
# generator, or uses the committed models/tiny when torch is not installed.
set -euo pipefail
cd "$(dirname "$0")/.."

model=""
ids="1,2,3,4,5,6,7,8"
n=32
while [ $# -gt 0 ]; do
  case "$1" in
    --ids) ids=$2; shift 2 ;;
    -n) n=$2; shift 2 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) model=$1; shift ;;
  esac
done

scripts/setup.sh
make -j"$(nproc 2>/dev/null || echo 2)" build/ember >/dev/null

if [ -z "$model" ]; then
  model=build/demo-model
  if [ ! -f "$model/config.json" ]; then
    if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
      /usr/bin/python3 reference/make_checkpoint.py --preset tiny --untied --dtype bf16 --out "$model" >&2
    else
      model=models/tiny
    fi
  fi
fi
echo "model: $model" >&2
exec build/ember generate -m "$model" --ids "$ids" -n "$n" --greedy --print-ids
