/* Quantization mixes (quant_mix.h). */
#include "llm/quant_mix.h"

#include <string.h>

#include "kernels/formats.h"

typedef enum mix_rules {
    R_SINGLE, /* every matrix in the base type */
    R_OUTPUT, /* the base type but for the output (and a tied embedding) */
    R_Q2_K,
    R_Q3_K_S,
    R_Q3_K_M,
    R_Q3_K_L,
    R_Q4_K_S,
    R_Q4_K_M,
    R_Q5_K_S,
    R_Q5_K_M,
    R_Q6_K,
    R_IQ4
} mix_rules;

struct quant_mix {
    const char *name;
    et_dtype base;
    uint32_t ftype; /* llama_ftype */
    mix_rules rules;
};

/* llama.cpp's names first: "q4_0", "q5_0", "q2_k", "q6_k", ... are its
 * mixes, not the plain types (a user of llama-quantize means those). */
static const quant_mix mixes[] = {
    {"q4_0", ET_Q4_0, 2, R_OUTPUT},      {"q4_1", ET_Q4_1, 3, R_OUTPUT},    {"q5_0", ET_Q5_0, 8, R_OUTPUT},
    {"q5_1", ET_Q5_1, 9, R_OUTPUT},
    {"q2_k", ET_Q2_K, 10, R_Q2_K},       {"q3_k_s", ET_Q3_K, 11, R_Q3_K_S}, {"q3_k_m", ET_Q3_K, 12, R_Q3_K_M},
    {"q3_k_l", ET_Q3_K, 13, R_Q3_K_L},   {"q4_k_s", ET_Q4_K, 14, R_Q4_K_S}, {"q4_k_m", ET_Q4_K, 15, R_Q4_K_M},
    {"q5_k_s", ET_Q5_K, 16, R_Q5_K_S},   {"q5_k_m", ET_Q5_K, 17, R_Q5_K_M}, {"q6_k", ET_Q6_K, 18, R_Q6_K},
    {"iq4_nl", ET_IQ4_NL, 25, R_IQ4},    {"iq4_xs", ET_IQ4_XS, 30, R_IQ4},
};

/* One single-type mix per format, in et_dtype order; a K type written alone
 * is labelled with the small ("_S") member of its family. */
static const quant_mix singles[ET_DTYPE_COUNT] = {
    [ET_F32] = {"f32", ET_F32, 0, R_SINGLE},        [ET_F16] = {"f16", ET_F16, 1, R_SINGLE},
    [ET_BF16] = {"bf16", ET_BF16, 32, R_SINGLE},    [ET_Q8_0] = {"q8_0", ET_Q8_0, 7, R_SINGLE},
    [ET_Q4_0] = {"q4_0", ET_Q4_0, 2, R_SINGLE},     [ET_Q2_K] = {"q2_k", ET_Q2_K, 10, R_SINGLE},
    [ET_Q3_K] = {"q3_k", ET_Q3_K, 11, R_SINGLE},    [ET_Q4_K] = {"q4_k", ET_Q4_K, 14, R_SINGLE},
    [ET_Q5_K] = {"q5_k", ET_Q5_K, 16, R_SINGLE},    [ET_Q6_K] = {"q6_k", ET_Q6_K, 18, R_SINGLE},
    [ET_IQ4_NL] = {"iq4_nl", ET_IQ4_NL, 25, R_SINGLE}, [ET_IQ4_XS] = {"iq4_xs", ET_IQ4_XS, 30, R_SINGLE},
    [ET_Q4_1] = {"q4_1", ET_Q4_1, 3, R_SINGLE},     [ET_Q5_0] = {"q5_0", ET_Q5_0, 8, R_SINGLE},
    [ET_Q5_1] = {"q5_1", ET_Q5_1, 9, R_SINGLE},
};

const quant_mix *quant_mix_by_name(const char *name)
{
    for (size_t i = 0; i < sizeof mixes / sizeof *mixes; i++)
        if (!strcmp(mixes[i].name, name)) return &mixes[i];
    return quant_mix_single_by_name(name);
}

const quant_mix *quant_mix_single_by_name(const char *name)
{
    for (int i = 0; i < ET_DTYPE_COUNT; i++)
        if (singles[i].name && !strcmp(singles[i].name, name)) return &singles[i];
    return NULL;
}

const quant_mix *quant_mix_single(et_dtype dt)
{
    return (unsigned)dt < ET_DTYPE_COUNT ? &singles[dt] : NULL;
}

const char *quant_mix_name(const quant_mix *m) { return m->name; }
uint32_t quant_mix_file_type(const quant_mix *m) { return m->ftype; }
et_dtype quant_mix_base(const quant_mix *m) { return m->base; }

const char *quant_mix_names(void)
{
    return "f32, f16, bf16, q8_0, q3_k, q4_k, q5_k, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k_s, q3_k_m, q3_k_l, "
           "q4_k_s, q4_k_m, q5_k_s, q5_k_m, q6_k, iq4_nl, iq4_xs";
}

/* llama.cpp's use_more_bits: the first and last eighth of the layers and
 * every third one in between. */
static bool more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

static et_dtype rule_type(const quant_mix *m, qm_role role, int i, const qm_model *mm)
{
    mix_rules r = m->rules;
    const int n = mm->n_layers;
    if (role == QM_OUTPUT || (mm->tied && role == QM_TOKEN_EMBD)) return ET_Q6_K;
    switch (role) {
    case QM_ATTN_QKV: /* llama.cpp's attn_v rules (quant_mix.h) */
        if (r == R_Q2_K) return mm->n_gqa >= 4 ? ET_Q4_K : ET_Q3_K;
        if (r == R_Q3_K_M) return i < 2 ? ET_Q5_K : ET_Q4_K;
        if (r == R_Q3_K_L) return ET_Q5_K;
        if (r == R_IQ4 && mm->n_gqa >= 4) return ET_Q5_K;
        if ((r == R_Q4_K_M || r == R_Q5_K_M) && more_bits(i, n)) return ET_Q6_K;
        if (r == R_Q4_K_S && i < 4) return ET_Q5_K;
        break;
    case QM_ATTN_OUTPUT:
        if (r == R_Q2_K) return ET_Q3_K;
        if (r == R_Q3_K_M) return ET_Q4_K;
        if (r == R_Q3_K_L) return ET_Q5_K;
        break;
    case QM_FFN_DOWN:
        if (r == R_Q2_K) return ET_Q3_K;
        if (r == R_Q3_K_M) return i < n / 16 ? ET_Q5_K : ET_Q4_K;
        if (r == R_Q3_K_L) return ET_Q5_K;
        if ((r == R_Q4_K_M || r == R_Q5_K_M) && more_bits(i, n)) return ET_Q6_K;
        if ((r == R_Q4_K_S || r == R_IQ4) && i < n / 8) return ET_Q5_K;
        break;
    default: break;
    }
    return m->base;
}

et_dtype quant_mix_type(const quant_mix *m, qm_role role, int layer, int64_t cols, const qm_model *mm)
{
    if (m->rules == R_SINGLE) return m->base; /* exactly what was asked, or an error when writing */
    et_dtype t = rule_type(m, role, layer, mm);
    if (cols % ek_format_of(t)->block == 0) return t;
    /* rows not a whole number of the type's blocks: llama.cpp's fallback
     * (tensor_type_fallback), and F16 where the fallback's blocks do not
     * fit either (a 32-value type falls back to itself, so to F16) */
    et_dtype f;
    switch (t) {
    case ET_Q2_K:
    case ET_Q3_K: f = ET_Q4_0; break;
    case ET_IQ4_XS: f = ET_IQ4_NL; break;
    case ET_Q4_K: f = ET_Q5_0; break;
    case ET_Q5_K: f = ET_Q5_1; break;
    case ET_Q6_K: f = ET_Q8_0; break;
    default: f = t; break;
    }
    return cols % ek_format_of(f)->block == 0 ? f : ET_F16;
}
