#include "serve/job.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double sv_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

sv_job *sv_job_create(void)
{
    sv_job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC); /* waits measured like sv_now */
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, &attr);
    pthread_condattr_destroy(&attr);
    j->refs = 1;
    j->status = 200;
    return j;
}

void sv_job_ref(sv_job *j)
{
    pthread_mutex_lock(&j->mu);
    j->refs++;
    pthread_mutex_unlock(&j->mu);
}

void sv_job_unref(sv_job *j)
{
    if (!j) return;
    pthread_mutex_lock(&j->mu);
    int last = --j->refs == 0;
    pthread_mutex_unlock(&j->mu);
    if (!last) return;
    sv_request_free(&j->req);
    free(j->prompt);
    free(j->bounds);
    free(j->content);
    free(j->reasoning);
    cJSON_Delete(j->calls);
    free(j->out);
    pthread_cond_destroy(&j->cv);
    pthread_mutex_destroy(&j->mu);
    free(j);
}

/* Appends under mu. */
static int append_locked(sv_job *j, const char *bytes, size_t n)
{
    if (j->n_out + n > j->cap_out) {
        size_t cap = (j->n_out + n) * 2 + 256;
        char *grown = realloc(j->out, cap);
        if (!grown) return -1;
        j->out = grown;
        j->cap_out = cap;
    }
    if (n) memcpy(j->out + j->n_out, bytes, n);
    j->n_out += n;
    return 0;
}

int sv_job_write(sv_job *j, const char *bytes, size_t n)
{
    pthread_mutex_lock(&j->mu);
    int rc = append_locked(j, bytes, n);
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return rc;
}

void sv_job_finish(sv_job *j, int status, const char *bytes, size_t n)
{
    pthread_mutex_lock(&j->mu);
    if (append_locked(j, bytes, n)) status = 500;
    j->status = status;
    j->done = 1;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

int sv_job_cancelled(sv_job *j)
{
    pthread_mutex_lock(&j->mu);
    int c = j->cancelled;
    pthread_mutex_unlock(&j->mu);
    return c;
}

size_t sv_job_unread(sv_job *j)
{
    pthread_mutex_lock(&j->mu);
    size_t n = j->n_out - j->n_read;
    pthread_mutex_unlock(&j->mu);
    return n;
}

void sv_job_cancel(sv_job *j)
{
    pthread_mutex_lock(&j->mu);
    j->cancelled = 1;
    pthread_mutex_unlock(&j->mu);
}

static void deadline_ts(double deadline, struct timespec *ts)
{
    ts->tv_sec = (time_t)deadline;
    ts->tv_nsec = (long)((deadline - (double)ts->tv_sec) * 1e9);
    if (ts->tv_nsec >= 1000000000L) ts->tv_nsec = 999999999L;
}

long sv_job_read(sv_job *j, char *buf, size_t max, double wait_s)
{
    struct timespec ts;
    deadline_ts(sv_now() + wait_s, &ts);
    pthread_mutex_lock(&j->mu);
    while (j->n_read == j->n_out && !j->done)
        if (pthread_cond_timedwait(&j->cv, &j->mu, &ts) == ETIMEDOUT) break;
    long n;
    if (j->n_read < j->n_out) {
        size_t avail = j->n_out - j->n_read;
        size_t take = avail < max ? avail : max;
        memcpy(buf, j->out + j->n_read, take);
        j->n_read += take;
        n = (long)take;
    } else {
        n = j->done ? -1 : 0;
    }
    pthread_mutex_unlock(&j->mu);
    return n;
}

int sv_job_wait_done(sv_job *j, double deadline)
{
    struct timespec ts;
    deadline_ts(deadline, &ts);
    pthread_mutex_lock(&j->mu);
    while (!j->done)
        if (pthread_cond_timedwait(&j->cv, &j->mu, &ts) == ETIMEDOUT) break;
    int done = j->done;
    pthread_mutex_unlock(&j->mu);
    return done ? 0 : -1;
}
