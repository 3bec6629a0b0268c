/* `ember parity`: teacher-forced logits comparison against a golden file.
 *
 * The golden's prompt and greedy ids are fed as one sequence, so every row is
 * comparable even where a near-tie would flip an argmax. At each listed
 * position we report the logits SNR (signal power over error power, in dB),
 * top-1 agreement and top-5 overlap; over the generated positions, whether
 * ember's argmax equals the reference's greedy token. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ember.h"
#include "parity_golden.h"

#define SNR_CAP_DB 300.0 /* reported when the logits match bit for bit */
#define NEAR_TIE 1e-3    /* a reference top-2 gap below this excuses a greedy miss */

typedef struct row_stats {
    int32_t position;
    double signal, noise, snr_db;
    int top1_agree;
    int top5_overlap; /* 0..5 */
    int32_t ours_top1, ref_top1;
} row_stats;

static double to_db(double signal, double noise)
{
    if (noise <= 0.0) return SNR_CAP_DB;
    double db = 10.0 * log10(signal / noise);
    return db > SNR_CAP_DB ? SNR_CAP_DB : db;
}

static void top5(const float *x, int32_t n, int32_t out[5])
{
    for (int k = 0; k < 5; k++) out[k] = -1;
    for (int32_t i = 0; i < n; i++) {
        int k = 5;
        while (k > 0 && (out[k - 1] < 0 || x[i] > x[out[k - 1]])) k--;
        if (k < 5) {
            memmove(out + k + 1, out + k, (size_t)(4 - k) * sizeof *out);
            out[k] = i;
        }
    }
}

static row_stats compare_row(const float *ours, const float *ref, int32_t vocab)
{
    row_stats r;
    memset(&r, 0, sizeof r);
    for (int32_t i = 0; i < vocab; i++) {
        double e = (double)ours[i] - (double)ref[i];
        r.signal += (double)ref[i] * ref[i];
        r.noise += e * e;
    }
    r.snr_db = to_db(r.signal, r.noise);
    int32_t a[5], b[5];
    top5(ours, vocab, a);
    top5(ref, vocab, b);
    r.ours_top1 = a[0];
    r.ref_top1 = b[0];
    r.top1_agree = a[0] == b[0];
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++) r.top5_overlap += a[i] >= 0 && a[i] == b[j];
    return r;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ember parity --model DIR --golden FILE [--json] [options]\n"
            "  thresholds (exit 1 when missed):\n"
            "    --min-snr DB            every position's SNR\n"
            "    --min-aggregate DB      all positions' signal over all positions' noise\n"
            "    --max-below-floor DB    each position's SNR, and the aggregate, at most DB under\n"
            "                            the golden's fp32-vs-fp64 floor (6 is the fp32 bar: two\n"
            "                            float32 runs at the floor differ by ~3 dB more than either)\n"
            "    --min-top1 FRACTION     top-1 agreement\n"
            "    --min-greedy FRACTION   greedy matches (misses at near-ties excused)\n"
            "  options:\n%s",
            cli_common_usage);
}

int cmd_parity(int argc, char **argv)
{
    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'},        {"golden", required_argument, 0, 'g'},
        {"json", no_argument, 0, 'j'},               {"min-snr", required_argument, 0, 's'},
        {"min-aggregate", required_argument, 0, 'a'},
        {"max-below-floor", required_argument, 0, 'f'},
        {"min-top1", required_argument, 0, 't'},     {"min-greedy", required_argument, 0, 'r'},
        {"help", no_argument, 0, 'h'},               CLI_COMMON_OPTIONS,
        {0, 0, 0, 0}};
    const char *dir = NULL, *golden_path = NULL;
    int json = 0, c;
    double min_snr = -INFINITY, min_agg = -INFINITY, max_below = INFINITY;
    double min_top1 = 0, min_greedy = 0;
    ember_model_params mp = ember_model_default_params();
    ember_session_params sp = ember_session_default_params();
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:h", opts, NULL)) != -1) {
        switch (c) {
        case 'm': dir = optarg; break;
        case 'g': golden_path = optarg; break;
        case 'j': json = 1; break;
        case 's': min_snr = atof(optarg); break;
        case 'a': min_agg = atof(optarg); break;
        case 'f': max_below = atof(optarg); break;
        case 't': min_top1 = atof(optarg); break;
        case 'r': min_greedy = atof(optarg); break;
        case 'h': usage(stdout); return 0;
        default: {
            int r = cli_common_option(c, optarg, "parity", &mp, &sp);
            if (r == 1) break;
            if (r == 0) usage(stderr);
            return 2;
        }
        }
    }
    if (!dir || !golden_path) {
        usage(stderr);
        return 2;
    }

    golden g;
    char err[512];
    if (golden_load(golden_path, &g, err, sizeof err)) {
        fprintf(stderr, "ember parity: %s\n", err);
        return 2;
    }
    int rc = 2;
    ember_model *model = NULL;
    ember_session *s = NULL;
    row_stats *rows = calloc(g.n_pos, sizeof *rows);
    if (!rows) goto done;
    if (ember_model_load(dir, &mp, &model) != EMBER_OK) {
        fprintf(stderr, "ember parity: %s\n", ember_last_error());
        goto done;
    }
    if (ember_model_vocab_size(model) != g.vocab) {
        fprintf(stderr, "ember parity: the model's vocab is %d but the golden rows have %d\n",
                ember_model_vocab_size(model), g.vocab);
        goto done;
    }
    sp.max_context = (int32_t)g.n_seq;
    if (ember_session_create(model, &sp, &s) != EMBER_OK) {
        fprintf(stderr, "ember parity: %s\n", ember_last_error());
        goto done;
    }

    /* Feed the sequence up to each listed position (prefill splits it into
     * chunks itself), then read the logits there. */
    size_t fed = 0;
    double sig = 0, noise = 0, sum_db = 0, min_db = INFINITY, worst_margin = INFINITY;
    int top1 = 0, top5 = 0, g_total = 0, g_match = 0, g_excused = 0;
    for (size_t i = 0; i < g.n_pos; i++) {
        size_t upto = (size_t)g.positions[i] + 1;
        if (ember_session_prefill(s, g.seq + fed, upto - fed) != EMBER_OK) {
            fprintf(stderr, "ember parity: %s\n", ember_last_error());
            goto done;
        }
        fed = upto;
        rows[i] = compare_row(ember_session_logits(s), g.logits + i * (size_t)g.vocab, g.vocab);
        rows[i].position = g.positions[i];
        sig += rows[i].signal;
        noise += rows[i].noise;
        sum_db += rows[i].snr_db;
        min_db = fmin(min_db, rows[i].snr_db);
        top1 += rows[i].top1_agree;
        top5 += rows[i].top5_overlap;
        if (g.floor_db) worst_margin = fmin(worst_margin, rows[i].snr_db - g.floor_db[i]);
        /* Generated position k predicts greedy_ids[k]. */
        size_t k = (size_t)g.positions[i] + 1 - g.n_prompt;
        if ((size_t)g.positions[i] + 1 >= g.n_prompt && k < g.n_greedy) {
            g_total++;
            if (rows[i].ours_top1 == g.greedy[k]) g_match++;
            else if (g.top2_gap && g.top2_gap[i] < NEAR_TIE) g_excused++;
        }
    }
    double agg_db = to_db(sig, noise), mean_db = sum_db / (double)g.n_pos;
    double top1_frac = (double)top1 / (double)g.n_pos;
    double top5_frac = (double)top5 / (5.0 * (double)g.n_pos);
    double greedy_frac = g_total ? (double)(g_match + g_excused) / g_total : 1.0;

    if (json) {
        printf("{\"model\": \"%s\", \"golden\": \"%s\", \"positions\": %zu, "
               "\"snr_db_min\": %.3f, \"snr_db_mean\": %.3f, \"snr_db_aggregate\": %.3f, "
               "\"top1_agree\": %.6f, \"top5_overlap\": %.6f, \"greedy_match\": \"%d/%d\", "
               "\"greedy_matched\": %d, \"greedy_total\": %d, \"greedy_near_tie_misses\": %d",
               dir, golden_path, g.n_pos, min_db, mean_db, agg_db, top1_frac, top5_frac, g_match,
               g_total, g_match, g_total, g_excused);
        if (g.floor_db) printf(", \"worst_margin_to_floor_db\": %.3f", worst_margin);
        if (!isnan(g.floor_aggregate_db))
            printf(", \"floor_snr_db_aggregate\": %.3f", g.floor_aggregate_db);
        printf(", \"rows\": [");
        for (size_t i = 0; i < g.n_pos; i++) {
            printf("%s{\"position\": %d, \"snr_db\": %.3f", i ? ", " : "", rows[i].position,
                   rows[i].snr_db);
            if (g.floor_db) printf(", \"floor_snr_db\": %.3f", g.floor_db[i]);
            printf(", \"top1_agree\": %s, \"top5_overlap\": %d}",
                   rows[i].top1_agree ? "true" : "false", rows[i].top5_overlap);
        }
        printf("]}\n");
    } else {
        printf("%8s %10s %10s %6s %5s\n", "position", "snr_db", "floor_db", "top1", "top5");
        for (size_t i = 0; i < g.n_pos; i++) {
            printf("%8d %10.2f ", rows[i].position, rows[i].snr_db);
            if (g.floor_db) printf("%10.2f ", g.floor_db[i]);
            else printf("%10s ", "-");
            printf("%6s %3d/5\n", rows[i].top1_agree ? "yes" : "NO", rows[i].top5_overlap);
        }
        printf("snr_db min %.2f mean %.2f aggregate %.2f", min_db, mean_db, agg_db);
        if (g.floor_db) printf("; worst margin to floor %.2f dB", worst_margin);
        printf("\ntop1 %.4f top5 %.4f greedy %d/%d (%d near-tie misses excused)\n", top1_frac,
               top5_frac, g_match, g_total, g_excused);
    }

    rc = 0;
    if (min_db < min_snr) {
        fprintf(stderr, "ember parity: min SNR %.2f dB < %.2f\n", min_db, min_snr);
        rc = 1;
    }
    if (agg_db < min_agg) {
        fprintf(stderr, "ember parity: aggregate SNR %.2f dB < %.2f\n", agg_db, min_agg);
        rc = 1;
    }
    if (g.floor_db && -worst_margin > max_below) {
        fprintf(stderr, "ember parity: a position is %.2f dB below the reference floor (max %.2f)\n",
                -worst_margin, max_below);
        rc = 1;
    }
    if (!isnan(g.floor_aggregate_db) && agg_db < g.floor_aggregate_db - max_below) {
        fprintf(stderr,
                "ember parity: aggregate SNR %.2f dB is %.2f dB below the reference floor's %.2f (max %.2f)\n",
                agg_db, g.floor_aggregate_db - agg_db, g.floor_aggregate_db, max_below);
        rc = 1;
    }
    if (!g.floor_db && isfinite(max_below)) {
        fprintf(stderr, "ember parity: --max-below-floor needs floor_snr_db in the golden\n");
        rc = 1;
    }
    if (top1_frac < min_top1) {
        fprintf(stderr, "ember parity: top-1 agreement %.4f < %.4f\n", top1_frac, min_top1);
        rc = 1;
    }
    if (greedy_frac < min_greedy) {
        fprintf(stderr, "ember parity: greedy %d/%d (+%d excused) < %.4f\n", g_match, g_total,
                g_excused, min_greedy);
        rc = 1;
    }
done:
    free(rows);
    ember_session_free(s);
    ember_model_free(model);
    golden_free(&g);
    return rc;
}
