#!/usr/bin/env bash
# The committed tiny checkpoint against its committed golden (no torch needed).
source "$(dirname "$0")/lib.sh"
golden=tests/data/tiny-golden.json
# The fp32 bar is relative to the golden's own float32-vs-float64 floor, per
# position and in aggregate (--max-below-floor 6): ember and the reference are
# two float32 computations of the same function, each with rounding noise at
# about that floor; uncorrelated, their difference sits ~3 dB under it, and
# 3 dB more allows one side twice the other's noise power (other summation
# orders: SIMD lanes, blocked prefill, another CPU's BLAS for the golden).
# A fixed dB figure would instead encode the floor of one machine and seed.

expect_ok parity_committed_tiny \
  "$EMBER" parity --model models/tiny --golden "$golden" --json \
  --max-below-floor 6 --min-top1 1 --min-greedy 1

for chunk in 1 7 16; do
  expect_ok "parity_committed_tiny_chunk_$chunk" \
    "$EMBER" parity --model models/tiny --golden "$golden" --chunk "$chunk" \
    --max-below-floor 6 --min-top1 1 --min-greedy 1
done

# Converted at load: q8_0 weights (activations quantized on the fly) and an
# f16 KV cache still track the reference.
expect_ok parity_committed_tiny_q8_0 \
  "$EMBER" parity --model models/tiny --golden "$golden" --dtype q8_0 --min-aggregate 30 --min-top1 0.9
expect_ok parity_committed_tiny_kv_f16 \
  "$EMBER" parity --model models/tiny --golden "$golden" --kv-type f16 --min-aggregate 60 --min-top1 1
# Every kernel set this CPU runs meets the fp32 bars on its own.
for k in scalar avx2 avx512 neon; do
  if "$EMBER" parity --model models/tiny --golden "$golden" --kernels "$k" 2>&1 >/dev/null |
     grep -q "kernel set"; then
    echo "SKIP parity_committed_tiny_kernels_$k: this CPU cannot run it"
  else
    expect_ok "parity_committed_tiny_kernels_$k" \
      "$EMBER" parity --model models/tiny --golden "$golden" --kernels "$k" \
      --max-below-floor 6 --min-top1 1 --min-greedy 1
  fi
done

# `ember generate` reproduces the reference's greedy ids.
want=$(json_ids "$golden" greedy_ids)
got=$("$EMBER" generate -m models/tiny --ids "$(json_ids "$golden" prompt_ids)" -n 32 --greedy --print-ids 2>/dev/null)
if [ -n "$want" ] && [ "$got" = "$want" ]; then pass generate_matches_reference_greedy
else fail generate_matches_reference_greedy "want $want" "got  $got"; fi

# The JSON report carries the documented keys.
json=$("$EMBER" parity --model models/tiny --golden "$golden" --json)
missing=""
for key in snr_db_min snr_db_mean snr_db_aggregate top1_agree top5_overlap greedy_match rows; do
  grep -q "\"$key\"" <<<"$json" || missing="$missing $key"
done
if [ -z "$missing" ]; then pass parity_json_keys; else fail parity_json_keys "missing:$missing"; fi

# A perturbed model must fail the same thresholds: the check can fail.
expect_error parity_detects_tanh_gelu "below the reference floor" \
  "$EMBER" parity --model models/tiny --golden "$golden" --gelu tanh --max-below-floor 6
exit $e2e_failed
