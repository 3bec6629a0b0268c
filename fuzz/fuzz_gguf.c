/* libFuzzer target: gguf_parse on arbitrary bytes, then (when it parses) the
 * spark2_5 metadata -> config.json mapping and a qwen3_tts file's config keys
 * through the speech config parsers. All pure: no I/O. Every
 * input must either fail with a message and no output, or give tensors and
 * strings that lie inside the buffer and agree with their dims and types.
 *
 * Seeds (fuzz/corpus/gguf/) come from the unit tests' writers:
 *   build/tests/test_gguf --write-seeds fuzz/corpus/gguf
 *   build/tests/test_gguf_spark --write-seeds fuzz/corpus/gguf
 *   build/tests/test_tts_gguf --write-seeds fuzz/corpus/gguf */
#include "base/status.h"
#include "io/gguf.h"
#include "kernels/formats.h"
#include "llm/spark_gguf.h"
#include "tts/code2wav_config.h"
#include "tts/qwen3_tts_config.h"
#include "tts/tts_gguf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void touch(const uint8_t *p, size_t n)
{
    if (!n) return;
    volatile uint8_t sink = p[0];
    sink = p[n - 1];
    (void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gguf_file *f = NULL;
    if (gguf_parse(data, size, "fuzz.gguf", &f) != EMBER_OK) {
        if (f != NULL || ember_last_error()[0] == '\0') __builtin_trap();
        return 0;
    }
    uint32_t align = gguf_alignment(f);
    if (align == 0 || (align & (align - 1)) || gguf_data_offset(f) % align) __builtin_trap();
    for (size_t i = 0; i < gguf_n_tensors(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        const ek_format *fmt = ek_format_of(t->dtype);
        const uint8_t *p = t->data;
        if (!fmt || fmt->ggml_type != t->ggml_type || t->offset % align) __builtin_trap();
        uint64_t n = t->ne[0] / (uint64_t)fmt->block * fmt->block_bytes;
        for (int d = 1; d < GGUF_MAX_DIMS; d++) n *= t->ne[d];
        if (n != t->nbytes || p < data || t->nbytes > size || p + t->nbytes > data + size)
            __builtin_trap();
        touch(p, t->nbytes);
        if (!t->name[0] || gguf_find_tensor(f, t->name) != t) __builtin_trap();
    }
    for (size_t i = 0; i < gguf_n_kv(f); i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        if (!kv->key[0] || gguf_find(f, kv->key) != &kv->v) __builtin_trap();
        if (kv->v.type == GGUF_TYPE_ARRAY && kv->v.arr_type != GGUF_TYPE_STRING) {
            size_t bytes = (size_t)kv->v.n * gguf_type_size(kv->v.arr_type);
            if (kv->v.arr_data < data || kv->v.arr_data + bytes > data + size) __builtin_trap();
            touch(kv->v.arr_data, bytes);
        }
        if (kv->v.type == GGUF_TYPE_ARRAY && kv->v.arr_type == GGUF_TYPE_STRING)
            for (uint64_t j = 0; j < kv->v.n; j++)
                if (kv->v.arr_strs[j].s[kv->v.arr_strs[j].len] != '\0') __builtin_trap();
    }
    char *json = NULL;
    size_t len = 0;
    if (spark_gguf_config_json(f, &json, &len) == EMBER_OK) {
        if (!json || strlen(json) != len) __builtin_trap();
    } else if (json || ember_last_error()[0] == '\0') {
        __builtin_trap();
    }
    free(json);
    for (int part = TTS_PART_TALKER; part <= TTS_PART_SPEECH; part += TTS_PART_SPEECH - TTS_PART_TALKER) {
        json = NULL;
        if (tts_gguf_part_config(f, (tts_part)part, &json, &len) == EMBER_OK) {
            if (!json || strlen(json) != len) __builtin_trap();
            tts_config *tc = malloc(sizeof *tc);
            c2w_config *cc = malloc(sizeof *cc);
            if (!tc || !cc) __builtin_trap();
            ember_status st = part == TTS_PART_SPEECH ? c2w_config_parse(json, len, "fuzz.gguf", cc)
                                                      : tts_config_parse(json, len, "fuzz.gguf", tc);
            if (st && ember_last_error()[0] == '\0') __builtin_trap();
            free(tc);
            free(cc);
        } else if (json || ember_last_error()[0] == '\0') {
            __builtin_trap();
        }
        free(json);
    }
    gguf_close(f);
    return 0;
}
