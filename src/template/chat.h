/* The chat layer: a model's chat template (from tokenizer_config.json or
 * chat_template.jinja/.json, or a GGUF's tokenizer.chat_template) rendered
 * with the variables transformers.js's apply_chat_template passes:
 * messages, add_generation_prompt, tools, documents (null), the special
 * tokens the config names (bos_token, eos_token, unk_token, sep_token,
 * pad_token, cls_token, mask_token) and the extra keyword arguments
 * (enable_thinking, ...). A loaded template is immutable; several threads
 * may render it at once. */
#ifndef EMBER_TEMPLATE_CHAT_H
#define EMBER_TEMPLATE_CHAT_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "base/status.h"

typedef struct et_chat_template et_chat_template;

#define ET_CHAT_N_SPECIAL 7

/* A model's chat template as found, not yet parsed. */
typedef struct et_chat_source {
    char *main;     /* "default", or the only template */
    char *tool_use; /* the one used when tools are given, or NULL */
    /* bos_token, eos_token, unk_token, sep_token, pad_token, cls_token,
     * mask_token: the variables the template gets (NULL: not set) */
    char *special[ET_CHAT_N_SPECIAL];
    char main_label[4200], tool_use_label[4200]; /* where each came from, for messages */
} et_chat_source;

/* path: a model dir or a GGUF file.
 * A dir: tokenizer_config.json ("chat_template" as a string, or a list of
 * {name, template} where "default" is the main one and "tool_use" the one
 * for requests with tools), else chat_template.jinja, else
 * chat_template.json; the special tokens (a string or an {"content": ...}
 * object) from tokenizer_config.json.
 * A GGUF: tokenizer.chat_template (and tokenizer.chat_template.tool_use);
 * bos_token and eos_token are the texts of tokenizer.ggml.bos/eos_token_id,
 * as llama.cpp passes them (gguf_text.c).
 * No template at all is EMBER_ERR_IO. On failure *out holds nothing. */
ember_status et_chat_source_load(const char *path, et_chat_source *out);
void et_chat_source_free(et_chat_source *s);
ember_status et_chat_template_from_source(const et_chat_source *s, et_chat_template **out);

/* et_chat_source_load, then et_chat_template_from_source. */
ember_status et_chat_template_load(const char *path, et_chat_template **out);
/* bos/eos may be NULL (then the variables are not set). */
ember_status et_chat_template_from_string(const char *src, const char *bos, const char *eos,
                                          et_chat_template **out);

typedef struct {
    const cJSON *messages; /* array of {role, content, tool_calls?, reasoning_content?, ...} */
    const cJSON *tools;    /* array of OpenAI-style tool objects, or NULL */
    bool add_generation_prompt;
    int enable_thinking; /* -1: not passed, 0/1: passed as a variable */
    const cJSON *extra;  /* an object of more template variables, or NULL */
} et_chat_input;

/* *out: a malloc'd NUL-terminated prompt; the caller frees it. */
ember_status et_chat_render(const et_chat_template *t, const et_chat_input *in, char **out);
void et_chat_template_free(et_chat_template *t);

/* Where the messages of `in` end in `rendered` (what et_chat_render made
 * of in): for each k of the last `cap` message counts below the whole,
 * the first k messages rendered alone (no generation prompt) when that text
 * is a prefix of rendered, its length. A template that renders a message
 * differently once more follow (Qwen3 drops the reasoning of old turns)
 * simply has no boundary there. *ends: malloc'd byte offsets, increasing,
 * each in (0, strlen(rendered)); NULL when *n is 0. */
ember_status et_chat_message_ends(const et_chat_template *t, const et_chat_input *in,
                                  const char *rendered, size_t cap, size_t **ends, size_t *n);

#endif
