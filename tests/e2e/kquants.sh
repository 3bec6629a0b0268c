#!/usr/bin/env bash
# K-quant and IQ4 blocks decode bit for bit as llama.cpp's own Python
# reference (gguf-py's quants module, from the node-llama-cpp npm package via
# scripts/llama_cpp_source.sh) decodes them, in a GGUF file written by gguf-py.
source "$(dirname "$0")/lib.sh"
bin=${KQUANTS_BIN:-build/tests/test_kquants}
if ! src=$(scripts/llama_cpp_source.sh 2>/tmp/ember-llama-src.log); then
  fail kquants_llama_source "$(cat /tmp/ember-llama-src.log)"
  exit 1
fi
pass kquants_llama_source
out=$($PY reference/test_kquants_gguf_py.py "$src/gguf-py" "$bin" 2>&1); rc=$?
echo "$out"
[ $rc -eq 0 ] || e2e_failed=1

# `ember quantize --type MIX` gives each tensor the type llama.cpp's rules
# give it (read back with gguf-py's own GGUFReader; the rules restated here
# from src/llama-quant.cpp for Spark's tensors: fused attn_qkv, which that
# release types as attn_v, and the tied output). The models: random weights
# whose every matrix takes K-quants (inputs that are multiples of 256;
# models/demo's 192 makes llama.cpp's rules fall back), 8 layers so the
# rules' layer ranges (first and last eighth, every third) bite, and 2 or 4
# query heads per KV head (n_gqa, which the Q2_K and IQ4 rules read); and a
# model 192 wide, whose rows are not whole K-quant blocks, for llama.cpp's
# fallback types.
# bench/quant_mix_side.sh compares the same with llama-quantize itself.
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for shape in "gqa2 256 768 64 2" "gqa4 256 768 64 1" "w192 192 576 32 2"; do
  read -r name hidden inter hd kv <<<"$shape"
  model="$tmp/$name"
  if ! out=$($PY reference/make_checkpoint.py --preset tiny --hidden "$hidden" --intermediate "$inter" \
               --head-dim "$hd" --layers 8 --vocab 512 --kv-heads "$kv" --out "$model" 2>&1); then
    fail kquants_mix_model "$out"; exit 1
  fi
  for mix in q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k_s q3_k_m q3_k_l q4_k_s q4_k_m q5_k_s q5_k_m q6_k iq4_nl iq4_xs; do
    case="kquants_mix_${mix}_$name"
    if ! "$EMBER" quantize "$model" "$model-$mix.gguf" --type "$mix" 2>"$tmp/err"; then
      fail "$case" "$(cat "$tmp/err")"; continue
    fi
    if out=$($PY - "$src/gguf-py" "$model-$mix.gguf" "$mix" <<'PY' 2>&1
import sys
sys.path.insert(0, sys.argv[1])
import gguf
r = gguf.GGUFReader(sys.argv[2]); mix = sys.argv[3]
field = lambda k: int(r.fields[k].parts[-1][0])
n = max(int(t.name.split(".")[1]) for t in r.tensors if t.name.startswith("blk.")) + 1
gqa = field("spark2_5.attention.head_count") // field("spark2_5.attention.head_count_kv")
base = {"q8_0": "Q8_0", "q4_0": "Q4_0", "q4_1": "Q4_1", "q5_0": "Q5_0", "q5_1": "Q5_1", "q2_k": "Q2_K", "q3_k_s": "Q3_K", "q3_k_m": "Q3_K", "q3_k_l": "Q3_K", "q4_k_s": "Q4_K",
        "q4_k_m": "Q4_K", "q5_k_s": "Q5_K", "q5_k_m": "Q5_K", "q6_k": "Q6_K", "iq4_nl": "IQ4_NL",
        "iq4_xs": "IQ4_XS"}[mix]
more = lambda i: i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2
def want(name):
    if name == "token_embd.weight": return "Q8_0" if mix == "q8_0" else "Q6_K"  # tied: the output's
    role = name.split(".")[2] if name.startswith("blk.") else ""
    i = int(name.split(".")[1]) if name.startswith("blk.") else -1
    if role == "attn_qkv":                                            # llama.cpp's attn_v rules
        if mix == "q2_k": return "Q4_K" if gqa >= 4 else "Q3_K"
        if mix == "q3_k_m": return "Q5_K" if i < 2 else "Q4_K"
        if mix == "q3_k_l": return "Q5_K"
        if mix in ("iq4_nl", "iq4_xs") and gqa >= 4: return "Q5_K"
        if mix in ("q4_k_m", "q5_k_m") and more(i): return "Q6_K"
        if mix == "q4_k_s" and i < 4: return "Q5_K"
    if role == "attn_output":
        return {"q2_k": "Q3_K", "q3_k_m": "Q4_K", "q3_k_l": "Q5_K"}.get(mix, base)
    if role == "ffn_down":
        if mix in ("q4_k_m", "q5_k_m") and more(i): return "Q6_K"
        if mix == "q3_k_m": return "Q5_K" if i < n // 16 else "Q4_K"
        if mix == "q3_k_l": return "Q5_K"
        if mix == "q2_k": return "Q3_K"
        if mix in ("q4_k_s", "iq4_nl", "iq4_xs") and i < n // 8: return "Q5_K"
    return base
# rows that are not whole blocks of the type: llama.cpp's fallback, F16
# where that does not fit either
block = lambda ty: 32 if ty in ("Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "IQ4_NL") else 256
fallback = {"Q2_K": "Q4_0", "Q3_K": "Q4_0", "IQ4_XS": "IQ4_NL", "Q4_K": "Q5_0", "Q5_K": "Q5_1", "Q6_K": "Q8_0"}
def fitted(ty, cols):
    if cols % block(ty) == 0: return ty
    fb = fallback.get(ty, ty)
    return fb if cols % block(fb) == 0 else "F16"
want_of = lambda t: fitted(want(t.name), int(t.shape[0]))
bad = [(t.name, t.tensor_type.name, want_of(t)) for t in r.tensors
       if len(t.shape) == 2 and t.tensor_type.name != want_of(t)]
ft = field("general.file_type")
want_ft = {"q8_0": 7, "q4_0": 2, "q4_1": 3, "q5_0": 8, "q5_1": 9, "q2_k": 10, "q3_k_s": 11, "q3_k_m": 12,
           "q3_k_l": 13, "q4_k_s": 14, "q4_k_m": 15, "q5_k_s": 16, "q5_k_m": 17, "q6_k": 18, "iq4_nl": 25,
           "iq4_xs": 30}[mix]
if bad or ft != want_ft:
    print(f"file_type {ft} (want {want_ft}); tensor/type/want: {bad[:6]}"); sys.exit(1)
print(f"{sum(len(t.shape) == 2 for t in r.tensors)} matrices as llama.cpp types them (n_gqa {gqa}), file_type {ft}")
PY
    ); then pass "$case"; echo "     $out"; else fail "$case" "$out"; fi
  done
done
exit $e2e_failed
