/*
 * ember_text.h - text: tokenizer, chat template, generation, conversations.
 *
 * Included by ember.h; include either. Compiles as C99 and C++.
 *
 * Conventions of this header (and of all of ember's):
 * - Every call that can fail returns an ember_status; on failure
 *   ember_last_error() (per thread) says what and where, outputs are left
 *   NULL/zero and nothing is leaked. The library never prints or exits.
 * - Memory the library hands out (`char **`, `int32_t **` outputs) is the
 *   caller's and is released with ember_free().
 * - Loaded objects (ember_tokenizer, ember_chat_template, ember_model) are
 *   immutable: any number of threads may use one at once. Objects with state
 *   (ember_session, ember_conversation) are used by one thread at a time;
 *   only the *_cancel calls may come from any thread.
 * - Callbacks run on the calling thread, in order; returning non-zero from
 *   one stops the call, which then returns EMBER_ERR_CANCELLED.
 *
 *     ember_tokenizer *tok;   ember_tokenizer_load("Spark-X2.5-1.7B/", &tok);
 *     ember_chat_template *t; ember_chat_template_load("Spark-X2.5-1.7B/", &t);
 *     ember_conversation_params cp = ember_conversation_default_params();
 *     cp.tools_json = "[{\"type\": \"function\", ...}]";
 *     ember_conversation *c;  ember_conversation_create(model, tok, t, &cp, &c);
 *     ember_conversation_add(c, "user", "Weather in Paris?");
 *     ember_generate_params gp = ember_generate_default_params();
 *     gp.on_text = print_delta;  gp.on_tool_call = run_tool;
 *     ember_generate_result r;
 *     ember_conversation_respond(c, &gp, &r);   // only new tokens are run
 */
#ifndef EMBER_TEXT_H
#define EMBER_TEXT_H

#include "ember.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Releases memory the library returned through an output pointer. NULL is fine. */
void ember_free(void *p);

/* ---- tokenizer ------------------------------------------------------- */

/* A Hugging Face tokenizer (tokenizer.json; or vocab.json + merges.txt; or
 * the byte-level BPE a GGUF file carries in its tokenizer.ggml.* keys). */
typedef struct ember_tokenizer ember_tokenizer;

/* path: a tokenizer.json file, a model directory holding one, or a GGUF
 * model file (read back as the tokenizer.json it was made from).
 * Errors: IO (missing file), FORMAT (bad JSON, missing or inconsistent
 * tokenizer.ggml.* keys), UNSUPPORTED (a model type or a GGUF
 * tokenizer.ggml.model / .pre ember does not know, named). */
ember_status ember_tokenizer_load(const char *path, ember_tokenizer **out);
void ember_tokenizer_free(ember_tokenizer *tok);

/* text: len bytes of UTF-8 (invalid UTF-8 is EMBER_ERR_INVALID_ARG).
 * add_special: add the post-processor's special tokens (BOS), as Hugging
 * Face's add_special_tokens. *ids (ember_free) may be NULL when *n_ids is 0. */
ember_status ember_tokenizer_encode(const ember_tokenizer *tok, const char *text, size_t len,
                                    int add_special, int32_t **ids, size_t *n_ids);
/* *text (ember_free): NUL-terminated UTF-8, *len bytes (len may be NULL);
 * byte sequences the ids spell that are not UTF-8 come back as U+FFFD.
 * skip_special: leave special tokens out. Ids outside the vocabulary: INVALID_ARG. */
ember_status ember_tokenizer_decode(const ember_tokenizer *tok, const int32_t *ids, size_t n,
                                    int skip_special, char **text, size_t *len);
/* The largest id + 1, added tokens included. */
int32_t ember_tokenizer_vocab_size(const ember_tokenizer *tok);
/* The vocabulary entry of id as stored (byte-level pieces look like "Ġthe"),
 * NULL for no such id. Owned by the tokenizer. */
const char *ember_tokenizer_piece(const ember_tokenizer *tok, int32_t id);
/* The id of a vocabulary entry, -1 when absent. */
int32_t ember_tokenizer_find(const ember_tokenizer *tok, const char *piece);
/* 1 when id is a special (added, special) token. */
int ember_tokenizer_is_special(const ember_tokenizer *tok, int32_t id);
/* The ids that end a turn for the model in model_dir: eos_token_id of
 * generation_config.json and config.json, and tokenizer_config.json's
 * eos_token, deduplicated, at most cap of them. Missing files are fine;
 * malformed ones are EMBER_ERR_FORMAT. model_dir may be a GGUF file: its
 * tokenizer.ggml.eos/eot/eom_token_id and the end-of-turn tokens llama.cpp
 * also stops at (<|im_end|>, <|endoftext|>, <|eot_id|>, ...). */
ember_status ember_tokenizer_end_of_turn_ids(const ember_tokenizer *tok, const char *model_dir,
                                             int32_t *ids, size_t cap, size_t *n);

/* ---- chat template --------------------------------------------------- */

/* The model's own chat template (tokenizer_config.json's chat_template, or
 * chat_template.jinja / .json; a GGUF file's tokenizer.chat_template) with
 * its special tokens. */
typedef struct ember_chat_template ember_chat_template;

/* model_dir: a model directory or a GGUF file. No template: EMBER_ERR_IO. */
ember_status ember_chat_template_load(const char *model_dir, ember_chat_template **out);
/* A template from source; bos/eos may be NULL. */
ember_status ember_chat_template_from_string(const char *source, const char *bos, const char *eos,
                                             ember_chat_template **out);
void ember_chat_template_free(ember_chat_template *t);

typedef struct ember_chat_params {
    int add_generation_prompt; /* default 1 */
    int enable_thinking;       /* -1 (default): not passed; 0/1: passed to the template */
    const char *extra_json;    /* an object of more template variables, or NULL */
} ember_chat_params;

ember_chat_params ember_chat_default_params(void);

/* messages_json: an array of OpenAI messages ({role, content, tool_calls?,
 * reasoning_content?, tool_call_id?}); tools_json: an array of OpenAI tools,
 * or NULL. *prompt (ember_free): the rendered text. Errors: FORMAT (bad
 * JSON, a template error naming the line). */
ember_status ember_chat_template_render(const ember_chat_template *t, const char *messages_json,
                                        const char *tools_json, const ember_chat_params *p,
                                        char **prompt);

/* ---- generation ------------------------------------------------------ */

typedef enum ember_text_kind {
    EMBER_TEXT_CONTENT = 0, /* the reply */
    EMBER_TEXT_REASONING    /* inside <think>...</think>, without the tags */
} ember_text_kind;

typedef struct ember_tool_call {
    const char *id;        /* "call_0", "call_1", ... per response */
    const char *name;
    const char *arguments; /* a compact JSON object */
} ember_tool_call;

/* A text delta: len bytes of UTF-8 (whole characters, not NUL-terminated).
 * Valid during the call only. Non-zero cancels. */
typedef int (*ember_text_fn)(void *user, ember_text_kind kind, const char *text, size_t len);
/* One complete tool call; pointers valid during the call only. Non-zero cancels. */
typedef int (*ember_tool_call_fn)(void *user, const ember_tool_call *call);
/* One sampled token id (a final stop id included), before its text events.
 * Non-zero cancels. */
typedef int (*ember_token_fn)(void *user, int32_t id);

typedef struct ember_logit_bias {
    int32_t id;
    float bias;
} ember_logit_bias;

/* Speculative decoding: a cheap guess of the next few ids is checked by one
 * forward pass over all of them (the weights read once), so each accepted
 * guess is an id for a fraction of a step. The ids that come out are the
 * ones plain decoding gives, greedy or sampled (same seed, same ids). */
typedef enum ember_speculate {
    EMBER_SPECULATE_NONE = 0,
    EMBER_SPECULATE_NGRAM, /* prompt lookup: what followed the latest earlier
                              occurrence of the last 3, 2 or 1 ids */
    EMBER_SPECULATE_DRAFT  /* a draft model's greedy guesses (draft_model: a
                              smaller checkpoint with the same tokenizer) */
} ember_speculate;

typedef struct ember_generate_params {
    /* sampling, in Hugging Face's order: bias, repetition, presence/frequency,
     * temperature, top-k, top-p, min-p */
    float temperature;        /* 0: greedy. default 1 */
    int32_t top_k;            /* 0: off (default) */
    float top_p;              /* 1: off (default) */
    float min_p;              /* 0: off (default) */
    float repetition_penalty; /* 1: off (default); over prompt and reply */
    float presence_penalty;   /* 0: off (default); OpenAI's */
    float frequency_penalty;  /* 0: off (default); OpenAI's */
    const ember_logit_bias *logit_bias; /* copied; may be NULL */
    size_t n_logit_bias;
    uint64_t seed;            /* same seed, same ids; default 0 */
    /* stopping: the first of these ends the reply */
    int32_t max_tokens;       /* 0: until a stop; default 256 */
    const char *const *stop;  /* stop strings (not emitted); copied */
    size_t n_stop;
    const int32_t *stop_ids;  /* e.g. ember_tokenizer_end_of_turn_ids(); copied */
    size_t n_stop_ids;
    /* tool calls and reasoning */
    int parse_tools;          /* 1 (default): split <think> reasoning and <tool_call> blocks */
    /* NULL or "auto" (default): the model decides; "none": no tools offered
     * (conversations leave them out of the prompt); "required": the reply
     * opens with a call of one of tool_names; any other string: a call of
     * that function, and the reply ends after it. The opening up to the
     * arguments is forced token by token. */
    const char *tool_choice;
    const char *const *tool_names; /* for "required" (conversations fill it from their tools) */
    size_t n_tool_names;
    /* events (NULL: not wanted) */
    ember_text_fn on_text;
    ember_tool_call_fn on_tool_call;
    void *user;
    /* step statistics (ember_stats.h); NULL: off. Per sampled token: the
     * series token, sampler, detokenize and decode_step (the forward step,
     * added when absent), prefill once. With speculate: verify_step (one
     * per verify pass) instead of decode_step, and each token's time is its
     * pass's shared by the ids the pass gave. */
    ember_stats *stats;
    ember_token_fn on_token;  /* each sampled id (NULL: not wanted); gets user */
    /* speculative decoding (see ember_speculate); not with the onnx backend */
    ember_speculate speculate; /* EMBER_SPECULATE_NONE (default) */
    int32_t draft_max;         /* the most drafted ids per verify pass; the count
                                  adapts to the acceptance within 1..draft_max.
                                  0: 8 */
    const ember_model *draft_model; /* for EMBER_SPECULATE_DRAFT: its own session
                                  follows the reply (the prompt is run through
                                  it too, but for what it kept of the session's
                                  previous call); NULL otherwise */
} ember_generate_params;

/* The neutral settings above. */
ember_generate_params ember_generate_default_params(void);
/* Applies the model's generation_config.json (do_sample, temperature,
 * top_k, top_p, min_p, repetition_penalty) over p; greedy when it is absent
 * or says do_sample false, as Hugging Face. model_dir may be a GGUF file:
 * its general.sampling.* keys (greedy unless general.sampling.temp > 0). */
ember_status ember_generate_params_from_model(const char *model_dir, ember_generate_params *p);

typedef enum ember_finish {
    EMBER_FINISH_NONE = 0,
    EMBER_FINISH_STOP,       /* a stop id or string */
    EMBER_FINISH_LENGTH,     /* max_tokens, or the session's context is full */
    EMBER_FINISH_TOOL_CALLS, /* stopped after calling at least one tool */
    EMBER_FINISH_CANCELLED   /* a callback or *_cancel */
} ember_finish;

/* "stop", "length", "tool_calls" (OpenAI's finish_reason), "cancelled", "". */
const char *ember_finish_name(ember_finish f);

typedef struct ember_generate_result {
    ember_finish finish;
    int32_t prompt_tokens;     /* the prompt's tokens */
    int32_t cached_tokens;     /* of those, already in the cache (not run again) */
    int32_t completion_tokens; /* sampled (a final stop id included) */
    int32_t tool_calls;
    double prefill_ms;         /* running the new prompt tokens */
    double first_token_ms;     /* from the call to the first sampled token */
    double decode_ms;          /* from the first to the last sampled token */
    double total_ms;
    /* speculative decoding (zero without it) */
    int32_t verify_steps;      /* forward passes that verified drafts */
    int32_t drafted_tokens;    /* drafted ids they ran */
    int32_t accepted_tokens;   /* of those, the ones that agreed */
    int32_t draft_prefill_tokens; /* prompt tokens the draft model ran: its
                                  session stays with the session between
                                  calls, so a later call runs only what it
                                  does not hold yet (a chat turn: the new
                                  messages) */
} ember_generate_result;

/* Generates after `prompt`: prefills the n_prompt ids after what the session
 * already holds, then samples until a stop, max_tokens, a full context or a
 * cancel. Afterwards the session holds the prompt and every sampled token but
 * the last (a stop id is never fed). tok may be NULL: then no text events,
 * stop strings or tool calls, ids only. res may be NULL. On
 * EMBER_ERR_CANCELLED res says what was done. Thread: the session's. */
ember_status ember_session_generate(ember_session *session, const ember_tokenizer *tok,
                                    const int32_t *prompt, size_t n_prompt,
                                    const ember_generate_params *p, ember_generate_result *res);

/* Stops the generation running on this session at its next token (from any
 * thread; async-signal-safe). A cancel that arrives while none runs stops the
 * next one before its first token. */
void ember_session_cancel(ember_session *session);

/* ---- prompt cache files ---------------------------------------------- */

/* A session's state saved to a file and restored, so that a long prompt
 * (an agent's system prompt and tools) is not run again after a restart.
 * The file holds the tokens, every cached key and value (full layers: all
 * positions; sliding layers: their windows), the session's marks, the KV
 * format and a fingerprint of the model (configuration, weights and their
 * format). Restored state gives the same logits, bit for bit, as running
 * the tokens again on the same model, kernels and KV format. Files are
 * versioned and checksummed; one written for another model, weight format
 * or KV format, or a damaged one, is refused naming what differs. Thread:
 * the session's. */

/* Keeps a copy of the sliding-window layers' rows at the current position
 * (window-1 rows per sliding layer and kv head, in the KV format): a point
 * where a later prompt that agrees with this one only up to here can
 * resume, in memory or through a saved file (full layers keep every
 * position anyway). At most 64 are kept, the earliest goes first; reset
 * drops them. Errors: NO_MEMORY. */
ember_status ember_session_mark(ember_session *session);

/* Writes the session's state to path: tokens are the n_tokens ids it holds
 * (n_tokens == ember_session_position; INVALID_ARG otherwise). Atomic: the
 * bytes go to a temporary file beside path, are flushed (fsync) and renamed
 * over it, so a crash mid-save leaves the previous file whole. Errors:
 * INVALID_ARG, IO (naming the path), NO_MEMORY. */
ember_status ember_session_save(const ember_session *session, const int32_t *tokens, size_t n_tokens,
                                const char *path);

/* Restores into the session the longest prefix of prompt[0..n_prompt) that
 * path holds, leaving at least the last prompt token to run (feed
 * prompt[*n_restored..] next): all of the file's tokens when they begin the
 * prompt, else the latest of its marks before the first difference, else
 * none (the session is then reset). prompt NULL: everything the file holds
 * (for a caller who knows what it saved). The session's previous tokens and
 * marks are replaced by the file's; logits are cleared. Errors, with the
 * session as it was: IO (missing file), FORMAT (not a prompt-cache file, a
 * truncated or corrupt one), UNSUPPORTED (another version, model, weight
 * format or KV format), CONTEXT_FULL (more tokens than max_context). */
ember_status ember_session_load(ember_session *session, const char *path, const int32_t *prompt,
                                size_t n_prompt, size_t *n_restored);

/* ---- conversation ---------------------------------------------------- */

/* Messages, the chat template and a session that keeps its cache across
 * turns: each reply renders the whole conversation and runs only the tokens
 * past what the session holds. When the rendering diverges inside the last
 * reply (templates drop old reasoning, re-serialise tool calls), the session
 * goes back to the end of the previous prompt, for which it keeps a copy of
 * the sliding layers' windows (window-1 positions per sliding layer, in the
 * KV format); a divergence earlier than that (a cleared conversation, other
 * questions after the same system message) goes back to a second copy, at
 * the end of the system message and tools; earlier still starts over.
 * The model, tokenizer and template must outlive it. One thread at a time. */
typedef struct ember_conversation ember_conversation;

typedef struct ember_conversation_params {
    ember_session_params session; /* default: ember_session_default_params() */
    const char *system;           /* a system message, or NULL; copied */
    const char *tools_json;       /* an array of OpenAI tools, or NULL; copied */
    int enable_thinking;          /* -1 (default): not passed to the template */
    const char *model_dir;        /* a model directory or GGUF file; when set:
                                     end-of-turn ids from it (else the
                                     tokenizer's EOS and <|im_end|> if present) */
} ember_conversation_params;

ember_conversation_params ember_conversation_default_params(void);

ember_status ember_conversation_create(const ember_model *model, const ember_tokenizer *tok,
                                       const ember_chat_template *tmpl,
                                       const ember_conversation_params *p,
                                       ember_conversation **out);
void ember_conversation_free(ember_conversation *c);

/* Appends a message (role: "user", "system", "assistant", ...). */
ember_status ember_conversation_add(ember_conversation *c, const char *role, const char *content);
/* Appends the result of a tool call the last reply made. */
ember_status ember_conversation_add_tool_result(ember_conversation *c, const char *tool_call_id,
                                                const char *content);
/* The assistant's reply to the messages so far, appended to them (its
 * content, reasoning_content and tool_calls). p's stop_ids, when none are
 * given, are the conversation's end-of-turn ids; tool_names come from the
 * tools. After a reply with tool calls, add each result and respond again. */
ember_status ember_conversation_respond(ember_conversation *c, const ember_generate_params *p,
                                        ember_generate_result *res);
/* The messages as a JSON array (ember_free). */
ember_status ember_conversation_messages(const ember_conversation *c, char **json);
/* Drops every message but the system one; the cache is kept for reuse. */
void ember_conversation_clear(ember_conversation *c);
/* Tokens the session holds. */
int32_t ember_conversation_cached_tokens(const ember_conversation *c);
/* ember_session_cancel on the conversation's session; any thread. */
void ember_conversation_cancel(ember_conversation *c);

/* The conversation in a prompt-cache file (ember_session_save's format and
 * guarantees): its messages, the tokens its session holds with their keys
 * and values, and its two resume points (the end of the system part, the
 * end of the last prompt). The tools are the caller's to give again at
 * create. */
ember_status ember_conversation_save(const ember_conversation *c, const char *path);
/* Replaces the conversation's messages and cache with those saved in path:
 * the next reply runs only the tokens past what the cache holds. Errors as
 * ember_session_load, with the conversation as it was. */
ember_status ember_conversation_load(ember_conversation *c, const char *path);

#ifdef __cplusplus
}
#endif

#endif /* EMBER_TEXT_H */
