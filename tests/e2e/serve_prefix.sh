#!/usr/bin/env bash
# Prefix reuse across turns: a 10-turn tool-calling conversation through
# /v1/chat/completions gives the same replies with the prefix cache as
# without it, while each later turn runs only its new tokens (usage's
# cached_tokens covers at least the previous turn's prompt), including a
# turn whose rendered prompt differs from the cached one inside the last
# message (an edited reply: it resumes from the ring snapshot taken where
# the previous prompt ended); /metrics counts the hits. Then two prompts
# that diverge inside a message: one edits an earlier user message, one
# re-sends the last turn with its user message edited. Each resumes from the
# ring snapshot at the start of the edited message (the boundary the chat
# template gives: cached_tokens equals the token count of the messages
# before it, rendered and tokenized by the CLI) and replies as from scratch.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
tmp=$(mktemp -d)
SPID=""
trap '[ -n "$SPID" ] && kill -9 $SPID 2>/dev/null; rm -rf "$tmp"' EXIT

# converse BASE OUT: runs the conversation, one JSON line per turn
# {reply, prompt_tokens, cached_tokens, edited}
converse() {
  python3 - "$1" >"$2" <<'PY'
import json, sys, urllib.request
base = sys.argv[1]
tools = [{"type": "function", "function": {"name": "lookup", "description": "Look a word up",
          "parameters": {"type": "object", "properties": {"word": {"type": "string"}}}}}]
messages = [{"role": "system", "content": "You answer briefly and use tools."}]
def chat():
    body = json.dumps({"model": "tiny", "messages": messages, "tools": tools,
                       "max_tokens": 12, "temperature": 0}).encode()
    req = urllib.request.Request(base + "/v1/chat/completions", body, {"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req, timeout=60))
for turn in range(10):
    edited = turn == 6
    if edited:
        # the client rewrites the last reply: the prompt now differs from
        # the cached conversation inside the last message
        messages[-1]["content"] = "Edited: " + messages[-1]["content"]
    else:
        messages.append({"role": "user", "content": "Question %d: what about word %d?" % (turn, turn)})
    if turn % 3 == 2:
        # a tool round: the assistant's call and the tool's result
        call = {"id": "call_%d" % turn, "type": "function",
                "function": {"name": "lookup", "arguments": json.dumps({"word": "w%d" % turn})}}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": "meaning %d" % turn})
    o = chat()
    msg = o["choices"][0]["message"]
    reply = msg.get("content") or ""
    print(json.dumps({"reply": reply, "prompt_tokens": o["usage"]["prompt_tokens"],
                      "cached_tokens": o["usage"]["prompt_tokens_details"]["cached_tokens"],
                      "edited": edited}))
    messages.append({"role": "assistant", "content": reply})
def probe(name, sent, edited_at):
    global messages
    saved, messages = messages, sent
    o = chat()
    messages = saved
    print(json.dumps({"probe": name, "reply": o["choices"][0]["message"].get("content") or "",
                      "prompt_tokens": o["usage"]["prompt_tokens"],
                      "cached_tokens": o["usage"]["prompt_tokens_details"]["cached_tokens"],
                      "before": sent[:edited_at], "tools": tools}))
# an earlier user message (turn 3's question) edited in its middle
at = next(i for i, m in enumerate(messages) if m["role"] == "user" and m["content"].startswith("Question 3:"))
earlier = json.loads(json.dumps(messages[:at + 1]))
earlier[at]["content"] = earlier[at]["content"].replace("word 3", "wort 3")
probe("earlier", earlier, at)
# a new last turn, then the same turn with its question edited in the middle
last = messages + [{"role": "user", "content": "Question 10: and what about word 10, then?"}]
probe("last_sent", last, len(last) - 1)
edited = json.loads(json.dumps(last))
edited[-1]["content"] = "Question 10: and what about wort 10, then?"
probe("last_edited", edited, len(edited) - 1)
PY
}

start_server "$tmp/off.log" -m models/tiny --threads 2 --prefix-cache 0 ||
  { fail serve_prefix_starts "$(cat "$tmp/off.log")"; exit 1; }
converse "$BASE" "$tmp/off.jsonl" || fail conversation_without_cache
stop_server; SPID=""
start_server "$tmp/on.log" -m models/tiny --threads 2 ||
  { fail serve_prefix_starts "$(cat "$tmp/on.log")"; exit 1; }
converse "$BASE" "$tmp/on.jsonl" || fail conversation_with_cache
hits=$(metric ember_prefix_cache_hits_total); reused=$(metric ember_prefix_cache_tokens_reused_total)
entries=$(metric ember_prefix_cache_entries); run=$(metric ember_prompt_tokens_run_total)
total=$(metric ember_prompt_tokens_total); snaps=$(metric ember_prefix_cache_snapshots)
stop_server; SPID=""

if python3 - "$tmp/off.jsonl" "$tmp/on.jsonl" <<'PY'
import json, sys
off = [json.loads(l) for l in open(sys.argv[1])]
on = [json.loads(l) for l in open(sys.argv[2])]
assert len(off) == len(on) == 13, (len(off), len(on))
for t, (a, b) in enumerate(zip(off, on)):
    assert a["reply"] == b["reply"] and a["prompt_tokens"] == b["prompt_tokens"], (t, a, b)
    assert a["cached_tokens"] == 0, (t, a)
PY
then pass prefix_cache_same_replies; else fail prefix_cache_same_replies "$(paste "$tmp/off.jsonl" "$tmp/on.jsonl")"; fi

if python3 - "$tmp/on.jsonl" <<'PY'
import json, sys
on = [json.loads(l) for l in open(sys.argv[1])][:10]
for t in range(1, 10):
    prev, cur = on[t - 1], on[t]
    # the previous turn's whole prompt is reused; only what follows runs
    assert cur["cached_tokens"] >= prev["prompt_tokens"], (t, prev, cur)
    assert cur["cached_tokens"] < cur["prompt_tokens"], (t, cur)
    if cur["edited"]:
        # diverged inside the last reply: resumed exactly at the snapshot
        assert cur["cached_tokens"] == prev["prompt_tokens"], (t, prev, cur)
PY
then pass later_turns_run_only_new_tokens; else fail later_turns_run_only_new_tokens "$(cat "$tmp/on.jsonl")"; fi

# the probes: resumed exactly at the start of the edited message
if err=$(python3 - "$tmp/on.jsonl" "$EMBER" "$tmp" <<'PY' 2>&1
import json, subprocess, sys
probes = {p["probe"]: p for p in map(json.loads, open(sys.argv[1])) if "probe" in p}
ember, tmp = sys.argv[2], sys.argv[3]
def tokens_before(p):
    json.dump(p["before"], open(tmp + "/before.json", "w"))
    json.dump(p["tools"], open(tmp + "/tools.json", "w"))
    text = subprocess.run([ember, "template", "-m", "models/tiny", "--messages", tmp + "/before.json",
                           "--tools", tmp + "/tools.json"], capture_output=True, check=True).stdout
    ids = subprocess.run([ember, "tokenize", "-m", "models/tiny", "--json", "--no-special"], input=text,
                         capture_output=True, check=True).stdout
    return len(json.loads(ids)["ids"])
for name in ("earlier", "last_edited"):
    p = probes[name]
    want = tokens_before(p)
    assert p["cached_tokens"] == want, (name, p["cached_tokens"], want, p["prompt_tokens"])
    assert 0 < want < p["prompt_tokens"], (name, want, p["prompt_tokens"])
# the edited last turn resumed later than the end of the cached turns before it
assert probes["last_edited"]["cached_tokens"] > probes["earlier"]["cached_tokens"]
PY
); then pass diverging_prompt_resumes_at_message_boundary
else fail diverging_prompt_resumes_at_message_boundary "$err" "$(grep probe "$tmp/on.jsonl" | cut -c1-300)"; fi

if [ "${hits:-0}" -ge 9 ] && [ "${entries:-0}" -ge 1 ] && [ "$((total - run))" = "$reused" ] && [ "${reused:-0}" -gt 0 ] &&
   [ "${snaps:-0}" -gt "${entries:-0}" ]
then pass prefix_cache_metrics; else fail prefix_cache_metrics "hits $hits entries $entries reused $reused run $run total $total snapshots $snaps"; fi
exit $e2e_failed
