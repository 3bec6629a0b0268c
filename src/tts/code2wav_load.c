/* Loading the speech decoder: the `decoder.*` tensors of
 * speech_tokenizer/model.safetensors bound to a c2w_model. Conv weights are
 * packed into the conv kernels' panels (conv.h); the transformer goes
 * through the same stack binding as the talker (tts_bind.h). */
#include "tts/code2wav.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "kernels/formats.h"
#include "tts/tts_bind.h"
#include "tts/tts_gguf.h"

typedef struct c2w_loader {
    tts_loader tl;
    c2w_model *m;
    wt_f32_buf tmp; /* an fp32 copy of the tensor being packed */
} c2w_loader;

/* The tensor as fp32 in ld->tmp (any float dtype of the file), shape checked. */
static ember_status fetch_f32(c2w_loader *ld, const char *name, int n_dims, const int64_t *shape,
                              const float **out)
{
    return wt_fetch_f32(&ld->tl.wt, name, n_dims, shape, &ld->tmp, out);
}

static ember_status vector(c2w_loader *ld, const char *name, int64_t n, const float **out)
{
    return wt_bind_vector(&ld->tl.wt, name, n, out);
}

/* A vector block slot for values computed at load (Snake parameters,
 * expanded biases, codebooks). */
static float *take(c2w_loader *ld, int64_t n)
{
    float *p = ld->tl.wt.next_vector;
    if (p + n > ld->tl.wt.vectors_end) return NULL;
    ld->tl.wt.next_vector += n;
    return p;
}

static ember_status keep_packed(c2w_loader *ld, c2w_conv *c)
{
    c2w_model *m = ld->m;
    if (m->n_packed == (int32_t)(sizeof m->packed / sizeof *m->packed))
        return ember_fail(EMBER_ERR_UNSUPPORTED, "speech decoder: too many convolutions");
    m->packed[m->n_packed++] = &c->w;
    return EMBER_OK;
}

/* "{prefix}.weight" [cout, cin, k] and optionally "{prefix}.bias" [cout]. */
static ember_status conv(c2w_loader *ld, const char *prefix, int32_t cout, int32_t cin, int32_t k,
                         int32_t dilation, int has_bias, c2w_conv *out)
{
    char name[200];
    const float *w;
    ember_status st;
    const int64_t shape[3] = {cout, cin, k};
    snprintf(name, sizeof name, "%s.weight", prefix);
    if ((st = fetch_f32(ld, name, 3, shape, &w)) ||
        (st = ek_conv_pack(&out->w, ld->m->conv_format, w, cout, cin, k)) ||
        (st = keep_packed(ld, out)))
        return st;
    out->dilation = dilation;
    out->bias = NULL;
    if (!has_bias) return EMBER_OK;
    snprintf(name, sizeof name, "%s.bias", prefix);
    return vector(ld, name, cout, &out->bias);
}

/* A Linear [cout, cin] as a 1x1 conv. */
static ember_status linear(c2w_loader *ld, const char *prefix, int32_t cout, int32_t cin,
                           c2w_conv *out)
{
    char name[200];
    const float *w;
    ember_status st;
    const int64_t shape[2] = {cout, cin};
    snprintf(name, sizeof name, "%s.weight", prefix);
    if ((st = fetch_f32(ld, name, 2, shape, &w)) ||
        (st = ek_conv_pack(&out->w, ld->m->conv_format, w, cout, cin, 1)) ||
        (st = keep_packed(ld, out)))
        return st;
    out->dilation = 1;
    snprintf(name, sizeof name, "%s.bias", prefix);
    return vector(ld, name, cout, &out->bias);
}

/* ConvTranspose1d "{prefix}.weight" [cin, cout, k] with stride s; its bias
 * repeated for each of the s output steps a packed row holds. */
static ember_status transposed(c2w_loader *ld, const char *prefix, int32_t cin, int32_t cout,
                               int32_t k, int32_t s, c2w_conv *out)
{
    char name[200];
    const float *w, *b;
    ember_status st;
    const int64_t shape[3] = {cin, cout, k};
    snprintf(name, sizeof name, "%s.weight", prefix);
    if ((st = fetch_f32(ld, name, 3, shape, &w)) ||
        (st = ek_conv_pack_transposed(&out->w, ld->m->conv_format, w, cin, cout, k, s)) ||
        (st = keep_packed(ld, out)))
        return st;
    out->dilation = 1;
    snprintf(name, sizeof name, "%s.bias", prefix);
    if ((st = vector(ld, name, cout, &b))) return st;
    float *full = take(ld, (int64_t)s * cout);
    if (!full) return ember_fail(EMBER_ERR_FORMAT, "speech decoder: vector block overflow");
    for (int32_t p = 0; p < s; p++) memcpy(full + (size_t)p * cout, b, sizeof(float) * cout);
    out->bias = full;
    return EMBER_OK;
}

static ember_status snake(c2w_loader *ld, const char *prefix, int32_t c, c2w_snake *out)
{
    char name[200];
    const float *alpha, *beta;
    ember_status st;
    snprintf(name, sizeof name, "%s.alpha", prefix);
    if ((st = vector(ld, name, c, &alpha))) return st;
    snprintf(name, sizeof name, "%s.beta", prefix);
    if ((st = vector(ld, name, c, &beta))) return st;
    /* alpha and beta are stored as logs (alpha_logscale) */
    float *a = (float *)alpha, *inv_b = (float *)beta;
    for (int32_t i = 0; i < c; i++) {
        a[i] = expf(alpha[i]);
        inv_b[i] = 1.0f / (expf(beta[i]) + 1e-9f);
    }
    out->a = a;
    out->inv_b = inv_b;
    return EMBER_OK;
}

static ember_status codebook(c2w_loader *ld, const char *prefix, const float **out)
{
    const c2w_config *c = &ld->m->cfg;
    char name[240];
    const float *usage, *sum;
    ember_status st;
    snprintf(name, sizeof name, "%s._codebook.cluster_usage", prefix);
    if ((st = vector(ld, name, c->codebook_size, &usage))) return st;
    const int64_t shape[2] = {c->codebook_size, c->vq_dim};
    snprintf(name, sizeof name, "%s._codebook.embedding_sum", prefix);
    if ((st = fetch_f32(ld, name, 2, shape, &sum))) return st;
    float *e = take(ld, (int64_t)c->codebook_size * c->vq_dim);
    if (!e) return ember_fail(EMBER_ERR_FORMAT, "speech decoder: vector block overflow");
    for (int32_t r = 0; r < c->codebook_size; r++) {
        float u = usage[r] > 1e-5f ? usage[r] : 1e-5f;
        for (int32_t i = 0; i < c->vq_dim; i++)
            e[(size_t)r * c->vq_dim + i] = sum[(size_t)r * c->vq_dim + i] / u;
    }
    *out = e;
    return EMBER_OK;
}

static ember_status quantizer(c2w_loader *ld)
{
    c2w_model *m = ld->m;
    const c2w_config *c = &m->cfg;
    char name[200];
    ember_status st;
    const int64_t in_shape[3] = {c->vq_dim, c->codebook_dim, 1};
    const et_tensor *unused;
    /* the input projections only matter when encoding; checked, not kept */
    if ((st = wt_fetch_shape(&ld->tl.wt, "decoder.quantizer.rvq_first.input_proj.weight", 3,
                             in_shape, &unused)) ||
        (st = wt_fetch_shape(&ld->tl.wt, "decoder.quantizer.rvq_rest.input_proj.weight", 3,
                             in_shape, &unused)) ||
        (st = conv(ld, "decoder.quantizer.rvq_first.output_proj", c->codebook_dim, c->vq_dim, 1, 1,
                   0, &m->proj_first)) ||
        (st = conv(ld, "decoder.quantizer.rvq_rest.output_proj", c->codebook_dim, c->vq_dim, 1, 1,
                   0, &m->proj_rest)) ||
        (st = codebook(ld, "decoder.quantizer.rvq_first.vq.layers.0", &m->codebooks[0])))
        return st;
    for (int32_t k = 1; k < c->n_quantizers; k++) {
        snprintf(name, sizeof name, "decoder.quantizer.rvq_rest.vq.layers.%d", k - 1);
        if ((st = codebook(ld, name, &m->codebooks[k]))) return st;
    }
    return EMBER_OK;
}

static ember_status transformer(c2w_loader *ld)
{
    c2w_model *m = ld->m;
    const c2w_config *c = &m->cfg;
    const int32_t hid = c->transformer.hidden;
    ember_status st;
    if ((st = tts_bind_matrix(&ld->tl, "decoder.pre_transformer.input_proj.weight", hid, c->latent,
                              &m->in_proj)) ||
        (st = vector(ld, "decoder.pre_transformer.input_proj.bias", hid, &m->in_proj_b)) ||
        (st = tts_bind_stack(&ld->tl, "decoder.pre_transformer", &c->transformer,
                             &m->transformer)) ||
        (st = tts_bind_matrix(&ld->tl, "decoder.pre_transformer.output_proj.weight", c->latent,
                              hid, &m->out_proj)) ||
        (st = vector(ld, "decoder.pre_transformer.output_proj.bias", c->latent, &m->out_proj_b)))
        return st;
    return EMBER_OK;
}

static ember_status upsample_stage(c2w_loader *ld, int32_t u)
{
    c2w_model *m = ld->m;
    const int32_t C = m->cfg.latent, r = m->cfg.upsampling_ratios[u];
    c2w_upsample *up = &m->upsample[u];
    c2w_convnext *nx = &up->block;
    char p[120], name[200];
    const float *dw;
    ember_status st;
    up->ratio = r;
    snprintf(p, sizeof p, "decoder.upsample.%d", u);
    snprintf(name, sizeof name, "%s.0.conv", p);
    if ((st = transposed(ld, name, C, C, r, r, &up->up))) return st;
    const int64_t dw_shape[3] = {C, 1, 7};
    snprintf(name, sizeof name, "%s.1.dwconv.conv.weight", p);
    if ((st = fetch_f32(ld, name, 3, dw_shape, &dw))) return st;
    float *taps = take(ld, 7 * (int64_t)C);
    if (!taps) return ember_fail(EMBER_ERR_FORMAT, "speech decoder: vector block overflow");
    for (int32_t ch = 0; ch < C; ch++)
        for (int32_t j = 0; j < 7; j++) taps[(size_t)j * C + ch] = dw[(size_t)ch * 7 + j];
    nx->dw = taps;
    snprintf(name, sizeof name, "%s.1.dwconv.conv.bias", p);
    if ((st = vector(ld, name, C, &nx->dw_b))) return st;
    snprintf(name, sizeof name, "%s.1.norm.weight", p);
    if ((st = vector(ld, name, C, &nx->ln_w))) return st;
    snprintf(name, sizeof name, "%s.1.norm.bias", p);
    if ((st = vector(ld, name, C, &nx->ln_b))) return st;
    snprintf(name, sizeof name, "%s.1.pwconv1", p);
    if ((st = linear(ld, name, 4 * C, C, &nx->pw1))) return st;
    snprintf(name, sizeof name, "%s.1.pwconv2", p);
    if ((st = linear(ld, name, C, 4 * C, &nx->pw2))) return st;
    snprintf(name, sizeof name, "%s.1.gamma", p);
    return vector(ld, name, C, &nx->gamma);
}

static ember_status decoder_block(c2w_loader *ld, int32_t b)
{
    c2w_model *m = ld->m;
    c2w_block *blk = &m->blocks[b];
    static const int32_t dilations[3] = {1, 3, 9};
    char p[120], name[200];
    ember_status st;
    blk->rate = m->cfg.upsample_rates[b];
    blk->cin = c2w_block_channels(&m->cfg, b);
    blk->cout = c2w_block_channels(&m->cfg, b + 1);
    snprintf(p, sizeof p, "decoder.decoder.%d.block", b + 1);
    snprintf(name, sizeof name, "%s.0", p);
    if ((st = snake(ld, name, blk->cin, &blk->act))) return st;
    snprintf(name, sizeof name, "%s.1.conv", p);
    if ((st = transposed(ld, name, blk->cin, blk->cout, 2 * blk->rate, blk->rate, &blk->up)))
        return st;
    for (int32_t u = 0; u < 3; u++) {
        c2w_resunit *ru = &blk->units[u];
        snprintf(name, sizeof name, "%s.%d.act1", p, u + 2);
        if ((st = snake(ld, name, blk->cout, &ru->act1))) return st;
        snprintf(name, sizeof name, "%s.%d.act2", p, u + 2);
        if ((st = snake(ld, name, blk->cout, &ru->act2))) return st;
        snprintf(name, sizeof name, "%s.%d.conv1.conv", p, u + 2);
        if ((st = conv(ld, name, blk->cout, blk->cout, 7, dilations[u], 1, &ru->conv1))) return st;
        /* ld->tmp still holds the fp32 weights conv() packed */
        if (m->winograd && m->conv_format != EK_CONV_BF16 &&
            (st = ek_winograd_pack(&ru->conv1_fast, ld->tmp.p, blk->cout, blk->cout, 7)))
            return st;
        snprintf(name, sizeof name, "%s.%d.conv2.conv", p, u + 2);
        if ((st = conv(ld, name, blk->cout, blk->cout, 1, 1, 1, &ru->conv2))) return st;
    }
    return EMBER_OK;
}

/* Floats of the vector block: biases, norms, scales, Snake parameters,
 * expanded transposed-conv biases, depthwise taps and the codebooks. */
static size_t vector_floats(const c2w_config *c)
{
    size_t n = (size_t)c->n_quantizers * ((size_t)c->codebook_size * (c->vq_dim + 1));
    n += (size_t)c->latent * 2 + (size_t)c->decoder_dim; /* pre_conv, out_proj, dec0 biases */
    n += (size_t)c->transformer.hidden + tts_stack_vector_floats(&c->transformer);
    for (int32_t u = 0; u < c->n_upsample; u++)
        n += (size_t)c->latent * (2 * (size_t)c->upsampling_ratios[u] + 7 + 4 + 4 + 1 + 1);
    n += (size_t)c2w_block_channels(c, 0);
    for (int32_t b = 0; b < c->n_blocks; b++) {
        size_t ci = (size_t)c2w_block_channels(c, b), co = (size_t)c2w_block_channels(c, b + 1);
        n += 2 * ci + 2 * (size_t)c->upsample_rates[b] * co + 3 * (4 * co + 2 * co);
    }
    return n + 2 * (size_t)c2w_block_channels(c, c->n_blocks) + 1;
}

/* The conv format for a requested weight type: BF16 and F32 as asked; NONE
 * keeps weights the file stores as f16 in f16 (the F32 arithmetic on half
 * the memory: nothing is rounded that the file did not round), else F32. */
static ek_conv_format conv_format_for(ck_dir *ck, ember_type wt)
{
    if (wt == EMBER_TYPE_BF16) return EK_CONV_BF16;
    if (wt == EMBER_TYPE_F32) return EK_CONV_F32;
    const et_tensor *t = ck_get(ck, "decoder.pre_conv.conv.weight", NULL);
    return t && t->dtype == ET_F16 ? EK_CONV_F16 : EK_CONV_F32;
}

static ember_status load_into(c2w_model *m, const char *dir, ember_type wt)
{
    ember_status st;
    char label[1200];
    if ((st = tts_ck_open(dir, TTS_PART_SPEECH, &m->ck, label, sizeof label)) ||
        (st = c2w_config_parse(ck_config_json(m->ck), ck_config_len(m->ck), label, &m->cfg)))
        return st;
    m->conv_format = conv_format_for(m->ck, wt);
    const c2w_config *c = &m->cfg;
    const size_t n_vector = vector_floats(c);
    const size_t max_converted = 16 * (size_t)c->transformer.n_layers + 8;
    m->vectors = malloc(n_vector * sizeof(float));
    m->converted = calloc(max_converted, sizeof *m->converted);
    if (!m->vectors || !m->converted)
        return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory loading %s", dir);
    const et_dtype mat = m->conv_format == EK_CONV_BF16 ? ET_BF16
                         : m->conv_format == EK_CONV_F16 ? ET_F16
                                                         : ET_F32;
    c2w_loader ld = {{{m->ck, m->vectors, m->vectors + n_vector, m->converted, &m->n_converted,
                       max_converted, mat, 0, NULL, 0, 0, m->kernels, 0},
                      &m->n_unconverted},
                     m, {NULL, 0}};
    const int32_t last = c2w_block_channels(c, c->n_blocks);
    char name[80];
    st = quantizer(&ld);
    if (!st) st = conv(&ld, "decoder.pre_conv.conv", c->latent, c->codebook_dim, 3, 1, 1, &m->pre_conv);
    if (!st) st = transformer(&ld);
    for (int32_t u = 0; !st && u < c->n_upsample; u++) st = upsample_stage(&ld, u);
    if (!st)
        st = conv(&ld, "decoder.decoder.0.conv", c->decoder_dim, c->latent, 7, 1, 1, &m->dec0);
    for (int32_t b = 0; !st && b < c->n_blocks; b++) st = decoder_block(&ld, b);
    if (!st) {
        snprintf(name, sizeof name, "decoder.decoder.%d", c->n_blocks + 1);
        st = snake(&ld, name, last, &m->final_act);
    }
    if (!st) {
        snprintf(name, sizeof name, "decoder.decoder.%d.conv", c->n_blocks + 2);
        st = conv(&ld, name, 1, last, 7, 1, 1, &m->final_conv);
    }
    free(ld.tmp.p);
    if (st) return st;
    ck_skip_prefix(m->ck, "encoder."); /* the encoder turns audio into codes: not needed */
    if ((st = ck_check_all_used(m->ck))) return st;
    if (!ld.tl.wt.kept_mapped) ck_drop_resident(m->ck);
    return EMBER_OK;
}

const char *c2w_weights_name(const c2w_model *m)
{
    static const char *const names[EK_CONV_FORMAT_COUNT] = {[EK_CONV_F32] = "f32", [EK_CONV_BF16] = "bf16",
                                                            [EK_CONV_F16] = "f16"};
    return names[m->conv_format];
}

ember_status c2w_model_load(const char *dir, const c2w_model_params *p, c2w_model **out)
{
    if (!out) return ember_fail(EMBER_ERR_INVALID_ARG, "c2w_model_load: out is NULL");
    *out = NULL;
    if (!dir) return ember_fail(EMBER_ERR_INVALID_ARG, "c2w_model_load: dir is NULL");
    const ember_type wt = p ? p->weight_type : EMBER_TYPE_NONE;
    if (wt != EMBER_TYPE_NONE && wt != EMBER_TYPE_F32 && wt != EMBER_TYPE_BF16)
        return ember_fail(EMBER_ERR_UNSUPPORTED,
                          "speech decoder: weight type must be f32 or bf16 (its convolutions are "
                          "compute-bound; quantized weights would not make them faster)");
    c2w_model *m = calloc(1, sizeof *m);
    if (!m) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory loading %s", dir);
    m->winograd = p ? p->winograd : 1;
    const char *kernels = p ? p->kernels : NULL;
    m->kernels = kernels ? ek_kernels_by_name(kernels) : ek_kernels_best();
    if (!m->kernels) {
        free(m);
        return ember_fail(EMBER_ERR_INVALID_ARG,
                          "c2w_model_load: kernel set '%s' is unknown or this CPU cannot run it",
                          kernels);
    }
    ember_status st = load_into(m, dir, wt);
    if (st) {
        c2w_model_free(m);
        return st;
    }
    *out = m;
    return EMBER_OK;
}

void c2w_model_free(c2w_model *m)
{
    if (!m) return;
    for (int32_t i = 0; i < m->n_packed; i++) ek_conv_weights_free(m->packed[i]);
    for (int32_t b = 0; b < C2W_MAX_BLOCKS; b++)
        for (int32_t u = 0; u < 3; u++) ek_winograd_free(&m->blocks[b].units[u].conv1_fast);
    ck_close(m->ck);
    for (size_t i = 0; i < m->n_converted; i++) free(m->converted[i]);
    free(m->converted);
    free(m->vectors);
    free(m);
}
