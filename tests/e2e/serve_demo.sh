#!/usr/bin/env bash
# `ember serve` with the trained demo model (models/demo), driven by the
# official `openai` npm client on a real trained model's emissions: tools in,
# a tool call out as the client's own types, the tool's result back, a final
# answer. The request is the first single-call one of the demo corpus's
# held-out seed (2026, never trained on). What the server must return is what
# the model emits for the same rendered prompts through `ember generate
# --greedy` (which tests/e2e/demo_model.sh holds equal to the PyTorch
# reference token for token), parsed by bench/demo_eval.py's tool-call parser:
# the server's template, tool-call parsing, JSON and the client must neither
# lose nor alter anything. The case is the first of the held-out single-call
# requests (up to 40 looked at) that the model answers with the generator's
# expected call, so the client must also get back exactly the function and
# arguments the request asked for; if the model gets none of them right, the
# first is used and the expected call is only reported (the model's quality
# is bench/demo_eval.sh's business).
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

$PY - "$tmp" "$EMBER" "$model" <<'PY' || { fail serve_demo_case "could not prepare the case"; exit 1; }
import json, subprocess, sys
sys.path.insert(0, "reference/demo"); sys.path.insert(0, "bench")
import chatfmt, corpus, demo_eval
tmp, ember, model = sys.argv[1:4]

def reply(messages, tools):
    with open(f"{tmp}/prompt.txt", "w", encoding="utf-8") as f:
        f.write(chatfmt.render(messages, tools, add_generation_prompt=True))
    out = subprocess.run([ember, "generate", "-m", model, "--prompt-file", f"{tmp}/prompt.txt", "-n", "200",
                          "--greedy", "--threads", "2"], capture_output=True, text=True, check=True)
    return demo_eval.parse_reply(out.stdout)

def single_call_requests(limit):
    for conv, kinds in corpus._conversations(corpus.HELDOUT_SEED):
        msgs = conv["messages"]
        i = 1 if msgs[0]["role"] == "system" else 0
        if kinds.get(i + 1) == "call" and len(msgs[i + 1].get("tool_calls", [])) == 1:
            yield conv["tools"], msgs[:i + 1], msgs[i + 1]["tool_calls"][0]["function"], msgs[i + 2]["content"]
            limit -= 1
            if limit == 0:
                return

first = None
for looked, (tools, prompt, truth, result) in enumerate(single_call_requests(40), 1):
    _, calls, malformed = reply(prompt, tools)
    first = first or (tools, prompt, truth, result, calls, malformed)
    right = (len(calls) == 1 and not malformed and calls[0][0] == truth["name"] and
             demo_eval.json_equal(calls[0][1], truth["arguments"]))
    if right:
        break
if not right:
    tools, prompt, truth, result, calls, malformed = first
case = {"tools": tools, "messages": prompt, "result": result, "truth": truth, "truth_required": right,
        "looked": looked, "call": None, "final": None}
if len(calls) == 1 and not malformed:
    name, args = calls[0]
    case["call"] = {"name": name, "arguments": args}
    follow = prompt + [{"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": name, "arguments": args}}]},
        {"role": "tool", "content": result}]
    content, calls2, _ = reply(follow, tools)
    case["final"] = {"content": content, "calls": len(calls2)}
json.dump(case, open(f"{tmp}/case.json", "w"))
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
