/* Multi-device programs through the C API (API version 8): sharded inputs, sn_tensor_shard and
 * sn_tensor_to, every collective against hand-computed values, a reduction over the shard axis,
 * the function table, and the errors of bad devices and axes. Prints "N passed, N failed" last. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "sinter/sinter.h"

/* Compiles `out` for CPU, runs it on float32 inputs ins[nin] (each of its program's input shape)
   and copies the float32 output into result[n]. Returns 1 on success. */
static int run_f32(sn_graph *g, sn_device *dev, sn_uop *out, const float *const *ins, size_t nin, float *result,
                   size_t n) {
  sn_error *e = NULL;
  sn_program *p = sn_compile(g, &out, 1, dev, NULL, &e);
  sn_buffer *bufs[4] = {NULL, NULL, NULL, NULL}, *o = NULL;
  size_t i;
  int ok = 0;
  if (p != NULL) {
    for (i = 0; i < nin; i++) {
      sn_dtype dt;
      int64_t shape[8];
      size_t ndim = 0, k, count = 1;
      if (sn_program_input_info(p, i, &dt, shape, 8, &ndim, &e) != SN_OK) break;
      for (k = 0; k < ndim; k++) count *= (size_t)shape[k];
      bufs[i] = sn_buffer_alloc(dev, dt, shape, ndim, &e);
      if (bufs[i] == NULL || sn_buffer_copy_in(bufs[i], ins[i], count * sizeof(float), &e) != SN_OK) break;
    }
    o = sn_program_alloc_output(p, 0, &e);
    if (e == NULL && sn_program_run(p, bufs, nin, &o, 1, &e) == SN_OK &&
        sn_buffer_copy_out(o, result, n * sizeof(float), &e) == SN_OK)
      ok = 1;
  }
  if (e != NULL) printf("run_f32: %s\n", sn_error_message(e));
  sn_error_free(e);
  for (i = 0; i < nin; i++) sn_buffer_release(bufs[i]);
  sn_buffer_release(o);
  sn_program_release(p);
  return ok;
}

static int same(const float *a, const float *b, size_t n) {
  size_t i;
  for (i = 0; i < n; i++)
    if (a[i] != b[i]) return 0;
  return 1;
}

static void test_sharded_program(sn_context *ctx, sn_device *cpu) {
  sn_error *e = NULL;
  sn_graph *g = sn_graph_create(ctx, &e);
  int64_t shape[2] = {4, 3};
  float x[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, r[12];
  const float *ins[1];
  float want_sq[12], want_cols[3] = {18, 22, 26};
  sn_uop *xs, *y, *col;
  int i;
  char *dev;
  ins[0] = x;
  for (i = 0; i < 12; i++) want_sq[i] = x[i] * x[i] + 1;
  /* an input sharded on axis 0: fed as one (4,3) buffer */
  xs = sn_tensor_input(g, SN_DTYPE_FLOAT32, shape, 2, "CPU:0,CPU:1", &e);
  EXPECT_OK(e);
  dev = sn_uop_device(xs, &e);
  CHECK(dev != NULL && strcmp(dev, "(CPU,CPU:1)") == 0);
  sn_string_free(dev);
  CHECK(sn_uop_axis(xs, &e) == 0);
  y = sn_uop_binary(g, SN_OP_ADD, sn_uop_binary(g, SN_OP_MUL, xs, xs, &e),
                    sn_uop_const_float(g, SN_DTYPE_FLOAT32, 1, &e), &e);
  CHECK(run_f32(g, cpu, y, ins, 1, r, 12) && same(r, want_sq, 12));
  /* a sum over the shard axis: partial sums on each device, added up */
  col = sn_uop_reduce(g, xs, SN_OP_ADD, (int64_t[]){0}, 1, &e);
  CHECK(sn_uop_axis(col, &e) == -1);
  CHECK(run_f32(g, cpu, col, ins, 1, r, 3) && same(r, want_cols, 3));
  /* sharded on axis 1 over four devices, then moved back to one device */
  y = sn_tensor_to(g,
                   sn_tensor_shard(g, sn_tensor_input(g, SN_DTYPE_FLOAT32, (int64_t[]){3, 4}, 2, NULL, &e),
                                   "(CPU:0,CPU:1,CPU:2,CPU:3)", 1, &e),
                   "CPU", &e);
  EXPECT_OK(e);
  CHECK(run_f32(g, cpu, y, ins, 1, r, 12) && same(r, x, 12)); /* the program reads only its own input */
  EXPECT_OK(e);
  sn_graph_release(g);
}

static void test_collectives(sn_context *ctx, sn_device *cpu) {
  sn_error *e = NULL;
  sn_graph *g = sn_graph_create(ctx, &e);
  int64_t n8 = 8;
  float x[8] = {1, 2, 3, 4, 10, 20, 30, 40}, r[8];
  const float *ins[1];
  float want_reduce[4] = {11, 22, 33, 44}, want_red2[2] = {1 + 3 + 10 + 30, 2 + 4 + 20 + 40};
  sn_uop *in, *s, *t;
  ins[0] = x;
  in = sn_tensor_input(g, SN_DTYPE_FLOAT32, &n8, 1, NULL, &e);
  s = sn_tensor_scatter(g, in, "CPU:0,CPU:1", &e);
  CHECK(sn_uop_axis(s, &e) == 0);
  /* broadcast: every device holds x */
  t = sn_tensor_broadcast(g, in, "CPU:0,CPU:1,CPU:2", &e);
  CHECK(sn_uop_axis(t, &e) == -1);
  CHECK(run_f32(g, cpu, t, ins, 1, r, 8) && same(r, x, 8));
  /* scatter then gather: x again */
  CHECK(run_f32(g, cpu, sn_tensor_gather_devices(g, s, &e), ins, 1, r, 8) && same(r, x, 8));
  /* reduce over 2 devices holding (1,2,3,4) and (10,20,30,40) */
  CHECK(run_f32(g, cpu, sn_tensor_reduce_devices(g, s, &e), ins, 1, r, 4) && same(r, want_reduce, 4));
  /* reduce over 4 devices holding 2 values each */
  t = sn_tensor_reduce_devices(g, sn_tensor_scatter(g, in, "CPU:0,CPU:1,CPU:2,CPU:3", &e), &e);
  CHECK(run_f32(g, cpu, t, ins, 1, r, 2) && same(r, want_red2, 2));
  CHECK(run_f32(g, cpu, sn_tensor_allgather(g, s, &e), ins, 1, r, 8) && same(r, x, 8));
  t = sn_tensor_reduce_scatter(g, s, &e);
  CHECK(sn_uop_axis(t, &e) == 0);
  CHECK(run_f32(g, cpu, t, ins, 1, r, 4) && same(r, want_reduce, 4));
  t = sn_tensor_allreduce(g, s, &e);
  CHECK(sn_uop_axis(t, &e) == -1);
  CHECK(run_f32(g, cpu, t, ins, 1, r, 4) && same(r, want_reduce, 4));
  EXPECT_OK(e);
  sn_graph_release(g);
}

static void test_errors(sn_context *ctx) {
  sn_error *e = NULL;
  sn_graph *g = sn_graph_create(ctx, &e);
  int64_t shape[2] = {6, 4};
  sn_uop *x = sn_tensor_input(g, SN_DTYPE_FLOAT32, shape, 2, NULL, &e), *s;
  CHECK(sn_tensor_shard(g, x, "CPU:0,CPU:9", 0, &e) == NULL);
  EXPECT_ERROR(e, SN_E_DEVICE, "CPU:9");
  CHECK(sn_tensor_shard(g, x, "CPU:0,cpu:0", 0, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "listed twice");
  CHECK(sn_tensor_shard(g, x, "CPU:0,CPU:1", 2, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "axis 2 is out of range");
  CHECK(sn_tensor_shard(g, x, "CPU:0,CPU:1,CPU:2,CPU:3", 0, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "do not divide");
  CHECK(sn_tensor_shard(g, x, "CPU:1", 0, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "one device");
  CHECK(sn_tensor_shard(g, x, NULL, 0, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "devices is NULL");
  CHECK(sn_tensor_shard(g, x, "CPU:0,,CPU:1", 0, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "empty or malformed");
  s = sn_tensor_shard(g, x, "CPU:0,CPU:1", 0, &e);
  EXPECT_OK(e);
  CHECK(sn_tensor_shard(g, s, "CPU:0,CPU:1", 1, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "already");
  CHECK(sn_tensor_to(g, x, "TPU", &e) == NULL);
  EXPECT_ERROR(e, SN_E_DEVICE, "TPU");
  CHECK(sn_tensor_to(g, x, "CPU:0,CPU:1,CPU:2,CPU:3", &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "do not divide");
  CHECK(sn_tensor_allreduce(g, x, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "sharded");
  CHECK(sn_tensor_broadcast(g, s, "CPU:0,CPU:1", &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "already");
  CHECK(sn_tensor_reduce_scatter(g, sn_tensor_shard(g, x, "CPU:0,CPU:1", 1, &e), &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "axis 0");
  CHECK(sn_tensor_input(g, SN_DTYPE_FLOAT32, shape, 2, "CPU:0,CPU:1,CPU:2,CPU:3", &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "do not divide");
  {
    sn_uop *dim = sn_uop_const_int(g, SN_DTYPE_INDEX, 4, &e);
    CHECK(sn_tensor_input_sym(g, SN_DTYPE_FLOAT32, &dim, 1, "CPU:0,CPU:1", &e) == NULL);
    EXPECT_ERROR(e, SN_E_UNSUPPORTED, "device tuple");
  }
  {
    /* in-place updates are not supported in a program that spans devices */
    sn_uop *upd = sn_tensor_assign(g, x, sn_tensor_to(g, s, "CPU", &e), &e), *out;
    sn_compile_options o;
    CHECK(sn_compile_options_init(&o, sizeof o, &e) == SN_OK);
    o.effects = &upd;
    o.neffects = 1;
    out = sn_uop_reduce(g, s, SN_OP_ADD, (int64_t[]){0}, 1, &e);
    CHECK(sn_compile(g, &out, 1, NULL, &o, &e) == NULL);
    EXPECT_ERROR(e, SN_E_UNSUPPORTED, "effects");
  }
  CHECK(sn_tensor_gather_devices(NULL, s, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "graph");
  {
    /* operands on different devices: an error when compiled */
    sn_uop *bad = sn_uop_binary(g, SN_OP_ADD, s, x, &e);
    sn_program *p;
    EXPECT_OK(e);
    p = sn_compile(g, &bad, 1, NULL, NULL, &e);
    CHECK(p == NULL);
    EXPECT_ERROR(e, SN_E_INVALID_ARG, "operands are on");
  }
  sn_graph_release(g);
}

static void test_api_table(void) {
  const sn_api *api = sn_get_api(8);
  CHECK(api != NULL && api->api_version >= 8);
  if (api == NULL) return;
  CHECK(api->tensor_shard == sn_tensor_shard && api->tensor_to == sn_tensor_to &&
        api->tensor_broadcast == sn_tensor_broadcast && api->tensor_scatter == sn_tensor_scatter &&
        api->tensor_gather_devices == sn_tensor_gather_devices &&
        api->tensor_reduce_devices == sn_tensor_reduce_devices && api->tensor_allgather == sn_tensor_allgather &&
        api->tensor_reduce_scatter == sn_tensor_reduce_scatter && api->tensor_allreduce == sn_tensor_allreduce);
}

int main(void) {
  sn_error *e = NULL;
  sn_context *ctx = sn_context_create(&e);
  sn_device *cpu = sn_device_open(ctx, "CPU", &e);
  CHECK(sn_device_count(ctx, "CPU", &e) == 8);
  EXPECT_OK(e);
  test_sharded_program(ctx, cpu);
  test_collectives(ctx, cpu);
  test_errors(ctx);
  test_api_table();
  sn_device_release(cpu);
  sn_context_release(ctx);
  return sn_test_report();
}
