#!/usr/bin/env bash
# `ember serve`'s built-in page (GET /) in a real browser: Debian's chromium
# driven over the DevTools protocol by puppeteer-core (tests/ui/ui.mjs)
# against the trained demo model with the tiny speech model (--tts), and a
# second server with --api-key. The page loads with its CSP and no console
# errors; a reply streams; a tool call renders and its result continues the
# chat; speak and auto-speak play streamed PCM chunks; editing a turn
# regenerates; stop frees the server's row (/metrics); the key is asked once
# and sent as a header. Screenshots go to docs/ with UI_SHOTS=1.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
model=models/demo TTS=models/tts-tiny
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
if [ ! -f "$model/model.safetensors" ] || [ ! -f "$TTS/speech_tokenizer/model.safetensors" ]; then
  echo "SKIP ui (no demo or tiny speech model)"; exit 0
fi
if ! command -v node >/dev/null 2>&1; then echo "SKIP ui (node is not installed)"; exit 0; fi
if [ ! -x "$CHROMIUM" ]; then echo "SKIP ui (no $CHROMIUM: scripts/setup.sh installs chromium)"; exit 0; fi
if ! nm=$(tests/ui/install.sh); then
  echo "SKIP ui (npm registry unreachable: puppeteer-core not installed)"; exit 0
fi
tmp=$(mktemp -d)
SPID="" KPID=""
cleanup() { for p in $SPID $KPID; do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
key="ui-test-$RANDOM$RANDOM"

if ! start_server "$tmp/keyed.log" -m "$model" --threads 1 --api-key "$key"; then
  fail ui_keyed_server_starts "$(cat "$tmp/keyed.log")"; exit 1
fi
KPID=$SPID KLOG=$SLOG KBASE=$BASE
if ! start_server "$tmp/server.log" -m "$model" --tts "$TTS" --threads 2; then
  fail ui_server_starts "$(cat "$tmp/server.log")"; exit 1
fi
shots=""
[ "${UI_SHOTS:-0}" = 1 ] && shots=$PWD/docs
out=$(CHROMIUM=$CHROMIUM timeout 110 node tests/ui/ui.mjs "$nm" "$BASE" "$KBASE" "$key" "$shots" 2>&1)
echo "$out"
grep -q '^FAIL ' <<<"$out" && e2e_failed=1
grep -qE '^(PASS|FAIL) ' <<<"$out" || fail ui_browser "$out"
stop_server; SPID=""
[ "$SRC" = 0 ] && pass ui_server_clean_exit || fail ui_server_clean_exit "exit $SRC"
SPID=$KPID SLOG=$KLOG; stop_server; KPID=""
[ "$SRC" = 0 ] && pass ui_keyed_server_clean_exit || fail ui_keyed_server_clean_exit "exit $SRC"
exit $e2e_failed
