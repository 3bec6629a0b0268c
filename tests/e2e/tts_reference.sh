#!/usr/bin/env bash
# The Qwen3-TTS PyTorch reference checks itself (reference/test_tts_reference.py:
# M-RoPE == 1-D RoPE, looped == batched float64 layers, the prompt layout,
# the BPE, the committed tiny checkpoint and golden reproduce).
source "$(dirname "$0")/lib.sh"
if ! have_torch; then echo "SKIP tts_reference (no torch under $PY)"; exit 0; fi
out=$($PY reference/test_tts_reference.py 2>&1); rc=$?
grep -E '^(PASS|FAIL)' <<<"$out" | sed 's/^\(PASS\|FAIL\) /\1 tts_ref:/'
if [ $rc -ne 0 ] && ! grep -q '^FAIL' <<<"$out"; then fail tts_reference_run "$(tail -5 <<<"$out")"; fi
[ $rc -eq 0 ] || e2e_failed=1
exit $e2e_failed
