#!/usr/bin/env bash
# Qwen3-TTS talker + code predictor parity at the full 0.6B shape (random
# weights, the real config): the float64 reference's 50 greedy frames and
# logits against ember in f32, bf16 and q8_0. Minutes (the float64 golden
# takes ~5 s a frame on 2 cores): not part of the tests.
#   bench/tts_parity_0.6b.sh [OUT_DIR]     env: FRAMES (50), SEED (0)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/out}
frames=${FRAMES:-50}
model="$out/tts-0.6b"
golden="$out/tts-0.6b-golden.json"
mkdir -p "$out"
make -s -j2 build/ember
[ -f "$model/model.safetensors" ] ||
  /usr/bin/python3 reference/make_tts_checkpoint.py --preset 0.6b --out "$model" --seed "${SEED:-0}" >&2
[ -f "$golden" ] ||
  /usr/bin/python3 reference/tts_golden.py --model "$model" --text "Hello from the tiny talker." \
    --speaker ryan --language english --frames "$frames" --threads 2 --out "$golden" >&2
for dtype in f32 bf16 q8_0; do
  printf '{"dtype": "%s", "result": ' "$dtype"
  build/ember tts-codes -m "$model" --golden "$golden" --json --dtype "$dtype" --threads 2
  printf '}\n'
done
