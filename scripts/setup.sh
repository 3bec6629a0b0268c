#!/usr/bin/env bash
# Installs every Debian package ember needs to build, test and fuzz. Safe to
# run repeatedly: it only calls apt-get when something is missing. Run as
# root on a fresh Debian 12 machine (CI does).
set -euo pipefail

packages=(
  build-essential   # gcc, make
  clang             # libFuzzer targets
  libclang-rt-14-dev # the fuzzer and sanitizer runtimes for clang
  libcjson-dev      # JSON: config.json, safetensors headers, golden files
  libpcre2-dev      # tokenizer pre-tokenizer regexes (Unicode properties)
  libutf8proc-dev   # tokenizer normalizers (NFC, NFKC) and Unicode categories
  libmicrohttpd-dev # `ember serve`: the HTTP server
  libsoxr-dev       # reference audio of any sample rate resampled to 24 kHz (src/io/resample.c)
  libfftw3-dev      # the speaker encoder's mel spectrogram: real FFTs (fftwf, src/tts/mel.c)
  python3-torch     # the PyTorch reference (reference/) and checkpoint generator
  python3-numpy
  python3-pip            # tests/e2e/python.sh: `pip install ./python` (offline)
  python3-setuptools     # ... its build backend, used without build isolation
  gcc-aarch64-linux-gnu  # NEON kernels: cross-built kernel test (make neon-test)
  libc6-dev-arm64-cross
  qemu-user              # ... run under qemu-aarch64
  sox                    # tests read back the WAV files `ember tts` writes (soxi)
  chromium               # tests/e2e/ui.sh: the browser the UI tests drive (puppeteer-core, over CDP)
  protobuf-c-compiler    # ONNX export: protoc-c generates C for onnx.proto at build time
  libprotobuf-c-dev      # ... and its runtime library
  libonnx-dev            # ... onnx.proto itself (/usr/include/onnx)
  python3-onnx           # tests/e2e/onnx.sh: onnx.checker on the exported graphs
)

# Node.js and npm run the transformers.js comparisons (tests/js); many
# machines already have a newer Node.js than Debian's, so only add it if absent.
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "setup: missing Debian packages: ${missing[*]}" >&2
  echo "setup: run as root (or: sudo $0) to install them" >&2
  exit 1
fi
echo "setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >&2
apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
