#!/usr/bin/env bash
# The main job in one command: install what is missing, build, and run a model.
#   scripts/run.sh                 the trained demo model (models/demo): a prose
#                                  continuation and one whole tool round trip
#                                  (scripts/demo.py)
#   scripts/run.sh MODEL_DIR [--ids 1,2,3] [-n 32]
#                                  greedy generation from token ids on any
#                                  Spark-X2.5 checkpoint directory
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
  exec /usr/bin/python3 scripts/demo.py
fi
echo "model: $model" >&2
exec build/ember generate -m "$model" --ids "$ids" -n "$n" --greedy --print-ids
