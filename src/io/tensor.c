#include "io/tensor.h"

const char *et_dtype_name(et_dtype dt)
{
    switch (dt) {
    case ET_F32: return "F32";
    case ET_F16: return "F16";
    case ET_BF16: return "BF16";
    case ET_Q8_0: return "Q8_0";
    case ET_Q4_0: return "Q4_0";
    case ET_Q2_K: return "Q2_K";
    case ET_Q3_K: return "Q3_K";
    case ET_Q4_K: return "Q4_K";
    case ET_Q5_K: return "Q5_K";
    case ET_Q6_K: return "Q6_K";
    case ET_IQ4_NL: return "IQ4_NL";
    case ET_IQ4_XS: return "IQ4_XS";
    case ET_Q4_1: return "Q4_1";
    case ET_Q5_0: return "Q5_0";
    case ET_Q5_1: return "Q5_1";
    case ET_DTYPE_COUNT: break;
    }
    return "?";
}

size_t et_dtype_size(et_dtype dt)
{
    switch (dt) {
    case ET_F32: return 4;
    case ET_F16: return 2;
    case ET_BF16: return 2;
    default: break; /* block formats */
    }
    return 0;
}

int et_dtype_is_float(et_dtype dt) { return dt == ET_F32 || dt == ET_F16 || dt == ET_BF16; }

int64_t et_tensor_numel(const et_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->n_dims; i++)
        n *= t->shape[i];
    return n;
}
