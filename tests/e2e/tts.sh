#!/usr/bin/env bash
# `ember tts`, text to speech while it is generated, on the tiny checkpoint:
#   - a valid WAV (read back by sox) with 1920 samples per frame;
#   - the audio equals decoding, in one shot, the frames `ember tts-codes`
#     makes for the same request and seed, whatever the chunk schedule: the
#     pipeline changes when samples arrive, not what they are (same length,
#     samples within one s16 step: how chunks fall decides which rows the
#     Winograd convs or the direct ones compute, a ~1e-6 difference);
#   - --stream writes the same samples as raw s16le on stdout;
#   - a cached calibration that says adaptive runs the chunk controller,
#     whose sizes the run follows, with the same audio; --chunks turns it off;
#   - a reader that goes away cancels the request cleanly; bad options fail
#     with a message and leave no file.
source "$(dirname "$0")/lib.sh"

MODEL=models/tts-tiny
if [ ! -f "$MODEL/speech_tokenizer/model.safetensors" ]; then
  echo "SKIP tts (no tiny speech tokenizer)"
  exit 0
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
TEXT="Hello from ember, streaming speech on two cores."
export XDG_CACHE_HOME="$TMP/cache"   # the calibration cache of this test only

# same_audio A.wav B.wav [raw]: equal headers and lengths, samples within one
# step; with "raw", B is headerless s16le PCM.
same_audio() {
  $PY -c '
import sys
import numpy as np
a, b = (open(p, "rb").read() for p in sys.argv[1:3])
raw = len(sys.argv) > 3
x = np.frombuffer(a[44:], dtype="<i2").astype(np.int32)
y = np.frombuffer(b if raw else b[44:], dtype="<i2").astype(np.int32)
ok = (raw or a[:44] == b[:44]) and len(x) == len(y) and np.abs(x - y).max(initial=0) <= 1
sys.exit(0 if ok else 1)
' "$@"
}
REQ=(-m $MODEL --text "$TEXT" --speaker ryan --language english --seed 9 --max-frames 37)

if out=$($EMBER tts "${REQ[@]}" -o "$TMP/a.wav" 2>&1) && info=$(soxi "$TMP/a.wav" 2>&1) &&
   grep -q "Sample Rate *: 24000" <<<"$info" && grep -q "Channels *: 1" <<<"$info" &&
   grep -q "Precision *: 16-bit" <<<"$info"; then
  samples=$(sed -n 's/.*= \([0-9]*\) samples.*/\1/p' <<<"$info")
  if [ $((samples % 1920)) -eq 0 ] && [ "$samples" -gt 0 ]; then
    pass "tts_wav_valid ($samples samples, $((samples / 1920)) frames)"
  else fail tts_wav_valid "samples $samples not a multiple of 1920"; fi
else fail tts_wav_valid "$out" "$info"; fi

# The same request's frames, decoded in one shot.
if $EMBER tts-codes "${REQ[@]}" --json >"$TMP/codes.json" 2>"$TMP/err" &&
   $EMBER decode-codes -m $MODEL --codes "$TMP/codes.json" -o "$TMP/b.wav" >/dev/null 2>&1 &&
   same_audio "$TMP/a.wav" "$TMP/b.wav"; then pass tts_equals_codes_then_decode
else fail tts_equals_codes_then_decode "$(cat "$TMP/err")"; fi

for chunks in 1 3,1,2 25; do
  if $EMBER tts "${REQ[@]}" --chunks $chunks -o "$TMP/c.wav" >/dev/null 2>&1 &&
     same_audio "$TMP/a.wav" "$TMP/c.wav"; then pass "tts_schedule_${chunks//,/_}_same_audio"
  else fail "tts_schedule_${chunks//,/_}_same_audio"; fi
done

# Raw PCM on stdout: the WAV's samples (after its 44-byte header).
if $EMBER tts "${REQ[@]}" --stream >"$TMP/raw.pcm" 2>/dev/null &&
   same_audio "$TMP/a.wav" "$TMP/raw.pcm" raw; then pass tts_stream_equals_wav
else fail tts_stream_equals_wav "$(wc -c <"$TMP/raw.pcm") bytes"; fi

# Sampling flags: --temp 0 is greedy; a different temperature changes the audio.
if $EMBER tts "${REQ[@]}" --temp 0 -o "$TMP/t0.wav" >/dev/null 2>&1 &&
   $EMBER tts "${REQ[@]}" --greedy -o "$TMP/g.wav" >/dev/null 2>&1 &&
   same_audio "$TMP/t0.wav" "$TMP/g.wav" &&
   $EMBER tts "${REQ[@]}" --temp 1.5 --top-k 100 --top-p 0.95 -o "$TMP/t15.wav" >/dev/null 2>&1 &&
   ! cmp -s "$TMP/t15.wav" "$TMP/a.wav"; then pass tts_sampling_flags
else fail tts_sampling_flags; fi
expect_error tts_bad_temp "bad number" $EMBER tts -m $MODEL --text "$TEXT" --temp x -o "$TMP/z.wav"

# Step statistics: every speech phase recorded, the attribution printed.
if err=$($EMBER tts "${REQ[@]}" --stats "$TMP/stats.json" -o "$TMP/s.wav" 2>&1) &&
   $PY -c '
import json, sys
c = json.load(open(sys.argv[1]))["counters"]
need = {"talker": 37, "predictor": 37}
ok = all(c.get(k, {}).get("count") == v for k, v in need.items())
ok = ok and c["codec_decode"]["count"] >= 1 and c["handoff"]["count"] == c["codec_decode"]["count"]
sys.exit(0 if ok else 1)' "$TMP/stats.json" && grep -q "share of 80 ms" <<<"$err"; then
  pass tts_stats_phases
else fail tts_stats_phases "$err"; fi

# Calibration: a run stores this machine's measured schedule; the next run
# without --chunks uses it and says so; --no-calibration ignores it.
rm -rf "$XDG_CACHE_HOME"
$EMBER tts "${REQ[@]}" -o "$TMP/k1.wav" >/dev/null 2>&1
cache=$(find "$XDG_CACHE_HOME/ember" -name '*.json' 2>/dev/null | head -1)
err=$($EMBER tts "${REQ[@]}" -o "$TMP/k2.wav" 2>&1)
err_off=$($EMBER tts "${REQ[@]}" -o "$TMP/k3.wav" --no-calibration 2>&1)
if [ -n "$cache" ] && grep -q "calibrated on this machine" <<<"$err" &&
   ! grep -q "calibrated" <<<"$err_off" && same_audio "$TMP/k2.wav" "$TMP/k3.wav"; then
  pass tts_calibration_cached_and_used
else fail tts_calibration_cached_and_used "cache: $cache" "$err"; fi

# The adaptive controller: a cached calibration that says adaptive (written
# here: first chunk 2, margin 50 ms, 10 ms per frame to start) runs each
# chunk on it. Its decision after the first chunk is the calibration's
# alone: the first arrival starts the clock with 160 ms of audio out, so
# (160 - 50) / 10 = 11 frames, where the static schedule would take 2 again.
# With every chunk decoded alone the generator stops at each chunk's end and
# the sizes are the controller's exactly; beside the generator (the default)
# they move with timing, the audio never does. --chunks turns it off.
adaptive_calibration() { # writes the adaptive calibration over the cached one
  $PY -c '
import json, sys
c = json.load(open(sys.argv[1]))
c.update(adaptive=True, ramp=[2], min_frames=2, margin_ms=50, slope_ms_per_frame=10, ms_per_frame=10)
json.dump(c, open(sys.argv[1], "w"))' "$1"
}
# chunking JSON-LINE WANT PREFIX...: the summary says WANT, its chunk sizes
# start with PREFIX and add up to the request's 37 frames
chunking() {
  $PY -c '
import json, sys
r = json.loads(sys.argv[1]); want = sys.argv[2]; prefix = [int(x) for x in sys.argv[3:]]
f = r["chunk_frames"]
sys.exit(0 if r["chunking"] == want and f[:len(prefix)] == prefix and sum(f) == 37 else 1)' "$@"
}
cache=$(find "$XDG_CACHE_HOME/ember" -name '*.json' 2>/dev/null | head -1)
if [ -n "$cache" ] && adaptive_calibration "$cache" &&
   err=$($EMBER tts "${REQ[@]}" --alone-chunks -1 --json -o "$TMP/ad1.wav" 2>&1) &&
   grep -q "adaptive from 2 frames" <<<"$err" && chunking "$(tail -1 <<<"$err")" adaptive 2 11 &&
   same_audio "$TMP/a.wav" "$TMP/ad1.wav"; then pass tts_adaptive_controller_decides_chunks
else fail tts_adaptive_controller_decides_chunks "$err"; fi
if [ -n "$cache" ] && adaptive_calibration "$cache" &&
   err=$($EMBER tts "${REQ[@]}" --json -o "$TMP/ad2.wav" 2>&1) && chunking "$(tail -1 <<<"$err")" adaptive 2 &&
   same_audio "$TMP/a.wav" "$TMP/ad2.wav"; then pass tts_adaptive_controller_same_audio
else fail tts_adaptive_controller_same_audio "$err"; fi
if [ -n "$cache" ] && adaptive_calibration "$cache" &&
   err=$($EMBER tts "${REQ[@]}" --alone-chunks -1 --chunks 3 --json -o "$TMP/ad3.wav" 2>&1) &&
   chunking "$(tail -1 <<<"$err")" schedule 3 3 3 && adaptive_calibration "$cache" &&
   bench=$($EMBER bench tts -m $MODEL --frames 10 --reps 1 --json 2>/dev/null) &&
   grep -q '"chunking": "adaptive"' <<<"$bench"; then pass tts_chunks_turn_the_controller_off
else fail tts_chunks_turn_the_controller_off "$err" "$bench"; fi

# The latency report: metrics JSON and an SVG picture that parses as XML.
if $EMBER bench tts -m $MODEL --frames 30 --reps 1 --report "$TMP/report" >/dev/null 2>&1 &&
   $PY -c '
import json, sys, xml.etree.ElementTree as ET
m = json.load(open(sys.argv[1] + "/latency.json"))
root = ET.parse(sys.argv[1] + "/latency.svg").getroot()
sys.exit(0 if root.tag.endswith("svg") and m["ttfa_ms"] > 0 and m["audio_ms"] == 2400 else 1)
' "$TMP/report"; then pass bench_tts_latency_report
else fail bench_tts_latency_report; fi

# A reader that closes the pipe early: the command stops with a message, no crash.
$EMBER tts "${REQ[@]}" --max-frames 200 --chunks 2 --stream 2>"$TMP/pipe_err" | head -c 100 >/dev/null
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] && grep -q "stdout" "$TMP/pipe_err" &&
   ! grep -qE 'Sanitizer|runtime error' "$TMP/pipe_err"; then pass tts_closed_pipe_cancels
else fail tts_closed_pipe_cancels "exit $rc: $(cat "$TMP/pipe_err")"; fi

expect_error tts_needs_output "usage: ember tts" $EMBER tts -m $MODEL --text "$TEXT"
expect_error tts_bad_chunks "chunk schedule" $EMBER tts -m $MODEL --text "$TEXT" --chunks 2,0 -o "$TMP/x.wav"
expect_error tts_bad_speaker "nobody" $EMBER tts -m $MODEL --text "$TEXT" --speaker nobody -o "$TMP/y.wav"
[ ! -e "$TMP/x.wav" ] && [ ! -e "$TMP/y.wav" ] && pass tts_errors_leave_no_file ||
  fail tts_errors_leave_no_file
exit $e2e_failed
