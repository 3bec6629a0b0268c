#!/usr/bin/env bash
# In-process A/B of two builds of ember's kernels (bench/ab/kernel_ab.c: why
# in one process, and what it prints). A and B are each a revision of this
# repository or the working tree, built with optional extra CFLAGS; all of
# each side's library is linked into one binary with its symbols made local,
# so both run side by side, pass by pass.
#
#   bench/kernel_ab.sh [--a REV] [--b REV] [--a-cflags F] [--b-cflags F] [-- ARGS]
#
#   --a REV       side A: a git revision (default HEAD)
#   --b REV       side B: a git revision (default: the working tree as it is)
#   --a-cflags F, --b-cflags F   added to "-O2 -g" (e.g. -DR8_STREAM_TOKENS=4)
#   ARGS          for the harness: --dtype q4_0 --shape 6144x2048 --tokens 1
#                 --threads 2 --set best --mb 512 --rounds 20 --verbose
#
# Examples:
#   bench/kernel_ab.sh --a HEAD~1 -- --dtype q8_0 --shape 2048x6144
#   bench/kernel_ab.sh --b HEAD --b-cflags -DPF_AHEAD_TILES=1 -- --dtype bf16
# Builds under $AB_WORK (default /tmp/ember-kernel-ab).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${AB_WORK:-/tmp/ember-kernel-ab}
rev_a=HEAD rev_b= cflags_a= cflags_b=
while [ $# -gt 0 ]; do
  case $1 in
    --a) rev_a=$2; shift 2 ;;
    --b) rev_b=$2; shift 2 ;;
    --a-cflags) cflags_a=$2; shift 2 ;;
    --b-cflags) cflags_b=$2; shift 2 ;;
    --) shift; break ;;
    *) sed -n '2,20p' "$0" >&2; exit 2 ;;
  esac
done
ldlibs="-lcjson -lpcre2-8 -lutf8proc -lmicrohttpd -lsoxr -lfftw3f -lprotobuf-c -lm -lpthread -ldl"
mkdir -p "$work"

# side NAME REV CFLAGS: $work/NAME.o, that revision's whole library plus
# bench/ab/ab_side.c, with only ab_side_NAME left global
side() {
  local name=$1 rev=$2 flags=$3 src=$work/src-$1 out=$work/build-$1
  if [ -z "$rev" ]; then
    src=$root
  else
    rm -rf "$src" && mkdir -p "$src"
    git -C "$root" archive "$(git -C "$root" rev-parse --verify "$rev^{commit}")" | tar -x -C "$src"
  fi
  # a fresh build each time: the flags may differ from the last one
  rm -rf "$out"
  CFLAGS="-O2 -g $flags" make -s -C "$src" -j2 BUILD="$out" "$out/libember.a"
  cc -O2 -g -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror $flags -I"$src/include" -I"$src/src" \
    -I"$root/bench/ab" -DAB_SIDE_GET="ab_side_$name" -c "$root/bench/ab/ab_side.c" \
    -o "$out/ab_side.o"
  ld -r -o "$out/whole.o" "$out/ab_side.o" --whole-archive "$out/libember.a"
  objcopy --keep-global-symbol="ab_side_$name" "$out/whole.o" "$work/$name.o"
}
side a "$rev_a" "$cflags_a"
# the same commit with the same flags on both sides (the tests' self-check):
# one build, its copy renamed, instead of building the library twice
commit() { [ -n "$1" ] && git -C "$root" rev-parse --verify "$1^{commit}" || echo worktree; }
if [ -n "$rev_b" ] && [ "$(commit "$rev_a")" = "$(commit "$rev_b")" ] && [ "$cflags_a" = "$cflags_b" ]; then
  objcopy --redefine-sym ab_side_a=ab_side_b --keep-global-symbol=ab_side_b "$work/build-a/whole.o" "$work/b.o"
else
  side b "$rev_b" "$cflags_b"
fi
cc -O2 -g -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -I"$root/bench/ab" -I"$root/bench" \
  -o "$work/kernel_ab" "$root/bench/ab/kernel_ab.c" "$work/a.o" "$work/b.o" $ldlibs
echo "A: ${rev_a} ${cflags_a}  B: ${rev_b:-working tree} ${cflags_b}" >&2
"$work/kernel_ab" "$@"
