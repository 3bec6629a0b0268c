#!/usr/bin/env bash
# Installs tests/js/package.json into a cache folder outside the tree and
# prints that folder's node_modules path. Exit 2 (with a message on stderr)
# when npm or the registry cannot be reached, so callers can skip clearly.
#   EMBER_NPM_CACHE  where to install (default: ~/.cache/ember/npm)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=${EMBER_NPM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ember/npm}
command -v npm >/dev/null 2>&1 || { echo "npm not installed" >&2; exit 2; }
mkdir -p "$dest"
if ! cmp -s "$here/package.json" "$dest/package.json" || [ ! -d "$dest/node_modules/@huggingface/transformers" ]; then
  cp "$here/package.json" "$dest/package.json"
  # onnxruntime's native download is not needed: only the tokenizers are used.
  if ! (cd "$dest" && ONNXRUNTIME_NODE_INSTALL=skip timeout 600 npm install --no-audit --no-fund \
        --ignore-scripts --loglevel=error >"$dest/install.log" 2>&1); then
    echo "npm install failed (registry unreachable?): see $dest/install.log" >&2
    rm -f "$dest/package.json"
    exit 2
  fi
fi
echo "$dest/node_modules"
