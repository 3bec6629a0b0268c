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
exit $e2e_failed
