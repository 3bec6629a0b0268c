/* The server's counters, rendered as Prometheus text for GET /metrics.
 * Any thread updates them (one mutex); gauges are set by the engine. */
#ifndef EMBER_SERVE_METRICS_H
#define EMBER_SERVE_METRICS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

enum { SV_HIST_BUCKETS = 12, SV_MAX_STATUS = 16 };

typedef struct sv_histogram {
    uint64_t counts[SV_HIST_BUCKETS + 1]; /* per bucket of sv_hist_bounds, then +Inf */
    double sum;
    uint64_t n;
} sv_histogram;

typedef struct sv_metrics {
    pthread_mutex_t mu;
    struct { int status; uint64_t n; } requests[SV_MAX_STATUS]; /* by HTTP status */
    uint64_t prompt_tokens, prompt_tokens_run, completion_tokens, rejected_full, cancelled;
    sv_histogram ttft;   /* seconds from arrival to the first generated token */
    sv_histogram ttfa;   /* speech: seconds to the first audio byte (no TTS engine yet) */
    /* gauges */
    int64_t queue_depth, active, kv_bytes_in_use, kv_bytes_budget;
    int64_t prefix_entries, prefix_bytes, prefix_snapshots;
    uint64_t prefix_hits, prefix_misses, prefix_tokens_reused;
    /* speculative decoding (serve --speculate): the acceptance rate is
     * spec_accepted / spec_drafted, ids per pass (accepted + steps) / steps */
    uint64_t spec_steps, spec_drafted, spec_accepted;
} sv_metrics;

void sv_metrics_init(sv_metrics *m);
void sv_metrics_destroy(sv_metrics *m);
void sv_metrics_request(sv_metrics *m, int status);
void sv_metrics_observe(sv_metrics *m, sv_histogram *h, double seconds);
/* The Prometheus exposition text, malloc'd; NULL when out of memory. */
char *sv_metrics_render(sv_metrics *m);

#endif
