#!/usr/bin/env bash
# `ember serve --tts`: POST /v1/audio/speech on the tiny checkpoints over a
# real loopback socket. A WAV that sox reads and PCM of the same samples;
# the same audio as `ember tts` for the same text, voice and seed (the
# server's chunks decided by the adaptive controller of a calibration); a
# streamed response whose first bytes arrive before the last chunk is
# decoded, with the same bytes as the whole file; errors naming the field;
# several clients at once; the time-to-first-audio histogram in /metrics;
# and the official `openai` npm client (tests/js/serve_speech.mjs).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
tmp=$(mktemp -d)
SPID=""
cleanup() { [ -n "$SPID" ] && kill -9 $SPID 2>/dev/null; jobs -p | xargs -r kill -9 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
TTS=models/tts-tiny
if [ ! -f "$TTS/speech_tokenizer/model.safetensors" ]; then
  echo "SKIP serve_speech (no tiny speech tokenizer)"; exit 0
fi
TEXT="Hello from ember, over HTTP."
speech() { # speech EXTRA-FIELDS: a speech request body
  printf '{"model":"tts-tiny","input":"%s","voice":"ryan","seed":7,"max_frames":40%s}' "$TEXT" "$1"
}
# near A B [SKIP_A]: raw s16le samples of A (after SKIP_A header bytes) and B
# have the same length and differ by at most one step (how chunks fall
# decides which rows the Winograd convs compute, a ~1e-6 difference).
near() {
  $PY -c '
import sys
import numpy as np
a = np.frombuffer(open(sys.argv[1], "rb").read()[int(sys.argv[3]):], dtype="<i2").astype(int)
b = np.frombuffer(open(sys.argv[2], "rb").read(), dtype="<i2").astype(int)
sys.exit(0 if len(a) == len(b) and len(a) and np.abs(a - b).max() <= 1 else 1)' "$1" "$2" "${3:-0}"
}
post() { # post BODY OUT [CURL ARGS...]: the status
  local body=$1 out=$2; shift 2
  curl -s -o "$out" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary "$body" \
    "$@" "$BASE/v1/audio/speech"
}

# This machine's calibration, made adaptive: the speech engine runs every
# request on the chunk controller (it says so at start), and the audio below
# is still `ember tts`'s.
export XDG_CACHE_HOME="$tmp/cache"
$EMBER tts -m $TTS --text "$TEXT" --speaker ryan --seed 7 --max-frames 40 -o "$tmp/cal.wav" >/dev/null 2>&1
cache=$(find "$XDG_CACHE_HOME/ember" -name '*.json' 2>/dev/null | head -1)
[ -n "$cache" ] && $PY -c '
import json, sys
c = json.load(open(sys.argv[1]))
c.update(adaptive=True, ramp=[2], min_frames=2, margin_ms=50, slope_ms_per_frame=10)
json.dump(c, open(sys.argv[1], "w"))' "$cache"

if ! start_server "$tmp/server.log" -m models/tiny --tts $TTS --threads 2 --profile explain; then
  fail serve_speech_starts "$(cat "$tmp/server.log")"; exit 1
fi
if grep -q "ember serve: chunks 2, adaptive from 2 frames" "$tmp/server.log"; then
  pass speech_server_uses_adaptive_calibration
else fail speech_server_uses_adaptive_calibration "$(cat "$tmp/server.log")"; fi
# the speech model's own derived format (the tiny one stays as stored here)
if grep -q "ember serve --tts: profile: weights bf16 (as stored)" "$tmp/server.log"; then
  pass speech_server_explains_its_format
else fail speech_server_explains_its_format "$(cat "$tmp/server.log")"; fi

code=$(post "$(speech ',"response_format":"wav"')" "$tmp/a.wav")
info=$(soxi "$tmp/a.wav" 2>&1)
if [ "$code" = 200 ] && grep -q "Sample Rate *: 24000" <<<"$info" &&
   grep -q "Precision *: 16-bit" <<<"$info"; then pass speech_wav_valid
else fail speech_wav_valid "status $code" "$info"; fi

code=$(post "$(speech ',"response_format":"pcm"')" "$tmp/a.pcm")
if [ "$code" = 200 ] && near "$tmp/a.wav" "$tmp/a.pcm" 44 &&
   [ $(( $(wc -c <"$tmp/a.pcm") % 3840 )) -eq 0 ]; then pass speech_pcm_equals_wav_samples
else fail speech_pcm_equals_wav_samples "status $code, $(wc -c <"$tmp/a.pcm") bytes"; fi

# The CLI with the same request (the server's decoder is direct f32, so compare
# within one s16 step like the tts script does).
$EMBER tts -m $TTS --text "$TEXT" --speaker ryan --seed 7 --max-frames 40 --no-calibration -o "$tmp/cli.wav" \
  >/dev/null 2>&1
if $PY -c '
import sys
import numpy as np
a, b = (np.frombuffer(open(p, "rb").read()[44:], dtype="<i2").astype(int) for p in sys.argv[1:])
sys.exit(0 if len(a) == len(b) and len(a) and np.abs(a - b).max() <= 1 else 1)' \
    "$tmp/a.wav" "$tmp/cli.wav"; then pass speech_equals_cli
else fail speech_equals_cli "$(wc -c <"$tmp/a.wav") vs $(wc -c <"$tmp/cli.wav") bytes"; fi

# Streamed: the first bytes come before the whole answer, and they are the
# same samples (the header's sizes are left open while streaming).
times=$(curl -s -N -o "$tmp/s.wav" -w '%{time_starttransfer} %{time_total}' \
  -H 'Content-Type: application/json' --data-binary "$(speech ',"stream":true')" \
  "$BASE/v1/audio/speech")
if [ "$(head -c 4 "$tmp/s.wav")" = RIFF ] && near "$tmp/s.wav" "$tmp/a.pcm" 44 &&
   $PY -c 'import sys; f, t = map(float, sys.argv[1:]); sys.exit(0 if f < t else 1)' $times; then
  pass "speech_streams_first_bytes_early (first byte / total s: $times)"
else fail speech_streams_first_bytes_early "times $times, $(wc -c <"$tmp/s.wav") bytes"; fi

# Four clients at once: all answered, all equal to the single one.
pids=()
for i in 1 2 3 4; do
  post "$(speech ',"response_format":"pcm"')" "$tmp/c$i.pcm" >"$tmp/c$i.code" &
  pids+=($!)
done
wait "${pids[@]}"
ok=1
for i in 1 2 3 4; do
  [ "$(cat "$tmp/c$i.code")" = 200 ] && near "$tmp/c$i.pcm" "$tmp/a.pcm" || ok=0
done
[ $ok = 1 ] && pass speech_concurrent_clients || fail speech_concurrent_clients

# Errors name the field.
err_param() { # err_param BODY: "STATUS PARAM"
  local code; code=$(post "$1" "$tmp/err.json")
  echo "$code $($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["error"]["param"])' "$tmp/err.json" 2>/dev/null)"
}
r1=$(err_param '{"input":"hi","voice":"nobody"}')
r2=$(err_param '{"input":"hi","response_format":"mp3"}')
r3=$(err_param '{"voice":"ryan"}')
r4=$(err_param '{"input":"hi","max_frames":0}')
r5=$(err_param '{"input":"hi","language":"klingon"}')
if [ "$r1|$r2|$r3|$r4|$r5" = "400 voice|400 response_format|400 input|400 max_frames|400 language" ]; then
  pass speech_errors_name_the_field
else fail speech_errors_name_the_field "$r1|$r2|$r3|$r4|$r5"; fi
code=$(post 'not json' "$tmp/err.json")
[ "$code" = 400 ] && pass speech_bad_json || fail speech_bad_json "$code"

# what the browser UI offers: the speech model's voices and languages
caps=$(curl -s "$BASE/capabilities")
if $PY -c '
import json, sys
s = json.loads(sys.argv[1])["speech"]
assert s["model"] == "tts-tiny" and "ryan" in s["voices"] and "english" in s["languages"]
assert s["sample_rate"] == 24000 and s["frame_ms"] == 80 and s["max_frames"] > 0 and "pcm" in s["formats"]' "$caps"
then pass speech_capabilities; else fail speech_capabilities "$caps"; fi
metrics=$(curl -s "$BASE/metrics")
if grep -qE '^ember_time_to_first_audio_seconds_count [1-9]' <<<"$metrics"; then
  pass speech_ttfa_in_metrics
else fail speech_ttfa_in_metrics "$(grep -i audio <<<"$metrics" | head -5)"; fi

if ! command -v node >/dev/null 2>&1; then
  echo "SKIP serve_speech_openai_client (node is not installed)"
elif ! nm=$(tests/js/serve_install.sh); then
  echo "SKIP serve_speech_openai_client (npm registry unreachable: openai not installed)"
else
  out=$(node tests/js/serve_speech.mjs "$nm" "$BASE/v1" tts-tiny ryan 2>&1)
  echo "$out" | grep -E '^(PASS|FAIL) '
  grep -q '^FAIL ' <<<"$out" && e2e_failed=1
  grep -qE '^(PASS|FAIL) ' <<<"$out" || fail serve_speech_openai_client "$out"
fi
stop_server; SPID=""
[ "$SRC" = 0 ] && pass speech_server_clean_exit || fail speech_server_clean_exit "exit $SRC"
exit $e2e_failed
