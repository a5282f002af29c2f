/* mlp.c - the forward pass of a small multilayer perceptron on random data.
 *
 * Linear(32, 64) -> GELU -> Linear(64, 64) -> ReLU -> Linear(64, 10) -> log_softmax and argmax, for
 * batches of 64 rows. Two programs share buffers:
 *   init     draws the weights once on the device with Sinter's counter-based generator (uniform in
 *            [-1/sqrt(fan_in), 1/sqrt(fan_in)), as PyTorch does; the same seeds give the same weights
 *            everywhere) straight into the weight buffers;
 *   forward  takes a batch and the weights as inputs; compiled once, run for three batches.
 *
 *   cc mlp.c -lsinter && ./a.out
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sinter/sinter.h"

enum { BATCH = 64, IN = 32, HIDDEN = 64, CLASSES = 10, LAYERS = 3 };

static const int64_t kFanIn[LAYERS] = {IN, HIDDEN, HIDDEN};
static const int64_t kFanOut[LAYERS] = {HIDDEN, HIDDEN, CLASSES};
static const double kScale[LAYERS] = {0.17677669529663687, 0.125, 0.125}; /* 1/sqrt(fan_in) */

static void check(sn_error *err) {
  if (err != NULL) {
    fprintf(stderr, "error %d: %s\n", (int)sn_error_code(err), sn_error_message(err));
    sn_error_free(err);
    exit(1);
  }
}

/* A small deterministic generator for the input batches (no libm, no global rand() state). */
static float next_uniform(uint32_t *state) {
  *state = *state * 1664525u + 1013904223u;
  return (float)(*state >> 8) / 16777216.0f * 2.0f - 1.0f;
}

/* The init program: weight k = (rand - 0.5) * 2 * scale_k. */
static sn_program *compile_init(sn_context *ctx, sn_device *cpu, sn_error **err) {
  sn_graph *g = sn_graph_create(ctx, err);
  sn_uop *w[LAYERS];
  sn_program *p;
  int k;
  for (k = 0; k < LAYERS; k++) {
    int64_t shape[2];
    sn_uop *u;
    shape[0] = kFanIn[k];
    shape[1] = kFanOut[k];
    u = sn_tensor_rand(g, shape, 2, (uint64_t)(k + 1), SN_DTYPE_FLOAT32, err);
    u = sn_uop_binary(g, SN_OP_SUB, u, sn_uop_const_float(g, SN_DTYPE_FLOAT32, 0.5, err), err);
    w[k] = sn_uop_binary(g, SN_OP_MUL, u, sn_uop_const_float(g, SN_DTYPE_FLOAT32, 2 * kScale[k], err), err);
  }
  p = sn_compile(g, w, LAYERS, cpu, NULL, err);
  sn_graph_release(g);
  return p;
}

/* The forward program: inputs x, w0, w1, w2 (in creation order); outputs log-probabilities and
   the predicted class of every row. */
static sn_program *compile_forward(sn_context *ctx, sn_device *cpu, sn_error **err) {
  const int64_t x_shape[2] = {BATCH, IN};
  sn_graph *g = sn_graph_create(ctx, err);
  sn_uop *x, *w[LAYERS], *h, *logits, *outs[2];
  sn_program *p;
  int k;
  x = sn_tensor_input(g, SN_DTYPE_FLOAT32, x_shape, 2, NULL, err);
  for (k = 0; k < LAYERS; k++) {
    int64_t shape[2];
    shape[0] = kFanIn[k];
    shape[1] = kFanOut[k];
    w[k] = sn_tensor_input(g, SN_DTYPE_FLOAT32, shape, 2, NULL, err);
  }
  h = sn_tensor_gelu(g, sn_tensor_gemm(g, x, w[0], err), err);
  h = sn_tensor_relu(g, sn_tensor_gemm(g, h, w[1], err), err);
  logits = sn_tensor_gemm(g, h, w[2], err);
  outs[0] = sn_tensor_log_softmax(g, logits, 1, err);
  outs[1] = sn_tensor_argmax(g, logits, 1, 0, err);
  p = sn_compile(g, outs, 2, cpu, NULL, err);
  sn_graph_release(g);
  return p;
}

int main(void) {
  sn_error *err = NULL;
  const int64_t x_shape[2] = {BATCH, IN};
  static float batch[BATCH * IN];
  int32_t classes[BATCH];
  float logp[BATCH * CLASSES];
  uint32_t state = 12345u;
  sn_context *ctx = sn_context_create(&err);
  sn_device *cpu = sn_device_open(ctx, "CPU", &err);
  sn_program *init, *forward;
  sn_buffer *weights[LAYERS], *inputs[1 + LAYERS], *out[2];
  int round, i, j, k;
  check(err);

  init = compile_init(ctx, cpu, &err);
  forward = compile_forward(ctx, cpu, &err);
  check(err);
  for (k = 0; k < LAYERS; k++) weights[k] = sn_program_alloc_output(init, (size_t)k, &err);
  if (err == NULL && sn_program_run(init, NULL, 0, weights, LAYERS, &err) != SN_OK) check(err);
  printf("MLP %d -> %d -> %d -> %d: init %lu kernels, forward %lu kernels, %lu bytes of shared scratch memory\n", IN,
         HIDDEN, HIDDEN, CLASSES, (unsigned long)sn_program_num_kernels(init, &err),
         (unsigned long)sn_program_num_kernels(forward, &err), (unsigned long)sn_program_arena_bytes(forward, &err));

  inputs[0] = sn_buffer_alloc(cpu, SN_DTYPE_FLOAT32, x_shape, 2, &err);
  for (k = 0; k < LAYERS; k++) inputs[1 + k] = weights[k];
  out[0] = sn_program_alloc_output(forward, 0, &err);
  out[1] = sn_program_alloc_output(forward, 1, &err);
  check(err);

  for (round = 0; round < 3; round++) {
    clock_t t0;
    double ms;
    for (i = 0; i < BATCH * IN; i++) batch[i] = next_uniform(&state);
    t0 = clock();
    if (sn_buffer_copy_in(inputs[0], batch, sizeof batch, &err) != SN_OK ||
        sn_program_run(forward, inputs, 1 + LAYERS, out, 2, &err) != SN_OK ||
        sn_buffer_copy_out(out[0], logp, sizeof logp, &err) != SN_OK ||
        sn_buffer_copy_out(out[1], classes, sizeof classes, &err) != SN_OK)
      check(err);
    ms = 1000.0 * (double)(clock() - t0) / CLOCKS_PER_SEC;
    /* the predicted class of each row is the one with the largest log-probability */
    for (i = 0; i < BATCH; i++)
      for (j = 0; j < CLASSES; j++)
        if (classes[i] < 0 || classes[i] >= CLASSES || logp[i * CLASSES + j] > logp[i * CLASSES + classes[i]]) {
          fprintf(stderr, "row %d: argmax %d disagrees with the log-probabilities\n", i, (int)classes[i]);
          return 1;
        }
    printf("batch %d: predicted classes", round);
    for (i = 0; i < 16; i++) printf(" %d", (int)classes[i]);
    printf(" ...  log p(class | row 0) = %.4f  (%.2f ms CPU time)\n", logp[classes[0]], ms);
  }

  sn_buffer_release(inputs[0]);
  for (k = 0; k < LAYERS; k++) sn_buffer_release(weights[k]);
  sn_buffer_release(out[0]);
  sn_buffer_release(out[1]);
  sn_program_release(init);
  sn_program_release(forward);
  sn_device_release(cpu);
  sn_context_release(ctx);
  return 0;
}
