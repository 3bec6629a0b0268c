/* The sliding ring joined in score space must give the same attention output
 * as the obvious implementation that keeps a contiguous window and rolls it
 * (drops the oldest key, appends the newest) every token. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/ops.h"
#include "nn/attention.h"
#include "nn/kv.h"

enum { HEADS = 4, KV_HEADS = 2, D = 16, WINDOW = 16, HISTORY = 3 * WINDOW + 7 };
#define ROW (HEADS * D)
#define KV_ROW (KV_HEADS * D)

static float frand(unsigned *state)
{
    *state = *state * 1664525u + 1013904223u;
    return (float)((*state >> 8) & 0xffff) / 32768.0f - 1.0f;
}

typedef struct history {
    float q[HISTORY][ROW], k[HISTORY][KV_ROW], v[HISTORY][KV_ROW];
} history;

static void make_history(history *h, unsigned seed)
{
    for (int t = 0; t < HISTORY; t++) {
        for (int i = 0; i < ROW; i++) h->q[t][i] = frand(&seed);
        for (int i = 0; i < KV_ROW; i++) {
            h->k[t][i] = frand(&seed);
            h->v[t][i] = frand(&seed);
        }
    }
}

/* Naive reference: a window buffer of at most `window` (key, value) rows
 * that is shifted down by one row whenever it is full. window 0 = unbounded. */
static void naive_attention(const history *h, int window, float out[HISTORY][ROW])
{
    static float win_k[HISTORY][KV_ROW], win_v[HISTORY][KV_ROW];
    int len = 0;
    const int limit = window ? window : HISTORY;
    for (int t = 0; t < HISTORY; t++) {
        if (len == limit) { /* roll: the oldest key leaves the window */
            memmove(win_k[0], win_k[1], (size_t)(len - 1) * sizeof win_k[0]);
            memmove(win_v[0], win_v[1], (size_t)(len - 1) * sizeof win_v[0]);
            len--;
        }
        memcpy(win_k[len], h->k[t], sizeof win_k[0]);
        memcpy(win_v[len], h->v[t], sizeof win_v[0]);
        len++;
        for (int hd = 0; hd < HEADS; hd++) {
            int g = hd / (HEADS / KV_HEADS);
            float s[HISTORY];
            for (int j = 0; j < len; j++) {
                float acc = 0;
                for (int i = 0; i < D; i++) acc += h->q[t][hd * D + i] * win_k[j][g * D + i];
                s[j] = acc * (1.0f / sqrtf((float)D));
            }
            ek_softmax(s, len);
            for (int i = 0; i < D; i++) {
                float acc = 0;
                for (int j = 0; j < len; j++) acc += s[j] * win_v[j][g * D + i];
                out[t][hd * D + i] = acc;
            }
        }
    }
}

/* The cache under test, fed in chunks of `chunk` tokens (1 = decode). */
static void cached_attention(const history *h, int window, int chunk, float out[HISTORY][ROW])
{
    kv_layer L;
    L.window = window;
    L.capacity = window ? window - 1 : HISTORY;
    L.type = ET_F32;
    L.row_bytes = D * sizeof(float);
    L.k = calloc((size_t)KV_HEADS * (size_t)L.capacity * D, sizeof(float));
    L.v = calloc((size_t)KV_HEADS * (size_t)L.capacity * D, sizeof(float));
    float *scores = malloc(attn_scratch_floats(HEADS, KV_HEADS, D, chunk) * sizeof(float));
    attn_shape shape = {ek_kernels_scalar(), HEADS, KV_HEADS, D, ROW, KV_ROW, ROW};
    for (int p0 = 0; p0 < HISTORY; p0 += chunk) {
        int n = HISTORY - p0 < chunk ? HISTORY - p0 : chunk;
        attn_chunk(&L, &shape, 0, KV_HEADS, p0, n, h->q[p0], h->k[p0], h->v[p0], out[p0], scores);
        kv_store(&L, KV_HEADS, D, p0, n, h->k[p0], h->v[p0], KV_ROW);
    }
    free(L.k);
    free(L.v);
    free(scores);
}

/* Worst over tokens and heads of |a - b| / |b| for the head's output vector. */
static double max_rel_diff(float a[HISTORY][ROW], float b[HISTORY][ROW])
{
    double worst = 0;
    for (int t = 0; t < HISTORY; t++)
        for (int hd = 0; hd < HEADS; hd++) {
            double num = 0, den = 0;
            for (int i = hd * D; i < (hd + 1) * D; i++) {
                num += ((double)a[t][i] - b[t][i]) * ((double)a[t][i] - b[t][i]);
                den += (double)b[t][i] * b[t][i];
            }
            double d = sqrt(num / den);
            worst = d > worst ? d : worst;
        }
    return worst;
}

static history hist;
static float want[HISTORY][ROW], got[HISTORY][ROW];

static void check_against_naive(int window)
{
    static const int chunks[] = {1, 2, 5, WINDOW - 1, WINDOW, WINDOW + 3, HISTORY};
    make_history(&hist, 1234u + (unsigned)window);
    naive_attention(&hist, window, want);
    for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c++) {
        memset(got, 0, sizeof got);
        cached_attention(&hist, window, chunks[c], got);
        double d = max_rel_diff(got, want);
        CHECK_MSG(d < 1e-6, "window %d chunk %d: max relative difference %.3g", window,
                  chunks[c], d);
    }
}

static void ring_matches_rolled_window(void) { check_against_naive(WINDOW); }

static void ring_of_one_slot_matches(void) { check_against_naive(2); }

static void linear_cache_matches_full_history(void) { check_against_naive(0); }

/* After a prompt longer than the window each ring holds exactly the last
 * window-1 keys, each in slot position mod (window-1). */
static void ring_holds_last_window_minus_one_keys(void)
{
    kv_layer L = {WINDOW - 1, WINDOW, ET_F32, D * sizeof(float), NULL, NULL};
    L.k = calloc((size_t)KV_HEADS * (WINDOW - 1) * D, sizeof(float));
    L.v = calloc((size_t)KV_HEADS * (WINDOW - 1) * D, sizeof(float));
    make_history(&hist, 99);
    kv_store(&L, KV_HEADS, D, 0, HISTORY, hist.k[0], hist.v[0], KV_ROW);
    for (int p = HISTORY - (WINDOW - 1); p < HISTORY; p++)
        for (int g = 0; g < KV_HEADS; g++) {
            const float *slot = (const float *)L.k + ((size_t)g * (WINDOW - 1) + (size_t)(p % (WINDOW - 1))) * D;
            CHECK_MSG(memcmp(slot, &hist.k[p][g * D], D * sizeof(float)) == 0,
                      "position %d head %d not in its slot", p, g);
        }
    free(L.k);
    free(L.v);
}

int main(void)
{
    RUN(ring_matches_rolled_window);
    RUN(ring_of_one_slot_matches);
    RUN(linear_cache_matches_full_history);
    RUN(ring_holds_last_window_minus_one_keys);
    return check_summary();
}
