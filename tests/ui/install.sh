#!/usr/bin/env bash
# Installs tests/ui/package.json (puppeteer-core, pinned) into a cache folder
# outside the tree, as tests/js/install.sh does for transformers.js, and
# prints that folder's node_modules path. No browser is downloaded: the tests
# drive the system chromium (scripts/setup.sh installs Debian's). Offline with
# a cached copy: the cache is used. Exit 2 (message on stderr) when npm or
# the registry cannot be reached and nothing is cached.
#   EMBER_NPM_CACHE  the cache root (default: ~/.cache/ember/npm); this goes
#                    to its sibling folder npm-ui
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=${EMBER_NPM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ember/npm}
dest="${root%/}-ui"
if cmp -s "$here/package.json" "$dest/package.json" && [ -f "$dest/node_modules/puppeteer-core/package.json" ]; then
  echo "$dest/node_modules"; exit 0
fi
command -v npm >/dev/null 2>&1 || { echo "npm not installed" >&2; exit 2; }
mkdir -p "$dest"
cp "$here/package.json" "$dest/package.json"
if ! (cd "$dest" && PUPPETEER_SKIP_DOWNLOAD=1 timeout 300 npm install --no-audit --no-fund --ignore-scripts \
      --loglevel=error >"$dest/install.log" 2>&1); then
  echo "npm install puppeteer-core failed (registry unreachable?): see $dest/install.log" >&2
  rm -f "$dest/package.json"
  exit 2
fi
echo "$dest/node_modules"
