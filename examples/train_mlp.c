/* train_mlp.c - training a 2-layer MLP with SGD, one compiled program per step.
 *
 * The task: 512 points in 8 dimensions (standard normal), labelled with the class (of 4) that a
 * random linear map scores highest. Three programs:
 *   data   draws the points and the labels once, with Sinter's counter-based generator;
 *   init   draws the weights once (uniform in +-1/sqrt(fan_in)) straight into the weight buffers;
 *   step   the whole training step: forward (Linear -> ReLU -> Linear -> log_softmax), the mean
 *          cross-entropy, its gradient by every weight (sn_tensor_gradient), and the SGD update
 *          w <- w - lr * dw of every weight in place (sn_tensor_assign, listed as effects).
 * The step program is compiled once and run 200 times on the same buffers; it prints the loss
 * every 20 steps and exits non-zero unless the loss fell below a third of its start.
 *
 *   cc train_mlp.c -lsinter && ./a.out
 */
#include <stdio.h>
#include <stdlib.h>

#include "sinter/sinter.h"

enum { N = 512, IN = 8, HIDDEN = 32, CLASSES = 4, STEPS = 200, PARAMS = 4 };

static const float kLearningRate = 0.5f;

static void check(sn_error *err) {
  if (err != NULL) {
    fprintf(stderr, "error %d: %s\n", (int)sn_error_code(err), sn_error_message(err));
    sn_error_free(err);
    exit(1);
  }
}

static sn_uop *constant(sn_graph *g, double v, sn_error **err) {
  return sn_uop_const_float(g, SN_DTYPE_FLOAT32, v, err);
}

/* The data program: outputs x (N, IN) and the one-hot labels y (N, CLASSES) of argmax(x @ m). */
static sn_program *compile_data(sn_context *ctx, sn_device *cpu, sn_error **err) {
  sn_graph *g = sn_graph_create(ctx, err);
  int64_t xs[2] = {N, IN}, ms[2] = {IN, CLASSES};
  sn_uop *x = sn_tensor_randn(g, xs, 2, 42, SN_DTYPE_FLOAT32, err);
  sn_uop *m = sn_tensor_randn(g, ms, 2, 43, SN_DTYPE_FLOAT32, err);
  sn_uop *label = sn_tensor_argmax(g, sn_tensor_gemm(g, x, m, err), 1, 0, err);
  sn_uop *outs[2];
  sn_program *p;
  outs[0] = x;
  outs[1] = sn_tensor_one_hot(g, label, CLASSES, SN_DTYPE_FLOAT32, err);
  p = sn_compile(g, outs, 2, cpu, NULL, err);
  sn_graph_release(g);
  return p;
}

/* The init program: w1 (IN, HIDDEN), b1 (HIDDEN,), w2 (HIDDEN, CLASSES), b2 (CLASSES,). */
static const int64_t kShapes[PARAMS][2] = {{IN, HIDDEN}, {HIDDEN, 0}, {HIDDEN, CLASSES}, {CLASSES, 0}};
static const size_t kRanks[PARAMS] = {2, 1, 2, 1};
static const double kScale[PARAMS] = {0.35355339059327373, 0.35355339059327373, 0.17677669529663687,
                                      0.17677669529663687}; /* 1/sqrt(fan_in) */

static sn_program *compile_init(sn_context *ctx, sn_device *cpu, sn_error **err) {
  sn_graph *g = sn_graph_create(ctx, err);
  sn_uop *w[PARAMS];
  sn_program *p;
  int k;
  for (k = 0; k < PARAMS; k++) {
    sn_uop *u = sn_tensor_rand(g, kShapes[k], kRanks[k], (uint64_t)(k + 1), SN_DTYPE_FLOAT32, err);
    u = sn_uop_binary(g, SN_OP_SUB, u, constant(g, 0.5, err), err);
    w[k] = sn_uop_binary(g, SN_OP_MUL, u, constant(g, 2 * kScale[k], err), err);
  }
  p = sn_compile(g, w, PARAMS, cpu, NULL, err);
  sn_graph_release(g);
  return p;
}

/* The step program: inputs x, y, w1, b1, w2, b2; output the loss (before the update); effects:
   the four updates. */
static sn_program *compile_step(sn_context *ctx, sn_device *cpu, sn_error **err) {
  sn_graph *g = sn_graph_create(ctx, err);
  int64_t xs[2] = {N, IN}, ys[2] = {N, CLASSES}, all[2] = {0, 1};
  sn_uop *x = sn_tensor_input(g, SN_DTYPE_FLOAT32, xs, 2, NULL, err);
  sn_uop *y = sn_tensor_input(g, SN_DTYPE_FLOAT32, ys, 2, NULL, err);
  sn_uop *w[PARAMS], *grads[PARAMS], *updates[PARAMS], *h, *logits, *loss;
  sn_compile_options opts;
  sn_program *p;
  int k;
  for (k = 0; k < PARAMS; k++) w[k] = sn_tensor_input(g, SN_DTYPE_FLOAT32, kShapes[k], kRanks[k], NULL, err);
  h = sn_tensor_relu(g, sn_uop_binary(g, SN_OP_ADD, sn_tensor_gemm(g, x, w[0], err), w[1], err), err);
  logits = sn_uop_binary(g, SN_OP_ADD, sn_tensor_gemm(g, h, w[2], err), w[3], err);
  /* mean cross-entropy: -sum(log_softmax(logits) * y) / N, one element of shape (1, 1) */
  loss = sn_uop_binary(g, SN_OP_MUL, sn_tensor_log_softmax(g, logits, 1, err), y, err);
  loss = sn_uop_binary(g, SN_OP_MUL, sn_uop_reduce(g, loss, SN_OP_ADD, all, 2, err), constant(g, -1.0 / N, err), err);
  if (sn_tensor_gradient(g, loss, w, PARAMS, grads, err) != SN_OK) return NULL;
  for (k = 0; k < PARAMS; k++) {
    sn_uop *step = sn_uop_binary(g, SN_OP_MUL, grads[k], constant(g, kLearningRate, err), err);
    updates[k] = sn_tensor_assign(g, w[k], sn_uop_binary(g, SN_OP_SUB, w[k], step, err), err);
  }
  if (sn_compile_options_init(&opts, sizeof opts, err) != SN_OK) return NULL;
  opts.effects = updates;
  opts.neffects = PARAMS;
  p = sn_compile(g, &loss, 1, cpu, &opts, err);
  sn_graph_release(g);
  return p;
}

int main(void) {
  sn_error *err = NULL;
  sn_context *ctx = sn_context_create(&err);
  sn_device *cpu = sn_device_open(ctx, "CPU", &err);
  sn_program *data, *init, *step;
  sn_buffer *bufs[2 + PARAMS], *loss_buf;
  float loss = 0, first = 0;
  int k, i;
  check(err);

  data = compile_data(ctx, cpu, &err);
  check(err);
  init = compile_init(ctx, cpu, &err);
  check(err);
  step = compile_step(ctx, cpu, &err);
  check(err);

  /* The data and the weights are made on the device, into the buffers the step program reads. */
  for (k = 0; k < 2; k++) bufs[k] = sn_program_alloc_output(data, (size_t)k, &err);
  for (k = 0; k < PARAMS; k++) bufs[2 + k] = sn_program_alloc_output(init, (size_t)k, &err);
  loss_buf = sn_program_alloc_output(step, 0, &err);
  check(err);
  if (sn_program_run(data, NULL, 0, bufs, 2, &err) != SN_OK ||
      sn_program_run(init, NULL, 0, bufs + 2, PARAMS, &err) != SN_OK)
    check(err);

  for (i = 0; i < STEPS; i++) {
    if (sn_program_run(step, bufs, 2 + PARAMS, &loss_buf, 1, &err) != SN_OK) check(err);
    if (i % 20 == 0 || i == STEPS - 1) {
      if (sn_buffer_copy_out(loss_buf, &loss, sizeof loss, &err) != SN_OK) check(err);
      if (i == 0) first = loss;
      printf("step %d loss %.4f\n", i, loss);
    }
  }
  printf("%zu kernels per step; loss %.4f -> %.4f\n", sn_program_num_kernels(step, &err), first, loss);
  check(err);

  for (k = 0; k < 2 + PARAMS; k++) sn_buffer_release(bufs[k]);
  sn_buffer_release(loss_buf);
  sn_program_release(step);
  sn_program_release(init);
  sn_program_release(data);
  sn_device_release(cpu);
  sn_context_release(ctx);
  if (!(loss < first / 3)) {
    fprintf(stderr, "train_mlp: the loss did not fall below a third of its start\n");
    return 1;
  }
  return 0;
}
