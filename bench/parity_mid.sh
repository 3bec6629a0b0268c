#!/usr/bin/env bash
# Parity at the real Spark-X2.5 1.7B layer width (hidden 2048, 8 heads x 256,
# 2 kv heads, intermediate 6144, window 512; 4 layers = 3 sliding + 1 full)
# on a 1536-token prompt plus 32 greedy tokens, for fp32- and bf16-stored
# weights. Takes a while on two cores; prints one JSON line per dtype.
#   bench/parity_mid.sh [OUT_DIR]      (default bench/out/mid)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/out/mid}
prompt_len=${PROMPT_LEN:-1536}
mkdir -p "$out"
make -s -j2 build/ember
for dtype in f32 bf16; do
  dir="$out/mid-$dtype"
  [ -f "$dir/config.json" ] ||
    /usr/bin/python3 reference/make_checkpoint.py --preset mid --dtype "$dtype" --untied --out "$dir" >&2
  [ -f "$dir.golden.json" ] ||
    /usr/bin/python3 reference/golden.py --model "$dir" --out "$dir.golden.json" \
      --prompt-len "$prompt_len" --positions sparse >&2
  build/ember parity --model "$dir" --golden "$dir.golden.json" --json \
    --min-aggregate 110 --max-below-floor 6 --min-top1 1 --min-greedy 1 >"$dir.parity.json" || true
  # one summary line (without the per-position rows) on stdout
  /usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); rows=r.pop("rows");
r["margin_to_floor_db_min"]=min(x["snr_db"]-x["floor_snr_db"] for x in rows); print(json.dumps(r))' "$dir.parity.json"
done
