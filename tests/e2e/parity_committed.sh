#!/usr/bin/env bash
# The committed tiny checkpoint against its committed golden (no torch needed).
source "$(dirname "$0")/lib.sh"
golden=tests/data/tiny-golden.json

expect_ok parity_committed_tiny \
  "$EMBER" parity --model models/tiny --golden "$golden" --json \
  --min-aggregate 120 --max-below-floor 6 --min-top1 1 --min-greedy 1

for chunk in 1 7 16; do
  expect_ok "parity_committed_tiny_chunk_$chunk" \
    "$EMBER" parity --model models/tiny --golden "$golden" --chunk "$chunk" \
    --min-aggregate 120 --max-below-floor 6 --min-top1 1 --min-greedy 1
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
expect_error parity_detects_tanh_gelu "aggregate SNR" \
  "$EMBER" parity --model models/tiny --golden "$golden" --gelu tanh --min-aggregate 120
exit $e2e_failed
