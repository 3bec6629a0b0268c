# Sourced by the test scripts that need npm packages (tests/js/install.sh,
# tests/onnx/install.sh). npm_install PACKAGE_JSON DEST SENTINEL installs
# PACKAGE_JSON's dependencies into DEST (again only when the file changed or
# SENTINEL is missing), without install scripts: nothing beyond the npm
# registry is downloaded. Returns 2 (message on stderr) when npm or the
# registry cannot be reached.
npm_install() {
  local pkg=$1 dest=$2 sentinel=$3
  command -v npm >/dev/null 2>&1 || { echo "npm not installed" >&2; return 2; }
  mkdir -p "$dest"
  if ! cmp -s "$pkg" "$dest/package.json" || [ ! -e "$sentinel" ]; then
    cp "$pkg" "$dest/package.json"
    if ! (cd "$dest" && ONNXRUNTIME_NODE_INSTALL=skip timeout 600 npm install --no-audit --no-fund \
          --ignore-scripts --loglevel=error >"$dest/install.log" 2>&1); then
      echo "npm install failed (registry unreachable?): see $dest/install.log" >&2
      rm -f "$dest/package.json"
      return 2
    fi
  fi
}
