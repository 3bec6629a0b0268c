/* What a GGUF model file says about text besides its tokenizer (that is
 * tok_gguf.c): the chat template, the ids that end a turn, the sampling
 * defaults. A GGUF has no tokenizer_config.json or generation_config.json,
 * so these stand in for them; every internal call that takes a model
 * directory (et_chat_source_load, et_model_stop_ids,
 * et_model_sampling_defaults, et_tokenizer_load) takes a .gguf file too and
 * comes here. Pure functions of a parsed file (fuzzed). */
#ifndef EMBER_TOKENIZER_GGUF_TEXT_H
#define EMBER_TOKENIZER_GGUF_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "io/gguf.h"
#include "template/chat.h"
#include "generate/sampler.h"

/* tokenizer.chat_template (required: EMBER_ERR_IO without it, as a model
 * directory without a template) and tokenizer.chat_template.tool_use;
 * bos_token and eos_token are the texts of tokenizer.ggml.bos_token_id and
 * eos_token_id, the variables llama.cpp gives a template. */
ember_status et_gguf_chat_source(const gguf_file *f, et_chat_source *out);

/* The ids that end a turn: tokenizer.ggml.eos_token_id, eot_token_id and
 * eom_token_id, then every token whose text is one llama.cpp also ends
 * generation at (<|im_end|>, <|endoftext|>, <|eot_id|>, ...), in id order;
 * deduplicated, at most cap. Ids past the token list are left out. */
ember_status et_gguf_stop_ids(const gguf_file *f, int32_t *ids, size_t cap, size_t *n);

/* general.sampling.* (what llama.cpp's converter copies from
 * generation_config.json, and ember's writer too): greedy unless
 * general.sampling.temp is above 0; then temp, top_k, top_p and min_p where
 * present. general.sampling.penalty_repeat is the repetition penalty either
 * way. Fields absent keep p's values. */
ember_status et_gguf_sampling_defaults(const gguf_file *f, et_sampler_params *p);

#endif
