#!/usr/bin/env bash
# A .gguf alone is a whole model (issue 19): every command reads the
# tokenizer, the chat template, the end-of-turn ids and the sampling
# defaults from the file, and answers as the model directory it was made
# from. Three kinds of file: ember's own (`ember quantize`) of models/demo
# (the trained model, 4608-id BPE) and models/tiny, and one written by
# llama.cpp's Python writer with the tokenizer metadata the way its
# converter writes it for Spark (reference/gguf_llama_writer.py); each is
# copied alone into an empty directory first. Then the broken files:
# named errors, no crash.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
tmp=$(mktemp -d); trap 'kill $SPID 2>/dev/null; rm -rf "$tmp"' EXIT
D=models/demo T=models/tiny
only=$tmp/only; mkdir "$only"   # the GGUFs, with nothing beside them

for spec in "$D demo-q8.gguf q8_0" "$D demo-bf16.gguf bf16" "$T tiny-q8.gguf q8_0"; do
  set -- $spec
  if ! "$EMBER" quantize "$1" "$tmp/$2" --type "$3" >/dev/null 2>"$tmp/err"; then
    fail "gguf_quantize_$2" "$(cat "$tmp/err")"; exit 1
  fi
  mv "$tmp/$2" "$only/$2"
done
llama=""
if src=$(scripts/llama_cpp_source.sh 2>"$tmp/llama.log"); then
  if $PY reference/gguf_llama_writer.py "$src/gguf-py" $D "$only/demo-bf16.gguf" "$only/llama.gguf" \
       --variant "$tmp/no_model.gguf" drop:tokenizer.ggml.model \
       --variant "$tmp/llama_model.gguf" tokenizer.ggml.model=llama \
       --variant "$tmp/unknown_pre.gguf" tokenizer.ggml.pre=klingon \
       --variant "$tmp/no_merges.gguf" drop:tokenizer.ggml.merges \
       --variant "$tmp/no_types.gguf" drop:tokenizer.ggml.token_type \
       --variant "$tmp/no_template.gguf" drop:tokenizer.chat_template >"$tmp/llama.log" 2>&1; then
    llama=$only/llama.gguf; pass gguf_llama_writer_file
  else fail gguf_llama_writer_file "$(tail -5 "$tmp/llama.log")"; fi
else
  echo "SKIP gguf_llama_*: llama.cpp's source is not at hand ($(cat "$tmp/llama.log"))"
fi

# ---- tokenization: the same ids as the tokenizer.json, on a varied sample ----
$PY - >"$tmp/texts.jsonl" <<'PY'
import json, sys
sys.path.insert(0, "reference/demo")
import chatfmt, corpus
texts = corpus.stories(1, 12)
texts += [chatfmt.render(c["messages"], c["tools"]) for c in corpus.chats(1, 8)]
texts += [chatfmt.render(h["messages"], h["tools"], add_generation_prompt=True) for h in corpus.heldout(2026, 4)]
texts += [
    "caf\u00e9 na\u00efve \u00fcber \u00c5ngstr\u00f6m e\u0301t\u00e9 (combining) \u00df \u0130stanbul",
    "\u4f60\u597d\uff0c\u4e16\u754c\uff01\u3053\u3093\u306b\u3061\u306f\u30ab\u30bf\u30ab\u30ca \ud55c\uad6d\uc5b4 \u0645\u0631\u062d\u0628\u0627 \u05e9\u05dc\u05d5\u05dd",
    "emoji \U0001F600\U0001F680 \U0001F469\u200d\U0001F4BB flags \U0001F1EB\U0001F1F7 \u2764\ufe0f",
    "1 12 123 1234 12345 123456 3.14159 1,000,000 -42 +7 2026-12-01 0x1F 1e-9 \u0663\u0664\u0665",
    "tabs\t\tand   spaces    \n\n\n  lines \r\n crlf  \u00a0nbsp\u2003em  trailing   ",
    "     ", "\n", "", "a", "!!!???... --- === ''' \"\"\" ``` I've you're 'S 'LL",
    "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n<tool_call>\n"
    "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call><|im_end|><|endoftext|>",
    "<|im_start|><|im_start|>x<tool_response>y</tool_response><|im_end|",
]
for t in texts:
    print(json.dumps(t))
PY
n_texts=$(wc -l <"$tmp/texts.jsonl")

# same_ids NAME DIR FILE: `tokenize --jsonl` of every text is the same
same_ids() {
  local name=$1 dir=$2 file=$3
  "$EMBER" tokenize -m "$dir" --jsonl <"$tmp/texts.jsonl" >"$tmp/want.jsonl" 2>"$tmp/err.a"
  "$EMBER" tokenize -m "$file" --jsonl <"$tmp/texts.jsonl" >"$tmp/$name.jsonl" 2>"$tmp/err.b"
  if [ "$(wc -l <"$tmp/$name.jsonl")" -eq "$n_texts" ] && [ "$(grep -c '\[[0-9]' "$tmp/$name.jsonl")" -ge $((n_texts - 1)) ] &&
     cmp -s "$tmp/want.jsonl" "$tmp/$name.jsonl" && [ ! -s "$tmp/err.b" ]; then pass "$name"
  else fail "$name" "$(diff <(tr , '\n' <"$tmp/want.jsonl") <(tr , '\n' <"$tmp/$name.jsonl") | head -5)" \
            "$(cat "$tmp/err.a" "$tmp/err.b" | head -3)"; fi
}
same_ids gguf_demo_tokenizes_as_tokenizer_json $D "$only/demo-q8.gguf"
same_ids gguf_tiny_tokenizes_as_tokenizer_json $T "$only/tiny-q8.gguf"
[ -n "$llama" ] && same_ids gguf_llama_writer_tokenizes_as_tokenizer_json $D "$llama"

# The plain text form too (stdin text -> ids, and ids -> text).
story=$($PY -c 'import sys; sys.path.insert(0, "reference/demo"); import corpus; print(corpus.stories(3, 1)[0])')
a=$(printf '%s' "$story" | "$EMBER" tokenize -m $D)
b=$(printf '%s' "$story" | "$EMBER" tokenize -m "$only/demo-q8.gguf")
if [ -n "$a" ] && [ "$a" = "$b" ]; then pass gguf_tokenize_plain; else fail gguf_tokenize_plain "$a" "$b"; fi
back=$(printf '%s' "$b" | "$EMBER" detokenize -m "$only/demo-q8.gguf")
if [ "$back" = "$story" ]; then pass gguf_detokenize_plain; else fail gguf_detokenize_plain "$back"; fi

# detokenize --jsonl gives every text back, byte for byte
for f in "$only/demo-q8.gguf" ${llama:+"$llama"}; do
  name=gguf_detokenize_round_trip_$(basename "$f" .gguf)
  "$EMBER" tokenize -m "$f" --jsonl <"$tmp/texts.jsonl" >"$tmp/ids.jsonl" &&
    "$EMBER" detokenize -m "$f" --jsonl <"$tmp/ids.jsonl" >"$tmp/back.jsonl" 2>"$tmp/err"
  if out=$($PY - "$tmp/texts.jsonl" "$tmp/back.jsonl" <<'PY' 2>&1
import json, sys
a = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
b = [json.loads(l) for l in open(sys.argv[2], encoding="utf-8")]
bad = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
if len(a) != len(b) or bad:
    sys.exit(f"{len(a)} texts, {len(b)} back; differ at {bad[:5]}")
PY
  ); then pass "$name"; else fail "$name" "$out" "$(cat "$tmp/err")"; fi
done

# ---- the chat template -------------------------------------------------------
cat >"$tmp/tools.json" <<'JSON'
[{"type": "function", "function": {"name": "get_weather", "description": "Current weather for a city",
  "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
JSON
cat >"$tmp/messages.json" <<'JSON'
[{"role": "system", "content": "You are a helpful assistant."},
 {"role": "user", "content": "What's the weather in Lisbon? In \u00b0C, please."},
 {"role": "assistant", "content": "", "tool_calls": [{"type": "function",
   "function": {"name": "get_weather", "arguments": {"city": "Lisbon"}}}]},
 {"role": "tool", "content": "{\"temperature\": 18, \"condition\": \"sunny\"}"},
 {"role": "user", "content": "Thanks!   And in \u6771\u4eac?"}]
JSON
want=$("$EMBER" template -m $D --messages "$tmp/messages.json" --tools "$tmp/tools.json" --add-generation-prompt 2>&1)
for f in "$only/demo-q8.gguf" ${llama:+"$llama"}; do
  got=$("$EMBER" template -m "$f" --messages "$tmp/messages.json" --tools "$tmp/tools.json" --add-generation-prompt 2>&1)
  name=gguf_template_$(basename "$f" .gguf)
  if [ -n "$want" ] && [ "$got" = "$want" ]; then pass "$name"; else fail "$name" "$(diff <(echo "$want") <(echo "$got") | head -5)"; fi
done
"$EMBER" template -m $T --cases tests/data/chat_cases.json >"$tmp/cases.want" 2>&1
"$EMBER" template -m "$only/tiny-q8.gguf" --cases tests/data/chat_cases.json >"$tmp/cases.got" 2>&1
if [ -s "$tmp/cases.want" ] && cmp -s "$tmp/cases.want" "$tmp/cases.got"; then pass gguf_template_cases_tiny
else fail gguf_template_cases_tiny "$(diff "$tmp/cases.want" "$tmp/cases.got" | head -5)"; fi

# ---- generation: the directory's text, stop ids and defaults ------------------
gen() { "$EMBER" generate --profile off "$@" 2>>"$tmp/gen.err"; }
want=$(gen -m $D -p "Once upon a time" -n 40 --greedy)
for f in "$only/demo-bf16.gguf" ${llama:+"$llama"}; do
  got=$(gen -m "$f" -p "Once upon a time" -n 40 --greedy)
  name=gguf_generate_$(basename "$f" .gguf)
  if [ -n "$want" ] && [ "$got" = "$want" ]; then pass "$name"; else fail "$name" "dir: $want" "gguf: $got" "$(tail -2 "$tmp/gen.err")"; fi
done
got=$(gen -m "$only/demo-q8.gguf" -p "Once upon a time" -n 40 --greedy)
conv=$(gen -m $D --dtype q8_0 -p "Once upon a time" -n 40 --greedy)
if [ -n "$got" ] && [ "$got" = "$conv" ]; then pass gguf_generate_q8_0_as_converted_at_load
else fail gguf_generate_q8_0_as_converted_at_load "dir: $conv" "gguf: $got"; fi
# generation_config.json says greedy (do_sample false): so does the GGUF
got=$(gen -m "$only/demo-bf16.gguf" -p "Once upon a time" -n 40)
if [ "$got" = "$want" ]; then pass gguf_sampling_defaults_greedy; else fail gguf_sampling_defaults_greedy "$got"; fi
# a chat prompt ends at the model's end of turn (<|im_end|>), as in the directory
echo '[{"role": "user", "content": "Tell me a short story about a cat."}]' >"$tmp/story.json"
"$EMBER" template -m $D --messages "$tmp/story.json" --add-generation-prompt >"$tmp/prompt.txt"
a=$("$EMBER" generate --profile off -m $D --prompt-file "$tmp/prompt.txt" -n 300 --greedy 2>"$tmp/a.err")
b=$("$EMBER" generate --profile off -m "$only/demo-bf16.gguf" --prompt-file "$tmp/prompt.txt" -n 300 --greedy 2>"$tmp/b.err")
if [ -n "$a" ] && [ "$a" = "$b" ] && grep -q "finish stop" "$tmp/a.err" && grep -q "finish stop" "$tmp/b.err"
then pass gguf_generate_stops_at_end_of_turn
else fail gguf_generate_stops_at_end_of_turn "dir: $(tail -1 "$tmp/a.err")" "gguf: $(tail -1 "$tmp/b.err")"; fi

# ---- chat and serve from the GGUF alone ----------------------------------------
chat() { printf 'What is the weather in Lisbon?\n' | "$EMBER" chat --profile off -m "$1" --tools "$tmp/tools.json" -n 64 --greedy 2>"$2"; }
a=$(chat $D "$tmp/chat.a"); b=$(chat "$only/demo-bf16.gguf" "$tmp/chat.b")
if [ -n "$a" ] && [ "$a" = "$b" ] && grep -q "prompt tokens run" "$tmp/chat.b"; then pass gguf_chat
else fail gguf_chat "dir: $a" "gguf: $b" "$(tail -2 "$tmp/chat.b")"; fi

reply() {  # reply MODEL: the message of one chat completion, ids left out
  local body='{"model": "'$1'", "messages": [{"role": "user", "content": "What is the weather in Lisbon?"}], '
  body+='"max_tokens": 64, "temperature": 0, "tools": '$(tr -d '\n' <"$tmp/tools.json")'}'
  curl -s -X POST "$BASE/v1/chat/completions" -H 'Content-Type: application/json' --data-binary "$body" |
    $PY -c 'import json, sys; r = json.load(sys.stdin); m = r["choices"][0]["message"] if "choices" in r else r
for c in m.get("tool_calls") or []: c.pop("id", None)
print(json.dumps(m, sort_keys=True))'
}
want="" got="" models=""
if start_server "$tmp/serve.dir.log" -m $D --profile off; then want=$(reply demo); fi
stop_server
if start_server "$tmp/serve.gguf.log" -m "$only/demo-bf16.gguf" --profile off; then
  got=$(reply demo-bf16.gguf); models=$(curl -s "$BASE/v1/models")
fi
stop_server
if [ -n "$got" ] && [ "$got" = "$want" ] && grep -q '"demo-bf16.gguf"' <<<"$models"; then pass gguf_serve
else fail gguf_serve "dir: $want" "gguf: $got" "$(tail -3 "$tmp/serve.gguf.log")"; fi

# ---- broken files: a named error, no crash -----------------------------------
if [ -n "$llama" ]; then
  tok() { printf 'hello' | "$EMBER" tokenize -m "$1"; }
  expect_error gguf_no_tokenizer "no tokenizer in the file (tokenizer.ggml.model is missing)" tok "$tmp/no_model.gguf"
  expect_error gguf_sentencepiece_unsupported "tokenizer.ggml.model 'llama' is not supported" tok "$tmp/llama_model.gguf"
  expect_error gguf_unknown_pre "tokenizer.ggml.pre 'klingon' is not a pre-tokenizer ember knows" tok "$tmp/unknown_pre.gguf"
  expect_error gguf_no_merges "missing key 'tokenizer.ggml.merges'" tok "$tmp/no_merges.gguf"
  expect_error gguf_no_token_types "missing key 'tokenizer.ggml.token_type'" tok "$tmp/no_types.gguf"
  expect_error gguf_no_chat_template "no chat template (tokenizer.chat_template)" \
    "$EMBER" template -m "$tmp/no_template.gguf" --messages "$tmp/messages.json"
fi
expect_error gguf_generate_not_a_model "is not a model directory or GGUF file" \
  "$EMBER" generate -m "$tmp/texts.jsonl" -p hello
exit $e2e_failed
