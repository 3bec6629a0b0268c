#include "tts/mel.h"

#include <fftw3.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"

#define MEL_FMAX 12000.0
#define MAG_EPS 1e-9f
#define LOG_FLOOR 1e-5f

struct mel_frontend {
    float window[MEL_N_FFT];
    float bank[MEL_BINS][MEL_FFT_BINS]; /* dense, zero outside [lo, hi) */
    int32_t lo[MEL_BINS], hi[MEL_BINS];
    fftwf_plan plan;
};

/* FFTW's planner keeps process-wide tables and is not thread-safe: plans
 * are made and destroyed under this lock (executing a plan on new arrays,
 * fftwf_execute_dft_r2c, is thread-safe and needs none). */
static pthread_mutex_t planner_lock = PTHREAD_MUTEX_INITIALIZER;

/* Slaney's mel scale (librosa, htk=False): linear below 1 kHz at 200/3 Hz
 * per mel, then 27 mels per factor 6.4. */
static const double F_SP = 200.0 / 3.0, MIN_LOG_HZ = 1000.0;

static double hz_to_mel(double f)
{
    const double min_log_mel = MIN_LOG_HZ / F_SP, logstep = log(6.4) / 27.0;
    return f >= MIN_LOG_HZ ? min_log_mel + log(f / MIN_LOG_HZ) / logstep : f / F_SP;
}

static double mel_to_hz(double m)
{
    const double min_log_mel = MIN_LOG_HZ / F_SP, logstep = log(6.4) / 27.0;
    return m >= min_log_mel ? MIN_LOG_HZ * exp(logstep * (m - min_log_mel)) : F_SP * m;
}

/* Triangles between 130 edges evenly spaced in mel over [0, 12 kHz],
 * scaled to unit area (2 / (f[m+2] - f[m])). librosa stores the triangle
 * in float32 before scaling it, so the weight is rounded twice, as here. */
static void build_bank(mel_frontend *m)
{
    double edge[MEL_BINS + 2];
    const double top = hz_to_mel(MEL_FMAX);
    const double step = top / (MEL_BINS + 1);
    for (int i = 0; i < MEL_BINS + 2; i++) /* numpy.linspace(mel(0) = 0, mel(fmax), 130) */
        edge[i] = mel_to_hz(i == MEL_BINS + 1 ? top : i * step);
    for (int b = 0; b < MEL_BINS; b++) {
        const double area = 2.0 / (edge[b + 2] - edge[b]);
        m->lo[b] = MEL_FFT_BINS;
        m->hi[b] = 0;
        for (int k = 0; k < MEL_FFT_BINS; k++) {
            const double f = (double)k * MEL_SAMPLE_RATE / MEL_N_FFT;
            const double rise = (f - edge[b]) / (edge[b + 1] - edge[b]);
            const double fall = (edge[b + 2] - f) / (edge[b + 2] - edge[b + 1]);
            const double tri = fmax(0.0, fmin(rise, fall));
            m->bank[b][k] = (float)((double)(float)tri * area);
            if (m->bank[b][k] != 0.0f) {
                if (k < m->lo[b]) m->lo[b] = k;
                m->hi[b] = k + 1;
            }
        }
        if (m->hi[b] == 0) m->lo[b] = 0;
    }
}

ember_status mel_frontend_create(mel_frontend **out)
{
    *out = NULL;
    mel_frontend *m = calloc(1, sizeof *m);
    float *in = fftwf_malloc(sizeof(float) * MEL_N_FFT);
    fftwf_complex *spec = fftwf_malloc(sizeof(fftwf_complex) * MEL_FFT_BINS);
    if (m && in && spec) {
        /* ESTIMATE: a plan chosen without timing runs, so the arithmetic
         * (and every result) is the same on each run of a machine. */
        pthread_mutex_lock(&planner_lock);
        m->plan = fftwf_plan_dft_r2c_1d(MEL_N_FFT, in, spec, FFTW_ESTIMATE);
        pthread_mutex_unlock(&planner_lock);
    }
    fftwf_free(in);
    fftwf_free(spec);
    if (!m || !m->plan) {
        free(m);
        return ember_fail(EMBER_ERR_NO_MEMORY, "mel spectrogram: cannot make the FFT plan");
    }
    for (int i = 0; i < MEL_N_FFT; i++) /* periodic Hann (torch.hann_window) */
        m->window[i] = (float)(0.5 - 0.5 * cos(2.0 * M_PI * i / MEL_N_FFT));
    build_bank(m);
    *out = m;
    return EMBER_OK;
}

void mel_frontend_free(mel_frontend *m)
{
    if (!m) return;
    pthread_mutex_lock(&planner_lock);
    fftwf_destroy_plan(m->plan);
    pthread_mutex_unlock(&planner_lock);
    free(m);
}

int64_t mel_frames(size_t n)
{
    if (n <= MEL_PAD) return 0;
    return (int64_t)((n + 2 * MEL_PAD - MEL_N_FFT) / MEL_HOP) + 1;
}

const float *mel_filter(const mel_frontend *m, int32_t mel, int32_t *lo, int32_t *hi)
{
    *lo = m->lo[mel];
    *hi = m->hi[mel];
    return m->bank[mel];
}

/* Sample i of the reflect-padded signal, i in [-MEL_PAD, n + MEL_PAD). */
static float padded_at(const float *x, size_t n, int64_t i)
{
    if (i < 0) return x[-i];
    if ((size_t)i >= n) return x[2 * (int64_t)n - 2 - i];
    return x[i];
}

ember_status mel_compute(const mel_frontend *m, const float *wave, size_t n, float *out)
{
    const int64_t frames = mel_frames(n);
    if (frames < 1)
        return ember_fail(EMBER_ERR_INVALID_ARG,
                          "mel spectrogram: %zu samples is too short (more than %d needed)", n,
                          MEL_PAD);
    float *buf = fftwf_malloc(sizeof(float) * MEL_N_FFT);
    fftwf_complex *spec = fftwf_malloc(sizeof(fftwf_complex) * MEL_FFT_BINS);
    if (!buf || !spec) {
        fftwf_free(buf);
        fftwf_free(spec);
        return ember_fail(EMBER_ERR_NO_MEMORY, "mel spectrogram: out of memory");
    }
    float mag[MEL_FFT_BINS];
    for (int64_t t = 0; t < frames; t++) {
        const int64_t start = t * MEL_HOP - MEL_PAD;
        for (int i = 0; i < MEL_N_FFT; i++) buf[i] = padded_at(wave, n, start + i) * m->window[i];
        fftwf_execute_dft_r2c(m->plan, buf, spec);
        for (int k = 0; k < MEL_FFT_BINS; k++)
            mag[k] = sqrtf(spec[k][0] * spec[k][0] + spec[k][1] * spec[k][1] + MAG_EPS);
        float *row = out + t * MEL_BINS;
        for (int b = 0; b < MEL_BINS; b++) {
            double sum = 0.0;
            for (int32_t k = m->lo[b]; k < m->hi[b]; k++) sum += (double)m->bank[b][k] * mag[k];
            row[b] = logf(fmaxf((float)sum, LOG_FLOOR));
        }
    }
    fftwf_free(buf);
    fftwf_free(spec);
    return EMBER_OK;
}
