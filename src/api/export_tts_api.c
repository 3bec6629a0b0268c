/* ember_export_onnx_tts: the public face of onnx/tts_export.c. */
#include "api/speech_internal.h"
#include "base/status.h"
#include "ember_export.h"
#include "onnx/tts_export.h"

ember_status ember_export_onnx_tts(const ember_tts *tts, const char *dir,
                                   const ember_export_params *params)
{
    if (!tts || !dir)
        return ember_fail(EMBER_ERR_INVALID_ARG, "ember_export_onnx_tts: tts or dir is NULL");
    ember_export_params p = params ? *params : ember_export_default_params();
    if (p.form >= EMBER_EXPORT_QDQ8A16 && p.form <= EMBER_EXPORT_LPBQ4A16)
        return ember_fail(EMBER_ERR_UNSUPPORTED, "export: the a16 forms are written for Spark models only "
                          "(the TTS steps have no calibration run yet)");
    if (p.form < EMBER_EXPORT_F32 || p.form > EMBER_EXPORT_QDQ4)
        return ember_fail(EMBER_ERR_INVALID_ARG, "export: unknown form %d", (int)p.form);
    return tts_onnx_export(tts->m, tts->dm, dir, p.context, p.prefill_chunk, p.per_layer, (spark_onnx_form)p.form);
}
