#!/usr/bin/env bash
# The whole test suite: what `make test` and .ci/run call.
#   1. installs missing Debian packages (scripts/setup.sh)
#   2. builds with warnings as errors and runs the unit tests; builds the
#      library and CLI with clang too (its warnings, also errors)
#   3. rebuilds the unit tests and the CLI under ASan+UBSan and runs the unit
#      tests and the CLI error/parity scripts again
#   4. end-to-end CLI tests (tests/e2e/*.sh), incl. parity against the
#      committed golden and, where torch is installed, the live reference
#   5. a short libFuzzer run of every fuzz target
# Every case prints "PASS name" or "FAIL name"; the last line is the count.
set -uo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh || { echo "0 passed, 1 failed"; exit 1; }

JOBS=$(nproc 2>/dev/null || echo 2)
FUZZ_SECONDS=${FUZZ_SECONDS:-10}
export EMBER_TEST_MODEL=${EMBER_TEST_MODEL:-models/tiny}
passed=0
failed=0
failures=()

# A phase's header with the seconds since the start, so a slow CI run shows
# where its time went.
phase() { echo "== $1 (at ${SECONDS}s)"; }

record() { # record NAME STATUS
  if [ "$2" -eq 0 ]; then passed=$((passed + 1)); echo "PASS $1";
  else failed=$((failed + 1)); failures+=("$1"); echo "FAIL $1"; fi
}

# Adds the PASS/FAIL lines of a finished command's output to the count.
count_cases() { # count_cases LABEL OUTPUT_FILE EXIT_STATUS SECONDS
  local n_pass n_fail
  sed "s/^/[$1] /" "$2"
  echo "[$1] took $4s"
  n_pass=$(grep -c '^PASS ' "$2")
  n_fail=$(grep -c '^FAIL ' "$2")
  passed=$((passed + n_pass)); failed=$((failed + n_fail))
  [ "$n_fail" -gt 0 ] && failures+=("$1")
  if [ "$3" -ne 0 ] && [ "$n_fail" -eq 0 ]; then
    record "$1 (exit $3)" 1   # crashed or sanitizer report without a FAIL line
  fi
}

# Runs a binary that prints PASS/FAIL lines and adds its cases to the count.
run_cases() { # run_cases LABEL COMMAND [ARGS...]
  local out rc t0=$SECONDS
  out=$(mktemp)
  "${@:2}" >"$out" 2>&1; rc=$?   # the command and its arguments
  count_cases "$1" "$out" "$rc" $((SECONDS - t0))
  rm -f "$out"
}

# Runs commands two at a time (the CI machine has two cores; most of these
# are one process on one core): a new one starts as soon as one ends, and
# the outputs are counted in the given order once all have ended.
# Arguments: LABEL and a command line (eval'd) per case.
run_pool() { # run_pool LABEL1 CMD1 [LABEL2 CMD2 ...]
  local dir n=0 running=0 k labels=(); dir=$(mktemp -d)
  while [ $# -gt 0 ]; do
    if [ $running -ge 2 ]; then wait -n; running=$((running - 1)); fi
    labels[n]=$1
    ( t0=$SECONDS; (eval "$2") >"$dir/$n.out" 2>&1; echo $? >"$dir/$n.rc"; echo $((SECONDS - t0)) >"$dir/$n.s" ) &
    running=$((running + 1)); n=$((n + 1)); shift 2
  done
  wait
  for ((k = 0; k < n; k++)); do
    count_cases "${labels[k]}" "$dir/$k.out" "$(cat "$dir/$k.rc")" "$(cat "$dir/$k.s")"
  done
  rm -rf "$dir"
}

# Every unit test binary under DIR, as run_pool's arguments, labelled PREFIX+name.
unit_tests() { # unit_tests DIR PREFIX
  local t
  for t in "$1"/test_*; do [ -x "$t" ] && printf '%s\0%s\0' "$2$(basename "$t")" "$t"; done
}

phase "build (warnings are errors)"
if make -j"$JOBS" all tests >/tmp/ember-build.log 2>&1; then record build 0
else cat /tmp/ember-build.log; record build 1; fi

phase "clang build (warnings are errors)"
# What GCC accepts clang may not (16112c4 stopped `make CC=clang` on a
# warning, unnoticed until a later stop): the library and the CLI once more.
if make -j"$JOBS" CC=clang BUILD=build-clang all >/tmp/ember-build-clang.log 2>&1; then record build-clang 0
else cat /tmp/ember-build-clang.log; record build-clang 1; fi

phase "unit tests"
mapfile -d '' cases < <(unit_tests build/tests "")
run_pool "${cases[@]}"

phase "NEON kernels (aarch64 cross build, under qemu-user)"
# qemu's default CPU has dotprod; a Cortex-A53 has not: both neon paths run.
if command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 && command -v qemu-aarch64 >/dev/null 2>&1; then
  if make -j"$JOBS" build/neon/test_kernels build/neon/test_kquants >/tmp/ember-build-neon.log 2>&1; then
    record build-neon 0
    export EMBER_KERNEL_SWEEP=light   # test_kernels: a lighter SIMD sweep where emulated
    # qemu-user emulates on one core: the runs go two at a time (run_pool)
    q="qemu-aarch64 -L /usr/aarch64-linux-gnu"
    run_pool "neon:test_kernels" "$q build/neon/test_kernels" \
      "neon-a53:test_kernels" "QEMU_CPU=cortex-a53 $q build/neon/test_kernels" \
      "neon:test_kquants" "$q build/neon/test_kquants"
    unset EMBER_KERNEL_SWEEP
  else cat /tmp/ember-build-neon.log; record build-neon 1; fi
else
  echo "SKIP neon kernels: aarch64-linux-gnu-gcc or qemu-aarch64 missing (scripts/setup.sh installs them)"
fi

phase "unit tests under ASan+UBSan"
if make -j"$JOBS" SAN=1 all tests >/tmp/ember-build-san.log 2>&1; then
  record build-san 0
  # E2E_SANITIZED: scripts skip what only repeats the plain run's Python
  # references (the parity itself was checked there; ember still runs)
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 EMBER_KERNEL_SWEEP=light E2E_SANITIZED=1
  mapfile -d '' cases < <(unit_tests build-san/tests san:)
  run_pool "${cases[@]}"
  # the CLI's error paths, a parity run, text generation and chat, a GGUF
  # as the whole model, and the TTS codes, the speech decoder and `ember
  # tts`, also under the sanitizers
  for t in cli_errors parity_committed text_cli gguf_model tts_codes code2wav tts serve_speech; do
    run_cases "san:$t" env EMBER=build-san/ember "tests/e2e/$t.sh"
  done
  unset ASAN_OPTIONS UBSAN_OPTIONS EMBER_KERNEL_SWEEP E2E_SANITIZED
else cat /tmp/ember-build-san.log; record build-san 1; fi

phase "end-to-end"
for t in tests/e2e/*.sh; do run_cases "$(basename "$t" .sh)" "$t"; done

phase "fuzz smoke (${FUZZ_SECONDS}s per target)"
if make -j"$JOBS" fuzz >/tmp/ember-build-fuzz.log 2>&1; then
  record build-fuzz 0
  # libFuzzer runs one process on one core: two targets at a time (run_pool)
  fuzz_args=()
  for f in build-fuzz/fuzz_*; do
    name=$(basename "$f")
    fuzz_args+=("$name" "tests/fuzz_smoke.sh $f $FUZZ_SECONDS")
  done
  run_pool "${fuzz_args[@]}"
else cat /tmp/ember-build-fuzz.log; record build-fuzz 1; fi

[ ${#failures[@]} -gt 0 ] && echo "failed: ${failures[*]}"
echo "total ${SECONDS}s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
