/* libFuzzer target: the input is a prompt-cache file (src/llm/state_file.h)
 * read into a session of the committed tiny model (run from the repository
 * root). Any input must load or fail with an error, never crash or leak.
 * Each input is read twice: as it is, and with its trailing checksum made
 * right, so that mutations reach the checks behind the checksum. A file
 * that loads must leave a session that holds its tokens and runs a token. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/checksum.h"
#include "ember.h"
#include "llm/state_file.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static ember_model *model;
static ember_session *session;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    ember_session_params sp = ember_session_default_params();
    sp.max_context = 128;
    sp.n_threads = 1;
    if (ember_model_load("models/tiny", NULL, &model) || ember_session_create(model, &sp, &session))
        __builtin_trap(); /* run from the repository root */
    return 0;
}

static void parse(const uint8_t *data, size_t size)
{
    llm_saved saved;
    ember_session_reset(session);
    if (llm_state_parse(session, data, size, "fuzz", &saved) != EMBER_OK) return;
    if ((size_t)ember_session_position(session) != saved.n_tokens) __builtin_trap();
    for (size_t k = 0; k < saved.n_snaps; k++)
        if (saved.snaps[k].pos < 1 || (size_t)saved.snaps[k].pos > saved.n_tokens ||
            (k && saved.snaps[k].pos <= saved.snaps[k - 1].pos))
            __builtin_trap();
    if (saved.n_tokens < 128 && ember_session_decode(session, 0) != EMBER_OK) __builtin_trap();
    llm_saved_free(&saved);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    parse(data, size);
    if (size < 8) return 0;
    uint8_t *fixed = malloc(size);
    if (!fixed) return 0;
    memcpy(fixed, data, size);
    uint64_t sum = cksum64_of(fixed, size - 8);
    for (int i = 0; i < 8; i++) fixed[size - 8 + i] = (uint8_t)(sum >> (8 * i));
    parse(fixed, size);
    free(fixed);
    return 0;
}
