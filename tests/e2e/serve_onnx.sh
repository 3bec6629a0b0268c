#!/usr/bin/env bash
# `ember serve --backend onnx:DIR` on the demo model's exported graphs: each
# sequence's session runs its steps through ONNX Runtime (per-slot ORT
# state, one step after the other: no batch). Its greedy replies, asked
# four at once of a two-slot server (so a finished slot's session is
# reset and reused), are the native server's, and a completion's text is
# what `ember generate --backend onnx:DIR` prints. The bucket caps the
# served context; speculation and a provider the library lacks are refused
# at start (and a request asking for speculation gets a 400); --threads sets ORT's intra-op threads.
# With --tts and --tts-backend onnx:DIR the speech endpoint's talker and
# predictor run on ORT too: the native server's WAV (within one s16 step).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
if [ ! -f models/demo/model.safetensors ]; then echo "SKIP serve_onnx (models/demo has no weights)"; exit 0; fi
tmp=$(mktemp -d)
SPID=""
cleanup() { [ -n "$SPID" ] && kill -9 $SPID 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
if ! lib=$(tests/onnx/install.sh 2>"$tmp/install.err"); then
  echo "SKIP serve_onnx ($(cat "$tmp/install.err"))"; exit 0
fi
# 8-token prefill chunks: the prompts below run as chunks and then steps
"$EMBER" export onnx -m models/demo -o "$tmp/g" --context 256 --prefill-chunk 8 >/dev/null ||
  { fail serve_onnx_export; exit 1; }
onnx=(--backend "onnx:$tmp/g" --onnx-runtime "$lib")
tts=(); tts_onnx=()
if [ -f models/tts-tiny/speech_tokenizer/model.safetensors ]; then
  "$EMBER" export onnx -m models/tts-tiny -o "$tmp/t" --context 128 --prefill-chunk 8 >/dev/null ||
    fail serve_onnx_export_tts
  tts=(--tts models/tts-tiny); tts_onnx=(--tts-backend "onnx:$tmp/t")
fi

# ask TAG: the requests, sent together; each reply's text in $tmp/TAG.N
ask() {
  local i=0 body pids=()
  for body in \
    '{"model":"demo","messages":[{"role":"user","content":"What is the weather in Paris?"}],"max_tokens":40,"temperature":0}' \
    '{"model":"demo","messages":[{"role":"user","content":"Hello there"}],"max_tokens":40,"temperature":0,"stream":true}' \
    '{"model":"demo","prompt":"The weather in Paris","max_tokens":24,"temperature":0}' \
    '{"model":"demo","messages":[{"role":"user","content":"Tell me about chess openings."}],"max_tokens":48,"temperature":0}'; do
    local path=/v1/chat/completions; grep -q '"prompt"' <<<"$body" && path=/v1/completions
    curl -s -H 'Content-Type: application/json' --data-binary "$body" "$BASE$path" >"$tmp/$1.raw.$i" &
    pids+=($!); i=$((i + 1))
  done
  wait "${pids[@]}"
  for i in 0 1 2 3; do
    $PY - "$tmp/$1.raw.$i" >"$tmp/$1.$i" <<'PY'
import json, sys
raw = open(sys.argv[1]).read()
if raw.startswith("data: "):  # a stream: the deltas joined
    parts = [json.loads(e[6:]) for e in raw.strip().split("\n\n") if e != "data: [DONE]"]
    print("".join(c["delta"].get("content") or "" for p in parts for c in p["choices"]))
else:
    c = json.loads(raw)["choices"][0]
    print(c["text"] if "text" in c else json.dumps(c["message"], sort_keys=True))
PY
  done
}

for run in native onnx; do
  args=("${tts[@]}"); [ $run = onnx ] && args+=("${onnx[@]}" "${tts_onnx[@]}")
  if ! start_server "$tmp/$run.log" -m models/demo --threads 1 --max-seqs 2 --profile off "${args[@]}"; then
    fail "serve_onnx_starts_$run" "$(cat "$tmp/$run.log")"; exit 1
  fi
  ask $run
  [ ${#tts[@]} -gt 0 ] && curl -s -o "$tmp/$run.wav" -H 'Content-Type: application/json' "$BASE/v1/audio/speech" \
    --data-binary '{"model":"tts-tiny","input":"Hello from ember, over HTTP.","voice":"ryan","seed":7,"max_frames":30}'
  [ $run = onnx ] && ctx=$(curl -s "$BASE/v1/models" | grep -o '"max_model_len": *[0-9]*' | grep -o '[0-9]*$')
  # a request asking for speculation (which a native server grants per
  # request) is a 400 here
  [ $run = onnx ] && spec_code=$(curl -s -o "$tmp/spec.json" -w '%{http_code}' -H 'Content-Type: application/json' \
    "$BASE/v1/chat/completions" --data-binary \
    '{"model":"demo","messages":[{"role":"user","content":"Hi"}],"max_tokens":4,"speculate":"ngram"}')
  stop_server
done
same=1
for i in 0 1 2 3; do
  if [ ! -s "$tmp/native.$i" ] || ! cmp -s "$tmp/native.$i" "$tmp/onnx.$i"; then
    same=0; fail "serve_onnx_reply_$i" "native: $(cat "$tmp/native.$i")" "onnx:   $(cat "$tmp/onnx.$i")"
  fi
done
[ $same = 1 ] && pass serve_onnx_replies_equal_native
gen=$("$EMBER" generate -m models/demo -p "The weather in Paris" -n 24 --greedy --threads 1 "${onnx[@]}" 2>/dev/null)
if [ -n "$gen" ] && [ "$gen" = "$(cat "$tmp/onnx.2")" ]; then pass serve_onnx_completion_equals_generate
else fail serve_onnx_completion_equals_generate "generate: $gen" "serve:    $(cat "$tmp/onnx.2")"; fi
if [ ${#tts[@]} -gt 0 ]; then
  if $PY -c '
import sys, numpy as np
a, b = (open(p, "rb").read() for p in sys.argv[1:3])
x, y = (np.frombuffer(v[44:], "<i2").astype(int) for v in (a, b))
sys.exit(0 if a[:4] == b"RIFF" and a[:44] == b[:44] and len(x) == len(y) > 0 and np.abs(x - y).max() <= 1 else 1)' \
    "$tmp/native.wav" "$tmp/onnx.wav"; then pass serve_onnx_speech_equals_native
  else fail serve_onnx_speech_equals_native "$(head -c 200 "$tmp/onnx.wav")"; fi
fi
if [ "$spec_code" = 400 ] && grep -q "not available with the onnx backend" "$tmp/spec.json"; then
  pass serve_onnx_request_speculation_is_400
else fail serve_onnx_request_speculation_is_400 "HTTP $spec_code: $(cat "$tmp/spec.json")"; fi
if [ "$ctx" = 256 ]; then pass serve_onnx_context_is_the_bucket; else fail serve_onnx_context_is_the_bucket "max_model_len $ctx"; fi

# --threads is ORT's intra-op threads: each graph session (decode and
# prefill, opened at start) adds threads-1 workers to the process
tasks() {
  start_server "$tmp/th$1.log" -m models/demo --profile off --max-seqs 1 --threads "$1" "${onnx[@]}" &&
    ls /proc/$SPID/task | wc -l
  stop_server
}
t1=$(tasks 1) t3=$(tasks 3)
if [ -n "$t1" ] && [ "$((t3 - t1))" = 4 ]; then pass serve_onnx_threads_are_ort_intra_op_threads
else fail serve_onnx_threads_are_ort_intra_op_threads "tasks with --threads 1: $t1, 3: $t3 (want 4 more)"; fi
expect_error serve_onnx_provider_missing_at_start "execution provider 'qnn' (QNN) cannot be added" \
  "$EMBER" serve -m models/demo --port 0 --profile off "${onnx[@]}" --onnx-provider qnn
expect_error serve_onnx_refuses_speculation "not available with the onnx backend" \
  "$EMBER" serve -m models/demo --port 0 --speculate ngram "${onnx[@]}"
[ ${#tts[@]} -gt 0 ] && expect_error serve_onnx_tts_backend_spark_folder "not a qwen3_tts export" \
  "$EMBER" serve -m models/tiny --port 0 --profile off "${tts[@]}" --tts-backend "onnx:$tmp/g" --onnx-runtime "$lib"
expect_error serve_onnx_tts_backend_bad_value "bad value 'gpu'" "$EMBER" serve -m models/tiny --tts-backend gpu
exit $e2e_failed
