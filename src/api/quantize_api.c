/* ember_model_quantize (include/ember.h): the public face of the GGUF
 * writer (src/llm/spark_gguf_write.c) and llama.cpp's quantization mixes
 * (src/llm/quant_mix.c). */
#include "base/status.h"
#include "ember.h"
#include "llm/spark_gguf.h"

const char *ember_quantize_types(void) { return quant_mix_names(); }

ember_status ember_model_quantize(const ember_model *model, const char *path, const char *type,
                                  int32_t n_threads, ember_progress_fn progress, void *user,
                                  size_t *n_tensors)
{
    if (n_tensors) *n_tensors = 0;
    if (!model || !path || !type)
        return ember_fail(EMBER_ERR_INVALID_ARG, "ember_model_quantize: a NULL argument");
    const quant_mix *mix = quant_mix_by_name(type);
    if (!mix)
        return ember_fail(EMBER_ERR_INVALID_ARG, "unknown quantization type '%s' (expected %s)", type,
                          quant_mix_names());
    if (n_threads < 0) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_model_quantize: %d threads", n_threads);
    ember_status st = spark_gguf_write(model, path, mix, n_threads, progress, user);
    if (!st && n_tensors) *n_tensors = spark_gguf_tensor_count(model);
    return st;
}
