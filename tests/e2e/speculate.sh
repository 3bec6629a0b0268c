#!/usr/bin/env bash
# Speculative decoding with prompt lookup (issue 22) on the demo model's
# held-out agent conversations (seed 2026, never trained on; every kind):
# the replies equal plain decoding's, id for id, for every draft_max 1..8,
# greedy and sampled with the same seed, and with a draft model (bench/speculate_demo.py through
# build/bench/speculate, which runs both through ember_session_generate);
# the drafts are exercised (some accepted, some rejected); `ember generate
# --speculate ngram` prints the same text as without, and refuses a bad
# --draft-max; a multi-turn `chat --speculate draft:` gives plain chat's
# replies while its draft session runs only each turn's new tokens. Speed
# is the benchmark's business, never asserted here.
source "$(dirname "$0")/lib.sh"
model=models/demo
if [ ! -f "$model/model.safetensors" ]; then echo "SKIP speculate ($model has no weights)"; exit 0; fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
if ! out=$(make -s build/bench/speculate 2>&1); then fail speculate_build "$out"; exit 1; fi

check_identity() { # NAME TEMP DRAFTS [ARGS]: every variant's replies equal plain decoding's
  local name=$1 temp=$2 drafts=$3; shift 3
  if ! $PY bench/speculate_demo.py --model "$model" --n 24 --kinds all --draft-max "$drafts" \
       --reps 1 --max-tokens 48 --temp "$temp" --sample-seed 7 --threads 1 --ember "$EMBER" \
       --json "$tmp/$name.json" "$@" >/dev/null 2>"$tmp/err"; then
    fail "$name" "$(tail -5 "$tmp/err")"; return
  fi
  local verdict
  verdict=$($PY - "$tmp/$name.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
n = r["prompts"]
bad = [f"draft_max {v['draft_max']}: {v['identical']}/{n}" for v in r["variants"] if v["identical"] != n]
spec = [v for v in r["variants"] if v["mode"] != "plain"]
drafted = all(0 < v["acceptance"] < 1 for v in spec)
print("ok" if not bad and drafted and n >= 20 else "bad", f"{n} prompts;",
      "; ".join(bad) or "all identical;",
      "acceptance " + ", ".join(f"K<={v['draft_max']} {v['acceptance']:.2f}" for v in spec))
PY
)
  if [ "${verdict%% *}" = ok ]; then pass "$name"; echo "     ${verdict#* }"; else fail "$name" "$verdict"; fi
}
check_identity speculate_greedy_equals_plain 0 1,2,3,4,5,6,7,8
check_identity speculate_sampled_equals_plain 0.8 1,2,3,4,5,6,7,8
# the draft-model drafter, with the demo model at q4_0 as its own draft (the
# same tokenizer; it disagrees now and then, so the draft session is rolled
# back as well as fed through)
check_identity speculate_draft_model_greedy_equals_plain 0 1,3,8 --draft "$model" --draft-dtype q4_0
check_identity speculate_draft_model_sampled_equals_plain 0.8 2,5 --draft "$model" --draft-dtype q4_0
# and models/demo-draft, the small model trained beside the demo with its
# recipe and tokenizer (the shipped draft: it disagrees more often)
check_identity speculate_trained_draft_greedy_equals_plain 0 2,4 --draft models/demo-draft

prompt='The tool get_weather takes a city. User: weather in Paris? Assistant: get_weather(city="Paris"). User: and Paris again? Assistant: get_weather('
plain=$("$EMBER" generate -m "$model" --greedy -n 40 -p "$prompt" 2>/dev/null)
spec=$("$EMBER" generate -m "$model" --greedy -n 40 -p "$prompt" --speculate ngram --draft-max 4 2>"$tmp/err")
if [ -n "$plain" ] && [ "$plain" = "$spec" ] && grep -q "verify passes" "$tmp/err"; then
  pass speculate_cli_same_text
else fail speculate_cli_same_text "plain: $plain" "speculative: $spec" "$(cat "$tmp/err")"; fi
# a multi-turn chat with the draft model (the demo at q4_0 from `ember
# quantize`): the replies are plain chat's, and from the second turn on the
# draft model's session, kept with the chat's session, runs only the new
# tokens, as many as the target itself runs (the conversation's prefix reuse
# counts those independently), not the whole prompt again
if "$EMBER" quantize "$model" "$tmp/draft.gguf" --type q4_0 >/dev/null 2>"$tmp/err"; then
  turns='Weather in Paris?\nAnd in Rome, please?\nThanks. What about Oslo?\n'
  printf "$turns" | "$EMBER" chat -m "$model" --greedy -n 40 --threads 1 >"$tmp/chat_plain.out" 2>"$tmp/chat_plain.err"
  printf "$turns" | "$EMBER" chat -m "$model" --greedy -n 40 --threads 1 --speculate "draft:$tmp/draft.gguf" \
    --draft-max 4 >"$tmp/chat_draft.out" 2>"$tmp/chat_draft.err"
  verdict=$($PY - "$tmp/chat_draft.err" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
runs = [(int(a), int(b)) for a, b in re.findall(r"\[(\d+) of (\d+) prompt tokens run", text)]
drafts = [int(n) for n in re.findall(r"the draft model ran (\d+) prompt tokens", text)]
ok = len(runs) == 3 and len(drafts) == 3 and drafts == [r for r, _ in runs] and runs[0][0] == runs[0][1] \
     and all(r < total for r, total in runs[1:])
print("ok" if ok else "bad", "target ran/prompt", runs, "draft ran", drafts)
PY
)
  if [ -s "$tmp/chat_plain.out" ] && cmp -s "$tmp/chat_plain.out" "$tmp/chat_draft.out" && [ "${verdict%% *}" = ok ]; then
    pass speculate_chat_draft_session_resumes
    echo "     ${verdict#* }"
  else
    fail speculate_chat_draft_session_resumes "$verdict" "plain: $(head -c 300 "$tmp/chat_plain.out")" \
      "draft: $(head -c 300 "$tmp/chat_draft.out")" "$(tail -3 "$tmp/chat_draft.err")"
  fi
else fail speculate_chat_quantize "$(cat "$tmp/err")"; fi
expect_error speculate_cli_bad_draft_max "bad value" "$EMBER" generate -m "$model" -p hi --speculate ngram --draft-max 0
expect_error speculate_cli_bad_mode "bad value" "$EMBER" generate -m "$model" -p hi --speculate lookahead
expect_error speculate_cli_draft_other_vocabulary "vocabulary" "$EMBER" generate -m "$model" -p hi \
  --speculate draft:models/tiny
exit $e2e_failed
