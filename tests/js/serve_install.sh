#!/usr/bin/env bash
# Installs the official `openai` npm client (the one the serve tests drive
# `ember serve` with) into a cache folder outside the tree, as install.sh does
# for transformers.js, and prints that folder's node_modules path. Offline
# with a cached copy: the cache is used. Exit 2 (message on stderr) when npm
# or the registry cannot be reached and nothing is cached.
#   EMBER_NPM_CACHE  the cache root (default: ~/.cache/ember/npm); the client
#                    goes to its sibling folder npm-openai
set -uo pipefail
version=6.30.1
root=${EMBER_NPM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ember/npm}
dest="${root%/}-openai"
want="{\"name\":\"ember-serve-client\",\"private\":true,\"type\":\"module\",\"dependencies\":{\"openai\":\"$version\"}}"
if [ -f "$dest/package.json" ] && [ "$(cat "$dest/package.json")" = "$want" ] &&
   [ -f "$dest/node_modules/openai/package.json" ]; then
  echo "$dest/node_modules"; exit 0
fi
command -v npm >/dev/null 2>&1 || { echo "npm not installed" >&2; exit 2; }
mkdir -p "$dest"
printf '%s' "$want" >"$dest/package.json"
if ! (cd "$dest" && timeout 300 npm install --no-audit --no-fund --ignore-scripts --loglevel=error \
      >"$dest/install.log" 2>&1); then
  echo "npm install openai@$version failed (registry unreachable?): see $dest/install.log" >&2
  rm -f "$dest/package.json"
  exit 2
fi
echo "$dest/node_modules"
