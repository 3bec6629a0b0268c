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
# from src/llama-quant.cpp for Spark's tensors: fused attn_qkv, tied output).
# The model: random weights whose every matrix takes K-quants (inputs that are
# multiples of 256; models/demo's 192 makes llama.cpp's rules fall back) and 8
# layers, so the rules' layer ranges (first and last eighth, every third) bite.
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
if ! out=$($PY reference/make_checkpoint.py --preset tiny --hidden 256 --intermediate 768 --head-dim 64 \
             --layers 8 --vocab 512 --out "$tmp/model" 2>&1); then
  fail kquants_mix_model "$out"; exit 1
fi
for mix in q4_k_m q5_k_m q3_k_m q2_k q4_k_s iq4_xs; do
  if ! "$EMBER" quantize "$tmp/model" "$tmp/$mix.gguf" --type "$mix" 2>"$tmp/err"; then
    fail "kquants_mix_$mix" "$(cat "$tmp/err")"; continue
  fi
  if out=$($PY - "$src/gguf-py" "$tmp/$mix.gguf" "$mix" <<'PY' 2>&1
import sys
sys.path.insert(0, sys.argv[1])
import gguf
r = gguf.GGUFReader(sys.argv[2]); mix = sys.argv[3]
n = max(int(t.name.split(".")[1]) for t in r.tensors if t.name.startswith("blk.")) + 1
base = {"q4_k_m": "Q4_K", "q5_k_m": "Q5_K", "q3_k_m": "Q3_K", "q2_k": "Q2_K", "q4_k_s": "Q4_K", "iq4_xs": "IQ4_XS"}[mix]
more = lambda i: i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2
def want(name):
    if name == "token_embd.weight": return "Q6_K"                    # tied: the output's type
    role = name.split(".")[2] if name.startswith("blk.") else ""
    i = int(name.split(".")[1]) if name.startswith("blk.") else -1
    if role == "attn_qkv":
        return {"q4_k_m": "Q5_K", "q5_k_m": "Q6_K", "q3_k_m": "Q4_K"}.get(mix, base)
    if role == "attn_output":
        return {"q2_k": "Q3_K", "q3_k_m": "Q4_K"}.get(mix, base)
    if role == "ffn_down":
        if mix in ("q4_k_m", "q5_k_m") and more(i): return "Q6_K"
        if mix == "q3_k_m": return "Q5_K" if i < n // 16 else "Q4_K"
        if mix == "q2_k": return "Q3_K"
        if mix in ("q4_k_s", "iq4_xs") and i < n // 8: return "Q5_K"
    return base
bad = [(t.name, t.tensor_type.name, want(t.name)) for t in r.tensors
       if len(t.shape) == 2 and t.tensor_type.name != want(t.name)]
ft = int(r.fields["general.file_type"].parts[-1][0])
want_ft = {"q2_k": 10, "q3_k_m": 12, "q4_k_s": 14, "q4_k_m": 15, "q5_k_m": 17, "iq4_xs": 30}[mix]
if bad or ft != want_ft:
    print(f"file_type {ft} (want {want_ft}); tensor/type/want: {bad[:6]}"); sys.exit(1)
print(f"{sum(len(t.shape) == 2 for t in r.tensors)} matrices as llama.cpp types them, file_type {ft}")
PY
  ); then pass "kquants_mix_$mix"; echo "     $out"; else fail "kquants_mix_$mix" "$out"; fi
done
exit $e2e_failed
