/* libFuzzer target: ck_parse_index (model.safetensors.index.json) on
 * arbitrary bytes. Checks the invariants of a successful parse. */
#include "base/status.h"
#include "io/checkpoint.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ck_index idx;
    ember_status st = ck_parse_index((const char *)data, size, "fuzz.index.json", &idx);
    if (st != EMBER_OK) {
        if (idx.shards || idx.entries || idx.n_shards || idx.n_entries ||
            ember_last_error()[0] == '\0')
            __builtin_trap();
        return 0;
    }
    if (idx.n_entries == 0 || idx.n_shards == 0 || idx.n_shards > idx.n_entries)
        __builtin_trap();
    for (size_t i = 0; i < idx.n_shards; i++) {
        const char *s = idx.shards[i];
        if (!s[0] || strchr(s, '/') || strstr(s, ".."))
            __builtin_trap();
        if (i && strcmp(idx.shards[i - 1], s) >= 0)
            __builtin_trap();
    }
    for (size_t i = 0; i < idx.n_entries; i++) {
        if (idx.entries[i].shard >= idx.n_shards || !idx.entries[i].tensor[0])
            __builtin_trap();
        if (i && strcmp(idx.entries[i - 1].tensor, idx.entries[i].tensor) >= 0)
            __builtin_trap();
    }
    ck_index_free(&idx);
    return 0;
}
