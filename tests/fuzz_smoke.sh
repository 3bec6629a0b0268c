#!/usr/bin/env bash
# One libFuzzer target for a few seconds, from a copy of its seed corpus
# (fuzz/corpus/NAME): prints "PASS fuzz_NAME" with the executions it made, or
# the end of its log and "FAIL fuzz_NAME" when it found a crash, a leak or a
# sanitizer report. tests/run_all.sh runs every target this way.
#   tests/fuzz_smoke.sh build-fuzz/fuzz_NAME SECONDS
set -uo pipefail
bin=$1 seconds=$2
name=$(basename "$bin")
corpus="$(dirname "$0")/../fuzz/corpus/${name#fuzz_}"
work=$(mktemp -d) log=$(mktemp)
trap 'rm -rf "$work" "$log"' EXIT
[ -d "$corpus" ] && cp -r "$corpus"/. "$work"/
if "$bin" -max_total_time="$seconds" -print_final_stats=1 "$work" >"$log" 2>&1; then
  grep -E '^stat::number_of_executed_units' "$log"
  echo "PASS $name"
else
  tail -40 "$log"
  echo "FAIL $name"
fi
