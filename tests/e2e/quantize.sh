#!/usr/bin/env bash
# `ember quantize`: a Hugging Face checkpoint to a spark2_5 GGUF that ember
# loads again (generate, parity against the committed golden), re-quantizing
# a GGUF, and the error cases (which must leave no file behind).
source "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d); trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
golden=tests/data/tiny-golden.json

expect_ok quantize_tiny_q8_0 "$EMBER" quantize models/tiny "$tmp/q8.gguf" --type q8_0
if [ -f "$tmp/q8.gguf" ] && [ ! -e "$tmp/q8.gguf.tmp" ] && [ "$(head -c 4 "$tmp/q8.gguf")" = GGUF ]
then pass quantize_writes_gguf; else fail quantize_writes_gguf "no GGUF at $tmp/q8.gguf"; fi

summary=$("$EMBER" quantize models/tiny "$tmp/again.gguf" --type q8_0 2>&1 >/dev/null)
if grep -qE '34 tensors, [0-9]+ bytes \(q8_0\), [0-9.]+ s' <<<"$summary"; then pass quantize_summary_line
else fail quantize_summary_line "$summary"; fi
if ! grep -q $'\r' <<<"$summary"; then pass quantize_no_progress_bar_off_tty
else fail quantize_no_progress_bar_off_tty "carriage return in: $summary"; fi

expect_ok generate_from_gguf \
  "$EMBER" generate -m "$tmp/q8.gguf" --ids "$(json_ids "$golden" prompt_ids)" -n 8 --print-ids

json=$("$EMBER" parity --model "$tmp/q8.gguf" --golden "$golden" --json 2>&1)
agg=$(grep -o '"snr_db_aggregate": *[-0-9.]*' <<<"$json" | sed 's/.*: *//')
top1=$(grep -o '"top1_agree": *[-0-9.]*' <<<"$json" | head -1 | sed 's/.*: *//')
if [ -n "$agg" ] && [ -n "$top1" ] && awk -v a="$agg" -v t="$top1" 'BEGIN { exit !(a >= 30 && t >= 0.9) }'
then pass parity_q8_0_gguf; else fail parity_q8_0_gguf "snr_db_aggregate=$agg top1=$top1"; fi

# The GGUF gives exactly what converting at load gives.
a=$("$EMBER" generate -m "$tmp/q8.gguf" --ids 5,6,7,8 -n 16 --print-ids 2>/dev/null)
b=$("$EMBER" generate -m models/tiny --dtype q8_0 --ids 5,6,7,8 -n 16 --print-ids 2>/dev/null)
if [ -n "$a" ] && [ "$a" = "$b" ]; then pass gguf_q8_0_matches_convert_at_load
else fail gguf_q8_0_matches_convert_at_load "gguf: $a" "load: $b"; fi

# GGUF in, GGUF out (f16), still the same model.
expect_ok requantize_gguf_to_f16 "$EMBER" quantize "$tmp/q8.gguf" "$tmp/f16.gguf" --type f16
expect_ok parity_requantized "$EMBER" parity --model "$tmp/f16.gguf" --golden "$golden" \
  --min-aggregate 30 --min-top1 0.9
expect_ok quantize_tiny_q4_0 "$EMBER" quantize models/tiny "$tmp/q4.gguf" --type q4_0
expect_ok parity_q4_0_top1 "$EMBER" parity --model "$tmp/q4.gguf" --golden "$golden" --min-top1 0.9

# Errors: a clear message, a non-zero exit, and no file.
expect_error quantize_bad_type "unknown --type 'q7_k'" \
  "$EMBER" quantize models/tiny "$tmp/bad.gguf" --type q7_k
expect_error quantize_missing_input "cannot open checkpoint directory" \
  "$EMBER" quantize "$tmp/none" "$tmp/none.gguf"
expect_error quantize_missing_args "usage: ember quantize" "$EMBER" quantize models/tiny
mkdir "$tmp/ro"; chmod a-w "$tmp/ro"
ro="$tmp/ro"
[ -w "$ro" ] && ro=/proc   # root writes anywhere on disk, but not into /proc
expect_error quantize_unwritable_output "cannot create" \
  "$EMBER" quantize models/tiny "$ro/ember-quantize-test.gguf" --type q8_0
[ -e "$ro/ember-quantize-test.gguf" ] || [ -e "$ro/ember-quantize-test.gguf.tmp" ] &&
  fail quantize_unwritable_output_left_file "$ro"
expect_error quantize_output_in_missing_dir "cannot create" \
  "$EMBER" quantize models/tiny "$tmp/no/such/dir/out.gguf"
mkdir "$tmp/isdir.gguf"
expect_error quantize_output_is_directory "cannot rename" \
  "$EMBER" quantize models/tiny "$tmp/isdir.gguf"
left=$(find "$tmp" -name '*.tmp' -o -name 'bad.gguf' -o -name 'none.gguf' -o -path "$tmp/ro/*")
if [ -z "$left" ]; then pass quantize_errors_leave_no_file
else fail quantize_errors_leave_no_file "left behind: $left"; fi

# A file that is not GGUF, and a GGUF cut short, are reported as such.
printf 'not a model' >"$tmp/junk.bin"
expect_error generate_non_gguf_file "not a directory" "$EMBER" generate -m "$tmp/junk.bin" --ids 1
head -c 5000 "$tmp/q8.gguf" >"$tmp/cut.gguf"
expect_error generate_truncated_gguf "truncated" "$EMBER" generate -m "$tmp/cut.gguf" --ids 1
exit $e2e_failed
