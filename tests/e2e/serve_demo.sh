#!/usr/bin/env bash
# `ember serve` with the trained demo model (models/demo), driven by the
# official `openai` npm client: tools in, the expected function and arguments
# out, the tool's result back, a final answer that uses it. The case is the
# first single-call request of the demo corpus's held-out seed (2026, never
# trained on): its expected call is what the generator derived from the
# request's words, not anything ember printed.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
model=${DEMO_MODEL:-models/demo}   # DEMO_MODEL: another checkpoint of the same recipe
if [ ! -f "$model/model.safetensors" ]; then
  echo "SKIP serve_demo ($model has no weights)"; exit 0
fi
if ! command -v node >/dev/null 2>&1; then
  echo "SKIP serve_demo (node is not installed)"; exit 0
fi
if ! nm=$(tests/js/serve_install.sh); then
  echo "SKIP serve_demo (npm registry unreachable: openai not installed)"; exit 0
fi
tmp=$(mktemp -d)
SPID=""
cleanup() { [ -n "$SPID" ] && kill -9 $SPID 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

$PY - "$tmp/case.json" <<'PY' || { fail serve_demo_case "no held-out case"; exit 1; }
import json, sys
sys.path.insert(0, "reference/demo")
import corpus
for conv, kinds in corpus._conversations(corpus.HELDOUT_SEED):
    msgs = conv["messages"]
    i = 1 if msgs[0]["role"] == "system" else 0
    call = msgs[i + 1] if len(msgs) > i + 3 else {}
    if kinds.get(i + 1) != "call" or len(call.get("tool_calls", [])) != 1:
        continue
    fn = call["tool_calls"][0]["function"]
    result, answer = msgs[i + 2]["content"], msgs[i + 3]["content"]
    values = [str(v) for v in json.loads(result).values() if str(v) in answer]
    json.dump({"tools": conv["tools"], "messages": msgs[:i + 1],
               "call": {"name": fn["name"], "arguments": fn["arguments"]},
               "result": result, "answer_values": values, "min_values": min(2, len(values))},
              open(sys.argv[1], "w"))
    break
PY
if ! start_server "$tmp/server.log" -m "$model" --threads 2; then
  fail serve_demo_starts "$(cat "$tmp/server.log")"; exit 1
fi
out=$(node tests/js/serve_demo_openai.mjs "$nm" "$BASE/v1" "$(basename "$model")" "$tmp/case.json" 2>&1)
echo "$out"
grep -q '^FAIL ' <<<"$out" && e2e_failed=1
grep -qE '^(PASS|FAIL) ' <<<"$out" || fail serve_demo_client "$out"
stop_server; SPID=""
[ "$SRC" = 0 ] && pass serve_demo_clean_exit || fail serve_demo_clean_exit "exit $SRC"
exit $e2e_failed
