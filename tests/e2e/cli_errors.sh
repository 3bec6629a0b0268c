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
