#!/usr/bin/env bash
# Threads change nothing but speed: logits with 1, 2 and 3 threads are
# identical, also while busy processes compete for the cores (workers get
# descheduled at arbitrary points).
source "$(dirname "$0")/lib.sh"
golden=tests/data/tiny-golden.json
hogs=()
cleanup() { [ ${#hogs[@]} -gt 0 ] && kill "${hogs[@]}" 2>/dev/null; }
trap cleanup EXIT

snr() { "$EMBER" parity --model models/tiny --golden "$golden" --dtype q8_0 --threads "$1" --json |
        grep -o '"snr_db_aggregate": [0-9.]*'; }
want=$(snr 1)
for t in 2 3; do
  got=$(snr "$t")
  if [ "$got" = "$want" ]; then pass "threads_${t}_same_logits"
  else fail "threads_${t}_same_logits" "1 thread: $want" "$t threads: $got"; fi
done

for i in 1 2 3; do timeout 120 sh -c 'while :; do :; done' & hogs+=($!); done
bad=0
for i in $(seq 1 25); do
  got=$(snr 2)
  [ "$got" = "$want" ] || { bad=$((bad + 1)); last=$got; }
done
if [ $bad -eq 0 ]; then pass threads_same_logits_under_contention
else fail threads_same_logits_under_contention "$bad of 25 runs differ (e.g. $last, want $want)"; fi
exit $e2e_failed
