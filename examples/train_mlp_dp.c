/* train_mlp_dp.c - the MLP of train_mlp.c trained data-parallel over two CPU devices.
 *
 * The same task, weights and SGD as train_mlp.c, with each step run two ways:
 *   one device   the whole batch on "CPU" (the reference);
 *   two devices  the batch sharded over "CPU:0,CPU:1" (each device takes 256 of the 512 points),
 *                the weights replicated (every device holds a copy), each device computing the
 *                gradient of its half of the batch, and the gradients summed across the devices with
 *                sn_tensor_allreduce (the spec's reduce_scatter + allgather) before every device
 *                applies the same update.
 * Each step program outputs the loss and the updated weights; the host swaps the weight buffers
 * between steps. The program prints both losses every 20 steps and exits non-zero unless the
 * two-device losses equal the one-device losses to float tolerance at every step and the loss fell.
 *
 *   cc train_mlp_dp.c -lsinter && ./a.out
 */
#include <stdio.h>
#include <stdlib.h>

#include "sinter/sinter.h"

enum { N = 512, IN = 8, HIDDEN = 32, CLASSES = 4, STEPS = 100, PARAMS = 4, DEVICES = 2 };

static const float kLearningRate = 0.5f;
static const char *const kDevices = "CPU:0,CPU:1";

static float absf(float v) { return v < 0 ? -v : v; }

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

/* The data program (as in train_mlp.c): x (N, IN) and one-hot labels y (N, CLASSES). */
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

/* The weights: w1 (IN, HIDDEN), b1 (HIDDEN,), w2 (HIDDEN, CLASSES), b2 (CLASSES,). */
static const int64_t kShapes[PARAMS][2] = {{IN, HIDDEN}, {HIDDEN, 0}, {HIDDEN, CLASSES}, {CLASSES, 0}};
static const size_t kRanks[PARAMS] = {2, 1, 2, 1};
static const int64_t kNumel[PARAMS] = {IN * HIDDEN, HIDDEN, HIDDEN *CLASSES, CLASSES};
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

/* w - lr * grad */
static sn_uop *sgd(sn_graph *g, sn_uop *w, sn_uop *grad, sn_error **err) {
  return sn_uop_binary(g, SN_OP_SUB, w, sn_uop_binary(g, SN_OP_MUL, grad, constant(g, kLearningRate, err), err), err);
}

/* One device: inputs x, y, w1, b1, w2, b2; outputs the loss (before the update) and the updated
   weights. */
static sn_program *compile_step(sn_context *ctx, sn_device *cpu, sn_error **err) {
  sn_graph *g = sn_graph_create(ctx, err);
  int64_t xs[2] = {N, IN}, ys[2] = {N, CLASSES}, all[2] = {0, 1};
  sn_uop *x = sn_tensor_input(g, SN_DTYPE_FLOAT32, xs, 2, NULL, err);
  sn_uop *y = sn_tensor_input(g, SN_DTYPE_FLOAT32, ys, 2, NULL, err);
  sn_uop *w[PARAMS], *grads[PARAMS], *outs[1 + PARAMS], *h, *logits, *loss;
  sn_program *p;
  int k;
  for (k = 0; k < PARAMS; k++) w[k] = sn_tensor_input(g, SN_DTYPE_FLOAT32, kShapes[k], kRanks[k], NULL, err);
  h = sn_tensor_relu(g, sn_uop_binary(g, SN_OP_ADD, sn_tensor_gemm(g, x, w[0], err), w[1], err), err);
  logits = sn_uop_binary(g, SN_OP_ADD, sn_tensor_gemm(g, h, w[2], err), w[3], err);
  loss = sn_uop_binary(g, SN_OP_MUL, sn_tensor_log_softmax(g, logits, 1, err), y, err);
  loss = sn_uop_binary(g, SN_OP_MUL, sn_uop_reduce(g, loss, SN_OP_ADD, all, 2, err), constant(g, -1.0 / N, err), err);
  if (sn_tensor_gradient(g, loss, w, PARAMS, grads, err) != SN_OK) return NULL;
  outs[0] = loss;
  for (k = 0; k < PARAMS; k++) outs[1 + k] = sgd(g, w[k], grads[k], err);
  p = sn_compile(g, outs, 1 + PARAMS, cpu, NULL, err);
  sn_graph_release(g);
  return p;
}

/* Two devices, the same inputs and outputs (the program scatters x and y and gathers nothing: the
   loss and the weights are replicated, read from CPU:0). Every tensor carries a leading device
   axis of DEVICES sharded over the devices, so each device computes on its own 256 points with its
   own copy of the weights; only the loss (for printing) and the allreduce cross devices. */
static sn_program *compile_step_dp(sn_context *ctx, sn_device *cpu, sn_error **err) {
  sn_graph *g = sn_graph_create(ctx, err);
  int64_t xs[2] = {N, IN}, ys[2] = {N, CLASSES}, x3[3] = {DEVICES, N / DEVICES, IN},
          y3[3] = {DEVICES, N / DEVICES, CLASSES}, local_axes[2] = {1, 2}, device_axis[1] = {0}, loss2[2] = {1, 1};
  /* the batch, sharded on axis 0: fed as whole (N, IN) and (N, CLASSES) buffers */
  sn_uop *x = sn_tensor_input(g, SN_DTYPE_FLOAT32, xs, 2, kDevices, err);
  sn_uop *y = sn_tensor_input(g, SN_DTYPE_FLOAT32, ys, 2, kDevices, err);
  sn_uop *w[PARAMS], *wrep[PARAMS], *ws[PARAMS], *grads[PARAMS], *outs[1 + PARAMS], *h, *logits, *loss;
  sn_program *p;
  int k;
  x = sn_uop_reshape(g, x, x3, 3, err); /* (DEVICES, N/DEVICES, IN), still sharded on axis 0 */
  y = sn_uop_reshape(g, y, y3, 3, err);
  for (k = 0; k < PARAMS; k++) {
    /* w on the compile device; a copy on every device (replicated); and the copies as one tensor
       with a leading device axis sharded over the devices, whose gradient is per device */
    int64_t one[3] = {1, 1, 1}, many[3] = {DEVICES, 1, 1};
    /* (1, rows, cols); a bias gets a row axis of 1 to broadcast over the batch */
    one[1] = kRanks[k] == 2 ? kShapes[k][0] : 1;
    one[2] = kRanks[k] == 2 ? kShapes[k][1] : kShapes[k][0];
    many[1] = one[1];
    many[2] = one[2];
    w[k] = sn_tensor_input(g, SN_DTYPE_FLOAT32, kShapes[k], kRanks[k], NULL, err);
    wrep[k] = sn_tensor_broadcast(g, w[k], kDevices, err);
    ws[k] = sn_uop_expand(g, sn_uop_reshape(g, w[k], one, 3, err), many, 3, err);
    ws[k] = sn_tensor_shard(g, ws[k], kDevices, 0, err);
  }
  h = sn_tensor_relu(g, sn_uop_binary(g, SN_OP_ADD, sn_tensor_matmul(g, x, ws[0], err), ws[1], err), err);
  logits = sn_uop_binary(g, SN_OP_ADD, sn_tensor_matmul(g, h, ws[2], err), ws[3], err);
  loss = sn_uop_binary(g, SN_OP_MUL, sn_tensor_log_softmax(g, logits, 2, err), y, err);
  /* each device's share of the mean cross-entropy (DEVICES, 1, 1), then their sum (1, 1, 1) */
  loss = sn_uop_binary(g, SN_OP_MUL, sn_uop_reduce(g, loss, SN_OP_ADD, local_axes, 2, err), constant(g, -1.0 / N, err),
                       err);
  loss = sn_uop_reduce(g, loss, SN_OP_ADD, device_axis, 1, err);
  if (sn_tensor_gradient(g, loss, ws, PARAMS, grads, err) != SN_OK) return NULL;
  outs[0] = sn_uop_reshape(g, loss, loss2, 2, err); /* (1, 1) as on one device */
  for (k = 0; k < PARAMS; k++) {
    /* device d's gradient is grads[k][d]; allreduce sums them, and every device gets the sum */
    int64_t flat = DEVICES * kNumel[k];
    sn_uop *sum = sn_tensor_allreduce(g, sn_uop_reshape(g, grads[k], &flat, 1, err), err);
    outs[1 + k] = sgd(g, wrep[k], sn_uop_reshape(g, sum, kShapes[k], kRanks[k], err), err);
  }
  p = sn_compile(g, outs, 1 + PARAMS, cpu, NULL, err);
  sn_graph_release(g);
  return p;
}

/* Runs `steps` SGD steps of `step` from the weights in w[] (swapped with the updated ones after
   every step), writing the loss of each step to losses[]. */
static void train(sn_program *step, sn_buffer **data, sn_buffer **w, float *losses, sn_error **err) {
  sn_buffer *ins[2 + PARAMS], *outs[1 + PARAMS];
  int k, i;
  for (k = 0; k < 1 + PARAMS; k++) outs[k] = sn_program_alloc_output(step, (size_t)k, err);
  ins[0] = data[0];
  ins[1] = data[1];
  for (i = 0; i < STEPS && *err == NULL; i++) {
    for (k = 0; k < PARAMS; k++) ins[2 + k] = w[k];
    if (sn_program_run(step, ins, 2 + PARAMS, outs, 1 + PARAMS, err) != SN_OK) break;
    if (sn_buffer_copy_out(outs[0], &losses[i], sizeof(float), err) != SN_OK) break;
    for (k = 0; k < PARAMS; k++) { /* the new weights are the next step's inputs */
      sn_buffer *t = w[k];
      w[k] = outs[1 + k];
      outs[1 + k] = t;
    }
  }
  for (k = 0; k < 1 + PARAMS; k++) sn_buffer_release(outs[k]);
}

int main(void) {
  sn_error *err = NULL;
  sn_context *ctx = sn_context_create(&err);
  sn_device *cpu = sn_device_open(ctx, "CPU", &err);
  sn_program *data, *init, *step, *step_dp;
  sn_buffer *xy[2], *w[PARAMS], *w_dp[PARAMS];
  static float one[STEPS], two[STEPS];
  int k, i, bad = 0;
  check(err);
  data = compile_data(ctx, cpu, &err);
  check(err);
  init = compile_init(ctx, cpu, &err);
  check(err);
  step = compile_step(ctx, cpu, &err);
  check(err);
  step_dp = compile_step_dp(ctx, cpu, &err);
  check(err);

  for (k = 0; k < 2; k++) xy[k] = sn_program_alloc_output(data, (size_t)k, &err);
  for (k = 0; k < PARAMS; k++) {
    w[k] = sn_program_alloc_output(init, (size_t)k, &err);
    w_dp[k] = sn_program_alloc_output(init, (size_t)k, &err);
  }
  check(err);
  if (sn_program_run(data, NULL, 0, xy, 2, &err) != SN_OK || sn_program_run(init, NULL, 0, w, PARAMS, &err) != SN_OK ||
      sn_program_run(init, NULL, 0, w_dp, PARAMS, &err) != SN_OK)
    check(err);

  train(step, xy, w, one, &err);
  check(err);
  train(step_dp, xy, w_dp, two, &err);
  check(err);
  for (i = 0; i < STEPS; i++) {
    int same = absf(one[i] - two[i]) <= 1e-4f * (1.0f + absf(one[i]));
    if (!same) bad++;
    if (i % 20 == 0 || i == STEPS - 1 || !same)
      printf("step %3d loss %.6f (one device) %.6f (CPU:0,CPU:1)%s\n", i, one[i], two[i], same ? "" : "  DIFFERENT");
  }
  printf("%zu kernels per step on one device, %zu on two; loss %.4f -> %.4f\n", sn_program_num_kernels(step, &err),
         sn_program_num_kernels(step_dp, &err), one[0], one[STEPS - 1]);
  check(err);

  for (k = 0; k < 2; k++) sn_buffer_release(xy[k]);
  for (k = 0; k < PARAMS; k++) {
    sn_buffer_release(w[k]);
    sn_buffer_release(w_dp[k]);
  }
  sn_program_release(step_dp);
  sn_program_release(step);
  sn_program_release(init);
  sn_program_release(data);
  sn_device_release(cpu);
  sn_context_release(ctx);
  if (bad) {
    fprintf(stderr, "train_mlp_dp: %d steps differ from one device\n", bad);
    return 1;
  }
  if (!(one[STEPS - 1] < one[0] / 2)) {
    fprintf(stderr, "train_mlp_dp: the loss did not fall\n");
    return 1;
  }
  return 0;
}
