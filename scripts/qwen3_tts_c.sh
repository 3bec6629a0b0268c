#!/usr/bin/env bash
# Prints the path of the pure-C Qwen3-TTS port's binary (qwen_tts of
# github.com/gabriele-mastrapasqua/qwen3-tts), built once outside the
# repository for the side-by-side benchmark (bench/tts_side.sh); nothing of
# it is committed here. Nothing is downloaded: QWEN3_TTS_C_SRC names a copy
# you fetched (a source tree, or a git directory / clone, whose HEAD is
# exported without its large sample files), e.g.
#   git clone https://github.com/gabriele-mastrapasqua/qwen3-tts /some/where
#   QWEN3_TTS_C_SRC=/some/where bench/tts_side.sh
# It builds with OpenBLAS (libopenblas-dev, installed with apt-get when
# missing) and the port's widest x86 SIMD this CPU runs. Exit 2 with a
# message when the source is missing or the build fails.
#   EMBER_QWEN3_TTS_C_CACHE  where to build (default: ~/.cache/ember/qwen3-tts-c)
set -uo pipefail
dest=${EMBER_QWEN3_TTS_C_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ember/qwen3-tts-c}
bin="$dest/src/qwen_tts"
if [ ! -x "$bin" ]; then
  src=${QWEN3_TTS_C_SRC:-}
  if [ -z "$src" ] || [ ! -d "$src" ]; then
    echo "the port is not built in $dest and QWEN3_TTS_C_SRC does not name its source:" >&2
    echo "  git clone https://github.com/gabriele-mastrapasqua/qwen3-tts DIR; QWEN3_TTS_C_SRC=DIR $0" >&2
    exit 2
  fi
  if [ ! -f /usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h ] && [ ! -d /usr/include/openblas ] &&
     ! dpkg -s libopenblas-dev >/dev/null 2>&1; then
    apt-get install -y -q --no-install-recommends libopenblas-dev >&2 ||
      { echo "apt-get install libopenblas-dev failed" >&2; exit 2; }
  fi
  rm -rf "$dest/src" && mkdir -p "$dest/src"
  if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
    # the large samples and presets are not needed to build (and a partial
    # mirror may lack them)
    git -C "$src" rev-parse HEAD >"$dest/commit"
    parts=$(git -C "$src" ls-tree --name-only HEAD | grep -E '\.(c|h)$|^Makefile$|^vendor$|^third_party$')
    # shellcheck disable=SC2086
    git -C "$src" archive HEAD -- $parts | tar -x -C "$dest/src" ||
      { echo "could not export $src" >&2; exit 2; }
  else
    cp -r "$src"/. "$dest/src/" && echo unknown >"$dest/commit"
  fi
  simd=avx2
  grep -qw avx512_bf16 /proc/cpuinfo && simd=avx512bf16 ||
    { grep -qw avx512_vnni /proc/cpuinfo && simd=avx512vnni; }
  echo "building the qwen3-tts C port in $dest/src (SIMD=$simd, once; ~1-2 min on 2 cores)" >&2
  make -C "$dest/src" blas SIMD=$simd -j2 >"$dest/build.log" 2>&1 ||
    { tail -20 "$dest/build.log" >&2; echo "the port's build failed: see $dest/build.log" >&2; exit 2; }
fi
echo "$bin"
