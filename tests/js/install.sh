#!/usr/bin/env bash
# Installs tests/js/package.json into a cache folder outside the tree and
# prints that folder's node_modules path. Exit 2 (with a message on stderr)
# when npm or the registry cannot be reached, so callers can skip clearly.
#   EMBER_NPM_CACHE  where to install (default: ~/.cache/ember/npm)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=${EMBER_NPM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ember/npm}
. "$here/../npm_install.sh"
# onnxruntime's native download is not needed: only the tokenizers are used.
npm_install "$here/package.json" "$dest" "$dest/node_modules/@huggingface/transformers" || exit 2
echo "$dest/node_modules"
