#!/usr/bin/env bash
# Live parity against the PyTorch reference (needs Debian's python3-torch):
# generate tiny checkpoints in several real layouts, write fresh goldens with
# the reference, and hold ember to the floor-relative bars.
source "$(dirname "$0")/lib.sh"
if ! have_torch; then
  echo "SKIP parity_live: python3-torch is not installed"
  exit 0
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

expect_ok reference_self_test $PY reference/test_reference.py

# name | make_checkpoint.py flags | golden.py flags | ember flags
variants=(
  "f32_tied|--dtype f32||"
  "bf16_untied_3_shards|--dtype bf16 --untied --shards 3||"
  "f16_untied|--dtype f16 --untied --seed 3||"
  "biases|--dtype f32 --untied --attention-bias --mlp-bias --seed 5||"
  "silu_gate|--dtype f32 --untied --gate-mode silu --seed 7||"
  "tanh_gelu|--dtype f32 --untied --seed 9|--gelu tanh|--gelu tanh"
)
for v in "${variants[@]}"; do
  IFS='|' read -r name ck_flags golden_flags ember_flags <<<"$v"
  dir="$tmp/$name"
  # shellcheck disable=SC2086
  if ! out=$($PY reference/make_checkpoint.py --preset tiny --out "$dir" $ck_flags 2>&1) ||
     ! out=$($PY reference/golden.py --model "$dir" --out "$dir.json" $golden_flags 2>&1); then
    fail "parity_live_$name" "reference failed: $out"; continue
  fi
  # shellcheck disable=SC2086
  expect_ok "parity_live_$name" "$EMBER" parity --model "$dir" --golden "$dir.json" $ember_flags \
    --max-below-floor 6 --min-top1 1 --min-greedy 1
done
# Weight formats converted at load and KV cache formats, on an f32 untied
# model, against the reference run on the original f32 weights. The bars are
# the formats' rounding, not any machine's float32 noise (60+ dB below them):
# rounding to p mantissa bits gives a weight SNR of ~6.02 p + 4.8 dB (f16
# p=11: ~71 dB, bf16 p=8: ~53 dB); a q8_0 block scales by its absmax, so a
# Gaussian row loses the crest factor (~10 dB) of 8 bits: ~40 dB, and the
# activations are quantized too. Logits keep roughly the weights' SNR; the
# bars leave 8-11 dB for its growth through the layers: f16 >= 60 dB,
# bf16 >= 45 dB, q8_0 >= 30 dB and KV q8_0 >= 35 dB with >= 90% top-1; q4_0
# (~16 dB) is reported, with no bar.
dir="$tmp/f32_untied"
$PY reference/make_checkpoint.py --preset tiny --out "$dir" --dtype f32 --untied --seed 11 >/dev/null &&
  $PY reference/golden.py --model "$dir" --out "$dir.json" 2>/dev/null
formats=(
  "dtype_f16|--dtype f16|--min-aggregate 60 --min-top1 0.9"
  "dtype_bf16|--dtype bf16|--min-aggregate 45 --min-top1 0.9"
  "dtype_q8_0|--dtype q8_0|--min-aggregate 30 --min-top1 0.9"
  "dtype_q4_0|--dtype q4_0|"
  "kv_f16|--kv-type f16|--min-aggregate 60 --min-top1 0.9"
  "kv_q8_0|--kv-type q8_0|--min-aggregate 35 --min-top1 0.9"
)
for f in "${formats[@]}"; do
  IFS='|' read -r name flags bars <<<"$f"
  # shellcheck disable=SC2086
  if out=$("$EMBER" parity --model "$dir" --golden "$dir.json" --json $flags $bars 2>&1); then
    pass "parity_live_$name"
    grep -o '"snr_db_aggregate": [0-9.-]*, "top1_agree": [0-9.]*' <<<"$out" | sed "s/^/     $name /"
  else
    fail "parity_live_$name" "$(tail -3 <<<"$out")"
  fi
done
exit $e2e_failed
