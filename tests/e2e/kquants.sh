#!/usr/bin/env bash
# K-quant and IQ4 blocks decode bit for bit as llama.cpp's own Python
# reference (gguf-py's quants module, from the node-llama-cpp npm package via
# scripts/llama_cpp_source.sh) decodes them, in a GGUF file written by gguf-py.
source "$(dirname "$0")/lib.sh"
bin=${KQUANTS_BIN:-build/tests/test_kquants}
if ! src=$(scripts/llama_cpp_source.sh 2>/tmp/ember-llama-src.log); then
  fail kquants_llama_source "$(cat /tmp/ember-llama-src.log)"
  exit 1
fi
pass kquants_llama_source
out=$($PY reference/test_kquants_gguf_py.py "$src/gguf-py" "$bin" 2>&1); rc=$?
echo "$out"
[ $rc -eq 0 ] || e2e_failed=1
exit $e2e_failed
