#!/usr/bin/env bash
# Builds the named llama.cpp programs (e.g. llama-bench llama-quantize
# llama-server) from the source scripts/llama_cpp_source.sh unpacks, into a
# build folder beside it (outside the repository), once; prints that folder.
# The programs land in FOLDER/bin. The configuration is the one every side-by-
# side benchmark here compares against: Release, native CPU flags, no network
# features (no curl, no OpenSSL, no prebuilt web UI download).
#   scripts/llama_cpp_build.sh PROGRAM...
#   env: EMBER_LLAMA_BUILD (the build folder), JOBS (2)
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { echo "usage: scripts/llama_cpp_build.sh PROGRAM..." >&2; exit 2; }
src=$(scripts/llama_cpp_source.sh) || exit 2
bld=${EMBER_LLAMA_BUILD:-$(dirname "$src")/build-$(basename "$src")}
missing=()
for p in "$@"; do [ -x "$bld/bin/$p" ] || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "building llama.cpp ${missing[*]} in $bld (once; ~10-20 min on 2 cores)" >&2
  server=OFF
  [[ " ${missing[*]} " == *" llama-server "* || -x "$bld/bin/llama-server" ]] && server=ON
  cmake -S "$src" -B "$bld" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=$server \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF >"$bld.cmake.log" 2>&1 ||
    { tail -20 "$bld.cmake.log" >&2; exit 1; }
  cmake --build "$bld" --target "${missing[@]}" -j"${JOBS:-2}" >"$bld.build.log" 2>&1 ||
    { tail -20 "$bld.build.log" >&2; exit 1; }
fi
echo "$bld"
