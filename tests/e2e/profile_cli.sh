#!/usr/bin/env bash
# --profile on the text and speech commands: the derived edge profile picks
# the weight format (and, for text, the threads) the command line leaves
# open, explicit flags win, and the tiny model's output does not change (it
# stays as stored); speech never goes below q8_0.
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

# Speech: the 0.6B Qwen3-TTS geometry on the Pi 5 reads 1.6 GiB per frame in
# q8_0 (6.8 frames/s from 12 GB/s, short of 25): the fastest that fits,
# and not q4_0 (13 frames/s), which the 1.7B text model above gets.
err=$(EMBER_HW_PROFILE=fuzz/corpus/hw_profile/raspberry-pi-5.json \
      $EMBER probe --derive tests/data/hw/models/qwen3-tts-0.6b 2>&1)
if grep -q "weights q8_0 (converted at load)" <<<"$err" && grep -q "speech stops at q8_0" <<<"$err"; then
  pass profile_tts_pi5_q8_0_not_q4_0
else fail profile_tts_pi5_q8_0_not_q4_0 "$err"; fi

# The tiny TTS model on a machine that reads 40 MB/s: bf16 reads 2.2 MB per
# frame (17.9 frames/s, short of 25), q8_0 1.2 MB (33.7): the profile picks
# q8_0, `tts` runs in it (the summary says so, and the audio is --dtype
# q8_0's, not the stored bf16's), --dtype wins, --profile off keeps bf16.
export XDG_CACHE_HOME="$TMP/cache"
SLOW='{"class": "x86_cpu", "n_logical": 2, "ram_total_bytes": 8589934592, "mem_bw_bytes_per_s": 40000000}'
# One chunk: where the stream's last chunks split depends on when generation
# ends, and the decoder's float rounding (not the codes) on that split, so
# byte-equal audio across runs needs a fixed split.
TTS=(-m models/tts-tiny --text "Hello." --speaker ryan --language english --seed 3 --max-frames 12
     --no-calibration --chunks 12)
auto=$(EMBER_HW_PROFILE=$SLOW $EMBER tts "${TTS[@]}" --profile explain -o "$TMP/auto.wav" 2>&1)
off=$(EMBER_HW_PROFILE=$SLOW $EMBER tts "${TTS[@]}" --profile off -o "$TMP/off.wav" 2>&1)
q8=$(EMBER_HW_PROFILE=$SLOW $EMBER tts "${TTS[@]}" --profile off --dtype q8_0 -o "$TMP/q8.wav" 2>&1)
if grep -q "profile: weights q8_0 (converted at load)" <<<"$auto" && grep -q "weights q8_0$" <<<"$auto" &&
   grep -q "weights as stored$" <<<"$off" && cmp -s "$TMP/auto.wav" "$TMP/q8.wav" &&
   ! cmp -s "$TMP/auto.wav" "$TMP/off.wav"; then pass profile_tts_runs_the_derived_format
else fail profile_tts_runs_the_derived_format "$auto" "$off"; fi
err=$(EMBER_HW_PROFILE=$SLOW $EMBER tts "${TTS[@]}" --profile explain --dtype bf16 -o "$TMP/bf16.wav" 2>&1)
if grep -q "dtype given, it wins" <<<"$err" && grep -q "weights bf16$" <<<"$err" &&
   cmp -s "$TMP/bf16.wav" "$TMP/off.wav"; then pass profile_tts_dtype_wins
else fail profile_tts_dtype_wins "$err"; fi
out=$(EMBER_HW_PROFILE=$SLOW $EMBER bench tts -m models/tts-tiny --frames 8 --reps 1 --json --no-calibration 2>/dev/null)
grep -q '"dtype": "q8_0"' <<<"$out" && pass profile_bench_tts_derived_format ||
  fail profile_bench_tts_derived_format "$out"
expect_error profile_tts_bad_value "--profile takes auto, off or explain" \
  $EMBER tts "${TTS[@]}" --profile sometimes -o "$TMP/x.wav"

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
