#!/usr/bin/env bash
# The speech decoder (`ember decode-codes`):
#   - parity against the committed golden of reference/code2wav_golden.py on
#     the tiny decoder (exact sample count, waveform SNR within MARGIN_DB of
#     the golden's float32 floor, see below);
#   - streaming equals one-shot: 200 random frames pushed in random chunkings
#     give the one-shot samples (same count, SNR within MARGIN_DB of the floor);
#   - parity on the full-size decoder config (random weights generated into a
#     temporary directory, reference run live) when torch is installed;
#   - a valid WAV (read back by sox) and the error cases.
source "$(dirname "$0")/lib.sh"

MODEL=models/tts-tiny
CODES=tests/data/code2wav-tiny-codes.json
WAVE=tests/data/code2wav-tiny-wave.f32
if [ ! -f "$MODEL/speech_tokenizer/model.safetensors" ] || [ ! -f "$CODES" ]; then
  echo "SKIP code2wav (no tiny speech tokenizer or golden)"
  exit 0
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# The bars are float32 noise floors, measured against float64, less a margin:
# FLOOR is the committed golden's own SNR against the float64 decode of its
# codes (written beside it by reference/code2wav_golden.py); live comparisons
# measure theirs with the reference's --float64 run. ember's decoder is another
# float32 computation of the same function with other summation orders
# (blocked and Winograd convolutions): its SNR against float64 sits a few dB
# under the reference's, and against the float32 reference the two noises add
# (~3 dB more). MARGIN_DB = 10 covers both with room; a semantic error costs
# tens of dB (windowed_25_frames_report shows one at ~10 dB).
MARGIN_DB=10
FLOOR=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["float32_floor_snr_db"])' \
        "${WAVE%.f32}.json")
BAR=$($PY -c "print($FLOOR - $MARGIN_DB)")
# live_bar F32 F64: the floor of a float32 reference decode against its float64
# twin, less the margin.
live_bar() {
  $PY -c '
import sys
import numpy as np
a = np.fromfile(sys.argv[1], dtype=np.float32).astype(np.float64)
b = np.fromfile(sys.argv[2], dtype=np.float32).astype(np.float64)
print(10 * np.log10((b ** 2).sum() / ((a - b) ** 2).sum()) - float(sys.argv[3]))' "$1" "$2" "$MARGIN_DB"
}

# snr NAME GOT WANT MIN_DB: raw f32 files, same length and SNR >= MIN_DB.
snr() {
  local verdict
  verdict=$($PY -c '
import sys
import numpy as np
a = np.fromfile(sys.argv[1], dtype=np.float32); b = np.fromfile(sys.argv[2], dtype=np.float32)
if len(a) != len(b):
    print("sample count %d, expected %d" % (len(a), len(b))); sys.exit()
e = ((a.astype(np.float64) - b) ** 2).sum(); s = (b.astype(np.float64) ** 2).sum()
db = 10 * np.log10(s / e) if e > 0 else 999.0
print(("ok " if db >= float(sys.argv[3]) and np.isfinite(a).all() else "low ") +
      "%.1f dB over %d samples, bar %.1f" % (db, len(a), float(sys.argv[3])))' "$2" "$3" "$4" 2>&1)
  if [ "${verdict%% *}" = ok ]; then pass "$1 (${verdict#ok })"; else fail "$1" "$verdict"; fi
}

if out=$($EMBER decode-codes -m $MODEL --codes $CODES --f32 "$TMP/tiny.f32" --threads 2 2>&1); then
  snr decode_tiny_vs_reference "$TMP/tiny.f32" "$WAVE" "$BAR"
else fail decode_tiny_vs_reference "$out"; fi

# Streaming: random chunkings of 200 random frames against one push.
$PY -c '
import json, random
r = random.Random(11)
print(json.dumps([[r.randrange(2048) for _ in range(16)] for _ in range(200)]))' >"$TMP/codes200.json"
$PY -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))[:120]))' \
  "$TMP/codes200.json" >"$TMP/codes120.json"
if $EMBER decode-codes -m $MODEL --codes "$TMP/codes200.json" --f32 "$TMP/one.f32" >/dev/null 2>&1
then
  for seed in 1 2 3; do
    chunks=$($PY -c '
import random, sys
r = random.Random(int(sys.argv[1])); out = []; left = 200
while left > 0:
    k = min(left, r.choice([1, 1, 2, 3, 5, 8, 13, 25, 40])); out.append(k); left -= k
print(",".join(map(str, out)))' $seed)
    fpp=$((seed * 3))  # small front passes too, so pieces split inside the chain
    if out=$($EMBER decode-codes -m $MODEL --codes "$TMP/codes200.json" --chunks "$chunks" \
             --frames-per-pass $fpp --f32 "$TMP/chunked$seed.f32" 2>&1); then
      snr "stream_equals_oneshot_$seed" "$TMP/chunked$seed.f32" "$TMP/one.f32" "$BAR"
    else fail "stream_equals_oneshot_$seed" "$out"; fi
  done
else fail stream_oneshot "decode of 200 frames failed"; fi

# The windowed alternative (each chunk re-decoded after N frames of left
# context): with N beyond the tiny decoder's receptive field (2 + 2 x 71
# frames) it equals the stream; with 25 (what the reference server uses) it
# does not, and the SNR says by how much.
if $EMBER decode-codes -m $MODEL --codes "$TMP/codes200.json" --chunks 25 --window 150 \
     --f32 "$TMP/win150.f32" >/dev/null 2>&1; then
  snr windowed_beyond_receptive_field_equals_stream "$TMP/win150.f32" "$TMP/one.f32" "$BAR"
else fail windowed_beyond_receptive_field_equals_stream; fi
if $EMBER decode-codes -m $MODEL --codes "$TMP/codes200.json" --chunks 25 --window 25 \
     --f32 "$TMP/win25.f32" >/dev/null 2>&1; then
  snr windowed_25_frames_report "$TMP/win25.f32" "$TMP/one.f32" -999
else fail windowed_25_frames_report; fi

# A WAV that another program reads back: 24 kHz, mono, 16-bit, 24 x 1920 samples.
if $EMBER decode-codes -m $MODEL --codes $CODES -o "$TMP/out.wav" >/dev/null 2>&1 &&
   info=$(soxi "$TMP/out.wav" 2>&1) && grep -q "Sample Rate *: 24000" <<<"$info" &&
   grep -q "Channels *: 1" <<<"$info" && grep -q "Precision *: 16-bit" <<<"$info" &&
   grep -q "= 46080 samples" <<<"$info"; then pass wav_valid_for_sox
else fail wav_valid_for_sox "$info"; fi

# Full-size decoder config (the real speech_tokenizer/config.json, random weights),
# and the tiny one over 120 frames (beyond the 72-frame attention window),
# against the reference run live; then the reference's own checks. Under the
# sanitizers (E2E_SANITIZED, tests/run_all.sh) ember decodes the full-size
# config without the references: they and their checks are the plain run's,
# ~50 s of torch that would only repeat it.
if have_torch && [ -n "${E2E_SANITIZED:-}" ]; then
  FULL="$TMP/full"
  $PY -c '
import json, random
r = random.Random(5)
print(json.dumps([[r.randrange(2048) for _ in range(16)] for _ in range(6)]))' >"$TMP/codes6.json"
  if $PY reference/make_tts_checkpoint.py --preset 0.6b --speech-only --out "$FULL" >/dev/null 2>&1 &&
     out=$($EMBER decode-codes -m "$FULL" --codes "$TMP/codes6.json" --chunks 2,1,3 \
           --f32 "$TMP/full.f32" --threads 2 2>&1) &&
     [ "$(stat -c %s "$TMP/full.f32")" -eq $((6 * 1920 * 4)) ]; then
    pass decode_full_size_sanitized
  else fail decode_full_size_sanitized "$out"; fi
  rm -rf "$FULL"
elif have_torch; then
  if $PY reference/code2wav_ref.py --model $MODEL --codes "$TMP/codes120.json" \
         --out "$TMP/tiny120_ref.f32" >/dev/null 2>&1 &&
     $PY reference/code2wav_ref.py --model $MODEL --codes "$TMP/codes120.json" --float64 \
         --out "$TMP/tiny120_ref64.f32" >/dev/null 2>&1 &&
     out=$($EMBER decode-codes -m $MODEL --codes "$TMP/codes120.json" --chunks 7,1,30 \
           --f32 "$TMP/tiny120.f32" 2>&1); then
    snr decode_tiny_120_frames_vs_reference "$TMP/tiny120.f32" "$TMP/tiny120_ref.f32" \
      "$(live_bar "$TMP/tiny120_ref.f32" "$TMP/tiny120_ref64.f32")"
  else fail decode_tiny_120_frames_vs_reference "$out"; fi
  FULL="$TMP/full"
  if $PY reference/make_tts_checkpoint.py --preset 0.6b --speech-only --out "$FULL" >/dev/null 2>&1
  then
    $PY -c '
import json, random
r = random.Random(5)
print(json.dumps([[r.randrange(2048) for _ in range(16)] for _ in range(6)]))' >"$TMP/codes6.json"
    if $PY reference/code2wav_ref.py --model "$FULL" --codes "$TMP/codes6.json" \
           --out "$TMP/full_ref.f32" >/dev/null 2>&1 &&
       $PY reference/code2wav_ref.py --model "$FULL" --codes "$TMP/codes6.json" --float64 \
           --out "$TMP/full_ref64.f32" >/dev/null 2>&1 &&
       out=$($EMBER decode-codes -m "$FULL" --codes "$TMP/codes6.json" --chunks 2,1,3 \
             --f32 "$TMP/full.f32" --threads 2 2>&1); then
      snr decode_full_size_vs_reference "$TMP/full.f32" "$TMP/full_ref.f32" \
        "$(live_bar "$TMP/full_ref.f32" "$TMP/full_ref64.f32")"
    else fail decode_full_size_vs_reference "$out"; fi
    rm -rf "$FULL"
  else fail decode_full_size_generate "make_tts_checkpoint.py --speech-only failed"; fi
  out=$($PY reference/test_code2wav_reference.py 2>&1); rc=$?
  grep -E '^(PASS|FAIL)' <<<"$out" | sed 's/^\(PASS\|FAIL\) /\1 code2wav_ref:/'
  if [ $rc -ne 0 ] && ! grep -q '^FAIL' <<<"$out"; then fail code2wav_reference_run "$(tail -5 <<<"$out")"; fi
  [ $rc -eq 0 ] || e2e_failed=1
else
  echo "SKIP decode_full_size_vs_reference (no torch under $PY)"
fi

# Errors: a code outside the codebook, a malformed frame, no decoder.
echo '[[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,2048]]' >"$TMP/bad_code.json"
expect_error decode_code_out_of_range "outside [0, 2048)" \
  $EMBER decode-codes -m $MODEL --codes "$TMP/bad_code.json" -o "$TMP/never.wav"
[ ! -e "$TMP/never.wav" ] && pass decode_error_leaves_no_file || fail decode_error_leaves_no_file
echo '[[0,1,2]]' >"$TMP/short.json"
expect_error decode_short_frame "must be a list of 16 codes" \
  $EMBER decode-codes -m $MODEL --codes "$TMP/short.json"
expect_error decode_no_decoder "config.json" $EMBER decode-codes -m "$TMP" --codes $CODES
expect_error decode_quantized_refused "must be f32 or bf16" \
  $EMBER decode-codes -m $MODEL --codes $CODES --dtype q8_0
exit $e2e_failed
