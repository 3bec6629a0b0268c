#!/usr/bin/env bash
# The user-facing CLI commands moved onto the public API (PUBLIC_CLI in the
# Makefile) compile with include/ alone: `make public-check` fails when one
# of them includes a src/ header (directly or through tools/cli.h).
source "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
expect_ok public_cli_files_use_include_only make -s public-check
# the check is real: a command file that reaches into src/ fails it, the
# same file without that include passes (files in a temporary folder)
printf '#include "%s/tools/cli_public.h"\n' "$PWD" >"$tmp/ok.c"
{ cat "$tmp/ok.c"; printf '#include "tokenizer/tokenizer.h"\n'; } >"$tmp/bad.c"
expect_ok public_check_accepts_the_public_headers make -s public-check PUBLIC_CLI="$tmp/ok.c"
if make -s public-check PUBLIC_CLI="$tmp/bad.c" >"$tmp/out" 2>&1; then
  fail public_check_rejects_a_src_header "$(cat "$tmp/out")"
else pass public_check_rejects_a_src_header; fi
# every other command file is a measurement or serving one, and says so in
# its name (the issue's rule: only bench, parity and serve reach into src/)
public=" $(make -s --no-print-directory --eval='print-public: ; @echo $(PUBLIC_CLI)' print-public) "
internal=""
for f in tools/*.c; do
  case "$public" in *" $f "*) continue ;; esac
  case "$(basename "$f")" in *bench*|*parity*|*serve*) ;; *) internal+=" $f" ;; esac
done
if [ -z "$internal" ] && [ "$(wc -w <<<"$public")" -gt 10 ]; then pass tools_outside_the_public_cli_are_bench_parity_serve
else fail tools_outside_the_public_cli_are_bench_parity_serve "not public, not named so:$internal"; fi
exit $e2e_failed
