#!/usr/bin/env bash
# A Qwen3-TTS checkpoint written as one GGUF (`ember quantize TTS_DIR
# out.gguf`) against the directory it came from, loaded at the same formats:
# the same greedy frames (tts-codes) and the same audio (within 1e-4 of the
# peak) at q8_0 and q4_0, the embedded tokenizer giving the directory's ids,
# and, where torch can make a Base checkpoint, a cloned voice (speaker and
# speech encoders read from the file). Then the refusals: a truncated file,
# a GGUF of another architecture, a mix type, a block type for the decoder.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
TMP=$(mktemp -d)
SPID=""
trap '[ -n "$SPID" ] && kill -9 $SPID 2>/dev/null; rm -rf "$TMP"' EXIT
DIR=models/tts-tiny
TEXT="Hello from the tiny talker."
COMMON=(--greedy --max-frames 12 --threads 2)

# same_audio NAME A.wav B.wav: equal sample counts, max |a - b| <= 1e-4 * peak
same_audio() {
  local out
  if out=$($PY - "$2" "$3" 2>&1 <<'EOF'
import array, sys, wave
def pcm(path):
    with wave.open(path) as w:
        a = array.array("h", w.readframes(w.getnframes()))
    return a
a, b = pcm(sys.argv[1]), pcm(sys.argv[2])
peak = max(1, max(abs(x) for x in a))
diff = max((abs(x - y) for x, y in zip(a, b)), default=0)
print("samples %d / %d, max diff %d of peak %d" % (len(a), len(b), diff, peak))
sys.exit(0 if len(a) == len(b) and len(a) > 0 and diff <= 1e-4 * peak else 1)
EOF
  ); then pass "$1"; echo "     $out"; else fail "$1" "$out"; fi
}

for t in q8_0 q4_0; do
  G=$TMP/tiny-$t.gguf
  expect_ok "quantize_$t" $EMBER quantize $DIR "$G" --type $t
  a=$($EMBER tts-codes -m $DIR --text "$TEXT" --dtype $t "${COMMON[@]}" --json 2>&1)
  b=$($EMBER tts-codes -m "$G" --text "$TEXT" "${COMMON[@]}" --json 2>&1)
  fa=$(grep -o '"frames": \[\[[^"]*\]\]' <<<"$a")
  fb=$(grep -o '"frames": \[\[[^"]*\]\]' <<<"$b")
  if [ -n "$fa" ] && [ "$fa" = "$fb" ]; then pass "frames_$t"; else fail "frames_$t" "dir: ${a:0:200}" "gguf: ${b:0:200}"; fi
  $EMBER tts -m $DIR --text "$TEXT" --dtype $t "${COMMON[@]}" --no-calibration --profile off \
    -o "$TMP/dir-$t.wav" 2>/dev/null
  $EMBER tts -m "$G" --text "$TEXT" "${COMMON[@]}" --no-calibration --profile off \
    -o "$TMP/gguf-$t.wav" 2>/dev/null
  same_audio "audio_$t" "$TMP/dir-$t.wav" "$TMP/gguf-$t.wav"
done

# `ember serve --tts FILE.gguf`: the same audio as `ember tts` on the file
if start_server "$TMP/server.log" -m models/tiny --tts "$TMP/tiny-q8_0.gguf" --threads 2 --profile off; then
  body=$(printf '{"model":"tts","input":"%s","voice":"ryan","seed":7,"max_frames":12}' "$TEXT")
  code=$(curl -s -o "$TMP/served.wav" -w '%{http_code}' -H 'Content-Type: application/json' \
    --data-binary "$body" "$BASE/v1/audio/speech")
  stop_server
  $EMBER tts -m "$TMP/tiny-q8_0.gguf" --text "$TEXT" --speaker ryan --seed 7 --max-frames 12 --threads 2 \
    --no-calibration --profile off -o "$TMP/cli.wav" 2>/dev/null
  if [ "$code" = 200 ]; then same_audio serve_gguf "$TMP/served.wav" "$TMP/cli.wav"
  else fail serve_gguf "status $code" "$(tail -3 "$TMP/server.log")"; fi
else
  fail serve_gguf_start "$(tail -3 "$TMP/server.log")"
fi

# the tokenizer in the file tokenizes as vocab.json + merges.txt do
printf 'Hello there, how are you? \xe4\xbd\xa0\xe5\xa5\xbd <|im_start|>assistant\n 12345 don'"'"'t\t\xf0\x9f\x8e\x89\n' >"$TMP/text"
if [ "$($EMBER tokenize -m $DIR <"$TMP/text" 2>&1)" = "$($EMBER tokenize -m "$TMP/tiny-q8_0.gguf" <"$TMP/text" 2>&1)" ]
then pass tokenizer_ids; else fail tokenizer_ids; fi

# the decoder as f16: its weights stay f16 (fp32 arithmetic, half the
# memory), so the audio is the one of the same f16 values widened to fp32 at
# load (--decoder-dtype f32); against the fp32 file only f16's rounding of the
# weights parts them (SNR printed, held to 30 dB)
expect_ok quantize_speech_f16 $EMBER quantize $DIR "$TMP/f16.gguf" --type q8_0 --speech-type f16
F16=(--text "$TEXT" "${COMMON[@]}" --no-calibration --profile off --json)
if $EMBER tts -m "$TMP/f16.gguf" "${F16[@]}" -o "$TMP/f16.wav" 2>"$TMP/f16.json" &&
   $EMBER tts -m "$TMP/f16.gguf" "${F16[@]}" --decoder-dtype f32 -o "$TMP/f16-widened.wav" 2>/dev/null &&
   $EMBER tts -m "$TMP/tiny-q8_0.gguf" "${F16[@]}" -o "$TMP/f32.wav" 2>/dev/null; then
  if grep -q '"decoder_weights": "f16"' "$TMP/f16.json"; then pass speech_f16_kept
  else fail speech_f16_kept "$(cat "$TMP/f16.json")"; fi
  same_audio speech_f16_is_fp32_arithmetic "$TMP/f16.wav" "$TMP/f16-widened.wav"
  if out=$($PY - "$TMP/f32.wav" "$TMP/f16.wav" 2>&1 <<'EOF'
import array, math, sys, wave
def pcm(path):
    with wave.open(path) as w:
        return array.array("h", w.readframes(w.getnframes()))
a, b = pcm(sys.argv[1]), pcm(sys.argv[2])
sig = sum(x * x for x in a); err = sum((x - y) ** 2 for x, y in zip(a, b))
snr = 10 * math.log10(sig / err) if err else 999.0
print("f16 decoder weights against fp32: %.1f dB over %d samples" % (snr, len(a)))
sys.exit(0 if len(a) == len(b) and sig > 0 and snr >= 30 else 1)
EOF
  ); then pass speech_f16_snr; echo "     $out"; else fail speech_f16_snr "$out"; fi
else
  fail speak_speech_f16 "$(tail -2 "$TMP/f16.json")"
fi

if have_torch; then
  $PY reference/make_tts_checkpoint.py --preset tiny --variant 0.6b-base --seed 6 --out "$TMP/base" >/dev/null ||
    fail make_base
  expect_ok quantize_base $EMBER quantize "$TMP/base" "$TMP/base.gguf" --type q8_0
  CLONE=(--ref-audio tests/data/voice-ref-24k.wav --ref-text "A short reference." "${COMMON[@]}"
         --no-calibration --profile off)
  $EMBER tts -m "$TMP/base" --text "$TEXT" --dtype q8_0 "${CLONE[@]}" -o "$TMP/base-dir.wav" 2>"$TMP/err" ||
    fail clone_dir "$(tail -2 "$TMP/err")"
  $EMBER tts -m "$TMP/base.gguf" --text "$TEXT" "${CLONE[@]}" -o "$TMP/base-gguf.wav" 2>"$TMP/err" ||
    fail clone_gguf "$(tail -2 "$TMP/err")"
  same_audio clone_audio "$TMP/base-dir.wav" "$TMP/base-gguf.wav"
else
  echo "SKIP clone (no torch for the Base checkpoint generator)"
fi

# refusals
G=$TMP/tiny-q8_0.gguf
head -c $(($(stat -c %s "$G") / 2)) "$G" >"$TMP/half.gguf"
expect_error truncated "half.gguf" $EMBER tts -m "$TMP/half.gguf" --text "$TEXT" -o "$TMP/x.wav"
$EMBER quantize models/tiny "$TMP/spark.gguf" --type q8_0 2>/dev/null
expect_error other_arch "a speech model is a 'qwen3_tts' file" \
  $EMBER tts -m "$TMP/spark.gguf" --text "$TEXT" -o "$TMP/x.wav"
expect_error mix_type "not 'q4_k_m'" $EMBER quantize $DIR "$TMP/x.gguf" --type q4_k_m
expect_error speech_block_type "expected f32, f16 or bf16" \
  $EMBER quantize $DIR "$TMP/x.gguf" --speech-type q8_0
expect_error requantize "general.architecture is 'qwen3_tts'" $EMBER quantize "$G" "$TMP/x.gguf"
[ -e "$TMP/x.gguf" ] && fail no_partial_file "$TMP/x.gguf left behind"
exit $e2e_failed
