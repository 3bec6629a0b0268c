/* Placeholder until the avx512 kernel set lands: reports "not available". */
#include "kernels/matmul.h"

const ek_kernel_set *ek_kernels_avx512(void);
const ek_kernel_set *ek_kernels_avx512(void) { return NULL; }
