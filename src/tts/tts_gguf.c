/* Reading a Qwen3-TTS model from its directory or from one qwen3_tts GGUF
 * file (layout in tts_gguf.h): the name prefixes, the configs kept as
 * metadata strings, and which part of the file each loader reads. */
#include "tts/tts_gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/status.h"
#include "io/gguf.h"
#include "io/read_file.h"

/* Hugging Face prefix <-> GGUF prefix. Longer prefixes of one root come
 * first, so the first match either way is the right one. */
static const char *const prefixes[][2] = {
    {"talker.code_predictor.model.", "cp."},
    {"talker.code_predictor.", "cpx."},
    {"talker.model.", "tk."},
    {"talker.", "tkx."},
    {"speaker_encoder.", "spk."},
    {"decoder.", "dec."},
    {"encoder.quantizer.acoustic_residual_vector_quantizer.", "enc.acoustic_rvq."},
    {"encoder.quantizer.semantic_residual_vector_quantizer.", "enc.semantic_rvq."},
    {"encoder.encoder_transformer.", "enc.tfm."},
    {"encoder.", "enc."},
};
#define N_PREFIXES (sizeof prefixes / sizeof *prefixes)

static const char *swap_prefix(const char *name, int from, char *buf, size_t cap)
{
    for (size_t i = 0; i < N_PREFIXES; i++) {
        size_t n = strlen(prefixes[i][from]);
        if (strncmp(name, prefixes[i][from], n) || !name[n]) continue;
        return (size_t)snprintf(buf, cap, "%s%s", prefixes[i][!from], name + n) < cap ? buf : NULL;
    }
    return NULL;
}

const char *tts_gguf_name(const char *hf_name, char *buf, size_t cap)
{
    return swap_prefix(hf_name, 0, buf, cap);
}

const char *tts_gguf_hf_name(const char *gguf_name, char *buf, size_t cap)
{
    return swap_prefix(gguf_name, 1, buf, cap);
}

/* ---- configs kept as metadata strings ------------------------------------------ */

/* A copy of string `key` (NUL-terminated). */
static ember_status copy_str(const gguf_file *f, const char *key, char **json, size_t *len)
{
    const char *s;
    size_t n;
    ember_status st = gguf_get_str(f, key, &s, &n);
    if (st) return st;
    if (memchr(s, '\0', n))
        return ember_fail(EMBER_ERR_FORMAT, "%s: key '%s' holds a NUL byte", gguf_label(f), key);
    *json = malloc(n + 1);
    if (!*json) return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", gguf_label(f));
    memcpy(*json, s, n + 1);
    *len = n;
    return EMBER_OK;
}

ember_status tts_gguf_part_config(const gguf_file *f, tts_part part, char **json, size_t *len)
{
    *json = NULL;
    *len = 0;
    ember_status st = gguf_check_arch(f, TTS_GGUF_ARCH, "a speech model is a '" TTS_GGUF_ARCH
                                                        "' file (ember quantize writes one)");
    return st ? st : copy_str(f, part == TTS_PART_SPEECH ? TTS_GGUF_KEY_DECODER : TTS_GGUF_KEY_CONFIG, json, len);
}

static ember_status talker_config(const gguf_file *f, char **json, size_t *len)
{
    return tts_gguf_part_config(f, TTS_PART_TALKER, json, len);
}

static ember_status speech_config(const gguf_file *f, char **json, size_t *len)
{
    return tts_gguf_part_config(f, TTS_PART_SPEECH, json, len);
}

static const ck_gguf_map talker_map = {TTS_GGUF_ARCH, talker_config, tts_gguf_hf_name};
static const ck_gguf_map speech_map = {TTS_GGUF_ARCH, speech_config, tts_gguf_hf_name};

/* ---- opening a part ------------------------------------------------------------- */

static bool is_dir(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

ember_status tts_ck_open(const char *path, tts_part part, ck_dir **out, char *label, size_t cap)
{
    *out = NULL;
    if (gguf_is_gguf_file(path)) {
        const bool speech = part == TTS_PART_SPEECH;
        snprintf(label, cap, "%s (%s)", path, speech ? TTS_GGUF_KEY_DECODER : TTS_GGUF_KEY_CONFIG);
        ember_status st = ck_open_gguf(path, speech ? &speech_map : &talker_map, out);
        if (st) return st;
        /* the other parts' tensors are other loaders' business */
        static const char *const others[][3] = {
            [TTS_PART_TALKER] = {"speaker_encoder.", "decoder.", "encoder."},
            [TTS_PART_SPEAKER] = {"talker.", "decoder.", "encoder."},
            [TTS_PART_SPEECH] = {"talker.", "speaker_encoder.", NULL},
        };
        for (int i = 0; i < 3 && others[part][i]; i++) ck_skip_prefix(*out, others[part][i]);
        return EMBER_OK;
    }
    char dir[1100];
    snprintf(dir, sizeof dir, "%s", path);
    if (part == TTS_PART_SPEECH) {
        snprintf(dir, sizeof dir, "%s/speech_tokenizer", path);
        if (!is_dir(dir)) snprintf(dir, sizeof dir, "%s", path);
    }
    snprintf(label, cap, "%s/config.json", dir);
    return ck_open(dir, out);
}

ember_status tts_read_generation_config(const char *path, const ck_dir *ck, char **text, size_t *len)
{
    *text = NULL;
    *len = 0;
    const gguf_file *f = ck_gguf(ck);
    if (f) return gguf_find(f, TTS_GGUF_KEY_GENERATION) ? copy_str(f, TTS_GGUF_KEY_GENERATION, text, len)
                                                        : EMBER_OK;
    char file[1200];
    struct stat sb;
    snprintf(file, sizeof file, "%s/generation_config.json", path);
    if (stat(file, &sb) != 0) return EMBER_OK; /* optional: the code defaults apply */
    return io_read_text_file(file, 1 << 20, text, len);
}
