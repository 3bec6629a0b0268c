#!/usr/bin/env bash
# --profile on the text commands: the derived edge profile picks the weight
# format and threads the command line leaves open, explicit flags win, and
# the tiny model's output does not change (it stays as stored).
source "$(dirname "$0")/lib.sh"
MODEL=models/tiny
SPARK_17B_CONFIG=tests/data/hw/models/spark-1.7b   # config.json only, no weights
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

if a=$($EMBER generate -m $MODEL -p "Hello" -n 8 --greedy 2>/dev/null) &&
   b=$($EMBER generate -m $MODEL -p "Hello" -n 8 --greedy --profile off 2>/dev/null) &&
   [ -n "$a" ] && [ "$a" = "$b" ]; then pass profile_auto_keeps_tiny_output
else fail profile_auto_keeps_tiny_output "auto: $a" "off: $b"; fi

err=$($EMBER generate -m $MODEL -p "Hello" -n 2 --profile explain 2>&1 >/dev/null)
if grep -q "profile: threads" <<<"$err" && grep -q "profile: weights" <<<"$err"; then
  pass profile_explain_prints_reasons
else fail profile_explain_prints_reasons "$err"; fi

# A Raspberry Pi 5 (from its probe snapshot) and the 1.7B geometry: the 3 GiB
# bf16 weights would decode at ~4 tok/s from 12 GB/s, so q4_0 is chosen, and 4
# threads; the model itself is absent, so the command then fails to load it.
err=$(EMBER_HW_PROFILE=fuzz/corpus/hw_profile/raspberry-pi-5.json \
      $EMBER generate -m $SPARK_17B_CONFIG --ids 1,2 -n 1 --profile explain 2>&1 >/dev/null)
if grep -q "profile: weights q4_0" <<<"$err" && grep -q "profile: threads 4" <<<"$err"; then
  pass profile_pi5_1_7b_q4_0_4_threads
else fail profile_pi5_1_7b_q4_0_4_threads "$err"; fi
err=$(EMBER_HW_PROFILE=fuzz/corpus/hw_profile/raspberry-pi-5.json \
      $EMBER generate -m $SPARK_17B_CONFIG --ids 1,2 -n 1 --profile explain --dtype q8_0 \
      --threads 3 2>&1 >/dev/null)
if grep -q "dtype given, it wins" <<<"$err" && grep -q "threads given, it wins" <<<"$err"; then
  pass profile_explicit_flags_win
else fail profile_explicit_flags_win "$err"; fi

# Step statistics of a text run: every generated token's phases, the decode
# step's layers by type (the tiny model has both).
if err=$($EMBER generate -m $MODEL -p "Hello" -n 12 --greedy --stats "$TMP/text.json" 2>&1 >/dev/null) &&
   $PY -c '
import json, sys
c = json.load(open(sys.argv[1]))["counters"]
n = c["sampler"]["count"]
ok = n >= 1 and c["detokenize"]["count"] == n and c["token"]["count"] == n and c["prefill"]["count"] == 1
steps = c["decode_step"]["count"]   # each decode step splits its layers by type
ok = ok and c["decode_full"]["count"] == steps and c["decode_sliding"]["count"] == steps
sys.exit(0 if ok else 1)' "$TMP/text.json" && grep -q "share of token" <<<"$err"; then
  pass generate_stats_phases
else fail generate_stats_phases "$err"; fi
EMBER_STATS="$TMP/env.json" $EMBER generate -m $MODEL -p "Hello" -n 3 >/dev/null 2>&1
[ -s "$TMP/env.json" ] && pass stats_from_environment || fail stats_from_environment

expect_error profile_bad_value "--profile takes auto, off or explain" \
  $EMBER generate -m $MODEL -p "Hello" -n 1 --profile maybe
expect_error profile_bad_override "EMBER_HW_PROFILE" \
  env EMBER_HW_PROFILE='{"n_logical": "x"' $EMBER generate -m $MODEL -p "Hello" -n 1
exit $e2e_failed
