#!/usr/bin/env bash
# The CLI turns bad input into a clear message and a non-zero exit, never a crash.
source "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

expect_error generate_missing_dir "cannot open checkpoint directory" \
  "$EMBER" generate -m "$tmp/none" --ids 1,2
mkdir "$tmp/empty"
expect_error generate_dir_without_config "config.json" "$EMBER" generate -m "$tmp/empty" --ids 1,2
expect_error generate_bad_ids "comma-separated" "$EMBER" generate -m models/tiny --ids 1,x,3
expect_error generate_id_out_of_vocab "outside" "$EMBER" generate -m models/tiny --ids 1,99999 -n 2
expect_error generate_context_full "max_context" \
  "$EMBER" generate -m models/tiny --ids 1,2,3,4 -n 8 --max-context 3
expect_error unknown_command "unknown command" "$EMBER" frobnicate
# -p text with a model path that is not there names the path and why
expect_error generate_text_missing_dir "No such file or directory" \
  "$EMBER" generate -m "$tmp/none" -p hi
expect_error generate_text_file_not_dir "is not a model directory" \
  "$EMBER" generate -m README.md -p hi

# The top-level help lists every command the binary dispatches, and every
# `bench` subcommand: each listed name answers its own --help.
help=$("$EMBER" --help)
missing=""
for c in generate chat parity bench quantize tokenize detokenize template tts-codes tts \
         decode-codes voice serve probe; do
  grep -qE "^  $c " <<<"$help" || missing+=" $c"
  "$EMBER" $c --help >/dev/null 2>&1 || missing+=" ($c --help fails)"
done
for b in llm tts tts-codes; do
  grep -qE "^ +(bench +)?$b -m " <<<"$help" || missing+=" bench-$b"
  "$EMBER" bench $b --help >/dev/null 2>&1 || missing+=" (bench $b --help fails)"
done
if [ -z "$missing" ]; then pass help_lists_every_command; else fail help_lists_every_command "missing:$missing"; fi
expect_error parity_missing_golden "cannot read" \
  "$EMBER" parity --model models/tiny --golden "$tmp/none.json"
printf '{"prompt_ids": [1], "greedy_ids": [], "logit_positions": [0], "logits": [[1, 2]]}' >"$tmp/small.json"
expect_error parity_vocab_mismatch "vocab" "$EMBER" parity --model models/tiny --golden "$tmp/small.json"
printf '{"prompt_ids": [1' >"$tmp/cut.json"
expect_error parity_truncated_golden "not a JSON object" \
  "$EMBER" parity --model models/tiny --golden "$tmp/cut.json"

# A checkpoint whose shard lost its tail.
cp -r models/tiny "$tmp/cut"
shard=$(ls "$tmp"/cut/model-00002-*.safetensors)
truncate -s -1000 "$shard"
expect_error generate_truncated_shard "$(basename "$shard")" "$EMBER" generate -m "$tmp/cut" --ids 1,2
exit $e2e_failed
