/* Spark-X2.5 in GGUF (llama.cpp architecture "spark2_5"), both ways.
 *
 * Reading: spark_gguf_map plugs into ck_open_gguf. Its config callback turns
 * the spark2_5.* metadata into the config.json text spark_config_parse reads
 * (so that parser stays the one place that validates a config), and its name
 * callback maps GGUF tensor names to the Hugging Face ones spark_load.c asks
 * for. The table of names lives in spark_gguf.c.
 *
 * Metadata -> config.json:
 *   spark2_5.block_count                    num_hidden_layers      required
 *   spark2_5.context_length                 max_position_embeddings required
 *   spark2_5.embedding_length               hidden_size            required
 *   spark2_5.feed_forward_length            intermediate_size      required
 *   spark2_5.attention.head_count           num_attention_heads    required
 *   spark2_5.attention.head_count_kv        num_key_value_heads    default head_count
 *   spark2_5.attention.key_length           head_dim               default embedding/heads
 *   spark2_5.attention.value_length         (must equal key_length)
 *   spark2_5.attention.layer_norm_rms_epsilon rms_norm_eps         required
 *   spark2_5.attention.sliding_window       sliding_window         required with sliding layers
 *   spark2_5.attention.sliding_window_pattern layer_types (bool per layer, true = sliding;
 *                                                                  absent: all full)
 *   spark2_5.rope.dimension_count           full partial_rotary_factor = it / key_length
 *   spark2_5.rope.dimension_count_swa       sliding factor (default key_length: 1.0)
 *   spark2_5.rope.freq_base                 full rope_theta        default 10000
 *   spark2_5.rope.freq_base_swa             sliding rope_theta     default freq_base
 *   spark2_5.attention.gate_activation      gate_attn_act_mode     ember's own key, written
 *                                                                  only for "silu"; default sigmoid
 *   tokenizer.ggml.{bos,eos,padding}_token_id  bos/eos/pad_token_id
 *   token_embd.weight rows                  vocab_size (== the token list's length if any)
 *   output.weight absent                    tie_word_embeddings
 *   blk.0.attn_gate.weight present          headwise_attn_output_gate
 *   blk.0.attn_qkv.bias / ffn_up.bias       attention_bias / mlp_bias
 * general.architecture must be "spark2_5". */
#ifndef EMBER_LLM_SPARK_GGUF_H
#define EMBER_LLM_SPARK_GGUF_H

#include <stdbool.h>

#include "ember.h"
#include "io/checkpoint.h"
#include "io/gguf.h"
#include "io/tensor.h"
#include "llm/quant_mix.h"

extern const ck_gguf_map spark_gguf_map;

/* The callbacks of spark_gguf_map (exposed for tests and the fuzzer). */
ember_status spark_gguf_config_json(const gguf_file *f, char **json, size_t *len);
const char *spark_gguf_hf_name(const char *gguf_name, char *buf, size_t cap);

/* Writes model `m` as a spark2_5 GGUF file: each weight matrix converted to
 * the format `mix` gives it (quant_mix.h; row by row through fp32, streamed;
 * copied as is when already in that format), norms and biases as F32, the fused q_k_v_proj as one attn_qkv
 * tensor (rows Q, K, V), and the tokenizer metadata llama.cpp needs (see
 * spark_gguf_vocab), the chat template and sampling defaults
 * (spark_gguf_text). Rows are converted in batches by n_threads threads
 * (0: one per CPU); the bytes do not depend on it. `progress` (may be NULL)
 * gets bytes of tensor data done and total; non-zero cancels. Nothing is
 * left at `path` on failure. */
ember_status spark_gguf_write(const ember_model *m, const char *path, const quant_mix *mix, int n_threads,
                              int (*progress)(void *ctx, size_t done, size_t total), void *ctx);

/* Tensors spark_gguf_write writes for `m`. */
size_t spark_gguf_tensor_count(const ember_model *m);

/* Tokenizer metadata for a GGUF written from `m` (spark_gguf_vocab.c):
 *   source is a GGUF file: its tokenizer.* keys, copied;
 *   source directory has tokenizer.json (a BPE model): tokenizer.ggml.model
 *     "gpt2", .pre "spark2_5", .tokens (vocab_size entries, gaps filled with
 *     "[PADn]"), .token_type, .merges ("a b"), bos/eos/padding ids;
 *   otherwise a synthesized vocab of vocab_size distinct tokens (the 256
 *     byte-level tokens, the special ids, "[PADn]" fillers, no merges), and
 *     *synthesized is set so the caller can say so in general.description. */
ember_status spark_gguf_vocab(gguf_writer *w, const ember_model *m, bool *synthesized);

/* The chat template and sampling defaults for a GGUF written from `m`
 * (spark_gguf_text.c): from a directory, tokenizer.chat_template(.tool_use)
 * when with_template and the directory has one, and general.sampling.* from
 * generation_config.json; from a GGUF, its general.sampling.* keys. */
ember_status spark_gguf_text(gguf_writer *w, const ember_model *m, bool with_template);

#endif
