/* libFuzzer target: st_parse on arbitrary bytes. Every input must either
 * parse into tensors that lie inside the buffer, or fail with a message. */
#include "base/status.h"
#include "io/safetensors.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    et_tensor *t = NULL;
    size_t n = 0;
    ember_status st = st_parse(data, size, "fuzz.safetensors", &t, &n);
    if (st != EMBER_OK) {
        /* failures leave nothing behind and always say why */
        if (t != NULL || n != 0 || ember_last_error()[0] == '\0')
            __builtin_trap();
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p = t[i].data;
        size_t want = (size_t)et_tensor_numel(&t[i]) * et_dtype_size(t[i].dtype);
        if (t[i].nbytes != want || p < data || p + t[i].nbytes > data + size)
            __builtin_trap();
        /* touch the bytes so ASan checks the range */
        if (t[i].nbytes) {
            volatile uint8_t sink = p[0];
            sink = p[t[i].nbytes - 1];
            (void)sink;
        }
        if (strlen(t[i].name) == 0)
            __builtin_trap();
    }
    st_tensors_free(t, n);
    return 0;
}
