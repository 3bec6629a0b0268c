#!/usr/bin/env bash
# Quality figures of the demo model (issue 17): greedy tool-call and
# direct-answer accuracy on 300 held-out conversations (seed 2026, never
# trained on) by ember and by the PyTorch reference, their agreement,
# held-out prose perplexity, and the same table for ember's weight formats
# (bf16/q8_0/q4_0) x KV cache formats (f32/f16/q8_0). One JSON object on
# stdout; the Markdown table after it. Options go to bench/demo_eval.py
# (--help): e.g. --formats bf16/f32,q4_0/f32 --ref-n 50 --json out.json.
#   bench/demo_eval.sh [--model models/demo] [--n 300] [--seed 2026] [...]
set -euo pipefail
cd "$(dirname "$0")/.."
make -s -j2 build/ember build/bench/lm_score
exec /usr/bin/python3 bench/demo_eval.py --markdown "$@"
