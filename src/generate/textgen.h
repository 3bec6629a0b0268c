/* One generated response, from logits to text events: the sampler picks an
 * id, the streaming detokenizer turns it into UTF-8, stop strings cut the
 * text, and the tool-call parser splits it into content, reasoning and tool
 * calls. The model state stays with the caller (a session, or a batch in the
 * server): per step the caller hands in the logits and feeds the returned id
 * back to the model unless the step finished the response.
 *
 *     et_textgen_begin(g, prompt_ids, n);
 *     for (;;) {
 *         et_textgen_step(g, logits, &id, &finish);
 *         if (finish) break;
 *         ember_session_decode(s, id);  logits = ember_session_logits(s);
 *     }
 *     et_textgen_end(g, &finish);   // flushes; stop vs length vs tool_calls
 */
#ifndef EMBER_GENERATE_TEXTGEN_H
#define EMBER_GENERATE_TEXTGEN_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "base/stats.h"
#include "generate/sampler.h"
#include "tokenizer/tokenizer.h"
#include "generate/toolcall.h"

typedef struct et_textgen_params {
    et_sampler_params sampling;
    const char *const *stop;   /* stop strings (copied) */
    size_t n_stop;
    const int32_t *stop_ids;   /* ids that end the response (EOS, <|im_end|>; copied) */
    size_t n_stop_ids;
    int32_t max_tokens;        /* 0: no limit */
    int parse_tools;           /* hermes tool calls and <think> reasoning; else all content */
    int start_in_reasoning;    /* the prompt ended inside <think> */
    ember_stats *stats;        /* sampler and detokenizer timers (NULL: off) */
    /* OpenAI's tool_choice "required" (every tool's name) or a named
     * function (one name): the response opens with a call of one of these
     * functions. The text up to its arguments (hermes, as the chat templates
     * render a call: <tool_call>\n{"name": "NAME", "arguments": ) is forced
     * token by token: sampling is restricted to the tokens that continue one
     * of the names, so the model picks among them where they differ. A block
     * that then fails to parse (arguments that are not JSON, or no close tag
     * before the end) still comes out as a CALL of the chosen function, its
     * arguments the text the model generated for them, verbatim. Needs
     * parse_tools. Copied. */
    const char *const *force_tools;
    size_t n_force_tools;
    int single_call;           /* the response ends after its first call */
} et_textgen_params;

void et_textgen_params_default(et_textgen_params *p);

typedef enum et_finish {
    ET_FINISH_NONE = 0,
    ET_FINISH_STOP,       /* a stop id or stop string */
    ET_FINISH_LENGTH,     /* max_tokens */
    ET_FINISH_TOOL_CALLS  /* stopped, and the response called at least one tool */
} et_finish;

/* "stop", "length", "tool_calls" (OpenAI's finish_reason), or NULL for NONE. */
const char *et_finish_name(et_finish f);

typedef struct et_textgen et_textgen;

/* Events go to sink (CONTENT, REASONING, CALL; see toolcall.h). The
 * tokenizer must outlive the generator; without one (NULL) only ids come
 * out: no text events, no stop strings, no tool calls. */
ember_status et_textgen_create(const et_tokenizer *tok, int32_t vocab_size,
                               const et_textgen_params *p, et_toolcall_sink sink, void *user,
                               et_textgen **out);
void et_textgen_free(et_textgen *g);

/* Starts a response: forgets the previous one, reseeds the sampler with the
 * params' seed and records the prompt for the repetition penalty. */
ember_status et_textgen_begin(et_textgen *g, const int32_t *prompt, size_t n);

/* Samples from logits (modified in place) into *id and streams its text.
 * *finish is set when this id ended the response: a stop id (its text is
 * not emitted), a stop string, or max_tokens (the id is the last one). */
ember_status et_textgen_step(et_textgen *g, float *logits, int32_t *id, et_finish *finish);

/* Ends the response: flushes held-back text and open blocks. *finish is the
 * final reason (LENGTH stays LENGTH; STOP with a tool call is TOOL_CALLS;
 * NONE, when the caller stopped early, becomes STOP). */
ember_status et_textgen_end(et_textgen *g, et_finish *finish);

/* Ids sampled in this response (stop ids included). */
int32_t et_textgen_count(const et_textgen *g);
/* Tool calls emitted in this response. */
int32_t et_textgen_calls(const et_textgen *g);
/* The ids sampled under the force_tools constraint so far in this response
 * (0 without it): the forced opening of the call. */
int32_t et_textgen_forced(const et_textgen *g);

/* The ids that end a response for the model in dir: eos_token_id of
 * generation_config.json and config.json (an id or a list) and the
 * eos_token of tokenizer_config.json, deduplicated, at most cap. Missing
 * files are fine; malformed ones are an error. dir may be a GGUF model
 * file: then its eos/eot/eom ids and end-of-turn tokens (et_gguf_stop_ids). */
ember_status et_model_stop_ids(const char *dir, const et_tokenizer *tok, int32_t *ids, size_t cap,
                               size_t *n);

/* The sampling defaults of the model in dir, as Hugging Face reads them from
 * generation_config.json: do_sample (false or absent: greedy), temperature,
 * top_k, top_p, min_p, repetition_penalty. Fields absent keep p's values;
 * a missing file leaves p greedy. dir may be a GGUF model file: then its
 * general.sampling.* keys (et_gguf_sampling_defaults). */
ember_status et_model_sampling_defaults(const char *dir, et_sampler_params *p);

#endif
