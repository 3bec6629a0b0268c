/* Placeholder until the neon kernel set lands: reports "not available". */
#include "kernels/matmul.h"

const ek_kernel_set *ek_kernels_neon(void);
const ek_kernel_set *ek_kernels_neon(void) { return NULL; }
