/* The speech commands' voice options (cli_tts_voice.h), over the public
 * API alone. */
#include "cli_tts_voice.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

const char cli_tts_voice_usage[] =
    "  --instruct TEXT                how to speak (1.7B CustomVoice) or the voice described\n"
    "                                 (VoiceDesign); a 0.6B model ignores it, a Base model\n"
    "                                 refuses it\n"
    "  --ref-audio A.wav              clone the voice of a recording with a Base model (any\n"
    "                                 common WAV format and rate): from its speaker x-vector,\n"
    "  --ref-text T                   and with what it says, in context (its codes and\n"
    "                                 transcript in the prompt)\n"
    "  --voice V.voice                a voice saved by `ember voice create` (no encoders run)\n"
    "  --xvector-only                 ignore a saved voice's transcript and codes\n";

int cli_tts_voice_option(int c, const char *arg, cli_tts_voice *v)
{
    switch (c) {
    case TTS_OPT_INSTRUCT: v->instruct = arg; return 1;
    case TTS_OPT_REF_AUDIO: v->ref_audio = arg; return 1;
    case TTS_OPT_REF_TEXT: v->ref_text = arg; return 1;
    case TTS_OPT_VOICE: v->path = arg; return 1;
    case TTS_OPT_XVECTOR_ONLY: v->xvector_only = 1; return 1;
    default: return 0;
    }
}

/* --ref-audio: the recording's voice from the Base model's encoders (the
 * x-vector; with --ref-text its codes and transcript too), made n times. */
static ember_voice *reference_voice(const cli_tts_opts *to, const cli_tts_voice *v, const char *cmd, int n,
                                    double *timing, double *load_ms)
{
    ember_voice_params vp = ember_voice_default_params();
    vp.kernels = to->params.kernels;
    vp.n_threads = to->params.n_threads;
    vp.codes = v->ref_text != NULL;
    ember_voice_encoder *enc = NULL;
    ember_voice *voice = NULL;
    float *pcm = NULL;
    size_t samples = 0;
    double t0 = cli_now_s();
    int ok = ember_voice_encoder_load(to->dir, &vp, &enc) == EMBER_OK;
    if (load_ms) *load_ms = 1e3 * (cli_now_s() - t0);
    for (int i = 0; ok && i < n; i++) {
        ember_voice_free(voice);
        ember_free(pcm);
        voice = NULL, pcm = NULL;
        t0 = cli_now_s();
        /* the clip's read is part of making a voice from it */
        ok = ember_audio_read(v->ref_audio, 24000, 60.0, &pcm, &samples, NULL) == EMBER_OK &&
             ember_voice_create(enc, pcm, samples, v->ref_text, &voice) == EMBER_OK;
        if (timing) timing[i] = 1e3 * (cli_now_s() - t0);
    }
    if (!ok) {
        fprintf(stderr, "ember %s: --ref-audio %s: %s\n", cmd, v->ref_audio, ember_last_error());
        ember_voice_free(voice);
        voice = NULL;
    }
    ember_free(pcm);
    ember_voice_encoder_free(enc);
    return voice;
}

int cli_tts_voice_request(const cli_tts_opts *to, const cli_tts_voice *v, const char *cmd, int n_make,
                          double *timing, double *load_ms, ember_speech_request *rq, ember_voice **voice)
{
    *voice = NULL;
    if (v->ref_text && !v->ref_audio) {
        fprintf(stderr, "ember %s: --ref-text says what --ref-audio says: give both\n", cmd);
        return 2;
    }
    if (v->ref_audio && v->path) {
        fprintf(stderr, "ember %s: --ref-audio or --voice, not both\n", cmd);
        return 2;
    }
    rq->instruct = v->instruct;
    rq->xvector_only = v->xvector_only;
    if (v->ref_audio && !(*voice = reference_voice(to, v, cmd, n_make > 0 ? n_make : 1, timing, load_ms)))
        return 1;
    if (v->path && ember_voice_load(v->path, voice)) {
        fprintf(stderr, "ember %s: %s\n", cmd, ember_last_error());
        return 1;
    }
    rq->voice = *voice;
    return 0;
}

/* The voice's frames and whether it carries a transcript. */
static void voice_summary(const ember_voice *voice, int32_t *frames, int32_t *text_bytes)
{
    char *json = NULL;
    cJSON *o = NULL;
    *frames = *text_bytes = 0;
    if (voice && !ember_voice_info(voice, &json) && (o = cJSON_Parse(json))) {
        const cJSON *f = cJSON_GetObjectItem(o, "frames"), *t = cJSON_GetObjectItem(o, "ref_text");
        *frames = cJSON_IsNumber(f) ? (int32_t)f->valuedouble : 0;
        *text_bytes = cJSON_IsString(t) ? (int32_t)strlen(t->valuestring) : 0;
    }
    cJSON_Delete(o);
    ember_free(json);
}

int32_t cli_tts_voice_rows(const ember_voice *voice)
{
    int32_t frames, text_bytes;
    voice_summary(voice, &frames, &text_bytes);
    return frames + text_bytes;
}

const char *cli_tts_mode(const ember_speech_request *rq, const cli_tts_info *info)
{
    if (rq->voice || rq->xvector) {
        int32_t frames, text_bytes;
        voice_summary(rq->voice, &frames, &text_bytes);
        const int in_context = (rq->voice ? text_bytes > 0 && frames > 0 : rq->ref_text && rq->n_ref_frames > 0);
        return in_context && !rq->xvector_only ? "clone_in_context" : "clone_xvector";
    }
    if (!strcmp(info->model_type, "voice_design")) return "voice_design";
    if (rq->instruct && rq->instruct[0]) return info->small ? "instruct_ignored" : "instruct";
    return "speaker";
}
