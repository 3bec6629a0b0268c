/* Step statistics: the recorder, its summaries, the attribution and the dump. */
#include "base/stats.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/status.h"
#include "io/write_file.h"

typedef struct stat_series {
    char name[EMBER_STATS_NAME_MAX];
    ember_stat_domain domain;
    uint64_t count;
    double sum, max;
    int32_t n_samples;
    float *samples; /* EMBER_STATS_RESERVOIR; float keeps 7 digits of a ms figure */
} stat_series;

struct ember_stats {
    char role[EMBER_STATS_NAME_MAX];
    double started_at; /* wall clock, seconds since the epoch */
    int n_series;
    stat_series series[EMBER_STATS_MAX_SERIES];
};

static const struct {
    const char *name;
    ember_stat_domain domain;
} builtin[EMBER_STAT_N_BUILTIN] = {
    [EMBER_STAT_QUEUE_WAIT] = {"queue_wait", EMBER_STAT_TEXT},
    [EMBER_STAT_PREFILL] = {"prefill", EMBER_STAT_TEXT},
    [EMBER_STAT_DECODE_FULL] = {"decode_full", EMBER_STAT_TEXT},
    [EMBER_STAT_DECODE_SLIDING] = {"decode_sliding", EMBER_STAT_TEXT},
    [EMBER_STAT_SAMPLER] = {"sampler", EMBER_STAT_TEXT},
    [EMBER_STAT_DETOKENIZE] = {"detokenize", EMBER_STAT_TEXT},
    [EMBER_STAT_TOKEN] = {"token", EMBER_STAT_TEXT},
    [EMBER_STAT_TALKER] = {"talker", EMBER_STAT_SPEECH},
    [EMBER_STAT_PREDICTOR] = {"predictor", EMBER_STAT_SPEECH},
    [EMBER_STAT_CODEC_DECODE] = {"codec_decode", EMBER_STAT_SPEECH},
    [EMBER_STAT_HANDOFF] = {"handoff", EMBER_STAT_SPEECH},
};

static double wall_clock_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

const char *ember_stats_path(const char *flag, const char *env)
{
    if (flag && flag[0]) return flag;
    if (env && env[0]) return env;
    return NULL;
}

static bool name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n >= EMBER_STATS_NAME_MAX) return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
              c == '.'))
            return false;
    }
    return true;
}

static ember_status new_series(ember_stats *st, const char *name, ember_stat_domain domain, int *id)
{
    if (st->n_series >= EMBER_STATS_MAX_SERIES)
        return ember_fail(EMBER_ERR_INVALID_ARG, "stats: series '%s': all %d series are in use", name,
                          EMBER_STATS_MAX_SERIES);
    stat_series *s = &st->series[st->n_series];
    memset(s, 0, sizeof *s);
    s->samples = malloc(sizeof(float) * EMBER_STATS_RESERVOIR);
    if (!s->samples) return ember_fail(EMBER_ERR_NO_MEMORY, "stats: series '%s': out of memory", name);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->domain = domain;
    *id = st->n_series++;
    return EMBER_OK;
}

ember_status ember_stats_create(const char *role, ember_stats **out)
{
    if (!out) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_stats_create: NULL out");
    *out = NULL;
    if (role && !name_ok(role))
        return ember_fail(EMBER_ERR_INVALID_ARG, "stats: role '%s' is not [A-Za-z0-9_.]{1,31}", role);
    ember_stats *st = calloc(1, sizeof *st);
    if (!st) return ember_fail(EMBER_ERR_NO_MEMORY, "stats: out of memory");
    snprintf(st->role, sizeof st->role, "%s", role ? role : "ember");
    st->started_at = wall_clock_s();
    for (int i = 0; i < EMBER_STAT_N_BUILTIN; i++) {
        int id;
        ember_status s = new_series(st, builtin[i].name, builtin[i].domain, &id);
        if (s) {
            ember_stats_free(st);
            return s;
        }
    }
    *out = st;
    return EMBER_OK;
}

void ember_stats_free(ember_stats *st)
{
    if (!st) return;
    for (int i = 0; i < st->n_series; i++) free(st->series[i].samples);
    free(st);
}

int ember_stats_find(const ember_stats *st, const char *name)
{
    for (int i = 0; st && name && i < st->n_series; i++)
        if (!strcmp(st->series[i].name, name)) return i;
    return -1;
}

ember_status ember_stats_add_series(ember_stats *st, const char *name, ember_stat_domain domain, int *id)
{
    if (!st || !id) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_stats_add_series: NULL argument");
    if (!name_ok(name))
        return ember_fail(EMBER_ERR_INVALID_ARG, "stats: series name '%s' is not [A-Za-z0-9_.]{1,31}",
                          name ? name : "(null)");
    if (domain != EMBER_STAT_TEXT && domain != EMBER_STAT_SPEECH)
        return ember_fail(EMBER_ERR_INVALID_ARG, "stats: series '%s': unknown domain %d", name, (int)domain);
    if (ember_stats_find(st, name) >= 0)
        return ember_fail(EMBER_ERR_INVALID_ARG, "stats: series '%s' already exists", name);
    return new_series(st, name, domain, id);
}

/* The reservoir rule: keep the first RESERVOIR samples, then overwrite slot
 * (count * 7919) mod RESERVOIR, count being the series' count including
 * this sample. 7919 is prime, so successive samples land far apart. */
static void keep_sample(stat_series *s, uint64_t count_with_it, float v)
{
    if (s->n_samples < EMBER_STATS_RESERVOIR) s->samples[s->n_samples++] = v;
    else s->samples[(count_with_it * 7919u) % EMBER_STATS_RESERVOIR] = v;
}

void ember_stats_record_on(ember_stats *st, int id, double ms)
{
    if ((unsigned)id >= (unsigned)st->n_series) return;
    stat_series *s = &st->series[id];
    s->count++;
    s->sum += ms;
    if (ms > s->max) s->max = ms;
    keep_sample(s, s->count, (float)ms);
}

ember_status ember_stats_merge(ember_stats *dst, const ember_stats *src)
{
    if (!dst || !src) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_stats_merge: NULL recorder");
    if (dst == src) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_stats_merge: a recorder into itself");
    for (int i = 0; i < src->n_series; i++) {
        const stat_series *from = &src->series[i];
        if (!from->count) continue;
        int id = ember_stats_find(dst, from->name);
        if (id < 0) {
            ember_status s = new_series(dst, from->name, from->domain, &id);
            if (s) return s;
        }
        stat_series *to = &dst->series[id];
        for (int32_t k = 0; k < from->n_samples; k++) keep_sample(to, to->count + (uint64_t)k + 1, from->samples[k]);
        to->count += from->count;
        to->sum += from->sum;
        if (from->max > to->max) to->max = from->max;
    }
    return EMBER_OK;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* sorted[min(n-1, round((n-1) q))] with Python's round (half to even), which
 * is what rint does in the default rounding mode. */
static double percentile_sorted(const float *v, int32_t n, double q)
{
    if (n <= 0) return 0.0;
    double r = rint((double)(n - 1) * q);
    int32_t k = r < 0 ? 0 : (r > n - 1 ? n - 1 : (int32_t)r);
    return v[k];
}

ember_status ember_stats_summary(const ember_stats *st, int id, ember_stat_summary *out)
{
    memset(out, 0, sizeof *out);
    if (!st || id < 0 || id >= st->n_series) return EMBER_OK;
    const stat_series *s = &st->series[id];
    out->count = (int64_t)s->count;
    out->sum_ms = s->sum;
    out->mean_ms = s->count ? s->sum / (double)s->count : 0.0;
    out->max_ms = s->max;
    if (!s->n_samples) return EMBER_OK;
    float *sorted = malloc(sizeof(float) * (size_t)s->n_samples);
    if (!sorted) return ember_fail(EMBER_ERR_NO_MEMORY, "stats: out of memory");
    memcpy(sorted, s->samples, sizeof(float) * (size_t)s->n_samples);
    qsort(sorted, (size_t)s->n_samples, sizeof *sorted, cmp_float);
    out->p50_ms = percentile_sorted(sorted, s->n_samples, 0.50);
    out->p95_ms = percentile_sorted(sorted, s->n_samples, 0.95);
    free(sorted);
    return EMBER_OK;
}

/* ---- attribution ---- */

typedef struct attr_row {
    int id;
    ember_stat_summary sum;
    double share; /* of one unit (token or frame) */
} attr_row;

typedef struct attribution {
    double units;   /* tokens or frames */
    double unit_ms; /* the token time, or 80 */
    attr_row rows[EMBER_STATS_MAX_SERIES];
    int n_rows;
} attribution;

static int cmp_share_desc(const void *a, const void *b)
{
    const attr_row *x = a, *y = b;
    if (x->share != y->share) return x->share < y->share ? 1 : -1;
    return x->id - y->id; /* stable for equal shares */
}

static ember_status attribute(const ember_stats *st, ember_stat_domain domain, attribution *a)
{
    memset(a, 0, sizeof *a);
    const stat_series *s = st->series;
    if (domain == EMBER_STAT_SPEECH) {
        a->units = (double)s[EMBER_STAT_TALKER].count;
        a->unit_ms = EMBER_STATS_FRAME_MS;
    } else if (s[EMBER_STAT_TOKEN].count) {
        a->units = (double)s[EMBER_STAT_TOKEN].count;
        a->unit_ms = s[EMBER_STAT_TOKEN].sum / a->units;
    } else {
        a->units = (double)s[EMBER_STAT_SAMPLER].count;
        double per_token = s[EMBER_STAT_DECODE_FULL].sum + s[EMBER_STAT_DECODE_SLIDING].sum +
                           s[EMBER_STAT_SAMPLER].sum + s[EMBER_STAT_DETOKENIZE].sum;
        a->unit_ms = a->units > 0 ? per_token / a->units : 0.0;
    }
    for (int i = 0; i < st->n_series; i++) {
        if (s[i].domain != domain || !s[i].count) continue;
        attr_row *r = &a->rows[a->n_rows++];
        r->id = i;
        ember_status e = ember_stats_summary(st, i, &r->sum);
        if (e) return e;
        r->share = a->units > 0 && a->unit_ms > 0 ? s[i].sum / a->units / a->unit_ms : 0.0;
    }
    qsort(a->rows, (size_t)a->n_rows, sizeof a->rows[0], cmp_share_desc);
    return EMBER_OK;
}

static void print_rows(const ember_stats *st, const attribution *a, FILE *f)
{
    for (int i = 0; i < a->n_rows; i++) {
        const attr_row *r = &a->rows[i];
        fprintf(f, "| %s | %s | %lld | %.2f | %.2f | %.1f%% |\n", st->role, st->series[r->id].name,
                (long long)r->sum.count, r->sum.mean_ms, r->sum.p95_ms, 100.0 * r->share);
    }
}

ember_status ember_stats_write_table(const ember_stats *st, FILE *f)
{
    if (!st || !f) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_stats_write_table: NULL argument");
    attribution *a = malloc(sizeof *a);
    if (!a) return ember_fail(EMBER_ERR_NO_MEMORY, "stats: out of memory");
    ember_status e = attribute(st, EMBER_STAT_TEXT, a);
    if (!e && a->n_rows) {
        fprintf(f, "text: %.0f tokens, %.2f ms per token\n\n", a->units, a->unit_ms);
        fprintf(f, "| role | counter | n | mean ms | p95 ms | share of token |\n|---|---|---|---|---|---|\n");
        print_rows(st, a, f);
    }
    bool had_text = !e && a->n_rows;
    if (!e) e = attribute(st, EMBER_STAT_SPEECH, a);
    if (!e && a->n_rows) {
        fprintf(f, "%sspeech: %.0f frames\n\n", had_text ? "\n" : "", a->units);
        fprintf(f, "| role | counter | n | mean ms | p95 ms | share of 80 ms |\n|---|---|---|---|---|---|\n");
        print_rows(st, a, f);
    }
    free(a);
    if (!e && ferror(f)) e = ember_fail(EMBER_ERR_IO, "stats: writing the table failed");
    return e;
}

/* ---- JSON ---- */

static cJSON *summary_json(const ember_stat_summary *s)
{
    cJSON *o = cJSON_CreateObject();
    if (o && cJSON_AddNumberToObject(o, "count", (double)s->count) &&
        cJSON_AddNumberToObject(o, "sum_ms", s->sum_ms) && cJSON_AddNumberToObject(o, "mean_ms", s->mean_ms) &&
        cJSON_AddNumberToObject(o, "p50_ms", s->p50_ms) && cJSON_AddNumberToObject(o, "p95_ms", s->p95_ms) &&
        cJSON_AddNumberToObject(o, "max_ms", s->max_ms))
        return o;
    cJSON_Delete(o);
    return NULL;
}

static cJSON *attribution_json(const ember_stats *st, ember_stat_domain domain, ember_status *e)
{
    attribution *a = malloc(sizeof *a);
    cJSON *o = NULL, *rows = NULL;
    if (!a) {
        *e = ember_fail(EMBER_ERR_NO_MEMORY, "stats: out of memory");
        return NULL;
    }
    *e = attribute(st, domain, a);
    bool ok = !*e && (o = cJSON_CreateObject()) != NULL &&
              cJSON_AddNumberToObject(o, domain == EMBER_STAT_TEXT ? "tokens" : "frames", a->units) &&
              cJSON_AddNumberToObject(o, domain == EMBER_STAT_TEXT ? "token_ms" : "frame_ms", a->unit_ms) &&
              (rows = cJSON_AddArrayToObject(o, "rows")) != NULL;
    for (int i = 0; ok && i < a->n_rows; i++) {
        const attr_row *r = &a->rows[i];
        cJSON *row = cJSON_CreateObject();
        ok = row && cJSON_AddItemToArray(rows, row) && cJSON_AddStringToObject(row, "role", st->role) &&
             cJSON_AddStringToObject(row, "counter", st->series[r->id].name) &&
             cJSON_AddNumberToObject(row, "count", (double)r->sum.count) &&
             cJSON_AddNumberToObject(row, "mean_ms", r->sum.mean_ms) &&
             cJSON_AddNumberToObject(row, "p95_ms", r->sum.p95_ms) &&
             cJSON_AddNumberToObject(row, "share", r->share);
    }
    free(a);
    if (!ok) {
        cJSON_Delete(o);
        if (!*e) *e = ember_fail(EMBER_ERR_NO_MEMORY, "stats: out of memory");
        return NULL;
    }
    return o;
}

/* The dump as cJSON_Print's text (malloc'd, no newline). */
static ember_status stats_text(const ember_stats *st, const char *what, char **out)
{
    *out = NULL;
    ember_status e = EMBER_OK;
    cJSON *root = cJSON_CreateObject(), *counters = NULL, *attr = NULL;
    bool ok = root && cJSON_AddStringToObject(root, "role", st->role) &&
              cJSON_AddNumberToObject(root, "pid", (double)getpid()) &&
              cJSON_AddNumberToObject(root, "started_at", st->started_at) &&
              cJSON_AddNumberToObject(root, "dumped_at", wall_clock_s()) &&
              (counters = cJSON_AddObjectToObject(root, "counters")) != NULL &&
              (attr = cJSON_AddObjectToObject(root, "attribution")) != NULL;
    for (int i = 0; ok && i < st->n_series; i++) {
        if (!st->series[i].count) continue;
        ember_stat_summary s;
        if ((e = ember_stats_summary(st, i, &s)) != EMBER_OK) break;
        cJSON *c = summary_json(&s);
        ok = c && cJSON_AddItemToObject(counters, st->series[i].name, c);
        if (c && !ok) cJSON_Delete(c);
    }
    for (int d = 0; ok && !e && d < 2; d++) {
        cJSON *a = attribution_json(st, (ember_stat_domain)d, &e);
        ok = a && cJSON_AddItemToObject(attr, d == EMBER_STAT_TEXT ? "text" : "speech", a);
        if (a && !ok) cJSON_Delete(a);
    }
    char *text = ok && !e ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (e) {
        free(text);
        return e;
    }
    if (!text) return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory building the stats JSON", what);
    *out = text;
    return EMBER_OK;
}

ember_status ember_stats_json(const ember_stats *st, char **json)
{
    if (json) *json = NULL;
    if (!st || !json) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_stats_json: NULL argument");
    return stats_text(st, "ember_stats_json", json);
}

ember_status ember_stats_write_json(const ember_stats *st, const char *path)
{
    if (!st || !path) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_stats_write_json: NULL argument");
    char *text;
    ember_status e = stats_text(st, path, &text);
    if (e) return e;
    size_t len = strlen(text);
    text[len] = '\n'; /* cJSON_Print leaves no newline; its NUL makes room for one */
    e = io_write_file_atomic(path, text, len + 1);
    free(text);
    return e;
}
