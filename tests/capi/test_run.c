/* Behavioural tests of the compile-and-run part of the public C API, written against the public
 * headers only (C89): tensor builders, devices, compile, buffers, run, inspection, DLPack, and every
 * error path (each must come back as a code plus a message naming the problem). Prints
 * "N passed, N failed" last and exits non-zero on any failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "sinter/sinter.h"
#include "sinter/sinter_dlpack.h"

/* Reference math without libm (C programs here link only libsinter): exp by range reduction and a
   Taylor series, log by Newton's method on it. Accurate to ~1e-12 over the ranges used. */
static double fabs_(double x) { return x < 0 ? -x : x; }
static double exp_(double x) {
  const double ln2 = 0.69314718055994530942;
  double n = (double)(long)(x / ln2 + (x < 0 ? -0.5 : 0.5)), r = x - n * ln2, term = 1, sum = 1;
  int k;
  for (k = 1; k < 25; k++) {
    term *= r / k;
    sum += term;
  }
  for (; n > 0; n--) sum *= 2;
  for (; n < 0; n++) sum /= 2;
  return sum;
}
static double log_(double x) {
  double y = 0;
  int k;
  for (k = 0; k < 200; k++) y += 2 * (x - exp_(y)) / (x + exp_(y));
  return y;
}
static double tanh_(double x) { return (exp_(2 * x) - 1) / (exp_(2 * x) + 1); }

static int close_to(double a, double b, double tol) { return fabs_(a - b) <= tol * (1.0 + fabs_(b)); }

/* Compiles `out` of graph g (default options), runs it on the given float32 inputs and copies the
   single float32 output into `result` (n floats). Returns 1 on success. */
static int run_f32(sn_graph *g, sn_device *dev, sn_uop *out, sn_buffer **ins, size_t nin, float *result, size_t n) {
  sn_error *e = NULL;
  sn_program *p = sn_compile(g, &out, 1, dev, NULL, &e);
  sn_buffer *o = sn_program_alloc_output(p, 0, &e);
  int ok;
  if (sn_program_run(p, ins, nin, &o, 1, &e) == SN_OK &&
      sn_buffer_copy_out(o, result, n * sizeof(float), &e) == SN_OK) {
    ok = 1;
  } else {
    ok = 0;
  }
  if (e != NULL) printf("run_f32: %s\n", sn_error_message(e));
  sn_error_free(e);
  sn_buffer_release(o);
  sn_program_release(p);
  return ok && e == NULL;
}

static sn_buffer *buffer_f32(sn_device *dev, const int64_t *shape, size_t ndim, const float *data, size_t n) {
  sn_error *e = NULL;
  sn_buffer *b = sn_buffer_alloc(dev, SN_DTYPE_FLOAT32, shape, ndim, &e);
  if (sn_buffer_copy_in(b, data, n * sizeof(float), &e) != SN_OK) printf("buffer_f32: %s\n", sn_error_message(e));
  sn_error_free(e);
  return b;
}

static void test_end_to_end(void) {
  sn_error *e = NULL;
  sn_context *ctx = sn_context_create(&e);
  sn_graph *g = sn_graph_create(ctx, &e);
  sn_device *cpu = sn_device_open(ctx, "CPU", &e);
  int64_t shape[2] = {2, 3}, got_shape[4];
  float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {10, 20, 30, 40, 50, 60}, r[6];
  sn_uop *x, *y, *sum, *outs[2];
  sn_program *p;
  sn_buffer *bx, *by, *bo[2];
  sn_dtype dt = SN_DTYPE_INVALID;
  size_t ndim = 0, i;
  sn_compile_options opts;

  x = sn_tensor_input(g, SN_DTYPE_FLOAT32, shape, 2, NULL, &e);
  y = sn_tensor_input(g, SN_DTYPE_FLOAT32, shape, 2, "CPU", &e);
  sum = sn_uop_binary(g, SN_OP_ADD, x, y, &e);
  outs[0] = sum;
  {
    int64_t axis = 1;
    outs[1] = sn_uop_reduce(g, sn_uop_binary(g, SN_OP_MUL, x, y, &e), SN_OP_ADD, &axis, 1, &e);
  }
  EXPECT_OK(e);
  CHECK(strcmp(sn_device_name(cpu, &e), "CPU") == 0);

  p = sn_compile(g, outs, 2, cpu, NULL, &e);
  EXPECT_OK(e);
  CHECK(p != NULL);
  CHECK(sn_program_num_inputs(p, &e) == 2);
  CHECK(sn_program_num_outputs(p, &e) == 2);
  CHECK(sn_program_input_info(p, 1, &dt, got_shape, 4, &ndim, &e) == SN_OK);
  CHECK(dt == SN_DTYPE_FLOAT32 && ndim == 2 && got_shape[0] == 2 && got_shape[1] == 3);
  CHECK(sn_program_output_info(p, 1, &dt, got_shape, 4, &ndim, &e) == SN_OK);
  CHECK(dt == SN_DTYPE_FLOAT32 && ndim == 2 && got_shape[0] == 2 && got_shape[1] == 1);
  CHECK(sn_program_output_info(p, 0, NULL, NULL, 0, &ndim, &e) == SN_OK && ndim == 2);
  CHECK(sn_program_num_kernels(p, &e) >= 2);
  CHECK(sn_program_kernel_name(p, 0, &e) != NULL && sn_program_kernel_name(p, 0, &e)[0] != '\0');
  EXPECT_TEXT(sn_program_kernel_source(p, 0, &e), "define");
  EXPECT_TEXT(sn_program_stage(p, "source", &e), "# kernel 0");
  EXPECT_OK(e);
  CHECK(sn_program_stage(p, "optimized", &e) == NULL);
  EXPECT_ERROR(e, SN_E_NOT_FOUND, "keep_stages");
  CHECK(sn_program_stage(p, "bogus", &e) == NULL);
  EXPECT_ERROR(e, SN_E_NOT_FOUND, "unknown stage 'bogus'");

  bx = buffer_f32(cpu, shape, 2, a, 6);
  by = buffer_f32(cpu, shape, 2, b, 6);
  bo[0] = sn_program_alloc_output(p, 0, &e);
  bo[1] = sn_program_alloc_output(p, 1, &e);
  {
    sn_buffer *ins[2];
    ins[0] = bx;
    ins[1] = by;
    CHECK(sn_program_run(p, ins, 2, bo, 2, &e) == SN_OK);
    EXPECT_OK(e);
    CHECK(sn_buffer_copy_out(bo[0], r, sizeof r, &e) == SN_OK);
    for (i = 0; i < 6; i++) CHECK(r[i] == a[i] + b[i]);
    CHECK(sn_buffer_copy_out(bo[1], r, 2 * sizeof(float), &e) == SN_OK);
    CHECK(r[0] == 10 + 40 + 90 && r[1] == 160 + 250 + 360);
    /* run again with new data: nothing recompiles */
    a[0] = 100;
    CHECK(sn_buffer_copy_in(bx, a, sizeof a, &e) == SN_OK);
    CHECK(sn_program_run(p, ins, 2, bo, 2, &e) == SN_OK);
    CHECK(sn_buffer_copy_out(bo[0], r, sizeof r, &e) == SN_OK);
    CHECK(r[0] == 110);
    EXPECT_OK(e);
  }

  /* the graph after each stage, and an explicit input order */
  CHECK(sn_compile_options_init(&opts, sizeof opts, &e) == SN_OK);
  CHECK(opts.optimize == 1 && opts.debug == -1 && opts.use_cache == 1 && opts.keep_stages == 0);
  opts.keep_stages = 1;
  {
    sn_uop *order[2];
    sn_program *q;
    order[0] = y;
    order[1] = x;
    opts.inputs = order;
    opts.ninputs = 2;
    q = sn_compile(g, &sum, 1, NULL, &opts, &e);
    EXPECT_OK(e);
    EXPECT_TEXT(sn_program_stage(q, "tensor", &e), "add");
    EXPECT_TEXT(sn_program_stage(q, "optimized", &e), "# kernel 0");
    EXPECT_TEXT(sn_program_stage(q, "linear", &e), "Store");
    EXPECT_TEXT(sn_program_stage(q, "plan", &e), "arena");
    EXPECT_TEXT(sn_program_stage(q, "schedule", &e), "kernel 0");
    EXPECT_OK(e);
    sn_program_release(q);
  }

  /* the program outlives its graph, context and device handles */
  sn_graph_release(g);
  sn_device_release(cpu);
  sn_context_release(ctx);
  {
    sn_buffer *ins[2];
    ins[0] = by;
    ins[1] = bx;
    CHECK(sn_program_run(p, ins, 2, bo, 2, &e) == SN_OK);
    CHECK(sn_buffer_copy_out(bo[0], r, sizeof r, &e) == SN_OK);
    CHECK(r[0] == 110);
    EXPECT_OK(e);
  }
  sn_buffer_release(bx);
  sn_buffer_release(by);
  sn_buffer_release(bo[0]);
  sn_buffer_release(bo[1]);
  sn_program_release(p);
}

static void test_compositions(void) {
  sn_error *e = NULL;
  sn_context *ctx = sn_context_create(&e);
  sn_device *cpu = sn_device_open(ctx, NULL, &e);
  sn_graph *g = sn_graph_create(ctx, &e);
  int64_t s34[2] = {3, 4}, s43[2] = {4, 3};
  float m[12], n[12], r[32], want;
  sn_buffer *bm, *bn, *ins[2];
  sn_uop *a, *b;
  size_t i, j, k;
  for (i = 0; i < 12; i++) {
    m[i] = (float)i * 0.25f - 1.0f;
    n[i] = 2.0f - (float)i * 0.125f;
  }
  bm = buffer_f32(cpu, s34, 2, m, 12);
  bn = buffer_f32(cpu, s43, 2, n, 12);
  ins[0] = bm;
  ins[1] = bn;
  a = sn_tensor_input(g, SN_DTYPE_FLOAT32, s34, 2, NULL, &e);
  b = sn_tensor_input(g, SN_DTYPE_FLOAT32, s43, 2, NULL, &e);
  EXPECT_OK(e);

  /* gemm (3,4) @ (4,3) */
  CHECK(run_f32(g, cpu, sn_tensor_gemm(g, a, b, &e), ins, 2, r, 9));
  for (i = 0; i < 3; i++)
    for (j = 0; j < 3; j++) {
      want = 0;
      for (k = 0; k < 4; k++) want += m[i * 4 + k] * n[k * 3 + j];
      CHECK(close_to(r[i * 3 + j], want, 1e-5));
    }
  /* matmul is gemm for rank 2 */
  CHECK(run_f32(g, cpu, sn_tensor_matmul(g, a, b, &e), ins, 2, r, 9));
  CHECK(close_to(r[4], m[4] * n[1] + m[5] * n[4] + m[6] * n[7] + m[7] * n[10], 1e-5));

  /* softmax rows sum to 1; log_softmax is its log */
  CHECK(run_f32(g, cpu, sn_tensor_softmax(g, a, -1, &e), ins, 1, r, 12));
  for (i = 0; i < 3; i++) CHECK(close_to(r[i * 4] + r[i * 4 + 1] + r[i * 4 + 2] + r[i * 4 + 3], 1.0, 1e-6));
  {
    float sm[12];
    memcpy(sm, r, sizeof sm);
    CHECK(run_f32(g, cpu, sn_tensor_log_softmax(g, a, 1, &e), ins, 1, r, 12));
    for (i = 0; i < 12; i++) CHECK(close_to(r[i], log_(sm[i]), 1e-5));
  }
  /* elementwise activations */
  CHECK(run_f32(g, cpu, sn_tensor_relu(g, a, &e), ins, 1, r, 12));
  for (i = 0; i < 12; i++) CHECK(r[i] == (m[i] > 0 ? m[i] : 0));
  CHECK(run_f32(g, cpu, sn_tensor_sigmoid(g, a, &e), ins, 1, r, 12));
  for (i = 0; i < 12; i++) CHECK(close_to(r[i], 1.0 / (1.0 + exp_(-m[i])), 1e-6));
  CHECK(run_f32(g, cpu, sn_tensor_tanh(g, a, &e), ins, 1, r, 12));
  for (i = 0; i < 12; i++) CHECK(close_to(r[i], tanh_(m[i]), 1e-5));
  CHECK(run_f32(g, cpu, sn_tensor_exp(g, a, &e), ins, 1, r, 12));
  for (i = 0; i < 12; i++) CHECK(close_to(r[i], exp_(m[i]), 1e-6));
  CHECK(run_f32(g, cpu, sn_tensor_log(g, sn_tensor_exp(g, a, &e), &e), ins, 1, r, 12));
  for (i = 0; i < 12; i++) CHECK(close_to(r[i], m[i], 1e-5));
  CHECK(run_f32(g, cpu, sn_tensor_gelu(g, a, &e), ins, 1, r, 12));
  for (i = 0; i < 12; i++) {
    double x = m[i];
    CHECK(close_to(r[i], 0.5 * x * (1 + tanh_(0.7978845608028654 * (x + 0.044715 * x * x * x))), 1e-5));
  }
  /* layernorm over the last axis: mean 0 */
  CHECK(run_f32(g, cpu, sn_tensor_layernorm(g, a, 1, NULL, NULL, 1e-5, &e), ins, 1, r, 12));
  for (i = 0; i < 3; i++) CHECK(fabs_(r[i * 4] + r[i * 4 + 1] + r[i * 4 + 2] + r[i * 4 + 3]) < 1e-5);
  /* cumsum along rows */
  CHECK(run_f32(g, cpu, sn_tensor_cumsum(g, a, 1, &e), ins, 1, r, 12));
  CHECK(close_to(r[3], m[0] + m[1] + m[2] + m[3], 1e-6));
  /* concatenation and stacking */
  {
    sn_uop *parts[2];
    parts[0] = a;
    parts[1] = a;
    CHECK(run_f32(g, cpu, sn_tensor_cat(g, parts, 2, 0, &e), ins, 1, r, 24));
    for (i = 0; i < 24; i++) CHECK(r[i] == m[i % 12]);
    CHECK(run_f32(g, cpu, sn_tensor_stack(g, parts, 2, 2, &e), ins, 1, r, 24)); /* (3,4,2) */
    for (i = 0; i < 24; i++) CHECK(r[i] == m[i / 2]);
  }
  EXPECT_OK(e);
  /* argmax / arange / one_hot / rand produce non-float outputs: check through int buffers */
  {
    sn_uop *am = sn_tensor_argmax(g, a, 1, 0, &e), *ar = sn_tensor_arange(g, 5, SN_DTYPE_INT64, &e);
    sn_uop *oh = sn_tensor_one_hot(g, ar, 5, SN_DTYPE_INT32, &e);
    int64_t shp[2] = {2, 8};
    sn_uop *rnd = sn_tensor_rand(g, shp, 2, 1234, SN_DTYPE_FLOAT32, &e);
    sn_uop *rn = sn_tensor_randn(g, shp, 2, 99, SN_DTYPE_FLOAT64, &e);
    sn_uop *outs[5];
    sn_program *p;
    sn_buffer *o[5];
    int32_t i32[25];
    int64_t i64[5];
    float f[16];
    double d[16];
    outs[0] = am;
    outs[1] = ar;
    outs[2] = oh;
    outs[3] = rnd;
    outs[4] = rn;
    p = sn_compile(g, outs, 5, cpu, NULL, &e);
    EXPECT_OK(e);
    CHECK(sn_program_num_inputs(p, &e) == 1);
    for (i = 0; i < 5; i++) o[i] = sn_program_alloc_output(p, i, &e);
    CHECK(sn_program_run(p, ins, 1, o, 5, &e) == SN_OK);
    EXPECT_OK(e);
    CHECK(sn_buffer_dtype(o[0], &e) == SN_DTYPE_INT32);
    CHECK(sn_buffer_copy_out(o[0], i32, 3 * sizeof(int32_t), &e) == SN_OK);
    CHECK(i32[0] == 3 && i32[1] == 3 && i32[2] == 3); /* m increases along rows */
    CHECK(sn_buffer_copy_out(o[1], i64, sizeof i64, &e) == SN_OK);
    CHECK(i64[0] == 0 && i64[4] == 4);
    CHECK(sn_buffer_copy_out(o[2], i32, 25 * sizeof(int32_t), &e) == SN_OK);
    for (i = 0; i < 25; i++) CHECK(i32[i] == (i % 6 == 0 ? 1 : 0));
    CHECK(sn_buffer_copy_out(o[3], f, sizeof f, &e) == SN_OK);
    for (i = 0; i < 16; i++) CHECK(f[i] >= 0 && f[i] < 1);
    CHECK(f[0] != f[1]);
    CHECK(sn_buffer_copy_out(o[4], d, sizeof d, &e) == SN_OK);
    for (i = 0; i < 16; i++) CHECK(fabs_(d[i]) < 8);
    EXPECT_OK(e);
    for (i = 0; i < 5; i++) sn_buffer_release(o[i]);
    sn_program_release(p);
  }
  /* conv2d and pooling on a 1x1x4x4 image */
  {
    int64_t xs[4] = {1, 1, 4, 4}, ws[4] = {1, 1, 3, 3}, pad[2] = {1, 1}, kern[2] = {2, 2};
    float img[16], ones[9];
    sn_graph *g2 = sn_graph_create(ctx, &e);
    sn_uop *xi = sn_tensor_input(g2, SN_DTYPE_FLOAT32, xs, 4, NULL, &e);
    sn_uop *wi = sn_tensor_input(g2, SN_DTYPE_FLOAT32, ws, 4, NULL, &e);
    sn_buffer *bi, *bw, *cin[2];
    for (i = 0; i < 16; i++) img[i] = (float)i;
    for (i = 0; i < 9; i++) ones[i] = 1;
    bi = buffer_f32(cpu, xs, 4, img, 16);
    bw = buffer_f32(cpu, ws, 4, ones, 9);
    cin[0] = bi;
    cin[1] = bw;
    /* a 3x3 box sum with zero padding: the corner sums 0+1+4+5 */
    CHECK(run_f32(g2, cpu, sn_tensor_conv2d(g2, xi, wi, NULL, NULL, pad, NULL, 1, &e), cin, 2, r, 16));
    CHECK(r[0] == 10 && r[5] == 0 + 1 + 2 + 4 + 5 + 6 + 8 + 9 + 10);
    CHECK(run_f32(g2, cpu, sn_tensor_max_pool2d(g2, xi, kern, NULL, NULL, &e), cin, 1, r, 4));
    CHECK(r[0] == 5 && r[3] == 15);
    CHECK(run_f32(g2, cpu, sn_tensor_avg_pool2d(g2, xi, kern, NULL, NULL, &e), cin, 1, r, 4));
    CHECK(close_to(r[0], 2.5, 1e-6));
    EXPECT_OK(e);
    sn_buffer_release(bi);
    sn_buffer_release(bw);
    sn_graph_release(g2);
  }
  /* gather and scatter_add on int32 data */
  {
    sn_graph *g3 = sn_graph_create(ctx, &e);
    int64_t s2[2] = {2, 3};
    sn_uop *xv = sn_tensor_input(g3, SN_DTYPE_FLOAT32, s2, 2, NULL, &e);
    sn_uop *iv = sn_tensor_input(g3, SN_DTYPE_INT32, s2, 2, NULL, &e);
    float xd[6] = {1, 2, 3, 4, 5, 6};
    int32_t id[6] = {2, 0, 1, 1, 1, 0};
    sn_buffer *bx = buffer_f32(cpu, s2, 2, xd, 6), *bi = sn_buffer_alloc(cpu, SN_DTYPE_INT32, s2, 2, &e), *gin[2];
    CHECK(sn_buffer_copy_in(bi, id, sizeof id, &e) == SN_OK);
    gin[0] = bx;
    gin[1] = bi;
    CHECK(run_f32(g3, cpu, sn_tensor_gather(g3, xv, 1, iv, &e), gin, 2, r, 6));
    CHECK(r[0] == 3 && r[1] == 1 && r[2] == 2 && r[3] == 5 && r[5] == 4);
    CHECK(run_f32(g3, cpu, sn_tensor_scatter_add(g3, xv, 1, iv, xv, &e), gin, 2, r, 6));
    /* row 0: x + {x[0] at 2, x[1] at 0, x[2] at 1} = {1+2, 2+3, 3+1} */
    CHECK(r[0] == 3 && r[1] == 5 && r[2] == 4);
    EXPECT_OK(e);
    sn_buffer_release(bx);
    sn_buffer_release(bi);
    sn_graph_release(g3);
  }
  sn_buffer_release(bm);
  sn_buffer_release(bn);
  sn_graph_release(g);
  sn_device_release(cpu);
  sn_context_release(ctx);
}

static void test_buffers(void) {
  sn_error *e = NULL;
  sn_context *ctx = sn_context_create(&e);
  sn_device *cpu = sn_device_open(ctx, "cpu:0", &e);
  int64_t shape[3] = {2, 3, 4}, vshape[1] = {5};
  int16_t data[24], part[5];
  sn_buffer *b, *v;
  size_t i;
  for (i = 0; i < 24; i++) data[i] = (int16_t)(i * 3);
  b = sn_buffer_alloc(cpu, SN_DTYPE_INT16, shape, 3, &e);
  EXPECT_OK(e);
  CHECK(sn_buffer_dtype(b, &e) == SN_DTYPE_INT16);
  CHECK(sn_buffer_rank(b, &e) == 3);
  CHECK(sn_buffer_dim(b, 2, &e) == 4);
  CHECK(sn_buffer_numel(b, &e) == 24);
  CHECK(sn_buffer_nbytes(b, &e) == 48);
  CHECK(strcmp(sn_buffer_device(b, &e), "CPU") == 0);
  CHECK(((size_t)sn_buffer_host_pointer(b, &e)) % 64 == 0);
  CHECK(sn_buffer_copy_in(b, data, sizeof data, &e) == SN_OK);
  EXPECT_OK(e);
  v = sn_buffer_view(b, 7, vshape, 1, &e);
  sn_buffer_release(b); /* the view keeps the memory */
  CHECK(sn_buffer_copy_out(v, part, sizeof part, &e) == SN_OK);
  CHECK(part[0] == 21 && part[4] == 33);
  CHECK((char *)sn_buffer_host_pointer(v, &e) != NULL);
  EXPECT_OK(e);
  CHECK(sn_buffer_retain(v) == v);
  sn_buffer_release(v);

  /* errors */
  CHECK(sn_buffer_copy_out(v, part, 4, &e) != SN_OK);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "holds 10");
  CHECK(sn_buffer_copy_in(v, NULL, 10, &e) != SN_OK);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "null");
  CHECK(sn_buffer_view(v, 3, vshape, 1, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "does not fit");
  CHECK(sn_buffer_dim(v, 1, &e) == -1);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "axis 1 is out of range");
  shape[1] = -3;
  CHECK(sn_buffer_alloc(cpu, SN_DTYPE_FLOAT32, shape, 3, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "negative");
  {
    sn_buffer *f8b = sn_buffer_alloc(cpu, SN_DTYPE_FP8E4M3, vshape, 1, &e); /* fp8: one byte per element */
    EXPECT_OK(e);
    CHECK(f8b != NULL && sn_buffer_numel(f8b, &e) == 5);
    sn_buffer_release(f8b);
  }
  CHECK(sn_buffer_alloc(cpu, (sn_dtype)77, vshape, 1, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "unknown sn_dtype value 77");
  CHECK(sn_buffer_alloc(NULL, SN_DTYPE_FLOAT32, vshape, 1, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "device is NULL");
  CHECK(sn_buffer_alloc(cpu, SN_DTYPE_FLOAT32, NULL, 2, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "shape is NULL");
  CHECK(sn_buffer_dtype((sn_buffer *)ctx, &e) == SN_DTYPE_INVALID);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "not a live sn_buffer");
  sn_buffer_release(v);
  CHECK(sn_buffer_numel(v, &e) == -1);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "not a live sn_buffer");
  sn_buffer_release(NULL);

  /* devices */
  CHECK(sn_device_open(ctx, "TPU", &e) == NULL);
  EXPECT_ERROR(e, SN_E_DEVICE, "TPU");
  CHECK(sn_device_open(ctx, "CPU:8", &e) == NULL); /* CPU:0 .. CPU:7 */
  EXPECT_ERROR(e, SN_E_DEVICE, "CPU:8");
  CHECK(sn_device_open(ctx, "C(PU", &e) == NULL);
  EXPECT_ERROR(e, SN_E_DEVICE, "malformed");
  CHECK(sn_device_open(NULL, "CPU", &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "ctx is NULL");
  CHECK(sn_device_retain(cpu) == cpu);
  sn_device_release(cpu);
  CHECK(sn_device_name((sn_device *)ctx, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "not a live sn_device");

  /* debug level */
  CHECK(sn_context_set_debug(ctx, 2, &e) == SN_OK);
  CHECK(sn_context_debug(ctx, &e) == 2);
  CHECK(sn_context_set_debug(ctx, 0, &e) == SN_OK);
  CHECK(sn_context_set_debug(ctx, 9, &e) != SN_OK);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "level 9");
  CHECK(sn_context_debug(NULL, &e) == -1);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "ctx is NULL");

  sn_device_release(cpu);
  sn_context_release(ctx);
}

static void test_errors(void) {
  sn_error *e = NULL;
  sn_context *ctx = sn_context_create(&e);
  sn_device *cpu = sn_device_open(ctx, "CPU", &e);
  sn_graph *g = sn_graph_create(ctx, &e), *other = sn_graph_create(ctx, &e);
  int64_t s23[2] = {2, 3}, s45[2] = {4, 5}, s32[2] = {3, 2};
  sn_uop *a = sn_tensor_input(g, SN_DTYPE_FLOAT32, s23, 2, NULL, &e);
  sn_uop *b = sn_tensor_input(g, SN_DTYPE_FLOAT32, s45, 2, NULL, &e);
  sn_uop *foreign = sn_tensor_input(other, SN_DTYPE_FLOAT32, s23, 2, NULL, &e);
  sn_uop *f8, *out;
  sn_program *p;
  sn_buffer *good, *wrong_dtype, *wrong_shape, *o, *ins[2];
  sn_compile_options opts;
  int64_t shape[1];
  size_t ndim;
  EXPECT_OK(e);

  /* builders reject bad shapes and arguments before building */
  CHECK(sn_tensor_gemm(g, a, b, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "sn_tensor_gemm");
  CHECK(sn_tensor_softmax(g, a, 5, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "axis");
  CHECK(sn_tensor_gemm(g, a, foreign, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "does not belong to this graph");
  CHECK(sn_tensor_cat(g, NULL, 0, 0, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "at least one");
  CHECK(sn_tensor_max_pool2d(g, a, NULL, NULL, NULL, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "kernel is NULL");
  CHECK(sn_tensor_input(g, SN_DTYPE_VOID, s23, 2, NULL, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "dtype");
  CHECK(sn_tensor_input(NULL, SN_DTYPE_FLOAT32, s23, 2, NULL, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "graph is NULL");
  CHECK(sn_tensor_arange(g, -1, SN_DTYPE_INT32, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "arange");

  /* fp8 compiles and runs on the CPU: relu of e4m3 bytes (1, -1, 2, -2, 448, 2^-9) */
  f8 = sn_tensor_input(g, SN_DTYPE_FP8E4M3, s23, 2, NULL, &e);
  out = sn_tensor_relu(g, f8, &e);
  p = sn_compile(g, &out, 1, cpu, NULL, &e);
  EXPECT_OK(e);
  {
    static const unsigned char in8[6] = {0x38, 0xb8, 0x40, 0xc0, 0x7e, 0x01}, want8[6] = {0x38, 0, 0x40, 0, 0x7e, 0x01};
    unsigned char got8[6] = {0};
    sn_buffer *b8 = sn_buffer_alloc(cpu, SN_DTYPE_FP8E4M3, s23, 2, &e);
    sn_buffer *o8 = sn_program_alloc_output(p, 0, &e);
    CHECK(sn_buffer_copy_in(b8, in8, sizeof in8, &e) == SN_OK);
    CHECK(sn_program_run(p, &b8, 1, &o8, 1, &e) == SN_OK);
    CHECK(sn_buffer_copy_out(o8, got8, sizeof got8, &e) == SN_OK);
    EXPECT_OK(e);
    CHECK(memcmp(got8, want8, sizeof want8) == 0);
    sn_buffer_release(b8);
    sn_buffer_release(o8);
  }
  sn_program_release(p);

  /* compile errors */
  CHECK(sn_compile(g, &a, 0, cpu, NULL, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "noutputs is 0");
  CHECK(sn_compile(g, &foreign, 1, cpu, NULL, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "outputs[0]");
  CHECK(sn_compile(g, &a, 1, (sn_device *)g, NULL, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "not a live sn_device");
  CHECK(sn_compile_options_init(&opts, 8, &e) != SN_OK);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "struct_size 8");
  CHECK(sn_compile_options_init(&opts, sizeof opts, &e) == SN_OK);
  opts.debug = 11;
  CHECK(sn_compile(g, &a, 1, cpu, &opts, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "debug 11");
  opts.debug = -1;
  opts.inputs = &b; /* a is read but not listed */
  opts.ninputs = 1;
  out = sn_uop_unary(g, SN_OP_NEG, a, &e);
  CHECK(sn_compile(g, &out, 1, cpu, &opts, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "does not name");
  opts.struct_size = 4;
  CHECK(sn_compile(g, &out, 1, cpu, &opts, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "struct_size 4");
  {
    sn_graph *remote = sn_graph_create(ctx, &e);
    sn_uop *r = sn_tensor_input(remote, SN_DTYPE_FLOAT32, s23, 2, "CUDA", &e);
    CHECK(sn_compile(remote, &r, 1, cpu, NULL, &e) == NULL);
    EXPECT_ERROR(e, SN_E_DEVICE, "CUDA");
    sn_graph_release(remote);
  }

  /* run errors */
  p = sn_compile(g, &out, 1, cpu, NULL, &e);
  EXPECT_OK(e);
  good = sn_buffer_alloc(cpu, SN_DTYPE_FLOAT32, s23, 2, &e);
  wrong_dtype = sn_buffer_alloc(cpu, SN_DTYPE_INT32, s23, 2, &e);
  wrong_shape = sn_buffer_alloc(cpu, SN_DTYPE_FLOAT32, s32, 2, &e);
  o = sn_program_alloc_output(p, 0, &e);
  EXPECT_OK(e);
  CHECK(sn_program_run(p, &good, 1, &o, 1, &e) == SN_OK);
  CHECK(sn_program_run(p, &wrong_dtype, 1, &o, 1, &e) != SN_OK);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "input 0: expected float32(2,3), got a buffer of int32(2,3)");
  CHECK(sn_program_run(p, &wrong_shape, 1, &o, 1, &e) != SN_OK);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "expected shape (2,3)");
  CHECK(sn_program_run(p, &good, 1, &wrong_shape, 1, &e) != SN_OK);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "output 0");
  ins[0] = good;
  ins[1] = good;
  CHECK(sn_program_run(p, ins, 2, &o, 1, &e) != SN_OK);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "takes 1 input, got 2");
  ins[0] = NULL;
  CHECK(sn_program_run(p, ins, 1, &o, 1, &e) != SN_OK);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "inputs[0] is NULL");
  CHECK(sn_program_run(p, NULL, 1, &o, 1, &e) != SN_OK);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "inputs is NULL");
  CHECK(sn_program_run(p, &good, 1, &good, 1, &e) != SN_OK);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "overlaps input 0");
  CHECK(sn_program_alloc_output(p, 1, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "has 1 outputs");
  CHECK(sn_program_input_info(p, 0, NULL, shape, 1, &ndim, &e) != SN_OK);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "shape_cap 1 is smaller than the rank 2");
  CHECK(sn_program_input_info(p, 3, NULL, NULL, 0, &ndim, &e) != SN_OK);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "out of range");
  CHECK(sn_program_kernel_name(p, 99, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "index 99");
  CHECK(sn_program_kernel_source(p, 99, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "index 99");
  CHECK(sn_program_stage(p, NULL, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "stage is NULL");
  CHECK(sn_program_retain(p) == p);
  sn_program_release(p);
  sn_program_release(p);
  CHECK(sn_program_run(p, &good, 1, &o, 1, &e) != SN_OK);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "not a live sn_program");
  sn_program_release(NULL);

  sn_buffer_release(good);
  sn_buffer_release(wrong_dtype);
  sn_buffer_release(wrong_shape);
  sn_buffer_release(o);
  sn_graph_release(g);
  sn_graph_release(other);
  sn_device_release(cpu);
  sn_context_release(ctx);
}

/* ---- DLPack ---- */

static int g_deleted = 0;
static void count_deleter(sn_dlpack_tensor *self) {
  g_deleted++;
  free(self);
}

static sn_dlpack_tensor *make_tensor(void *data, int64_t *shape, int32_t ndim, uint8_t code, uint8_t bits) {
  sn_dlpack_tensor *t = (sn_dlpack_tensor *)calloc(1, sizeof *t);
  t->version.major = 1;
  t->version.minor = 0;
  t->deleter = count_deleter;
  t->dl_tensor.data = data;
  t->dl_tensor.device.device_type = SN_DLPACK_DEVICE_CPU;
  t->dl_tensor.ndim = ndim;
  t->dl_tensor.dtype.code = code;
  t->dl_tensor.dtype.bits = bits;
  t->dl_tensor.dtype.lanes = 1;
  t->dl_tensor.shape = shape;
  return t;
}

static void test_dlpack(void) {
  sn_error *e = NULL;
  sn_context *ctx = sn_context_create(&e);
  sn_device *cpu = sn_device_open(ctx, "CPU", &e);
  sn_graph *g = sn_graph_create(ctx, &e);
  int64_t shape[2] = {2, 2}, strides[2] = {1, 2};
  static float host[4] = {1, 2, 3, 4};
  float r[4];
  sn_dlpack_tensor *t, *ex;
  sn_buffer *imported, *back, *o;
  sn_uop *x = sn_tensor_input(g, SN_DTYPE_FLOAT32, shape, 2, NULL, &e), *y;
  sn_program *p;
  y = sn_uop_binary(g, SN_OP_MUL, x, x, &e);
  p = sn_compile(g, &y, 1, cpu, NULL, &e);
  EXPECT_OK(e);

  /* import host memory without copying, run a program on it */
  t = make_tensor(host, shape, 2, SN_DLPACK_FLOAT, 32);
  imported = sn_buffer_from_dlpack(cpu, t, &e);
  EXPECT_OK(e);
  CHECK(sn_buffer_host_pointer(imported, &e) == (void *)host);
  CHECK(sn_buffer_rank(imported, &e) == 2 && sn_buffer_dtype(imported, &e) == SN_DTYPE_FLOAT32);
  o = sn_program_alloc_output(p, 0, &e);
  CHECK(sn_program_run(p, &imported, 1, &o, 1, &e) == SN_OK);
  CHECK(sn_buffer_copy_out(o, r, sizeof r, &e) == SN_OK);
  CHECK(r[0] == 1 && r[3] == 16);
  EXPECT_OK(e);
  CHECK(g_deleted == 0);
  sn_buffer_release(imported);
  CHECK(g_deleted == 1); /* the producer's deleter runs when the last buffer goes */

  /* export: the tensor keeps the buffer alive until its deleter runs */
  ex = sn_buffer_to_dlpack(o, &e);
  EXPECT_OK(e);
  CHECK(ex != NULL);
  if (ex != NULL) {
    CHECK(ex->version.major == 1 && ex->dl_tensor.ndim == 2 && ex->dl_tensor.shape[1] == 2);
    CHECK(ex->dl_tensor.dtype.code == SN_DLPACK_FLOAT && ex->dl_tensor.dtype.bits == 32);
    CHECK(ex->dl_tensor.device.device_type == SN_DLPACK_DEVICE_CPU && ex->dl_tensor.strides == NULL);
    CHECK(((float *)ex->dl_tensor.data)[3] == 16);
    sn_buffer_release(o);
    CHECK(((float *)ex->dl_tensor.data)[2] == 9); /* still alive */
    /* and it round-trips: importing the export hands its deleter to the new buffer */
    back = sn_buffer_from_dlpack(cpu, ex, &e);
    EXPECT_OK(e);
    CHECK(sn_buffer_copy_out(back, r, sizeof r, &e) == SN_OK && r[1] == 4);
    sn_buffer_release(back);
  } else {
    sn_buffer_release(o);
  }

  /* strided tensors are copied into a fresh row-major buffer; the deleter runs at once */
  t = make_tensor(host, shape, 2, SN_DLPACK_FLOAT, 32);
  t->dl_tensor.strides = strides; /* the transpose */
  imported = sn_buffer_from_dlpack(cpu, t, &e);
  EXPECT_OK(e);
  CHECK(g_deleted == 2);
  CHECK(sn_buffer_host_pointer(imported, &e) != (void *)host);
  CHECK(sn_buffer_copy_out(imported, r, sizeof r, &e) == SN_OK);
  CHECK(r[0] == 1 && r[1] == 3 && r[2] == 2 && r[3] == 4);
  o = sn_program_alloc_output(p, 0, &e);
  CHECK(sn_program_run(p, &imported, 1, &o, 1, &e) == SN_OK);
  CHECK(sn_buffer_copy_out(o, r, sizeof r, &e) == SN_OK);
  CHECK(r[0] == 1 && r[1] == 9 && r[2] == 4 && r[3] == 16);
  EXPECT_OK(e);
  sn_buffer_release(imported);
  sn_buffer_release(o);
  CHECK(g_deleted == 2);
  {
    /* a broadcast row (stride 0), a reversed vector (negative stride), a scalar, an empty tensor */
    int64_t bshape[2] = {3, 2}, bstrides[2] = {0, 1}, vshape[1] = {4}, vstrides[1] = {-1}, zshape[2] = {0, 3},
            zstrides[2] = {5, 7};
    float b6[6];
    t = make_tensor(host, bshape, 2, SN_DLPACK_FLOAT, 32);
    t->dl_tensor.strides = bstrides;
    imported = sn_buffer_from_dlpack(cpu, t, &e);
    CHECK(sn_buffer_copy_out(imported, b6, sizeof b6, &e) == SN_OK);
    CHECK(b6[0] == 1 && b6[1] == 2 && b6[2] == 1 && b6[3] == 2 && b6[4] == 1 && b6[5] == 2);
    sn_buffer_release(imported);
    t = make_tensor(host, vshape, 1, SN_DLPACK_FLOAT, 32);
    t->dl_tensor.strides = vstrides;
    t->dl_tensor.byte_offset = 3 * sizeof(float); /* element 0 is host[3] */
    imported = sn_buffer_from_dlpack(cpu, t, &e);
    CHECK(sn_buffer_copy_out(imported, r, sizeof r, &e) == SN_OK);
    CHECK(r[0] == 4 && r[1] == 3 && r[2] == 2 && r[3] == 1);
    sn_buffer_release(imported);
    t = make_tensor(host, zshape, 2, SN_DLPACK_FLOAT, 32);
    t->dl_tensor.strides = zstrides; /* nothing to read: imported as is */
    imported = sn_buffer_from_dlpack(cpu, t, &e);
    CHECK(sn_buffer_numel(imported, &e) == 0);
    sn_buffer_release(imported);
    EXPECT_OK(e);
    CHECK(g_deleted == 5);
  }

  /* read-only tensors are copied too: programs may write the buffer, the producer's memory stays */
  t = make_tensor(host, shape, 2, SN_DLPACK_FLOAT, 32);
  t->flags = SN_DLPACK_FLAG_READ_ONLY;
  imported = sn_buffer_from_dlpack(cpu, t, &e);
  EXPECT_OK(e);
  CHECK(g_deleted == 6);
  CHECK(sn_buffer_host_pointer(imported, &e) != (void *)host);
  CHECK(sn_buffer_copy_out(imported, r, sizeof r, &e) == SN_OK && r[0] == 1 && r[3] == 4);
  o = sn_program_alloc_output(p, 0, &e);
  CHECK(sn_program_run(p, &imported, 1, &o, 1, &e) == SN_OK); /* o = host^2 */
  CHECK(sn_program_run(p, &o, 1, &imported, 1, &e) == SN_OK); /* the import as an output */
  CHECK(sn_buffer_copy_out(imported, r, sizeof r, &e) == SN_OK && r[1] == 16 && r[3] == 256);
  EXPECT_OK(e);
  CHECK(host[0] == 1 && host[1] == 2 && host[3] == 4);
  sn_buffer_release(imported);
  sn_buffer_release(o);
  CHECK(g_deleted == 6);

  /* import errors leave the tensor to the caller */
  t = make_tensor(host, shape, 2, SN_DLPACK_FLOAT, 32);
  t->version.major = 2;
  CHECK(sn_buffer_from_dlpack(cpu, t, &e) == NULL);
  EXPECT_ERROR(e, SN_E_VERSION, "DLPack version 2");
  t->version.major = 1;
  t->dl_tensor.dtype.code = 5; /* complex */
  CHECK(sn_buffer_from_dlpack(cpu, t, &e) == NULL);
  EXPECT_ERROR(e, SN_E_UNSUPPORTED, "code 5");
  t->dl_tensor.strides = strides; /* checks come before the copy of a strided tensor */
  t->flags = SN_DLPACK_FLAG_READ_ONLY;
  CHECK(sn_buffer_from_dlpack(cpu, t, &e) == NULL);
  EXPECT_ERROR(e, SN_E_UNSUPPORTED, "code 5");
  t->dl_tensor.strides = NULL;
  t->flags = 0;
  t->dl_tensor.dtype.code = SN_DLPACK_FLOAT;
  t->dl_tensor.device.device_type = SN_DLPACK_DEVICE_CUDA;
  CHECK(sn_buffer_from_dlpack(cpu, t, &e) == NULL);
  EXPECT_ERROR(e, SN_E_UNSUPPORTED, "cannot be imported onto CPU");
  t->dl_tensor.device.device_type = SN_DLPACK_DEVICE_CPU;
  t->dl_tensor.byte_offset = 2;
  CHECK(sn_buffer_from_dlpack(cpu, t, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "aligned");
  CHECK(sn_buffer_from_dlpack(cpu, NULL, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "tensor is NULL");
  CHECK(g_deleted == 6);
  t->deleter(t);
  CHECK(g_deleted == 7);

  sn_program_release(p);
  sn_graph_release(g);
  sn_device_release(cpu);
  sn_context_release(ctx);
}

/* The version-2 entries of the function table drive a full compile and run. */
static void test_api_table(void) {
  const sn_api *api = sn_get_api(2);
  sn_error *e = NULL;
  sn_context *ctx;
  sn_graph *g;
  sn_device *dev;
  sn_uop *x, *y;
  sn_program *p;
  sn_buffer *in, *out;
  int64_t n = 4;
  double d[4] = {1, 4, 9, 16}, r[4];
  CHECK(api != NULL);
  if (api == NULL) return;
  CHECK(api->api_version >= 2);
  CHECK(api->compile == sn_compile && api->buffer_from_dlpack == sn_buffer_from_dlpack);
  CHECK(api->tensor_input == sn_tensor_input && api->program_arena_bytes == sn_program_arena_bytes);
  ctx = api->context_create(&e);
  g = api->graph_create(ctx, &e);
  dev = api->device_open(ctx, "CPU", &e);
  x = api->tensor_input(g, SN_DTYPE_FLOAT64, &n, 1, NULL, &e);
  y = api->uop_unary(g, SN_OP_SQRT, x, &e);
  p = api->compile(g, &y, 1, dev, NULL, &e);
  in = api->buffer_alloc(dev, SN_DTYPE_FLOAT64, &n, 1, &e);
  out = api->program_alloc_output(p, 0, &e);
  CHECK(api->buffer_copy_in(in, d, sizeof d, &e) == SN_OK);
  CHECK(api->program_run(p, &in, 1, &out, 1, &e) == SN_OK);
  CHECK(api->buffer_copy_out(out, r, sizeof r, &e) == SN_OK);
  CHECK(r[0] == 1 && r[1] == 2 && r[2] == 3 && r[3] == 4);
  EXPECT_OK(e);
  api->buffer_release(in);
  api->buffer_release(out);
  api->program_release(p);
  api->device_release(dev);
  api->graph_release(g);
  api->context_release(ctx);
}

/* The same program built in two graphs compiles once and both run. */
static void test_program_cache(void) {
  sn_error *e = NULL;
  sn_context *ctx = sn_context_create(&e);
  int64_t n = 3;
  float data[3] = {1, -2, 3}, r[3];
  int round;
  for (round = 0; round < 2; round++) {
    sn_graph *g = sn_graph_create(ctx, &e);
    sn_device *cpu = sn_device_open(ctx, NULL, &e);
    sn_uop *x = sn_tensor_input(g, SN_DTYPE_FLOAT32, &n, 1, NULL, &e);
    sn_buffer *b = buffer_f32(cpu, &n, 1, data, 3);
    CHECK(run_f32(g, cpu, sn_tensor_relu(g, x, &e), &b, 1, r, 3));
    CHECK(r[0] == 1 && r[1] == 0 && r[2] == 3);
    EXPECT_OK(e);
    sn_buffer_release(b);
    sn_device_release(cpu);
    sn_graph_release(g);
  }
  sn_context_release(ctx);
}

/* Launch-time variables: y = x * scale + shift, with scale and shift given at each run. */
static void test_launch_vars(void) {
  sn_error *e = NULL;
  sn_context *ctx = sn_context_create(&e);
  sn_graph *g = sn_graph_create(ctx, &e);
  sn_device *cpu = sn_device_open(ctx, NULL, &e);
  int64_t n = 8, mn = 0, mx = 0;
  float data[8] = {0, 1, 2, 3, -1, -2, 0.5f, 10}, r[8];
  sn_uop *x = sn_tensor_input(g, SN_DTYPE_FLOAT32, &n, 1, NULL, &e);
  sn_uop *scale = sn_uop_cast(g, sn_uop_var(g, "scale", 1, 100, &e), SN_DTYPE_FLOAT32, &e);
  sn_uop *shift = sn_uop_cast(g, sn_uop_var(g, "shift", -10, 10, &e), SN_DTYPE_FLOAT32, &e);
  sn_uop *y = sn_uop_binary(g, SN_OP_ADD, sn_uop_binary(g, SN_OP_MUL, x, scale, &e), shift, &e);
  sn_program *p = sn_compile(g, &y, 1, cpu, NULL, &e);
  sn_buffer *in = buffer_f32(cpu, &n, 1, data, 8), *out = sn_program_alloc_output(p, 0, &e);
  const char *names[2] = {"shift", "scale"}, *name = NULL;
  int64_t values[2] = {-2, 3};
  const sn_api *api = sn_get_api(3);
  int i, ok = 1;
  EXPECT_OK(e);
  CHECK(sn_program_num_vars(p, &e) == 2);
  CHECK(sn_program_var_info(p, 0, &name, &mn, &mx, &e) == SN_OK);
  CHECK(name != NULL && strcmp(name, "scale") == 0 && mn == 1 && mx == 100);
  CHECK(sn_program_var_info(p, 1, &name, NULL, NULL, &e) == SN_OK);
  CHECK(name != NULL && strcmp(name, "shift") == 0);
  CHECK(sn_program_run_vars(p, &in, 1, &out, 1, names, values, 2, &e) == SN_OK);
  CHECK(sn_buffer_copy_out(out, r, sizeof r, &e) == SN_OK);
  for (i = 0; i < 8; i++) ok = ok && r[i] == data[i] * 3 - 2;
  CHECK(ok);
  /* new values, no recompile; through the version-3 table */
  values[0] = 10;
  values[1] = 100;
  CHECK(api != NULL && api->api_version >= 3 && api->program_run_vars == sn_program_run_vars);
  if (api != NULL) CHECK(api->program_run_vars(p, &in, 1, &out, 1, names, values, 2, &e) == SN_OK);
  CHECK(sn_buffer_copy_out(out, r, sizeof r, &e) == SN_OK);
  for (i = 0, ok = 1; i < 8; i++) ok = ok && r[i] == data[i] * 100 + 10;
  CHECK(ok);
  EXPECT_OK(e);
  /* errors name the variable */
  CHECK(sn_program_run(p, &in, 1, &out, 1, &e) == SN_E_INVALID_ARG);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "is not bound");
  values[1] = 0;
  CHECK(sn_program_run_vars(p, &in, 1, &out, 1, names, values, 2, &e) == SN_E_INVALID_ARG);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "scale = 0 is outside its range [1, 100]");
  names[1] = "scael";
  CHECK(sn_program_run_vars(p, &in, 1, &out, 1, names, values, 2, &e) == SN_E_INVALID_ARG);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "no variable named 'scael'");
  names[1] = "shift";
  CHECK(sn_program_run_vars(p, &in, 1, &out, 1, names, values, 2, &e) == SN_E_INVALID_ARG);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "'shift' is given twice");
  names[1] = NULL;
  CHECK(sn_program_run_vars(p, &in, 1, &out, 1, names, values, 2, &e) == SN_E_INVALID_ARG);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "names[1] is NULL");
  CHECK(sn_program_run_vars(p, &in, 1, &out, 1, NULL, values, 2, &e) == SN_E_INVALID_ARG);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "names is NULL");
  CHECK(sn_program_var_info(p, 2, &name, NULL, NULL, &e) == SN_E_INVALID_ARG);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "has 2 variables");
  CHECK(sn_program_num_vars(NULL, &e) == 0);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "program");
  sn_buffer_release(in);
  sn_buffer_release(out);
  sn_program_release(p);
  sn_device_release(cpu);
  sn_graph_release(g);
  sn_context_release(ctx);
}

/* Symbolic shapes (API version 7): softmax over rows of x (b, 3), b in [1, 8], compiled once and run
   at b = 2 and b = 5; input_info reports b as -1; a too-small buffer is refused naming the input. */
static void test_symbolic_shapes(void) {
  sn_error *e = NULL;
  sn_context *ctx = sn_context_create(&e);
  sn_graph *g = sn_graph_create(ctx, &e);
  sn_device *cpu = sn_device_open(ctx, NULL, &e);
  sn_uop *dims[2], *x, *y;
  sn_program *p;
  sn_buffer *in, *out;
  const sn_api *api = sn_get_api(7);
  const char *names[1] = {"b"};
  int64_t values[1], shape[2], small[2] = {2, 3}, big[2] = {5, 3};
  size_t ndim = 0;
  float data[15], r[15];
  int i, k, ok = 1;
  for (i = 0; i < 15; i++) data[i] = (float)(i % 4) - 1.5f;
  dims[0] = sn_uop_var(g, "b", 1, 8, &e);
  dims[1] = sn_uop_const_int(g, SN_DTYPE_INDEX, 3, &e);
  x = sn_tensor_input_sym(g, SN_DTYPE_FLOAT32, dims, 2, NULL, &e);
  y = sn_tensor_softmax(g, x, 1, &e);
  p = sn_compile(g, &y, 1, cpu, NULL, &e);
  EXPECT_OK(e);
  CHECK(sn_program_input_info(p, 0, NULL, shape, 2, &ndim, &e) == SN_OK);
  CHECK(ndim == 2 && shape[0] == -1 && shape[1] == 3);
  CHECK(sn_program_output_info(p, 0, NULL, shape, 2, &ndim, &e) == SN_OK);
  CHECK(ndim == 2 && shape[0] == -1 && shape[1] == 3);
  CHECK(sn_program_alloc_output(p, 0, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "symbolic shape");
  for (k = 0; k < 2; k++) {
    values[0] = k == 0 ? 2 : 5;
    in = buffer_f32(cpu, k == 0 ? small : big, 2, data, (size_t)values[0] * 3);
    out = sn_program_alloc_output_vars(p, 0, names, values, 1, &e);
    CHECK(out != NULL && sn_buffer_numel(out, &e) == values[0] * 3);
    CHECK(sn_program_run_vars(p, &in, 1, &out, 1, names, values, 1, &e) == SN_OK);
    CHECK(sn_buffer_copy_out(out, r, (size_t)values[0] * 3 * sizeof(float), &e) == SN_OK);
    for (i = 0; i < values[0]; i++) { /* each row sums to 1 and keeps the order of its inputs */
      double t = r[i * 3] + r[i * 3 + 1] + r[i * 3 + 2];
      int j;
      ok = ok && t > 1 - 1e-5 && t < 1 + 1e-5;
      for (j = 0; j < 2; j++) ok = ok && (data[i * 3 + j] < data[i * 3 + j + 1]) == (r[i * 3 + j] < r[i * 3 + j + 1]);
    }
    EXPECT_OK(e);
    if (k == 0) {
      /* the (2,3) input is too small for b = 5 */
      values[0] = 5;
      CHECK(sn_program_run_vars(p, &in, 1, &out, 1, names, values, 1, &e) == SN_E_INVALID_ARG);
      EXPECT_ERROR(e, SN_E_INVALID_ARG, "input 0");
      values[0] = 9;
      CHECK(sn_program_alloc_output_vars(p, 0, names, values, 1, &e) == NULL);
      EXPECT_ERROR(e, SN_E_INVALID_ARG, "outside its range");
    }
    sn_buffer_release(in);
    sn_buffer_release(out);
  }
  CHECK(ok);
  CHECK(api != NULL && api->tensor_input_sym == sn_tensor_input_sym &&
        api->program_alloc_output_vars == sn_program_alloc_output_vars);
  sn_program_release(p);
  sn_device_release(cpu);
  sn_graph_release(g);
  sn_context_release(ctx);
}

/* Symbolic reshape and expand (API version 8): x (b,2,3) flattened to (b,6), times w (1,6) expanded
   to (b,6), summed per row; checked against hand-computed sums at two batch sizes, and the errors. */
static void test_symbolic_reshape(void) {
  sn_error *e = NULL;
  sn_context *ctx = sn_context_create(&e);
  sn_graph *g = sn_graph_create(ctx, &e);
  sn_device *cpu = sn_device_open(ctx, NULL, &e);
  sn_uop *b, *dims[3], *flat[2], *x, *w, *xf, *we, *y;
  sn_program *p;
  sn_buffer *ins[2], *out;
  const sn_api *api = sn_get_api(8);
  const char *names[1] = {"b"};
  int64_t values[1], xshape[3], wshape[2] = {1, 6}, one = 1;
  float xd[24], wd[6] = {1, -2, 0.5f, 3, -1, 0.25f}, r[4];
  int i, j, k, ok = 1;
  for (i = 0; i < 24; i++) xd[i] = (float)(i % 5) - 2;
  b = sn_uop_var(g, "b", 1, 4, &e);
  dims[0] = b;
  dims[1] = sn_uop_const_int(g, SN_DTYPE_INDEX, 2, &e);
  dims[2] = sn_uop_const_int(g, SN_DTYPE_INDEX, 3, &e);
  x = sn_tensor_input_sym(g, SN_DTYPE_FLOAT32, dims, 3, NULL, &e);
  w = sn_tensor_input(g, SN_DTYPE_FLOAT32, wshape, 2, NULL, &e);
  flat[0] = b;
  flat[1] = sn_uop_const_int(g, SN_DTYPE_INDEX, 6, &e);
  xf = sn_tensor_reshape_sym(g, x, flat, 2, &e);
  we = sn_tensor_expand_sym(g, w, flat, 2, &e);
  y = sn_uop_reduce(g, sn_uop_binary(g, SN_OP_MUL, xf, we, &e), SN_OP_ADD, &one, 1, &e);
  p = sn_compile(g, &y, 1, cpu, NULL, &e);
  EXPECT_OK(e);
  for (k = 0; k < 2; k++) {
    values[0] = k == 0 ? 2 : 4;
    xshape[0] = values[0];
    xshape[1] = 2;
    xshape[2] = 3;
    ins[0] = buffer_f32(cpu, xshape, 3, xd, (size_t)values[0] * 6);
    ins[1] = buffer_f32(cpu, wshape, 2, wd, 6);
    out = sn_program_alloc_output_vars(p, 0, names, values, 1, &e);
    CHECK(sn_program_run_vars(p, ins, 2, &out, 1, names, values, 1, &e) == SN_OK);
    CHECK(sn_buffer_copy_out(out, r, (size_t)values[0] * sizeof(float), &e) == SN_OK);
    EXPECT_OK(e);
    for (i = 0; i < values[0]; i++) {
      float want = 0;
      for (j = 0; j < 6; j++) want += xd[i * 6 + j] * wd[j];
      ok = ok && r[i] > want - 1e-5f && r[i] < want + 1e-5f;
    }
    sn_buffer_release(ins[0]);
    sn_buffer_release(ins[1]);
    sn_buffer_release(out);
  }
  CHECK(ok);
  /* merging the symbolic dim with another axis, a NULL dims array, a dim that is not an index */
  flat[1] = sn_uop_const_int(g, SN_DTYPE_INDEX, 3, &e);
  flat[0] = sn_uop_binary(g, SN_OP_MUL, b, dims[1], &e);
  EXPECT_OK(e);
  CHECK(sn_tensor_reshape_sym(g, x, flat, 2, &e) == NULL);
  EXPECT_ERROR(e, SN_E_UNSUPPORTED, "");
  CHECK(sn_tensor_reshape_sym(g, x, NULL, 2, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "dims is NULL");
  flat[0] = b;
  flat[1] = sn_uop_const_float(g, SN_DTYPE_FLOAT32, 6, &e);
  CHECK(sn_tensor_expand_sym(g, w, flat, 2, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "dims[1]");
  { /* shrink and pad move the constant axes of (b,6); the symbolic one is written as offset 0, size -1 */
    int64_t off[2] = {0, 1}, size[2] = {-1, 3}, value = 0;
    sn_uop *sym = NULL, *part = sn_uop_shrink(g, xf, off, size, 2, &e);
    CHECK(part != NULL && sn_uop_dim(part, 0, &value, &sym, &e) == SN_OK && value == -1 && sym == b);
    CHECK(sn_uop_dim(part, 1, &value, NULL, &e) == SN_OK && value == 3);
    size[1] = 8;
    CHECK(sn_uop_dim(sn_uop_pad(g, xf, off, size, 2, &e), 1, &value, NULL, &e) == SN_OK && value == 8);
    off[0] = 1; /* the symbolic axis itself cannot move */
    CHECK(sn_uop_pad(g, xf, off, size, 2, &e) == NULL);
    EXPECT_ERROR(e, SN_E_UNSUPPORTED, "size -1");
  }
  CHECK(api != NULL && api->tensor_reshape_sym == sn_tensor_reshape_sym &&
        api->tensor_expand_sym == sn_tensor_expand_sym);
  sn_program_release(p);
  sn_device_release(cpu);
  sn_graph_release(g);
  sn_context_release(ctx);
}

/* Gradients (API version 5): d/dx of sum(log_softmax(x) * t) is t - softmax(x) * sum(t), checked
   against hand-computed values; d/dw of sum(relu(x) * w) is relu(x); and every error path. */
static void test_gradients(void) {
  sn_error *e = NULL;
  sn_context *ctx = sn_context_create(&e);
  sn_graph *g = sn_graph_create(ctx, &e);
  sn_device *cpu = sn_device_open(ctx, "CPU", &e);
  int64_t shape[2] = {2, 3}, all[2] = {0, 1};
  float xv[6] = {0.5f, -1, 2, 0, 1, -0.25f}, tv[6] = {1, 0, 0, 0, 0.5f, 0.5f}, r[2][6];
  sn_uop *x, *t, *w, *loss, *wrt[3], *grads[3] = {NULL, NULL, NULL}, *outs[2], *bad;
  sn_buffer *ins[3], *o[2];
  sn_program *p;
  size_t i, k;
  x = sn_tensor_input(g, SN_DTYPE_FLOAT32, shape, 2, NULL, &e);
  t = sn_tensor_input(g, SN_DTYPE_FLOAT32, shape, 2, NULL, &e);
  w = sn_tensor_input(g, SN_DTYPE_FLOAT32, shape, 2, NULL, &e);
  loss = sn_uop_binary(g, SN_OP_MUL, sn_tensor_log_softmax(g, x, -1, &e), t, &e);
  loss = sn_uop_binary(g, SN_OP_ADD, loss, sn_uop_binary(g, SN_OP_MUL, sn_tensor_relu(g, x, &e), w, &e), &e);
  loss = sn_uop_reduce(g, loss, SN_OP_ADD, all, 2, &e);
  wrt[0] = x;
  wrt[1] = w;
  CHECK(sn_tensor_gradient(g, loss, wrt, 2, grads, &e) == SN_OK);
  EXPECT_OK(e);
  outs[0] = grads[0];
  outs[1] = grads[1];
  p = sn_compile(g, outs, 2, cpu, NULL, &e);
  ins[0] = buffer_f32(cpu, shape, 2, xv, 6);
  ins[1] = buffer_f32(cpu, shape, 2, tv, 6);
  ins[2] = buffer_f32(cpu, shape, 2, tv, 6); /* w = t */
  o[0] = sn_program_alloc_output(p, 0, &e);
  o[1] = sn_program_alloc_output(p, 1, &e);
  CHECK(sn_program_run(p, ins, 3, o, 2, &e) == SN_OK);
  CHECK(sn_buffer_copy_out(o[0], r[0], sizeof r[0], &e) == SN_OK);
  CHECK(sn_buffer_copy_out(o[1], r[1], sizeof r[1], &e) == SN_OK);
  EXPECT_OK(e);
  for (i = 0; i < 2; i++) {
    double z = 0, tsum = 0;
    for (k = 0; k < 3; k++) z += exp_(xv[i * 3 + k]), tsum += tv[i * 3 + k];
    for (k = 0; k < 3; k++) {
      size_t j = i * 3 + k;
      double want = tv[j] - exp_(xv[j]) / z * tsum + (xv[j] > 0 ? tv[j] : 0);
      CHECK(close_to(r[0][j], want, 1e-5));
      CHECK(close_to(r[1][j], xv[j] > 0 ? xv[j] : 0, 1e-6));
    }
  }
  /* errors: a loss of several elements, an integer wrt, NULL arrays, a bitcast on the path */
  CHECK(sn_tensor_gradient(g, x, wrt, 1, grads, &e) == SN_E_INVALID_ARG);
  CHECK(e != NULL && strstr(sn_error_message(e), "one element") != NULL);
  sn_error_free(e);
  e = NULL;
  wrt[2] = sn_tensor_input(g, SN_DTYPE_INT32, shape, 2, NULL, &e);
  CHECK(sn_tensor_gradient(g, loss, wrt + 2, 1, grads, &e) == SN_E_INVALID_ARG);
  CHECK(e != NULL && strstr(sn_error_message(e), "wrt[0]") != NULL);
  sn_error_free(e);
  e = NULL;
  CHECK(sn_tensor_gradient(g, loss, NULL, 1, grads, &e) == SN_E_INVALID_ARG);
  sn_error_free(e);
  e = NULL;
  CHECK(sn_tensor_gradient(g, loss, wrt, 1, NULL, &e) == SN_E_INVALID_ARG);
  CHECK(e != NULL && strstr(sn_error_message(e), "grads") != NULL);
  sn_error_free(e);
  e = NULL;
  bad = sn_uop_bitcast(g, sn_uop_bitcast(g, x, SN_DTYPE_FLOAT16, &e), SN_DTYPE_FLOAT32, &e);
  bad = sn_uop_reduce(g, sn_uop_binary(g, SN_OP_MUL, bad, bad, &e), SN_OP_ADD, all, 2, &e);
  CHECK(bad != NULL);
  CHECK(sn_tensor_gradient(g, bad, wrt, 1, grads, &e) == SN_E_UNSUPPORTED);
  CHECK(e != NULL && strstr(sn_error_message(e), "Bitcast") != NULL);
  sn_error_free(e);
  e = NULL;
  /* Detach: d/dx sum(x * detach(x)) = x */
  loss = sn_uop_reduce(g, sn_uop_binary(g, SN_OP_MUL, x, sn_tensor_detach(g, x, &e), &e), SN_OP_ADD, all, 2, &e);
  CHECK(sn_tensor_gradient(g, loss, wrt, 1, grads, &e) == SN_OK);
  CHECK(run_f32(g, cpu, grads[0], ins, 1, r[0], 6));
  for (k = 0; k < 6; k++) CHECK(r[0][k] == xv[k]);
  EXPECT_OK(e);
  for (i = 0; i < 3; i++) sn_buffer_release(ins[i]);
  sn_buffer_release(o[0]);
  sn_buffer_release(o[1]);
  sn_program_release(p);
  sn_device_release(cpu);
  sn_graph_release(g);
  sn_context_release(ctx);
}

/* In-place updates (API version 5): a program with only effects (noutputs 0) that swaps two
   buffers, one whose output reads the old value, and the error paths. */
static void test_assign(void) {
  sn_error *e = NULL;
  sn_context *ctx = sn_context_create(&e);
  sn_graph *g = sn_graph_create(ctx, &e);
  sn_device *cpu = sn_device_open(ctx, "CPU", &e);
  int64_t n = 4, two[2] = {2, 2};
  float av[4] = {1, 2, 3, 4}, bv[4] = {5, 6, 7, 8}, r[4];
  sn_uop *a = sn_tensor_input(g, SN_DTYPE_FLOAT32, &n, 1, NULL, &e);
  sn_uop *b = sn_tensor_input(g, SN_DTYPE_FLOAT32, &n, 1, NULL, &e);
  sn_uop *effects[2], *sum;
  sn_compile_options opts;
  sn_program *p;
  sn_buffer *ins[2], *o;
  size_t k;
  effects[0] = sn_tensor_assign(g, a, b, &e);
  effects[1] = sn_tensor_assign(g, b, sn_uop_binary(g, SN_OP_ADD, a, a, &e), &e);
  CHECK(sn_compile_options_init(&opts, sizeof opts, &e) == SN_OK);
  opts.effects = effects;
  opts.neffects = 2;
  p = sn_compile(g, NULL, 0, cpu, &opts, &e);
  EXPECT_OK(e);
  ins[0] = buffer_f32(cpu, &n, 1, av, 4);
  ins[1] = buffer_f32(cpu, &n, 1, bv, 4);
  CHECK(sn_program_run(p, ins, 2, NULL, 0, &e) == SN_OK);
  CHECK(sn_buffer_copy_out(ins[0], r, sizeof r, &e) == SN_OK);
  for (k = 0; k < 4; k++) CHECK(r[k] == bv[k]);
  CHECK(sn_buffer_copy_out(ins[1], r, sizeof r, &e) == SN_OK);
  for (k = 0; k < 4; k++) CHECK(r[k] == 2 * av[k]);
  sn_program_release(p);
  /* an output that reads the old value, with the update as an effect */
  sum = sn_uop_binary(g, SN_OP_MUL, a, a, &e);
  opts.neffects = 1;
  p = sn_compile(g, &sum, 1, cpu, &opts, &e);
  o = sn_program_alloc_output(p, 0, &e);
  CHECK(sn_buffer_copy_in(ins[0], av, sizeof av, &e) == SN_OK);
  CHECK(sn_program_run(p, ins, 2, &o, 1, &e) == SN_OK);
  CHECK(sn_buffer_copy_out(o, r, sizeof r, &e) == SN_OK);
  for (k = 0; k < 4; k++) CHECK(r[k] == av[k] * av[k]);
  CHECK(sn_buffer_copy_out(ins[0], r, sizeof r, &e) == SN_OK);
  for (k = 0; k < 4; k++) CHECK(r[k] == 2 * av[k]); /* b holds 2a since the swap */
  EXPECT_OK(e);
  /* errors */
  CHECK(sn_tensor_assign(g, sum, a, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "input tensor");
  CHECK(sn_tensor_assign(g, a, sn_uop_reshape(g, a, two, 2, &e), &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "shape");
  CHECK(sn_tensor_assign(g, a, sn_uop_cast(g, a, SN_DTYPE_FLOAT64, &e), &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "float64");
  CHECK(sn_compile(g, NULL, 0, cpu, NULL, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "noutputs is 0");
  opts.effects = &sum;
  CHECK(sn_compile(g, NULL, 0, cpu, &opts, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "not an in-place update");
  opts.effects = NULL;
  CHECK(sn_compile(g, NULL, 0, cpu, &opts, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "options->effects is NULL");
  sn_buffer_release(ins[0]);
  sn_buffer_release(ins[1]);
  sn_buffer_release(o);
  sn_program_release(p);
  sn_device_release(cpu);
  sn_graph_release(g);
  sn_context_release(ctx);
}

/* Functions (API version 5): f(a, b) = relu(a + b) * a called twice, checked by hand; a
   precompiled function; gradients through a call; every error path. */
static void test_functions(void) {
  sn_error *e = NULL;
  sn_context *ctx = sn_context_create(&e);
  sn_graph *g = sn_graph_create(ctx, &e);
  sn_device *cpu = sn_device_open(ctx, "CPU", &e);
  int64_t n = 4, shape0[1] = {4}, bad_shape = 5;
  const int64_t *shapes[2];
  size_t ranks[2] = {1, 1};
  sn_dtype dts[2] = {SN_DTYPE_FLOAT32, SN_DTYPE_FLOAT32};
  float av[4] = {1, -2, 3, -4}, bv[4] = {0.5f, 1, -5, 2}, r[4];
  sn_uop *a = sn_tensor_input(g, SN_DTYPE_FLOAT32, &n, 1, NULL, &e);
  sn_uop *b = sn_tensor_input(g, SN_DTYPE_FLOAT32, &n, 1, NULL, &e);
  sn_uop *body, *args[2], *res1[1] = {NULL}, *res2[1] = {NULL}, *out, *wrong;
  sn_function *f;
  sn_buffer *ins[2];
  size_t k;
  shapes[0] = shape0;
  shapes[1] = shape0;
  f = sn_function_begin(g, 2, dts, shapes, ranks, &e);
  body = sn_uop_binary(g, SN_OP_ADD, sn_function_param(f, 0, &e), sn_function_param(f, 1, &e), &e);
  body = sn_uop_binary(g, SN_OP_MUL, sn_tensor_relu(g, body, &e), sn_function_param(f, 0, &e), &e);
  CHECK(sn_function_end(f, &body, 1, &e) == SN_OK);
  args[0] = a;
  args[1] = b;
  CHECK(sn_function_call(g, f, args, 2, res1, &e) == SN_OK);
  args[0] = b;
  args[1] = a;
  CHECK(sn_function_call(g, f, args, 2, res2, &e) == SN_OK);
  EXPECT_OK(e);
  out = sn_uop_binary(g, SN_OP_ADD, res1[0], res2[0], &e);
  ins[0] = buffer_f32(cpu, &n, 1, av, 4);
  ins[1] = buffer_f32(cpu, &n, 1, bv, 4);
  CHECK(run_f32(g, cpu, out, ins, 2, r, 4));
  for (k = 0; k < 4; k++) {
    float s = av[k] + bv[k], relu = s > 0 ? s : 0;
    CHECK(close_to(r[k], relu * av[k] + relu * bv[k], 1e-6));
  }
  /* precompiled: the same numbers */
  CHECK(sn_function_set_flags(f, SN_FUNCTION_PRECOMPILE, &e) == SN_OK);
  CHECK(sn_function_call(g, f, args, 2, res2, &e) == SN_OK);
  CHECK(run_f32(g, cpu, res2[0], ins, 2, r, 4));
  for (k = 0; k < 4; k++) {
    float s = av[k] + bv[k], relu = s > 0 ? s : 0;
    CHECK(close_to(r[k], relu * bv[k], 1e-6));
  }
  EXPECT_OK(e);
  /* errors */
  wrong = sn_tensor_input(g, SN_DTYPE_FLOAT32, &bad_shape, 1, NULL, &e);
  args[1] = wrong;
  CHECK(sn_function_call(g, f, args, 2, res2, &e) == SN_E_INVALID_ARG);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "argument 1 is float32 (5,)");
  CHECK(sn_function_call(g, f, args, 1, res2, &e) == SN_E_INVALID_ARG);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "takes 2 arguments");
  CHECK(sn_function_end(f, &body, 1, &e) == SN_E_INVALID_ARG);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "ended already");
  CHECK(sn_function_param(f, 2, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "out of range");
  CHECK(sn_function_set_flags(f, 8, &e) == SN_E_INVALID_ARG);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "unknown flags");
  CHECK(sn_function_call(g, (sn_function *)ins[0], args, 2, res2, &e) == SN_E_INVALID_ARG);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "not a live sn_function");
  f = sn_function_begin(g, 1, dts, shapes, ranks, &e);
  CHECK(sn_function_call(g, f, args, 1, res2, &e) == SN_E_INVALID_ARG);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "no body yet");
  CHECK(sn_function_begin(g, 1, NULL, shapes, ranks, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "dtypes is NULL");
  sn_buffer_release(ins[0]);
  sn_buffer_release(ins[1]);
  sn_device_release(cpu);
  sn_graph_release(g);
  /* a function of a released graph is no longer live */
  CHECK(sn_function_param(f, 0, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "not a live sn_function");
  sn_context_release(ctx);
}

/* Index (gather), Slice and Binary (API version 5), checked by hand, and their errors. */
static void test_index_slice_binary(void) {
  sn_error *e = NULL;
  sn_context *ctx = sn_context_create(&e);
  sn_graph *g = sn_graph_create(ctx, &e);
  sn_device *cpu = sn_device_open(ctx, "CPU", &e);
  int64_t tshape[2] = {3, 2}, nid = 4;
  float tv[6] = {10, 11, 20, 21, 30, 31}, r[8];
  int32_t ids[4] = {2, 0, 5, 1};
  float consts[2] = {0.5f, -4};
  sn_uop *table = sn_tensor_input(g, SN_DTYPE_FLOAT32, tshape, 2, NULL, &e);
  sn_uop *idx = sn_tensor_input(g, SN_DTYPE_INT32, &nid, 1, NULL, &e);
  sn_uop *rows, *bin, *out;
  sn_buffer *ins[2];
  size_t k;
  rows = sn_tensor_index(g, table, &idx, 1, &e); /* (4, 2): rows 2, 0, (out of range: 0), 1 */
  bin = sn_uop_bitcast(g, sn_tensor_binary(g, consts, sizeof consts, &e), SN_DTYPE_FLOAT32, &e);
  out = sn_uop_binary(g, SN_OP_MUL, rows, bin, &e);
  EXPECT_OK(e);
  ins[0] = buffer_f32(cpu, tshape, 2, tv, 6);
  ins[1] = sn_buffer_alloc(cpu, SN_DTYPE_INT32, &nid, 1, &e);
  CHECK(sn_buffer_copy_in(ins[1], ids, sizeof ids, &e) == SN_OK);
  CHECK(run_f32(g, cpu, out, ins, 2, r, 8));
  for (k = 0; k < 4; k++) {
    float row0 = ids[k] < 3 ? tv[ids[k] * 2] : 0, row1 = ids[k] < 3 ? tv[ids[k] * 2 + 1] : 0;
    CHECK(r[2 * k] == row0 * 0.5f && r[2 * k + 1] == row1 * -4);
  }
  CHECK(run_f32(g, cpu, sn_tensor_slice(g, table, 3, 2, SN_DTYPE_FLOAT32, &e), ins, 1, r, 2));
  CHECK(r[0] == 21 && r[1] == 30);
  /* errors */
  CHECK(sn_tensor_index(g, table, &table, 1, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "integer");
  CHECK(sn_tensor_index(g, table, NULL, 1, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "indices is NULL");
  CHECK(sn_tensor_slice(g, table, 5, 2, SN_DTYPE_FLOAT32, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "run past");
  CHECK(sn_tensor_binary(g, NULL, 4, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "data is NULL");
  sn_buffer_release(ins[0]);
  sn_buffer_release(ins[1]);
  sn_device_release(cpu);
  sn_graph_release(g);
  sn_context_release(ctx);
}

/* API version 6: the opts each kernel got, forced back (the same kernel and numbers), BEAM, and the
   errors for opts that do not fit; the disk-cache switch of a context. */
static void test_kernel_opts(void) {
  sn_error *e = NULL;
  sn_context *ctx = sn_context_create(&e);
  sn_graph *g = sn_graph_create(ctx, &e);
  sn_device *cpu = sn_device_open(ctx, "CPU", &e);
  int64_t shape[2] = {8, 64}, axis = 1;
  float v[512], r[8], want[8];
  sn_uop *x, *y;
  sn_program *p, *q;
  sn_buffer *in, *out;
  sn_compile_options o;
  char *line, *line2, *src, *src2, stale[64];
  const char *lines[1];
  size_t i, k;
  for (i = 0; i < 512; i++) v[i] = (float)((i * 7) % 13) - 6.0f;
  for (i = 0; i < 8; i++) {
    want[i] = 0;
    for (k = 0; k < 64; k++) want[i] += v[i * 64 + k] * v[i * 64 + k];
  }
  x = sn_tensor_input(g, SN_DTYPE_FLOAT32, shape, 2, NULL, &e);
  y = sn_uop_reduce(g, sn_uop_binary(g, SN_OP_MUL, x, x, &e), SN_OP_ADD, &axis, 1, &e);
  EXPECT_OK(e);
  in = buffer_f32(cpu, shape, 2, v, 512);

  p = sn_compile(g, &y, 1, cpu, NULL, &e);
  CHECK(p != NULL && sn_program_num_kernels(p, &e) == 1);
  line = sn_program_kernel_opts(p, 0, &e);
  CHECK(line != NULL && strlen(line) >= 17 && line[16] == ':');
  CHECK(contains(line, "UNROLL(")); /* the heuristic's vector accumulator of a contiguous row sum */
  src = sn_program_kernel_source(p, 0, &e);

  CHECK(sn_compile_options_init(&o, sizeof o, &e) == SN_OK);
  CHECK(o.beam >= 0 && o.kernel_opts == NULL && o.nkernel_opts == 0);
  lines[0] = line;
  o.kernel_opts = lines;
  o.nkernel_opts = 1;
  o.use_cache = 0;
  q = sn_compile(g, &y, 1, cpu, &o, &e);
  EXPECT_OK(e);
  line2 = sn_program_kernel_opts(q, 0, &e);
  CHECK(line2 != NULL && line != NULL && strcmp(line, line2) == 0);
  src2 = sn_program_kernel_source(q, 0, &e);
  CHECK(src != NULL && src2 != NULL && strlen(src) == strlen(src2)); /* the same IR; only its symbol's key differs */
  out = sn_program_alloc_output(q, 0, &e);
  CHECK(sn_program_run(q, &in, 1, &out, 1, &e) == SN_OK);
  CHECK(sn_buffer_copy_out(out, r, sizeof r, &e) == SN_OK);
  for (i = 0; i < 8; i++) CHECK(r[i] == want[i]);
  sn_buffer_release(out);
  sn_program_release(q);
  sn_string_free(line2);
  sn_string_free(src2);

  /* no opts at all for the kernel: another kernel, the same numbers */
  if (line != NULL) {
    memcpy(stale, line, 17);
    stale[17] = '\0';
    lines[0] = stale;
    q = sn_compile(g, &y, 1, cpu, &o, &e);
    EXPECT_OK(e);
    line2 = sn_program_kernel_opts(q, 0, &e);
    CHECK(line2 != NULL && strlen(line2) == 17);
    CHECK(run_f32(g, cpu, y, &in, 1, r, 8));
    for (i = 0; i < 8; i++) CHECK(r[i] == want[i]);
    sn_string_free(line2);
    sn_program_release(q);
  }

  /* BEAM: right numbers */
  o.kernel_opts = NULL;
  o.nkernel_opts = 0;
  o.beam = 2;
  q = sn_compile(g, &y, 1, cpu, &o, &e);
  EXPECT_OK(e);
  out = sn_program_alloc_output(q, 0, &e);
  CHECK(sn_program_run(q, &in, 1, &out, 1, &e) == SN_OK);
  CHECK(sn_buffer_copy_out(out, r, sizeof r, &e) == SN_OK);
  for (i = 0; i < 8; i++) CHECK(r[i] == want[i]);
  sn_buffer_release(out);
  sn_program_release(q);

  /* errors */
  o.beam = -1;
  CHECK(sn_compile(g, &y, 1, cpu, &o, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "beam");
  o.beam = 0;
  lines[0] = "not a line";
  o.kernel_opts = lines;
  o.nkernel_opts = 1;
  CHECK(sn_compile(g, &y, 1, cpu, &o, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "<kernel id>: <opts>");
  lines[0] = "00000000000000ab: UPCAST(0,4) WIDEN(1)";
  CHECK(sn_compile(g, &y, 1, cpu, &o, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "'WIDEN(1)' is not an opt");
  lines[0] = "00000000000000ab: UPCAST(0,4)";
  CHECK(sn_compile(g, &y, 1, cpu, &o, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "does not have");
  if (line != NULL) {
    sprintf(stale, "%.16s: UPCAST(0,3)", line); /* 8 rows are not a multiple of 3 */
    lines[0] = stale;
    CHECK(sn_compile(g, &y, 1, cpu, &o, &e) == NULL);
    EXPECT_ERROR(e, SN_E_INVALID_ARG, "do not apply");
  }
  o.kernel_opts = NULL;
  CHECK(sn_compile(g, &y, 1, cpu, &o, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "kernel_opts is NULL");
  CHECK(sn_program_kernel_opts(p, 5, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "5");
  CHECK(sn_program_kernel_opts(NULL, 0, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "program");

  /* the disk cache switch */
  CHECK(sn_context_set_disk_cache(ctx, 0, &e) == SN_OK);
  CHECK(run_f32(g, cpu, y, &in, 1, r, 8));
  CHECK(sn_context_set_disk_cache(ctx, 1, &e) == SN_OK);
  CHECK(sn_context_set_disk_cache(NULL, 1, &e) == SN_E_INVALID_ARG);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "ctx");

  sn_string_free(line);
  sn_string_free(src);
  sn_buffer_release(in);
  sn_program_release(p);
  sn_device_release(cpu);
  sn_graph_release(g);
  sn_context_release(ctx);
}

int main(void) {
  test_end_to_end();
  test_compositions();
  test_buffers();
  test_errors();
  test_dlpack();
  test_api_table();
  test_program_cache();
  test_launch_vars();
  test_symbolic_shapes();
  test_symbolic_reshape();
  test_gradients();
  test_assign();
  test_functions();
  test_index_slice_binary();
  test_kernel_opts();
  return sn_test_report();
}
