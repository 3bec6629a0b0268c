#!/usr/bin/env bash
# Installs tests/onnx/package.json (onnxruntime-node, pinned) under build/ and
# prints the path of its libonnxruntime.so for this machine. The package's
# install script (which downloads CUDA providers from NuGet) is skipped: the
# CPU library ships in the package itself. Exit 2 (message on stderr) when
# npm or the registry cannot be reached, or the platform has no library.
#   EMBER_ORT_DIR  where to install (default: build/onnxruntime)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=${EMBER_ORT_DIR:-$(cd "$here/../.." && pwd)/build/onnxruntime}
case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64) arch=arm64 ;;
  *) echo "onnxruntime-node has no linux build for $(uname -m)" >&2; exit 2 ;;
esac
lib="$dest/node_modules/onnxruntime-node/bin/napi-v6/linux/$arch/libonnxruntime.so.1"
. "$here/../npm_install.sh"
npm_install "$here/package.json" "$dest" "$lib" || exit 2
[ -f "$lib" ] || { echo "no libonnxruntime in the package at $lib" >&2; exit 2; }
echo "$lib"
