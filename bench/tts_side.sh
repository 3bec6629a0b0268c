#!/usr/bin/env bash
# ember and the pure-C port of Qwen3-TTS (github.com/gabriele-mastrapasqua/
# qwen3-tts, built once outside the repository by scripts/qwen3_tts_c.sh)
# side by side on the same random-weight full-size checkpoints
# (reference/make_tts_checkpoint.py, bf16 as the real ones ship): the two
# programs alternate run by run, THREADS threads each, medians of REPS runs,
# one JSON line per case with both programs and the ratio ember / port
# (below 1: ember takes less time). Cases (MODES):
#   voice_xvector   making a voice from a 10 s clip, x-vector only: `ember voice
#                   create` against the port's --ref-audio --xvector-only
#                   --save-voice V.bin: whole processes (wall_s), and
#                   in_process_s: ember's own time (reading the clip, loading
#                   and running the encoders), the port's wall time less the
#                   model load it reports (it loads the whole model)
#   voice_icl       the same with the transcript (the reference codes too):
#                   the port's --ref-text --save-voice V.qvoice
#   clone_xvector   0.6B-Base clone synthesis at q8_0 (the port's --int8):
#   clone_icl       real-time factor and first audio, x-vector / in context
#                   (the port encodes the clip's codes inside its timed run)
#   instruct_1.7b   1.7B-CustomVoice with --instruct at q8_0
# Random weights stop anywhere: ember makes exactly FRAMES frames (bench tts
# --frames); the port is capped at FRAMES (--max-tokens; it holds EOS off for
# two frames only) and the frames it made are reported, with per-frame times
# when the counts differ. The machine's load (uptime) is printed before and
# after: the host is shared, so only the alternating runs' ratio is fair.
#   bench/tts_side.sh [OUT_DIR]
#   env: THREADS (2), REPS (3), FRAMES (25), MODES (all five), QWEN3_TTS_C_SRC
#        (the port's source, for its first build)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/out}
threads=${THREADS:-2}
reps=${REPS:-3}
frames=${FRAMES:-25}
modes=${MODES:-voice_xvector voice_icl clone_xvector clone_icl instruct_1.7b}
mkdir -p "$out"
make -s -j2 build/ember
port=$(scripts/qwen3_tts_c.sh)
base="$out/tts-0.6b-base"
cv="$out/tts-1.7b-customvoice"
for m in "0.6b-base $base" "1.7b-customvoice $cv"; do
  set -- $m
  [ -f "$2/speech_tokenizer/model.safetensors" ] ||
    /usr/bin/python3 reference/make_tts_checkpoint.py --preset full --variant "$1" --out "$2" --seed 0 >&2
done
clip="$out/ref-10s.wav"
# a voiced 10 s clip (a gliding pulse train with harmonics under a syllable
# envelope): the encoders' cost depends on its length, not its content
[ -f "$clip" ] || /usr/bin/python3 - "$clip" <<'PY'
import sys, wave
import numpy as np
sr = 24000
t = np.arange(10 * sr) / sr
phase = 2 * np.pi * np.cumsum(160 + 50 * np.sin(2 * np.pi * 0.7 * t)) / sr
x = sum(np.sin(k * phase) / k for k in range(1, 12)) * 0.25 * (1 + np.sin(2 * np.pi * 3.1 * t)) ** 2 / 4
x = np.clip(x + 0.01 * np.random.default_rng(1).standard_normal(len(t)), -0.99, 0.99)
w = wave.open(sys.argv[1], "wb")
w.setnchannels(1); w.setsampwidth(2); w.setframerate(sr)
w.writeframes((x * 32767).astype("<i2").tobytes()); w.close()
PY
# long enough that the port's EOS boost (after twice ~3 frames a token) stays away
text="The quick brown fox jumps over the lazy dog, then naps in the warm sun until the evening comes."
ref_text="She sells sea shells by the sea shore, and the shells she sells are surely sea shells."
instruct="Speak slowly and warmly, like a storyteller."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
load() { cut -d, -f3- < <(uptime) | sed 's/.*load average: //'; }
now() { date +%s.%N; }

# Each run prints one line of numbers: ember's from its JSON, the port's
# from its summary on stderr.
ember_voice() { # ember_voice [--ref-text T]: wall_s in_process_s
  local t0 t1 err
  t0=$(now)
  err=$(build/ember voice create -m "$base" --ref-audio "$clip" --threads "$threads" "$@" -o "$tmp/v.voice" 2>&1 >/dev/null)
  t1=$(now)
  echo "$t0 $t1 $(grep -o '} in [0-9.]*' <<<"$err" | grep -o '[0-9.]*$')" | awk '{print $2 - $1, $3}'
}
port_voice() { # port_voice OUT [--ref-text T]: wall_s, and without the model's load it reports
  local t0 t1 o=$1; shift
  t0=$(now)
  "$port" -d "$base" --ref-audio "$clip" -j "$threads" "$@" --save-voice "$tmp/$o" >"$tmp/port.log" 2>&1 ||
    { echo "port: $(tail -3 "$tmp/port.log")" >&2; echo "nan nan"; return; }
  t1=$(now)
  # it loads the whole model (talker included) to make a voice
  echo "$t0 $t1 $(grep -o 'Model loaded in [0-9.]* ms' "$tmp/port.log" | grep -o '[0-9.]*' || echo nan)" |
    awk '{print $2 - $1, $2 - $1 - $3 / 1000}'
}
ember_speak() { # ember_speak MODEL ARGS...: rtf ttfa_ms frames ms_per_frame load_s
  local model=$1; shift
  build/ember bench tts -m "$model" --text "$text" --language english --dtype q8_0 --threads "$threads" \
    --frames "$frames" --reps 1 --json "$@" 2>/dev/null | /usr/bin/python3 -c '
import json, sys
d = json.loads(sys.stdin.read().strip().splitlines()[-1])
per = d["rtf"] * 80.0  # ms of wall time per 80 ms frame
print(d["rtf"], d["ttfa_ms"], d["frames"], per, d["load_s"])'
}
port_speak() { # port_speak MODEL ARGS...: rtf ttfa_ms frames ms_per_frame load_s
  local model=$1; shift
  "$port" -d "$model" --text "$text" -l English --int8 -j "$threads" --max-tokens "$frames" --seed 1 \
    --stream -o "$tmp/port.wav" "$@" >"$tmp/port.log" 2>&1 || { echo "port: $(tail -3 "$tmp/port.log")" >&2; echo nan nan 0 nan nan; return; }
  /usr/bin/python3 - "$tmp/port.log" <<'PY'
import re, sys
log = open(sys.argv[1], errors="replace").read()
def num(pat):
    m = re.search(pat, log)
    return float(m.group(1)) if m else float("nan")
frames = num(r"Generated (\d+) frames")
audio, wall, rtf = (float(g) for g in re.search(r"Audio: ([0-9.]+)s generated in ([0-9.]+)s \(RTF ([0-9.]+)\)", log).groups())
print(wall / (frames * 0.08), num(r"TTFA: ([0-9.]+) ms"), int(frames), 1e3 * wall / frames, num(r"Model loaded in ([0-9.]+) ms") / 1e3)
PY
}

# summarize CASE FIELDS "E runs" "P runs": the medians, the ratios
summarize() {
  /usr/bin/python3 - "$@" <<'PY'
import json, math, statistics, sys
case, fields, load0, load1 = sys.argv[1], sys.argv[2].split(), sys.argv[5], sys.argv[6]
def med(runs):
    rows = [[float(v) for v in r.split()] for r in runs.split(";") if r.strip()]
    # frames: the fewest any run made (the port may stop early at its EOS)
    return {f: (min if f == "frames" else statistics.median)(r[i] for r in rows) for i, f in enumerate(fields)}
e, p = med(sys.argv[3]), med(sys.argv[4])
rnd = lambda d: {k: (round(v, 4) if math.isfinite(v) else None) for k, v in d.items()}
ratio = {f: round(e[f] / p[f], 3) for f in fields if f not in ("frames", "load_s") and p[f] and math.isfinite(p[f])}
print(json.dumps({"case": case, "threads": int(sys.argv[7]), "reps": int(sys.argv[8]), "ember": rnd(e),
                  "port": rnd(p), "ratio_ember_over_port": ratio, "load_before": load0, "load_after": load1}))
PY
}

echo "{\"port_commit\": \"$(cat "$(dirname "$(dirname "$port")")/commit" 2>/dev/null || echo unknown)\", \"frames\": $frames, \"threads\": $threads, \"reps\": $reps, \"cpus\": $(nproc)}"
for mode in $modes; do
  e=""; p=""; l0=$(load)
  for ((r = 0; r < reps; r++)); do
    case $mode in
    voice_xvector) e+="$(ember_voice);"; p+="$(port_voice v.bin --xvector-only);" ;;
    voice_icl) e+="$(ember_voice --ref-text "$ref_text");"; p+="$(port_voice v.qvoice --ref-text "$ref_text");" ;;
    clone_xvector)
      e+="$(ember_speak "$base" --ref-audio "$clip");"
      p+="$(port_speak "$base" --ref-audio "$clip" --xvector-only);" ;;
    clone_icl)
      e+="$(ember_speak "$base" --ref-audio "$clip" --ref-text "$ref_text");"
      p+="$(port_speak "$base" --ref-audio "$clip" --ref-text "$ref_text");" ;;
    instruct_1.7b)
      e+="$(ember_speak "$cv" --speaker ryan --instruct "$instruct");"
      p+="$(port_speak "$cv" -s ryan --instruct "$instruct");" ;;
    *) echo "unknown mode $mode" >&2; exit 2 ;;
    esac
  done
  case $mode in
  voice_*) fields="wall_s in_process_s" ;;
  *) fields="rtf first_audio_ms frames ms_per_frame load_s" ;;
  esac
  summarize "$mode" "$fields" "$e" "$p" "$l0" "$(load)" "$threads" "$reps"
done
