#include "serve/metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Upper bounds (seconds) of the latency buckets. */
static const double hist_bounds[SV_HIST_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                    0.5,   1,    2.5,   5,    10,  30};

void sv_metrics_init(sv_metrics *m)
{
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->mu, NULL);
}

void sv_metrics_destroy(sv_metrics *m) { pthread_mutex_destroy(&m->mu); }

void sv_metrics_request(sv_metrics *m, int status)
{
    pthread_mutex_lock(&m->mu);
    for (int i = 0; i < SV_MAX_STATUS; i++)
        if (m->requests[i].status == status || m->requests[i].status == 0) {
            m->requests[i].status = status;
            m->requests[i].n++;
            break;
        }
    pthread_mutex_unlock(&m->mu);
}

void sv_metrics_observe(sv_metrics *m, sv_histogram *h, double seconds)
{
    pthread_mutex_lock(&m->mu);
    int b = 0;
    while (b < SV_HIST_BUCKETS && seconds > hist_bounds[b]) b++;
    h->counts[b]++;
    h->sum += seconds;
    h->n++;
    pthread_mutex_unlock(&m->mu);
}

typedef struct text {
    char *buf;
    size_t n, cap;
    int failed;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = t->failed ? 0 : vsnprintf(t->buf + t->n, t->cap - t->n, fmt, ap);
        va_end(ap);
        if (t->failed || n < 0) {
            t->failed = 1;
            return;
        }
        if ((size_t)n < t->cap - t->n) {
            t->n += (size_t)n;
            return;
        }
        char *grown = realloc(t->buf, t->cap * 2 + (size_t)n);
        if (!grown) {
            t->failed = 1;
            return;
        }
        t->buf = grown;
        t->cap = t->cap * 2 + (size_t)n;
    }
}

static void histogram(text *t, const char *name, const char *help, const sv_histogram *h)
{
    uint64_t cum = 0;
    put(t, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    for (int b = 0; b < SV_HIST_BUCKETS; b++) {
        cum += h->counts[b];
        put(t, "%s_bucket{le=\"%g\"} %llu\n", name, hist_bounds[b], (unsigned long long)cum);
    }
    cum += h->counts[SV_HIST_BUCKETS];
    put(t, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n", name,
        (unsigned long long)cum, name, h->sum, name, (unsigned long long)h->n);
}

static void scalar(text *t, const char *name, const char *type, const char *help, double v)
{
    put(t, "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n", name, help, name, type, name, v);
}

char *sv_metrics_render(sv_metrics *m)
{
    text t = {malloc(4096), 0, 4096, 0};
    if (!t.buf) return NULL;
    t.buf[0] = '\0';
    pthread_mutex_lock(&m->mu);
    put(&t, "# HELP ember_requests_total HTTP requests answered, by status.\n"
            "# TYPE ember_requests_total counter\n");
    for (int i = 0; i < SV_MAX_STATUS && m->requests[i].status; i++)
        put(&t, "ember_requests_total{status=\"%d\"} %llu\n", m->requests[i].status,
            (unsigned long long)m->requests[i].n);
    scalar(&t, "ember_prompt_tokens_total", "counter", "Prompt tokens of admitted requests.",
           (double)m->prompt_tokens);
    scalar(&t, "ember_prompt_tokens_run_total", "counter",
           "Prompt tokens actually run through the model (the rest came from the prefix cache).",
           (double)m->prompt_tokens_run);
    scalar(&t, "ember_completion_tokens_total", "counter", "Generated tokens.",
           (double)m->completion_tokens);
    scalar(&t, "ember_rejected_queue_full_total", "counter", "Requests answered 503: queue full.",
           (double)m->rejected_full);
    scalar(&t, "ember_cancelled_total", "counter",
           "Sequences freed because their client went away.", (double)m->cancelled);
    histogram(&t, "ember_time_to_first_token_seconds", "From arrival to the first generated token.",
              &m->ttft);
    histogram(&t, "ember_time_to_first_audio_seconds",
              "From arrival to the first audio byte of /v1/audio/speech (no speech engine yet).",
              &m->ttfa);
    scalar(&t, "ember_queue_depth", "gauge", "Requests waiting for admission.", (double)m->queue_depth);
    scalar(&t, "ember_active_sequences", "gauge", "Sequences being generated.", (double)m->active);
    scalar(&t, "ember_kv_bytes_in_use", "gauge", "KV cache bytes reserved by admitted sequences.",
           (double)m->kv_bytes_in_use);
    scalar(&t, "ember_kv_bytes_budget", "gauge", "KV cache bytes the engine may reserve.",
           (double)m->kv_bytes_budget);
    scalar(&t, "ember_prefix_cache_entries", "gauge", "Conversations held by the prefix cache.",
           (double)m->prefix_entries);
    scalar(&t, "ember_prefix_cache_bytes", "gauge", "Bytes held by the prefix cache.",
           (double)m->prefix_bytes);
    scalar(&t, "ember_prefix_cache_snapshots", "gauge",
           "Sliding-ring snapshots at message boundaries held by the prefix cache.",
           (double)m->prefix_snapshots);
    scalar(&t, "ember_prefix_cache_hits_total", "counter", "Requests that resumed a cached prefix.",
           (double)m->prefix_hits);
    scalar(&t, "ember_prefix_cache_misses_total", "counter", "Requests that found no cached prefix.",
           (double)m->prefix_misses);
    scalar(&t, "ember_prefix_cache_tokens_reused_total", "counter",
           "Prompt tokens taken from the prefix cache instead of being run.",
           (double)m->prefix_tokens_reused);
    scalar(&t, "ember_speculative_verify_passes_total", "counter",
           "Verify passes of speculating sequences (each yields its accepted ids plus one).",
           (double)m->spec_steps);
    scalar(&t, "ember_speculative_drafted_tokens_total", "counter",
           "Drafted ids run through verify passes.", (double)m->spec_drafted);
    scalar(&t, "ember_speculative_accepted_tokens_total", "counter",
           "Drafted ids the model agreed with (acceptance: accepted / drafted).",
           (double)m->spec_accepted);
    pthread_mutex_unlock(&m->mu);
    if (t.failed) {
        free(t.buf);
        return NULL;
    }
    return t.buf;
}
