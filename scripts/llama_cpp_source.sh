#!/usr/bin/env bash
# Prints the path of llama.cpp's source tree, unpacked outside the repository
# from the npm package node-llama-cpp 3.22.1 (its package/llama/gitRelease.bundle
# is a git bundle of the llama.cpp release it builds). Used by the K-quant
# tests (gguf-py's dequantizers) and the side-by-side benchmarks; nothing of
# it is committed here. Exit 2 with a message when npm or the registry cannot
# be reached, so callers can say so clearly.
#   EMBER_LLAMA_CACHE  where to unpack (default: ~/.cache/ember/llama)
set -uo pipefail
version=3.22.1
dest=${EMBER_LLAMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ember/llama}
src="$dest/src-$version"
if [ ! -f "$src/gguf-py/gguf/quants.py" ]; then
  command -v npm >/dev/null 2>&1 || { echo "npm not installed" >&2; exit 2; }
  command -v git >/dev/null 2>&1 || { echo "git not installed" >&2; exit 2; }
  mkdir -p "$dest"
  tgz="$dest/node-llama-cpp-$version.tgz"
  if [ ! -s "$tgz" ]; then
    (cd "$dest" && timeout 600 npm pack "node-llama-cpp@$version" --loglevel=error >/dev/null 2>"$dest/pack.log") ||
      { echo "npm pack node-llama-cpp@$version failed (registry unreachable?): see $dest/pack.log" >&2; rm -f "$tgz"; exit 2; }
  fi
  rm -rf "$src.tmp" && mkdir -p "$src.tmp"
  tar -xzf "$tgz" -C "$src.tmp" package/llama/gitRelease.bundle &&
    git clone -q "$src.tmp/package/llama/gitRelease.bundle" "$src.tmp/tree" 2>/dev/null &&
    rm -rf "$src" && mv "$src.tmp/tree" "$src" && rm -rf "$src.tmp" ||
    { echo "could not unpack llama.cpp from $tgz" >&2; rm -rf "$src.tmp"; exit 2; }
fi
echo "$src"
