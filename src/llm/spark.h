/* The Spark-X2.5 model: its config and weights (views into the mapped
 * checkpoint, never copied except the small fp32 norm/bias vectors). */
#ifndef EMBER_LLM_SPARK_H
#define EMBER_LLM_SPARK_H

#include "ember.h"
#include "io/checkpoint.h"
#include "kernels/matmul.h"
#include "llm/spark_config.h"

typedef struct spark_layer {
    const float *attn_norm, *mlp_norm;  /* hidden */
    ek_matrix wq, wk, wv;              /* rows of the fused q_k_v_proj */
    const float *bq, *bk, *bv;         /* NULL unless attention_bias */
    ek_matrix wg;                      /* heads x hidden; rows 0 when no gate */
    const float *bg;
    ek_matrix wo;                      /* hidden x heads*head_dim */
    const float *bo;
    ek_matrix w_gate, w_up, w_down;
    const float *b_gate, *b_up, *b_down; /* NULL unless mlp_bias */
} spark_layer;

struct ember_model {
    spark_config cfg;
    ember_model_params params;
    ck_dir *ck;
    ek_matrix embed;   /* vocab x hidden */
    ek_matrix lm_head; /* == embed when tied */
    const float *final_norm;
    spark_layer layers[SPARK_MAX_LAYERS];
    float *vectors;    /* fp32 copies of every norm weight and bias */
    const ek_kernel_set *kernels;
    void **converted;  /* matrices converted at load (weight_type), owned */
    size_t n_converted;
    struct onnx_backend *onnx; /* params.backend "onnx:DIR"; NULL: ember's kernels */
};

#endif
