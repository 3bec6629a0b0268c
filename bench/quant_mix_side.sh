#!/usr/bin/env bash
# `ember quantize --type MIX` against llama.cpp's own llama-quantize (built
# from the node-llama-cpp bundle, scripts/llama_cpp_build.sh): the same small
# random Spark checkpoint, written by both for every mix ember names, must
# give each tensor the same type. Three models of 8 layers (so the
# layer-range rules bite): 2 and 4 query heads per KV head (llama.cpp's Q2_K
# and IQ4 rules for attn_v-like tensors turn on n_gqa), and one 192 wide,
# whose rows are not whole K-quant blocks, for the fallback types; there
# ember writes Q8_0 where llama.cpp writes Q5_0/Q5_1 (formats ember lacks),
# which is counted as "no_q5" and not as a difference. One JSON line per
# (model, mix); exits 1 on any other difference. tests/e2e/kquants.sh checks the same rules as
# restated in Python, without llama.cpp; this is the check against the
# program itself.
#
#   bench/quant_mix_side.sh [WORK_DIR]
#   env: MIXES (every llama.cpp mix ember has)
set -uo pipefail
cd "$(dirname "$0")/.."
work=${1:-$(mktemp -d)}
mixes=${MIXES:-q8_0 q4_0 q2_k q3_k_s q3_k_m q3_k_l q4_k_s q4_k_m q5_k_s q5_k_m q6_k iq4_nl iq4_xs}
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
def types(path):
    return {t.name: t.tensor_type.name for t in gguf.GGUFReader(path).tensors}
e, l = types(sys.argv[2]), types(sys.argv[3])
diff = sorted((n, e.get(n), l.get(n)) for n in set(e) | set(l) if e.get(n) != l.get(n))
no_q5 = [d for d in diff if d[1] == "Q8_0" and d[2] in ("Q5_0", "Q5_1")]
diff = [d for d in diff if d not in no_q5]
print(json.dumps({"model": sys.argv[4], "mix": sys.argv[5], "tensors": len(l), "same": not diff,
                  "no_q5": len(no_q5), "ember_vs_llama": diff[:8]}))
sys.exit(1 if diff else 0)
PY
  done
done
exit $bad
