#!/usr/bin/env bash
# include/ember.h compiles as strict C99 and as C++, and a program written
# only against it links with the library.
source "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/use.c" <<'C'
#include "ember.h"
#include <stdio.h>
int main(void)
{
    ember_model_params mp = ember_model_default_params();
    ember_model *m = NULL;
    if (ember_model_load("models/tiny", &mp, &m) != EMBER_OK) {
        fprintf(stderr, "%s\n", ember_last_error());
        return 1;
    }
    ember_session_params sp = ember_session_default_params();
    ember_session *s = NULL;
    int32_t ids[3] = {1, 2, 3};
    int ok = ember_session_create(m, &sp, &s) == EMBER_OK &&
             ember_session_prefill(s, ids, 3) == EMBER_OK && ember_session_logits(s) != NULL;
    ember_session_free(s);
    ember_model_free(m);
    return ok ? 0 : 1;
}
C
cp "$tmp/use.c" "$tmp/use.cpp"
expect_ok header_compiles_as_c99 gcc -std=c99 -pedantic -Wall -Wextra -Werror -Iinclude -c "$tmp/use.c" -o "$tmp/use.o"
expect_ok header_compiles_as_cxx g++ -std=c++11 -pedantic -Wall -Wextra -Werror -Iinclude -c "$tmp/use.cpp" -o "$tmp/usexx.o"
if gcc -o "$tmp/use" "$tmp/use.o" build/libember.a -lcjson -lm -lpthread 2>"$tmp/err"; then
  expect_ok program_using_only_the_header_runs "$tmp/use"
else fail program_using_only_the_header_runs "$(cat "$tmp/err")"; fi
exit $e2e_failed
