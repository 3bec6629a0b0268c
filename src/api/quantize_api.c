/* ember_model_quantize (include/ember.h) and ember_tts_quantize
 * (include/ember_speech.h): the public faces of the GGUF writers
 * (src/llm/spark_gguf_write.c, src/tts/tts_gguf_write.c) and llama.cpp's
 * quantization mixes (src/llm/quant_mix.c). */
#include "base/status.h"
#include "ember.h"
#include "llm/spark_gguf.h"
#include "tts/tts_gguf.h"

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

ember_status ember_tts_quantize(const char *dir, const char *path, const char *type,
                                const char *speech_type, ember_progress_fn progress, void *user,
                                size_t *n_tensors)
{
    if (n_tensors) *n_tensors = 0;
    if (!dir || !path || !type)
        return ember_fail(EMBER_ERR_INVALID_ARG, "ember_tts_quantize: a NULL argument");
    const quant_mix *mix = quant_mix_single_by_name(type),
                    *speech = quant_mix_single_by_name(speech_type ? speech_type : "f32");
    if (!mix)
        return ember_fail(EMBER_ERR_INVALID_ARG, "speech models take one format for every matrix, not "
                          "'%s' (a mix or unknown): f32, f16, bf16, q8_0, q4_0, q4_k, ...", type);
    if (!speech || !et_dtype_is_float(quant_mix_base(speech)))
        return ember_fail(EMBER_ERR_INVALID_ARG, "speech decoder type '%s': expected f32, f16 or bf16",
                          speech_type);
    return tts_gguf_write(dir, path, quant_mix_base(mix), quant_mix_base(speech), progress, user, n_tensors);
}
