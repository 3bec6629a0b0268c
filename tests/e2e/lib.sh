# Shared helpers for the end-to-end scripts: each check prints PASS or FAIL.
# Source it from a script in tests/e2e; the script's exit status is non-zero
# when any check failed.
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
EMBER=${EMBER:-build/ember}
PY=/usr/bin/python3
e2e_failed=0

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1"; shift; [ $# -gt 0 ] && printf '     %s\n' "$@"; e2e_failed=1; }

# expect_ok NAME CMD...: the command exits 0.
expect_ok() {
  local name=$1 out; shift
  if out=$("$@" 2>&1); then pass "$name"; else fail "$name" "$ "$*"" "$(tail -5 <<<"$out")"; fi
}

# expect_error NAME NEEDLE CMD...: the command exits non-zero, prints NEEDLE
# on stderr, and did not crash (exit status below 128, no sanitizer report).
expect_error() {
  local name=$1 needle=$2 err rc; shift 2
  err=$("$@" 2>&1 >/dev/null); rc=$?
  if [ $rc -ne 0 ] && [ $rc -lt 128 ] && grep -qF -- "$needle" <<<"$err" &&
     ! grep -qE 'Sanitizer|runtime error' <<<"$err"; then pass "$name"
  else fail "$name" "exit $rc, stderr: $err"; fi
}

have_torch() { $PY -c 'import torch, numpy' >/dev/null 2>&1; }

# json_ids FILE KEY: the integer list under KEY, comma separated.
json_ids() { grep -o "\"$2\": *\[[^]]*\]" "$1" | head -1 | sed 's/.*\[//; s/\]//; s/ //g'; }
