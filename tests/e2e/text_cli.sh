#!/usr/bin/env bash
# Text in, text out on the committed tiny model (its tokenizer.json and chat
# template): `generate -p` streams exactly the text of the ids it sampled,
# sampling is reproducible per seed, stop strings cut the text, `chat`
# re-runs only the new part of the conversation, and the error paths.
source "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
M=models/tiny
prompt="The model reads the prompt and"

# The streamed text is the detokenized ids of the same greedy run.
text=$("$EMBER" generate -m $M -p "$prompt" -n 24 --greedy 2>/dev/null)
ids_no_nl=$(printf '%s' "$prompt" | "$EMBER" tokenize -m $M | tr ' ' ',')
gen_ids=$("$EMBER" generate -m $M --ids "$ids_no_nl" -n 24 --greedy --print-ids 2>/dev/null)
detok=$(tr ',' ' ' <<<"$gen_ids" | "$EMBER" detokenize -m $M --skip-special)
if [ -n "$text" ] && [ "$text" = "$detok" ]; then pass generate_text_is_detokenized_ids
else fail generate_text_is_detokenized_ids "text: $text" "ids: $gen_ids -> $detok"; fi

# Sampling: the same seed gives the same text; temperature 0 equals --greedy.
a=$("$EMBER" generate -m $M -p "$prompt" -n 24 --temp 1.5 --top-k 50 --seed 7 2>/dev/null)
b=$("$EMBER" generate -m $M -p "$prompt" -n 24 --temp 1.5 --top-k 50 --seed 7 2>/dev/null)
c=$("$EMBER" generate -m $M -p "$prompt" -n 24 --temp 0 2>/dev/null)
if [ "$a" = "$b" ]; then pass same_seed_same_text; else fail same_seed_same_text "$a" "$b"; fi
if [ "$c" = "$text" ]; then pass temperature_0_is_greedy; else fail temperature_0_is_greedy "$c" "$text"; fi

# A stop string: the text ends right before its first occurrence.
stop=$(cut -c3-6 <<<"$text")
cut_text=$("$EMBER" generate -m $M -p "$prompt" -n 24 --greedy --stop "$stop" 2>"$tmp/err")
want=${text%%"$stop"*}
if [ -n "$stop" ] && [ "$cut_text" = "$want" ] && grep -q "finish stop" "$tmp/err"; then pass stop_string_cuts
else fail stop_string_cuts "stop '$stop': got '$cut_text' want '$want'" "$(cat "$tmp/err")"; fi

# Logit bias on <|im_end|> (505): every reply is empty and ends with it, so
# the second turn extends the first and only its new tokens are run.
printf 'Hello there\nAnd again\n' |
  "$EMBER" chat -m $M --system "Be brief." --logit-bias 505=100 -n 8 >"$tmp/chat.out" 2>"$tmp/chat.err"
rc=$?
mapfile -t runs < <(grep -o '\[[0-9]* of [0-9]* prompt tokens run' "$tmp/chat.err")
first_total=$(awk '{print $3}' <<<"${runs[0]}"); second_ran=$(awk '{print $1}' <<<"${runs[1]#[}")
second_total=$(awk '{print $3}' <<<"${runs[1]}")
if [ $rc -eq 0 ] && [ ${#runs[@]} -eq 2 ] && [ "$second_ran" -lt "$second_total" ] &&
   [ "$((second_total - second_ran))" -ge "$first_total" ]; then pass chat_reuses_the_conversation_prefix
else fail chat_reuses_the_conversation_prefix "rc=$rc" "$(cat "$tmp/chat.err")"; fi
if grep -q '; stop\]' "$tmp/chat.err"; then pass chat_reply_stops_at_im_end
else fail chat_reply_stops_at_im_end "$(cat "$tmp/chat.err")"; fi

# Tools file: rendered into the prompt (the prompt grows by the schema).
cat >"$tmp/tools.json" <<'JSON'
[{"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
  "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
JSON
printf 'Weather in Paris?\n' | "$EMBER" chat -m $M --tools "$tmp/tools.json" -n 4 >/dev/null 2>"$tmp/tools.err"
with=$(grep -o 'of [0-9]* prompt' "$tmp/tools.err" | awk '{print $2}')
printf 'Weather in Paris?\n' | "$EMBER" chat -m $M -n 4 >/dev/null 2>"$tmp/notools.err"
without=$(grep -o 'of [0-9]* prompt' "$tmp/notools.err" | awk '{print $2}')
if [ -n "$with" ] && [ -n "$without" ] && [ "$with" -gt "$((without + 50))" ]; then pass chat_renders_tools
else fail chat_renders_tools "with=$with without=$without" "$(cat "$tmp/tools.err")"; fi

expect_error chat_bad_tools_file "tools must be a JSON array" \
  "$EMBER" chat -m $M --tools "$M/config.json"
mkdir -p "$tmp/notok"; for f in "$M"/*.safetensors "$M"/*.index.json "$M"/config.json; do ln -s "$PWD/$f" "$tmp/notok/"; done
expect_error generate_text_without_tokenizer "tokenizer.json" \
  "$EMBER" generate -m "$tmp/notok" -p "hello"
expect_error generate_bad_temperature "bad value" "$EMBER" generate -m $M -p hi --temp -1
exit $e2e_failed
