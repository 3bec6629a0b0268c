/* One request between an HTTP thread and the engine thread.
 *
 * The HTTP thread fills the job (the validated request, its prompt ids and
 * textgen params), submits it and then only reads: the engine appends the
 * response bytes (SSE chunks, or the whole JSON body at the end) to `out`
 * and signals. The client going away (or the HTTP side giving up) sets
 * `cancelled`; the engine checks it every step and frees the sequence. Both
 * sides hold a reference; the last one out frees the job. Every field under
 * "shared" is read and written under mu. */
#ifndef EMBER_SERVE_JOB_H
#define EMBER_SERVE_JOB_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "serve/request.h"
#include "generate/textgen.h"

typedef struct sv_job {
    /* set by the HTTP thread before submitting; read-only afterwards */
    sv_request req;
    char id[48];
    const char *model_name;
    long long created;         /* unix seconds */
    int32_t *prompt;           /* the rendered and tokenized prompt */
    size_t n_prompt;
    int32_t *bounds;           /* chat: prompt positions where a message starts
                                  (increasing, in (0, n_prompt)); the engine
                                  snapshots them for the prefix cache */
    size_t n_bounds;
    int32_t max_tokens;        /* resolved: request's, or what the context leaves */
    et_textgen_params gp;      /* points into req (stop strings, bias) */
    sv_speculate speculate;    /* resolved: OFF, NGRAM or DRAFT (the server's model) */
    int32_t draft_max;         /* resolved: drafts per verify pass when speculating */
    double t_submit, deadline; /* monotonic seconds */

    /* engine side only: what the response collected */
    char *content, *reasoning;
    size_t n_content, n_reasoning;
    cJSON *calls;              /* the tool_calls array */
    int sent_role;             /* streaming: the first chunk (with the role) went out */
    int32_t completion_tokens, cached_tokens;
    int speculated;            /* it was speculated: usage carries the counts */
    int64_t spec_passes, spec_drafted, spec_accepted;
    double t_first_token;      /* 0 until the first token */

    /* shared */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;
    char *out;                 /* response bytes */
    size_t n_out, cap_out, n_read;
    int done;                  /* no more bytes will come */
    int cancelled;             /* the client is gone: stop generating */
    int status;                /* HTTP status of a non-streamed response */
} sv_job;

/* A job with one reference (the caller's). NULL when out of memory. */
sv_job *sv_job_create(void);
void sv_job_ref(sv_job *j);
void sv_job_unref(sv_job *j);

/* Engine side: appends bytes (and wakes the reader); `finish` appends the
 * last ones, sets the status and marks the job done. Return -1 when out of
 * memory (the job is then finished with what it has). */
int sv_job_write(sv_job *j, const char *bytes, size_t n);
void sv_job_finish(sv_job *j, int status, const char *bytes, size_t n);
int sv_job_cancelled(sv_job *j);
/* Bytes written and not yet read (a slow client's backlog). */
size_t sv_job_unread(sv_job *j);

/* HTTP side: marks the client gone. */
void sv_job_cancel(sv_job *j);

/* HTTP side: waits until bytes are unread or the job is done, at most
 * wait_s seconds. Copies up to max unread bytes into buf; returns the count,
 * 0 on a timeout with nothing new, -1 when done and everything was read. */
long sv_job_read(sv_job *j, char *buf, size_t max, double wait_s);

/* HTTP side: waits until the job is done or deadline (monotonic seconds)
 * passes; 0 when done. */
int sv_job_wait_done(sv_job *j, double deadline);

/* Monotonic seconds. */
double sv_now(void);

#endif
