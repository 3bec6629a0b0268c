#!/usr/bin/env bash
# The Python bindings (python/): their unittest suite on the tiny models
# (one PASS/FAIL line per test), `pip install ./python` offline into a
# temporary target and the suite again against the installed copy, and
# examples/voice_assistant.py end to end.
source "$(dirname "$0")/lib.sh"
so=${EMBER_SO:-$(dirname "$EMBER")/libember.so}
if [ ! -f "$so" ]; then fail python_library_built "no $so"; exit 1; fi
export EMBER_LIBRARY=$PWD/$so
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# run_suite LABEL [ENV...]: unittest -v, one PASS/FAIL line per test
run_suite() {
  local label=$1 out; shift
  out=$(env "$@" $PY -m unittest discover -v -s python/tests 2>&1)
  local rc=$?
  while read -r line; do
    if [[ $line =~ ^(test_[A-Za-z0-9_]+)\ \(([A-Za-z0-9_.]+)\)\ \.\.\.\ (.*)$ ]]; then
      name="${label}:${BASH_REMATCH[2]##*.}.${BASH_REMATCH[1]}"
      case ${BASH_REMATCH[3]} in
        ok|skipped*) pass "$name" ;;
        *) fail "$name" "${BASH_REMATCH[3]}" ;;
      esac
    fi
  done < <(sed -E 's/^(test_[A-Za-z0-9_]+) \(([A-Za-z0-9_]+)\.([A-Za-z0-9_]+)\.(test_[A-Za-z0-9_]+)\)/\1 (\2.\3)/' <<<"$out")
  if [ $rc -ne 0 ]; then fail "$label:suite" "$(tail -25 <<<"$out")"; else pass "$label:suite"; fi
}

run_suite py

# The ctypes mirrors of the public structs (python/ember/_lib.py) have the C
# sizes: a field added in a header but not there makes a by-value return
# write past the Python buffer (it crashed the suite once). sizeof from a C
# program built against include/, against ctypes.sizeof.
pairs="ModelParams:ember_model_params SessionParams:ember_session_params ChatParams:ember_chat_params
ToolCall:ember_tool_call LogitBias:ember_logit_bias GenerateParams:ember_generate_params
GenerateResult:ember_generate_result ConversationParams:ember_conversation_params
TtsParams:ember_tts_params SpeechRequest:ember_speech_request SpeechChunk:ember_speech_chunk
SpeechTimings:ember_speech_timings ProfileParams:ember_profile_params"
{
  echo '#include <stdio.h>'
  for h in include/ember*.h; do echo "#include \"$(basename "$h")\""; done
  echo 'int main(void) {'
  for p in $pairs; do echo "  printf(\"${p%%:*} %zu\\n\", sizeof(${p#*:}));"; done
  echo '  return 0; }'
} >"$tmp/sizes.c"
if cc -std=c99 -Iinclude -o "$tmp/sizes" "$tmp/sizes.c" 2>"$tmp/sizes.err" && "$tmp/sizes" >"$tmp/sizes.txt"; then
  out=$(PYTHONPATH=python $PY -c '
import ctypes, sys
from ember import _lib
bad = [f"{n}: ctypes {ctypes.sizeof(getattr(_lib, n))} vs C {c}" for n, c in
       (l.split() for l in open(sys.argv[1])) if ctypes.sizeof(getattr(_lib, n)) != int(c)]
print("; ".join(bad)); sys.exit(1 if bad else 0)' "$tmp/sizes.txt" 2>&1) &&
    pass ctypes_structs_match_c_sizes || fail ctypes_structs_match_c_sizes "$out"
else fail ctypes_structs_match_c_sizes "$(cat "$tmp/sizes.err")"; fi

# pip install ./python, offline (the build backend is Debian's setuptools)
if $PY -m pip --version >/dev/null 2>&1; then
  cp -r python "$tmp/src"   # pip writes build/ and *.egg-info next to the sources
  if out=$($PY -m pip install --no-build-isolation --no-index --no-deps --quiet \
             --target "$tmp/site" "$tmp/src" 2>&1) && [ -f "$tmp/site/ember/__init__.py" ]; then
    pass pip_install_offline
    run_suite installed PYTHONPATH="$tmp/site" EMBER_PYTHON_INSTALLED=1
    where=$(cd "$tmp" && PYTHONPATH="$tmp/site" $PY -c 'import ember; print(ember.__file__)')
    [[ $where == "$tmp/site/"* ]] && pass installed_package_is_used || fail installed_package_is_used "$where"
  else fail pip_install_offline "$out"; fi
else
  fail pip_install_offline "python3 -m pip is missing (scripts/setup.sh installs python3-pip)"
fi

# the library found without EMBER_LIBRARY: build/libember.so of this checkout
out=$(cd "$tmp" && env -u EMBER_LIBRARY PYTHONPATH="$OLDPWD/python" $PY -c 'import ember; print(ember.version())' 2>&1)
[[ $out =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] && pass library_found_in_the_checkout || fail library_found_in_the_checkout "$out"
out=$(EMBER_LIBRARY=/no/such/libember.so PYTHONPATH=python $PY -c 'import ember' 2>&1)
grep -q "EMBER_LIBRARY=/no/such/libember.so" <<<"$out" && pass bad_ember_library_is_named ||
  fail bad_ember_library_is_named "$out"

# the voice assistant end to end (the tiny model writes no sentences: the
# run must stream, finish and leave a valid, possibly empty, WAV)
if out=$(PYTHONPATH=python $PY examples/voice_assistant.py models/tiny models/tts-tiny "$tmp/va.wav" \
           "What is the weather like?" --max-tokens 12 2>&1) &&
   grep -q '^\[length: 12 tokens' <<<"$out" &&
   $PY -c 'import sys, wave; w = wave.open(sys.argv[1]); assert w.getframerate() == 24000' "$tmp/va.wav"; then
  pass voice_assistant_runs
else fail voice_assistant_runs "$out"; fi
exit $e2e_failed
