/* Placeholder until the avx2 kernel set lands: reports "not available". */
#include "kernels/matmul.h"

const ek_kernel_set *ek_kernels_avx2(void);
const ek_kernel_set *ek_kernels_avx2(void) { return NULL; }
