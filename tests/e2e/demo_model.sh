#!/usr/bin/env bash
# The trained demo model (models/demo, issue 17), a fast slice of its
# evaluation (bench/demo_eval.sh runs the whole one): the first 30 held-out
# conversations (seed 2026, never trained on) answered greedily by ember in
# bf16 and scored (the accuracy is reported; its target is the bench's);
# `ember generate --greedy` gives the same
# replies as the evaluation's scorer; with torch, the reference's greedy
# token streams equal ember's on the first 8 conversations and its prose
# perplexity equals ember's; and `ember parity` on the trained weights sits
# at the float32 floor like the random checkpoints (the bars of parity_live).
source "$(dirname "$0")/lib.sh"
model=${DEMO_MODEL:-models/demo}   # DEMO_MODEL: another checkpoint of the same recipe
if [ ! -f "$model/model.safetensors" ]; then
  echo "SKIP demo_model ($model has no weights)"; exit 0
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# The scorer itself: the generator's own replies score right (with and
# without <think>, integers also written as floats), altered ones wrong.
expect_ok demo_eval_scorer_self_test "$PY" bench/demo_eval.py --self-test --n 300

if ! out=$(make -s build/bench/lm_score 2>&1); then
  fail demo_eval_build "$out"; exit 1
fi
ref_n=8
if ! have_torch; then
  echo "SKIP demo_eval_reference_agrees, demo_parity_fp32_floor: python3-torch is not installed"
  ref_n=0
fi
if ! $PY bench/demo_eval.py --model "$model" --n 30 --formats bf16/f32 --stories 5 --ref-n $ref_n \
     --cli-check 4 --ember "$EMBER" --json "$tmp/eval.json" >/dev/null 2>"$tmp/err"; then
  fail demo_eval_runs "$(tail -5 "$tmp/err")"; exit 1
fi
# One verdict per line from the result: NAME|1 or 0|what it measured.
$PY - "$tmp/eval.json" >"$tmp/verdicts" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
e = r["ember"][0]
# The model's quality is the bench's business (bench/demo_eval.sh; the issue's
# target is measured there): here it is reported, and ember is held to
# reproducing the reference's replies token for token, which is ember's part.
print(f"demo_eval_scored|{int(e['n_tool_call'] + e['n_direct'] == 30)}|tool-call accuracy "
      f"{e['tool_call_accuracy']} ({e['n_tool_call']} conversations), direct {e['direct_accuracy']} "
      f"({e['n_direct']}), perplexity {e['perplexity']}")
c = r["cli_check"]
print(f"demo_eval_generate_cli_same_replies|{int(c['equal'] == c['n'])}|ember generate --greedy: "
      f"{c['equal']}/{c['n']} replies equal to the scorer's")
ref = r.get("reference")
if ref:
    same_ppl = abs(ref["perplexity"] / e["perplexity"] - 1) < 1e-3
    print(f"demo_eval_reference_agrees|{int(ref['identical_to_ember'] == 1 and same_ppl)}|reference: "
          f"{ref['identical_to_ember']:.0%} of {ref['n']} greedy token streams identical to ember's "
          f"(divergences: {ref['divergences']}); perplexity {ref['perplexity']} vs ember {e['perplexity']}")
PY
while IFS='|' read -r name ok msg; do
  if [ "$ok" = 1 ]; then pass "$name"; echo "     $msg"; else fail "$name" "$msg"; fi
done <"$tmp/verdicts"
if [ $ref_n -gt 0 ]; then
  # Parity on the trained weights, in their own regime (peaked logits): the
  # first held-out conversation with tools, rendered, and 32 greedy tokens
  # of the reply, held to the float32 floor.
  $PY - "$tmp/conv.json" "$tmp/tools.json" <<'PY'
import json, sys
sys.path.insert(0, "reference/demo")
import corpus
c = next(h for h in corpus.heldout(corpus.HELDOUT_SEED, 50) if h["tools"] and h["kind"] == "call")
json.dump(c["messages"], open(sys.argv[1], "w")); json.dump(c["tools"], open(sys.argv[2], "w"))
PY
  "$EMBER" template -m "$model" --messages "$tmp/conv.json" --tools "$tmp/tools.json" \
    --add-generation-prompt | "$EMBER" tokenize -m "$model" >"$tmp/prompt.ids"
  if ! out=$($PY reference/golden.py --model "$model" --prompt-ids "$tmp/prompt.ids" \
               --out "$tmp/g.json" 2>&1); then
    fail demo_parity_fp32_floor "reference failed: $out"
  elif out=$("$EMBER" parity --model "$model" --golden "$tmp/g.json" --json \
               --max-below-floor 6 --min-top1 1 --min-greedy 1 2>"$tmp/parity.err"); then
    pass demo_parity_fp32_floor
    $PY -c 'import json, sys; r = json.loads(sys.argv[1]); r.pop("rows", None)
print("     " + ", ".join(f"{k} {r[k]}" for k in ("snr_db_min", "snr_db_aggregate", "floor_snr_db_aggregate",
      "worst_margin_to_floor_db", "top1_agree", "greedy_match")))' "$out"
  else
    fail demo_parity_fp32_floor "$(tail -c 600 <<<"$out")" "$(tail -3 "$tmp/parity.err")"
  fi
  # The trained weights written in llama.cpp's K-quant mixes by `ember
  # quantize`, against the same fp32 reference: more bits never lose dB, and
  # Q4_K_M keeps the issue's bar (>= 20 dB, top-1 >= 0.85). (Where a
  # matrix's inputs are not a multiple of 256, as in models/demo's width 192,
  # llama.cpp's rules fall back to 32-blocks, so mixes may tie.)
  kq_report=""; kq_prev=0; kq_ok=1
  for mix in q2_k q3_k_m q4_k_m q5_k_m q6_k; do
    if ! "$EMBER" quantize "$model" "$tmp/$mix.gguf" --type "$mix" 2>"$tmp/q.err" ||
       ! r=$("$EMBER" parity --model "$tmp/$mix.gguf" --golden "$tmp/g.json" --json 2>>"$tmp/q.err"); then
      kq_ok=0; kq_report+=" $mix: failed ($(tail -1 "$tmp/q.err"))"; continue
    fi
    read -r db top1 < <($PY -c 'import json,sys; r=json.loads(sys.argv[1]); print(r["snr_db_aggregate"], r["top1_agree"])' "$r")
    kq_report+=" $mix ${db} dB top-1 ${top1};"
    $PY -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= float(sys.argv[2]) else 1)' "$db" "$kq_prev" || kq_ok=0
    kq_prev=$db
    if [ "$mix" = q4_k_m ]; then
      $PY -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= 20 and float(sys.argv[2]) >= 0.85 else 1)' "$db" "$top1" || kq_ok=0
    fi
  done
  if [ $kq_ok = 1 ]; then pass demo_kquant_mixes; echo "    $kq_report"
  else fail demo_kquant_mixes "$kq_report"; fi
  # ggml's 32-value mixes the same way: the fifth bit is worth several dB
  # (Q5_0 over Q4_0, Q5_1 over Q4_1).
  lq_report=""; lq_ok=1; declare -A lq_db=()
  for mix in q4_0 q4_1 q5_0 q5_1; do
    if ! "$EMBER" quantize "$model" "$tmp/$mix.gguf" --type "$mix" 2>"$tmp/q.err" ||
       ! r=$("$EMBER" parity --model "$tmp/$mix.gguf" --golden "$tmp/g.json" --json 2>>"$tmp/q.err"); then
      lq_ok=0; lq_report+=" $mix: failed ($(tail -1 "$tmp/q.err"))"; continue
    fi
    read -r db top1 < <($PY -c 'import json,sys; r=json.loads(sys.argv[1]); print(r["snr_db_aggregate"], r["top1_agree"])' "$r")
    lq_report+=" $mix ${db} dB top-1 ${top1};"; lq_db[$mix]=$db
  done
  if [ $lq_ok = 1 ] && $PY -c 'import sys; d = [float(v) for v in sys.argv[1:]]
sys.exit(0 if d[2] >= d[0] + 3 and d[3] >= d[1] + 3 else 1)' \
       "${lq_db[q4_0]}" "${lq_db[q4_1]}" "${lq_db[q5_0]}" "${lq_db[q5_1]}"; then
    pass demo_q32_mixes; echo "    $lq_report"
  else fail demo_q32_mixes "$lq_report"; fi
fi
exit $e2e_failed
