/* libFuzzer target: config.json parsing for Spark-X2.5. Any input must give
 * either a config or an error, never a crash, leak or undefined behaviour. */
#include <stddef.h>
#include <stdint.h>

#include "llm/spark_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    spark_config c;
    if (spark_config_parse((const char *)data, size, "fuzz/config.json", &c) == EMBER_OK) {
        /* A config that parses must be one the model can be built from. */
        if (c.n_layers < 1 || c.n_layers > SPARK_MAX_LAYERS || c.n_heads % c.n_kv_heads ||
            c.rope[SPARK_SLIDING].rot_dims > c.head_dim || c.rope[SPARK_FULL].rot_dims > c.head_dim)
            __builtin_trap();
    }
    return 0;
}
