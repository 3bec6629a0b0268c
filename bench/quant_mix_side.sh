#!/usr/bin/env bash
# `ember quantize --type MIX` against llama.cpp's own llama-quantize (built
# from the node-llama-cpp bundle, scripts/llama_cpp_build.sh): the same small
# random Spark checkpoint, written by both for every mix ember names, must
# give each tensor the same type. Three models of 8 layers (so the
# layer-range rules bite): 2 and 4 query heads per KV head (llama.cpp's Q2_K
# and IQ4 rules for attn_v-like tensors turn on n_gqa), and one 192 wide,
# whose rows are not whole K-quant blocks, for the fallback types. One JSON
# line per (model, mix); exits 1 on any difference. tests/e2e/kquants.sh
# checks the same rules as restated in Python, without llama.cpp; this is
# the check against the program itself. Each line also counts, per type, the
# tensors whose bytes are identical in both files.
#
#   bench/quant_mix_side.sh [WORK_DIR]
#   env: MIXES (every llama.cpp mix ember has)
set -uo pipefail
cd "$(dirname "$0")/.."
work=${1:-$(mktemp -d)}
mixes=${MIXES:-q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k_s q3_k_m q3_k_l q4_k_s q4_k_m q5_k_s q5_k_m q6_k iq4_nl iq4_xs}
mkdir -p "$work"
make -s -j2 build/ember || exit 1
bld=$(scripts/llama_cpp_build.sh llama-quantize) || exit 1
src=$(scripts/llama_cpp_source.sh) || exit 1

bad=0
for shape in "gqa2 256 768 64 2" "gqa4 256 768 64 1" "w192 192 576 32 2"; do
  read -r name hidden inter hd kv <<<"$shape"
  model="$work/$name"
  [ -f "$model/config.json" ] ||
    /usr/bin/python3 reference/make_checkpoint.py --preset tiny --hidden "$hidden" --intermediate "$inter" \
      --head-dim "$hd" --layers 8 --vocab 512 --kv-heads "$kv" --out "$model" >&2 || exit 1
  [ -f "$model.f32.gguf" ] || build/ember quantize "$model" "$model.f32.gguf" --type f32 >&2 || exit 1
  for mix in $mixes; do
    T=$(tr '[:lower:]' '[:upper:]' <<<"$mix")
    build/ember quantize "$model" "$model.ember-$mix.gguf" --type "$mix" >/dev/null 2>&1 ||
      { echo "ember quantize $mix failed" >&2; bad=1; continue; }
    "$bld/bin/llama-quantize" "$model.f32.gguf" "$model.llama-$mix.gguf" "$T" 2 >"$work/llama-$mix.log" 2>&1 ||
      { echo "llama-quantize $T failed: $work/llama-$mix.log" >&2; bad=1; continue; }
    /usr/bin/python3 - "$src/gguf-py" "$model.ember-$mix.gguf" "$model.llama-$mix.gguf" "$(basename "$model")" "$mix" <<'PY' || bad=1
import json, sys
sys.path.insert(0, sys.argv[1])
import gguf
import numpy as np
et = {t.name: t for t in gguf.GGUFReader(sys.argv[2]).tensors}
lt = {t.name: t for t in gguf.GGUFReader(sys.argv[3]).tensors}
e, l = ({n: t.tensor_type.name for n, t in ts.items()} for ts in (et, lt))
diff = sorted((n, e.get(n), l.get(n)) for n in set(e) | set(l) if e.get(n) != l.get(n))
# the quantizers themselves: which types came out byte for byte the same
# (ember's Q8_0/Q4_0/Q4_1/Q5_0/Q5_1 are llama.cpp's reference ones; its
# K-quant search is its own)
raw = lambda t: np.asarray(t.data).view(np.uint8)
same_bytes, other_bytes = {}, {}
for n in set(e) & set(l):
    if e[n] == l[n]:
        d = same_bytes if np.array_equal(raw(et[n]), raw(lt[n])) else other_bytes
        d[l[n]] = d.get(l[n], 0) + 1
print(json.dumps({"model": sys.argv[4], "mix": sys.argv[5], "tensors": len(l), "same": not diff,
                  "types": sorted(set(l.values())), "same_bytes": same_bytes, "other_bytes": other_bytes,
                  "ember_vs_llama": diff[:8]}))
sys.exit(1 if diff else 0)
PY
  done
done
exit $bad
