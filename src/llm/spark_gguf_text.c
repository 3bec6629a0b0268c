/* The text-side metadata of a GGUF spark_gguf_write produces, besides the
 * vocab (spark_gguf_vocab.c): the chat template and the sampling defaults,
 * so the file alone is a whole model (text/gguf_text.c reads them back).
 *   from a directory: tokenizer.chat_template (and .tool_use, listed in
 *     tokenizer.chat_templates, as gguf-py names extra templates): the text
 *     et_chat_source_load finds, the one `ember chat` renders;
 *     general.sampling.*: generation_config.json in llama.cpp's keys, with
 *     Hugging Face's meaning kept: do_sample false (or absent) is written as
 *     temp 0, greedy in both readers (llama.cpp's converter copies the
 *     temperature whatever do_sample says)
 *   from a GGUF: its general.sampling.* keys, copied (tokenizer.* come
 *     with the vocab). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/status.h"
#include "io/json_text.h"
#include "io/read_file.h"
#include "llm/spark.h"
#include "llm/spark_gguf.h"
#include "template/chat.h"

static ember_status put_template(gguf_writer *w, const char *dir)
{
    et_chat_source s;
    ember_status st = et_chat_source_load(dir, &s);
    if (st == EMBER_ERR_IO) return EMBER_OK; /* no template: nothing to store */
    if (st) return st;
    st = gguf_set_str(w, "tokenizer.chat_template", s.main);
    if (!st && s.tool_use) {
        const char *names[] = {"tool_use"};
        st = gguf_set_str(w, "tokenizer.chat_template.tool_use", s.tool_use);
        if (!st) st = gguf_set_str_arr(w, "tokenizer.chat_templates", names, NULL, 1);
    }
    et_chat_source_free(&s);
    return st;
}

static ember_status put_number(gguf_writer *w, const cJSON *cfg, const char *name, const char *key,
                               bool integer)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, name);
    if (!cJSON_IsNumber(v)) return EMBER_OK;
    return integer ? gguf_set_i32(w, key, (int32_t)v->valuedouble)
                   : gguf_set_f32(w, key, (float)v->valuedouble);
}

static ember_status put_sampling(gguf_writer *w, const char *dir)
{
    char path[4096];
    struct stat sb;
    char *text = NULL;
    size_t len;
    cJSON *cfg = NULL;
    if ((size_t)snprintf(path, sizeof path, "%s/generation_config.json", dir) >= sizeof path)
        return ember_fail(EMBER_ERR_INVALID_ARG, "%s: path too long", dir);
    if (stat(path, &sb) != 0) return EMBER_OK;
    ember_status st = io_read_text_file(path, (size_t)16 << 20, &text, &len);
    if (!st) st = io_json_parse(text, len, path, "file", &cfg);
    free(text);
    if (st) return st;
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cfg, "do_sample"))) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(cfg, "temperature");
        st = gguf_set_f32(w, "general.sampling.temp", cJSON_IsNumber(t) ? (float)t->valuedouble : 1.0f);
        if (!st) st = put_number(w, cfg, "top_k", "general.sampling.top_k", true);
        if (!st) st = put_number(w, cfg, "top_p", "general.sampling.top_p", false);
        if (!st) st = put_number(w, cfg, "min_p", "general.sampling.min_p", false);
    } else {
        st = gguf_set_f32(w, "general.sampling.temp", 0.0f);
    }
    if (!st) st = put_number(w, cfg, "repetition_penalty", "general.sampling.penalty_repeat", false);
    cJSON_Delete(cfg);
    return st;
}

ember_status spark_gguf_text(gguf_writer *w, const ember_model *m, bool with_template)
{
    const gguf_file *src = ck_gguf(m->ck);
    size_t copied;
    if (src) return gguf_copy_keys(w, src, "general.sampling.", &copied);
    const char *dir = ck_path(m->ck);
    ember_status st = with_template ? put_template(w, dir) : EMBER_OK;
    return st ? st : put_sampling(w, dir);
}
