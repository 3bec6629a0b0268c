/* OpenAI response shapes, written into a job as the engine produces them:
 * streamed, each event is one SSE `data:` chunk (chat.completion.chunk or
 * text_completion); not streamed, the events are collected and the whole
 * chat.completion / text_completion body is written at the end. */
#ifndef EMBER_SERVE_FORMAT_H
#define EMBER_SERVE_FORMAT_H

#include "serve/job.h"
#include "generate/toolcall.h"

/* A textgen event (content, reasoning, a tool call). -1: out of memory. */
int sv_format_event(sv_job *j, const et_toolcall_event *e);

/* The end: finish_reason, usage, `data: [DONE]`; marks the job done. */
void sv_format_finish(sv_job *j, const char *finish_reason, int32_t prompt_tokens);

/* Ends the job with an error: an error object as the body (status e->status)
 * or, once a stream has started, as a last SSE event before [DONE]. */
void sv_format_error(sv_job *j, const sv_error *e);

#endif
