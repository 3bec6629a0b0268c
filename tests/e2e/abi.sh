#!/usr/bin/env bash
# libember.so: its SONAME, and the symbols it exports are exactly the
# committed list lib/ember.symbols (so an ABI change is a deliberate edit of
# that list) and all named ember_*.
source "$(dirname "$0")/lib.sh"
so=${EMBER_SO:-$(dirname "$EMBER")/libember.so}
if [ ! -f "$so" ]; then fail abi_library_built "no $so"; exit 1; fi
soname=$(objdump -p "$so" | awk '$1 == "SONAME" {print $2}')
if [[ $soname =~ ^libember\.so\.[0-9]+$ ]]; then pass abi_soname; else fail abi_soname "SONAME '$soname'"; fi
got=$(nm -D --defined-only "$so" | awk 'NF == 3 && $2 ~ /^[TDBRVW]$/ {print $3}' | sort -u)
want=$(grep -v '^#' lib/ember.symbols | sed '/^$/d' | sort -u)
if [ "$got" = "$want" ]; then pass abi_exported_symbols_match_the_list
else fail abi_exported_symbols_match_the_list "$(diff <(echo "$want") <(echo "$got") | grep '^[<>]' | head -20)" \
     "(< only in lib/ember.symbols, > only in $so)"; fi
if grep -qv '^ember_' <<<"$got"; then fail abi_only_ember_names "$(grep -v '^ember_' <<<"$got" | head)"
else pass abi_only_ember_names; fi
exit $e2e_failed
