/* Kernel-set selection and the helpers shared by every set. */
#include "kernels/matmul.h"

#include <string.h>

#include "kernels/cpu.h"
#include "kernels/formats.h"
#include "kernels/rows8.h"

ek_matrix ek_matrix_rows(const ek_matrix *w, int64_t first, int64_t n)
{
    ek_matrix m = *w;
    m.data = (const char *)w->data + (size_t)first * ek_row_bytes(w->dtype, w->cols);
    m.rows = n;
    return m;
}

void ek_row_to_f32(float *out, const ek_matrix *w, int64_t r)
{
    if (w->layout == EK_LAYOUT_ROWS8) {
        ek_rows8_row_to_f32(w, r, out);
        return;
    }
    const ek_format *f = ek_format_of(w->dtype);
    f->to_f32((const char *)w->data + (size_t)r * ek_row_bytes(w->dtype, w->cols), out, w->cols);
}

ek_gemm_fn ek_kernels_gemm(const ek_kernel_set *k, const ek_matrix *w)
{
    return w->layout == EK_LAYOUT_ROWS8 ? k->gemm_rows8[w->dtype] : k->gemm[w->dtype];
}

ek_gemm_prepared_fn ek_kernels_gemm_prepared(const ek_kernel_set *k, const ek_matrix *w)
{
    return w->layout == EK_LAYOUT_ROWS8 ? k->gemm_prepared_rows8[w->dtype]
                                       : k->gemm_prepared[w->dtype];
}

ek_to_f32_fn ek_kernels_to_f32(const ek_kernel_set *k, et_dtype dtype)
{
    return k->to_f32[dtype] ? k->to_f32[dtype] : ek_format_of(dtype)->to_f32;
}

ek_conv_fn ek_kernels_conv(const ek_kernel_set *k, ek_conv_format format)
{
    /* the sets are static per instruction set; VDPBF16PS is an extension
     * of AVX-512 that not every AVX-512 CPU has */
    if (format == EK_CONV_BF16 && !ek_cpu_detect().avx512bf16 && !strcmp(k->name, "avx512"))
        return ek_conv_scalar;
    return k->conv[format] ? k->conv[format] : ek_conv_scalar;
}

ek_snake_fn ek_kernels_snake(const ek_kernel_set *k)
{
    return k->snake ? k->snake : ek_snake_scalar;
}

/* The SIMD sets live in their own files, compiled for their instruction set;
 * each returns NULL when the build has no such set (e.g. on ARM). */
const ek_kernel_set *ek_kernels_avx2(void);
const ek_kernel_set *ek_kernels_avx512(void);
const ek_kernel_set *ek_kernels_neon(void);

const ek_kernel_set *ek_kernels_by_name(const char *name)
{
    ek_cpu cpu = ek_cpu_detect();
    if (!strcmp(name, "scalar")) return ek_kernels_scalar();
    if (!strcmp(name, "avx2")) return cpu.avx2 && cpu.fma && cpu.f16c ? ek_kernels_avx2() : NULL;
    /* The avx512 set's integer dot products are VNNI (vpdpbusd); a CPU
     * without it (Skylake-X) runs the avx2 set. */
    if (!strcmp(name, "avx512"))
        return cpu.avx512f && cpu.avx512bw && cpu.avx512vl && cpu.avx512vnni && cpu.fma && cpu.f16c
                   ? ek_kernels_avx512()
                   : NULL;
    if (!strcmp(name, "neon")) return cpu.neon ? ek_kernels_neon() : NULL;
    return NULL;
}

const ek_kernel_set *ek_kernels_best(void)
{
    static const char *const order[] = {"avx512", "avx2", "neon"};
    for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
        const ek_kernel_set *k = ek_kernels_by_name(order[i]);
        if (k) return k;
    }
    return ek_kernels_scalar();
}
