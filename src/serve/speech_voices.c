#include "serve/speech_voices.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "io/read_file.h"

#define MAX_VOICES 1024

/* NAME of NAME.voice, when it fits and is a plain name. */
static int voice_name(const char *file, char *name)
{
    size_t n = strlen(file);
    if (n <= 6 || strcmp(file + n - 6, ".voice") || n - 6 >= SV_VOICE_NAME_MAX || file[0] == '.') return 0;
    memcpy(name, file, n - 6);
    name[n - 6] = '\0';
    return 1;
}

static ember_status load_one(const char *dir, const char *file, int32_t dim, voice_data *out)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    char *bytes = NULL;
    size_t len = 0;
    ember_status st = io_read_text_file(path, (size_t)64 << 20, &bytes, &len);
    if (!st) st = voice_parse((const uint8_t *)bytes, len, path, out);
    free(bytes);
    if (!st && out->xvector_dim != dim) {
        st = ember_fail(EMBER_ERR_INVALID_ARG, "%s: made with %s, a %d-value x-vector; this speech model takes %d",
                        path, out->model, out->xvector_dim, dim);
        voice_data_free(out);
    }
    return st;
}

ember_status sv_voices_load(const char *dir, int32_t xvector_dim, sv_voices *out)
{
    memset(out, 0, sizeof *out);
    if (!xvector_dim)
        return ember_fail(EMBER_ERR_INVALID_ARG, "--voices %s: the speech model is not a Base model, "
                                                 "so it cannot speak in saved voices", dir);
    DIR *d = opendir(dir);
    if (!d) return ember_fail(EMBER_ERR_IO, "--voices %s: cannot open the directory", dir);
    out->names = calloc(MAX_VOICES, sizeof *out->names);
    out->voices = calloc(MAX_VOICES, sizeof *out->voices);
    ember_status st = out->names && out->voices ? EMBER_OK : ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
    for (struct dirent *e; !st && (e = readdir(d));) {
        if (!voice_name(e->d_name, out->names[out->n])) continue;
        if (out->n == MAX_VOICES) {
            st = ember_fail(EMBER_ERR_INVALID_ARG, "--voices %s: more than %d voices", dir, MAX_VOICES);
            break;
        }
        st = load_one(dir, e->d_name, xvector_dim, &out->voices[out->n]);
        if (!st) out->n++;
    }
    closedir(d);
    if (st) sv_voices_free(out);
    return st;
}

const voice_data *sv_voices_find(const sv_voices *v, const char *name)
{
    for (int32_t i = 0; name && i < v->n; i++)
        if (!strcmp(v->names[i], name)) return &v->voices[i];
    return NULL;
}

void sv_voices_free(sv_voices *v)
{
    for (int32_t i = 0; v->voices && i < v->n; i++) voice_data_free(&v->voices[i]);
    free(v->names);
    free(v->voices);
    memset(v, 0, sizeof *v);
}
