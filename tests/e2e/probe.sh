#!/usr/bin/env bash
# `ember probe`: on this machine the JSON matches what the shell reads from
# /proc (processor count, MemTotal, the ISA flags); on the committed snapshot
# trees the class is the expected one; EMBER_HW_PROFILE as a JSON value and
# as a file path, its errors; --derive on the committed models.
source "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# jget FILE KEY: a top-level value of a JSON file (lists joined by spaces).
jget() { $PY -c 'import json,sys; v=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."): v=v[k]
print(" ".join(map(str, v)) if isinstance(v, list) else v)' "$1" "$2"; }

# ---- this machine against /proc ----
if env -u EMBER_HW_PROFILE "$EMBER" probe --json >"$tmp/live.json" 2>"$tmp/err"; then
  pass probe_live_runs
  want=$(grep -c '^processor' /proc/cpuinfo)
  got=$(jget "$tmp/live.json" n_logical)
  [ "$got" = "$want" ] && pass probe_live_n_logical || fail probe_live_n_logical "json $got, /proc/cpuinfo $want"
  want=$(( $(awk '/^MemTotal:/ {print $2}' /proc/meminfo) * 1024 ))
  got=$(jget "$tmp/live.json" ram_total_bytes)
  [ "$got" = "$want" ] && pass probe_live_ram_total || fail probe_live_ram_total "json $got, /proc/meminfo $want"
  # The flags: the first flags/Features line through the table of
  # shared/spec/edge-runtime.md (cpuinfo token -> profile name), sorted.
  want=$(grep -m1 -E '^(flags|Features)' /proc/cpuinfo | cut -d: -f2 | tr ' ' '\n' | awk '
    BEGIN { n["avx2"]="avx2"; n["fma"]="fma"; n["f16c"]="f16c"; n["avx512f"]="avx512";
            n["avx512_vnni"]="avx512_vnni"; n["avx512_bf16"]="avx512_bf16"; n["avx_vnni"]="avx_vnni";
            n["amx_tile"]="amx_tile"; n["amx_bf16"]="amx_bf16"; n["amx_int8"]="amx_int8";
            n["asimd"]="neon"; n["asimdhp"]="fp16_arith"; n["asimddp"]="dotprod"; n["i8mm"]="i8mm";
            n["bf16"]="bf16"; n["sve"]="sve"; n["sve2"]="sve2"; n["sme"]="sme" }
    ($1 in n) { print n[$1] }' | sort -u | tr '\n' ' ' | sed 's/ $//')
  got=$(jget "$tmp/live.json" cpu_flags)
  [ "$got" = "$want" ] && pass probe_live_flags || fail probe_live_flags "json '$got'" "/proc '$want'"
  src=$(jget "$tmp/live.json" source)
  [ "$src" = probe ] && pass probe_live_source || fail probe_live_source "source '$src'"
else
  fail probe_live_runs "$(cat "$tmp/err")"
fi

# the process's affinity (a container's share) is read from /proc/self/status
if command -v taskset >/dev/null 2>&1; then
  got=$(taskset -c 0 "$EMBER" probe --json | $PY -c 'import json,sys; print(json.load(sys.stdin)["allowed_cpus"])')
  [ "$got" = "[0]" ] && pass probe_live_affinity || fail probe_live_affinity "taskset -c 0: allowed_cpus $got"
fi

# ---- the snapshot trees ----
for pair in x86-server:x86_cpu snapdragon-phone:npu_phone jetson-orin:jetson \
            raspberry-pi-5:arm64_cpu cuda-desktop:cuda_discrete; do
  machine=${pair%%:*} want=${pair##*:}
  got=$("$EMBER" probe --json --root "tests/data/hw/$machine" 2>&1 | $PY -c 'import json,sys; print(json.load(sys.stdin)["class"])' 2>&1)
  [ "$got" = "$want" ] && pass "probe_class_$machine" || fail "probe_class_$machine" "got '$got', want '$want'"
done
# --root wins over EMBER_HW_PROFILE
got=$(EMBER_HW_PROFILE='{"class": "jetson"}' "$EMBER" probe --json --root tests/data/hw/raspberry-pi-5 |
      $PY -c 'import json,sys; d=json.load(sys.stdin); print(d["class"], d["source"])')
[ "$got" = "arm64_cpu probe" ] && pass probe_root_wins || fail probe_root_wins "$got"

# ---- EMBER_HW_PROFILE ----
EMBER_HW_PROFILE='{"class": "npu_phone", "n_logical": 8, "ram_total_bytes": 8589934592, "no_such_key": [1]}' \
  "$EMBER" probe --json >"$tmp/env.json" 2>"$tmp/err"
got="$(jget "$tmp/env.json" source) $(jget "$tmp/env.json" class) $(jget "$tmp/env.json" n_physical) $(jget "$tmp/env.json" ram_available_bytes)"
[ "$got" = "override:env-json npu_phone 8 8589934592" ] && pass probe_env_json || fail probe_env_json "$got" "$(cat "$tmp/err")"
echo '{"class": "cuda_discrete", "n_logical": 16, "smt_siblings": [8,9,10,11,12,13,14,15]}' >"$tmp/hw.json"
EMBER_HW_PROFILE="$tmp/hw.json" "$EMBER" probe --json >"$tmp/file.json" 2>"$tmp/err"
got="$(jget "$tmp/file.json" source) $(jget "$tmp/file.json" class) $(jget "$tmp/file.json" n_physical)"
[ "$got" = "override:file:$tmp/hw.json cuda_discrete 8" ] && pass probe_env_file || fail probe_env_file "$got" "$(cat "$tmp/err")"
# a probed profile fed back is the same profile
"$EMBER" probe --json --root tests/data/hw/jetson-orin >"$tmp/orin.json"
EMBER_HW_PROFILE="$tmp/orin.json" "$EMBER" probe --json >"$tmp/orin2.json"
if $PY -c 'import json,sys; a,b=(json.load(open(f)) for f in sys.argv[1:]); a.pop("source"); b.pop("source"); sys.exit(a!=b)' \
     "$tmp/orin.json" "$tmp/orin2.json"; then pass probe_json_feeds_back; else fail probe_json_feeds_back; fi
expect_error probe_env_bad_json "EMBER_HW_PROFILE: value: hardware profile is not valid JSON" \
  env EMBER_HW_PROFILE='{"n_logical": 4,' "$EMBER" probe
expect_error probe_env_bad_type "key 'n_logical' must be an integer" \
  env EMBER_HW_PROFILE='{"n_logical": "four"}' "$EMBER" probe
expect_error probe_env_missing_file "$tmp/none.json: cannot open" \
  env EMBER_HW_PROFILE="$tmp/none.json" "$EMBER" probe

# ---- derived profiles ----
out=$("$EMBER" probe --root tests/data/hw/raspberry-pi-5 --derive tests/data/hw/models/spark-1.7b 2>&1)
if [ "$(grep -c '^  ' <<<"$out")" -eq 7 ] && grep -q '^  weights q4_0' <<<"$out" && grep -q '^  threads 4 on cpus 0-3' <<<"$out"
then pass probe_derive_text; else fail probe_derive_text "$out"; fi
if "$EMBER" probe --derive models/tts-tiny --json >"$tmp/tts.json" 2>"$tmp/err" &&
   [ "$(jget "$tmp/tts.json" model.kind)" = tts ] && [ "$(jget "$tmp/tts.json" profile.kv_type)" = f32 ]
then pass probe_derive_tts_json; else fail probe_derive_tts_json "$(cat "$tmp/err")"; fi
# models/tiny's weight bytes are its safetensors files
want=$(( $(stat -c %s models/tiny/*.safetensors | paste -sd+) ))
got=$("$EMBER" probe --derive models/tiny --json | $PY -c 'import json,sys; print(json.load(sys.stdin)["model"]["weight_bytes"])')
[ "$got" = "$want" ] && pass probe_derive_file_bytes || fail probe_derive_file_bytes "got $got, want $want"
expect_error probe_derive_missing_model "config.json: cannot open" "$EMBER" probe --derive "$tmp/no-model"
expect_error probe_derive_context "context 5000 must be in [1, 4096]" "$EMBER" probe --derive models/tiny --context 5000
expect_error probe_bad_option "usage: ember probe" "$EMBER" probe --frobnicate
exit $e2e_failed
