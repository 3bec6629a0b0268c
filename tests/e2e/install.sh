#!/usr/bin/env bash
# `make install PREFIX=DIR` into a temporary prefix, then every example in
# examples/*.c is built against the installed copy through pkg-config alone
# (shared, static, and shared under ASan+UBSan) and run; `make uninstall`
# then leaves nothing of ember behind.
source "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
build=$(dirname "$EMBER")
if [ "$build" != build ]; then echo "SKIP install: runs on the default build only"; exit 0; fi
if ! make -s install PREFIX="$prefix" >"$tmp/install.log" 2>&1; then
  fail install "$(tail -5 "$tmp/install.log")"; exit 1; fi
missing=
for f in bin/ember include/ember.h lib/libember.a lib/libember.so lib/pkgconfig/ember.pc; do
  [ -e "$prefix/$f" ] || missing="$missing $f"; done
soname=$(objdump -p "$prefix/lib/libember.so" | awk '$1 == "SONAME" {print $2}')
[ -e "$prefix/lib/$soname" ] || missing="$missing lib/$soname"
if [ -z "$missing" ]; then pass install_layout; else fail install_layout "missing:$missing"; fi
expect_ok installed_cli_runs "$prefix/bin/ember" tokenize --help

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
cflags=$(pkg-config --cflags ember) libs=$(pkg-config --libs ember)
libdir=$(pkg-config --variable=libdir ember) static_libs=$(pkg-config --static --libs ember)
if [ -n "$libs" ] && [ "$libdir" = "$prefix/lib" ]; then pass pkg_config_finds_ember
else fail pkg_config_finds_ember "libs '$libs' libdir '$libdir'"; fi

# How each example is run: the models and arguments it needs.
run_example() { # run_example BINARY NAME
  case $2 in
    greedy) "$1" models/tiny 1,2,3 4 ;;
    chat_tool) "$1" models/tiny "What is the weather in Paris?" required ;;
    speak) "$1" models/tts-tiny "Hello there." "$tmp/$2-$(basename "$1").wav" ;;
    *) "$1" ;;
  esac
}
for src in examples/*.c; do
  name=$(basename "$src" .c)
  for variant in shared static asan; do
    bin="$tmp/$name-$variant"
    case $variant in
      shared) cmd=(gcc -std=c99 -Wall -Wextra -Werror $cflags "$src" -o "$bin" $libs -Wl,-rpath,"$libdir") ;;
      static) cmd=(gcc -std=c99 -Wall -Wextra -Werror $cflags "$src" -o "$bin" -Wl,-Bstatic -lember -Wl,-Bdynamic
                   $(echo "$static_libs" | sed 's/-lember//') ) ;;
      asan) cmd=(gcc -std=c99 -g -fsanitize=address,undefined -fno-sanitize-recover=all $cflags "$src" -o "$bin"
                 $libs -Wl,-rpath,"$libdir") ;;
    esac
    if ! "${cmd[@]}" 2>"$tmp/err"; then fail "example_${name}_builds_${variant}" "$(head -5 "$tmp/err")"; continue; fi
    if out=$(ASAN_OPTIONS=detect_leaks=1 run_example "$bin" "$name" 2>&1) &&
       ! grep -qE 'Sanitizer|runtime error' <<<"$out"; then pass "example_${name}_runs_${variant}"
    else fail "example_${name}_runs_${variant}" "$(tail -5 <<<"$out")"; fi
  done
done

make -s uninstall PREFIX="$prefix" >/dev/null 2>&1
left=$(find "$prefix" -type f -o -type l)
if [ -z "$left" ]; then pass uninstall_removes_everything; else fail uninstall_removes_everything "$left"; fi
exit $e2e_failed
