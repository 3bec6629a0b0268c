/* libFuzzer target: the op audit of `ember export onnx --check`, which reads
 * ONNX files from disk. Any bytes must give a report or an error, never a
 * crash, leak or undefined behaviour. */
#include <stddef.h>
#include <stdint.h>

#include "onnx/onnx_audit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void ignore(void *user, const char *line)
{
    (void)user;
    (void)line;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ember_status st = onnx_audit(data, size, "fuzz.onnx", ignore, NULL);
    if (st != EMBER_OK && st != EMBER_ERR_UNSUPPORTED && st != EMBER_ERR_FORMAT) __builtin_trap();
    return 0;
}
