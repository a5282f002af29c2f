/* API version 8 (GPU targets): compile-only CUDA and AMD devices from sn_device_open_target, their
 * kernel source and binary, and the errors of everything around them. */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"

static sn_program *compile_axpy(sn_context *ctx, sn_device *dev, sn_error **e) {
  sn_graph *g = sn_graph_create(ctx, e);
  int64_t shape[2] = {64, 33};
  sn_uop *x = sn_tensor_input(g, SN_DTYPE_FLOAT32, shape, 2, sn_device_name(dev, e), e);
  sn_uop *y =
      sn_uop_binary(g, SN_OP_ADD, sn_uop_binary(g, SN_OP_MUL, x, sn_uop_const_float(g, SN_DTYPE_FLOAT32, 2.0, e), e),
                    sn_uop_const_float(g, SN_DTYPE_FLOAT32, 1.0, e), e);
  sn_program *p = sn_compile(g, &y, 1, dev, NULL, e);
  sn_graph_release(g);
  return p;
}

static void expect_compile_only(sn_program *p) {
  sn_error *e = NULL;
  sn_buffer *in = sn_program_alloc_output(p, 0, &e), *out = sn_program_alloc_output(p, 0, &e);
  expect_ok(&e, __LINE__);
  CHECK(sn_program_run(p, &in, 1, &out, 1, &e) == SN_E_DEVICE);
  EXPECT_ERROR(e, SN_E_DEVICE, "compile-only");
  sn_buffer_release(in);
  sn_buffer_release(out);
}

static void test_cuda(sn_context *ctx) {
  sn_error *e = NULL;
  sn_device *dev = sn_device_open_target(ctx, "CUDA", "sm_90", &e), *again;
  sn_program *p;
  char *src;
  const char *bin;
  size_t size = 0;
  expect_ok(&e, __LINE__);
  CHECK(dev != NULL && strcmp(sn_device_name(dev, NULL), "CUDA") == 0);
  again = sn_device_open_target(ctx, "cuda", "sm_90", &e);
  CHECK(again == dev || (again != NULL && strcmp(sn_device_name(again, NULL), "CUDA") == 0));
  sn_device_release(again);
  {
    char *d = sn_device_description(dev, &e);
    CHECK(contains(d, "sm_90") && contains(d, "compile-only"));
    sn_string_free(d);
  }
  p = compile_axpy(ctx, dev, &e);
  expect_ok(&e, __LINE__);
  CHECK(sn_program_num_kernels(p, &e) == 1);
  src = sn_program_kernel_source(p, 0, &e);
  CHECK(contains(src, ".target sm_90") && contains(src, ".visible .entry") && contains(src, "%ctaid.x"));
  bin = (const char *)sn_program_kernel_binary(p, 0, &size, &e);
  expect_ok(&e, __LINE__);
  CHECK(bin != NULL && src != NULL && size == strlen(src) && memcmp(bin, src, size) == 0);
  sn_string_free(src);
  CHECK(sn_program_kernel_binary(p, 7, &size, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "7");
  CHECK(sn_program_kernel_binary(p, 0, NULL, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "size");
  CHECK(sn_program_kernel_binary(NULL, 0, &size, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "program");
  expect_compile_only(p);
  sn_program_release(p);
  sn_device_release(dev);
}

static void test_amd(sn_context *ctx) {
  sn_error *e = NULL;
  sn_device *dev = sn_device_open_target(ctx, "AMD", "gfx942", &e);
  sn_program *p;
  char *src;
  const unsigned char *bin;
  size_t size = 0;
  expect_ok(&e, __LINE__);
  p = compile_axpy(ctx, dev, &e);
  expect_ok(&e, __LINE__);
  src = sn_program_kernel_source(p, 0, &e);
  CHECK(contains(src, ".amdhsa_kernel") && contains(src, "gfx942"));
  bin = (const unsigned char *)sn_program_kernel_binary(p, 0, &size, &e);
  expect_ok(&e, __LINE__);
  CHECK(bin != NULL && size > 64 &&
        memcmp(bin,
               "\x7f"
               "ELF",
               4) == 0);
  sn_string_free(src);
  expect_compile_only(p);
  sn_program_release(p);
  sn_device_release(dev);
}

/* Tensor cores through the C API: a float16 matmul's kernel opts start with TC on sm_90 (mma.sync in
   its PTX), and the same opts forced by text give a kernel with those opts and mma.sync again;
   forcing them on sm_75, which has no tensor cores, is SN_E_INVALID_ARG saying so. */
static sn_program *compile_half_matmul(sn_context *ctx, sn_device *dev, const char *const *opts, size_t nopts,
                                       sn_error **e) {
  sn_graph *g = sn_graph_create(ctx, e);
  int64_t sa[2] = {64, 32}, sb[2] = {32, 48};
  sn_uop *a = sn_tensor_input(g, SN_DTYPE_FLOAT16, sa, 2, "CUDA", e);
  sn_uop *b = sn_tensor_input(g, SN_DTYPE_FLOAT16, sb, 2, "CUDA", e);
  sn_uop *c = sn_tensor_matmul(g, a, b, e);
  sn_compile_options o;
  sn_program *p;
  if (sn_compile_options_init(&o, sizeof o, e) != SN_OK) {
    sn_graph_release(g);
    return NULL;
  }
  o.kernel_opts = opts;
  o.nkernel_opts = nopts;
  p = sn_compile(g, &c, 1, dev, &o, e);
  sn_graph_release(g);
  return p;
}

static void test_tensor_cores(sn_context *ctx) {
  sn_error *e = NULL;
  sn_device *dev = sn_device_open_target(ctx, "CUDA", "sm_90", &e), *old;
  sn_program *p, *again;
  char *opts = NULL, *src, *src2;
  size_t i, n, at = 0;
  const char *forced[1];
  expect_ok(&e, __LINE__);
  p = compile_half_matmul(ctx, dev, NULL, 0, &e);
  expect_ok(&e, __LINE__);
  if (!p) return;
  n = sn_program_num_kernels(p, &e);
  for (i = 0; i < n; i++) { /* the kernel that multiplies (a large B may be repacked first) */
    char *o = sn_program_kernel_opts(p, i, &e);
    if (contains(o, ": TC(")) {
      sn_string_free(opts);
      opts = o, at = i;
    } else {
      sn_string_free(o);
    }
  }
  CHECK(opts != NULL);
  src = sn_program_kernel_source(p, at, &e);
  CHECK(contains(src, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"));
  forced[0] = opts;
  again = compile_half_matmul(ctx, dev, forced, 1, &e);
  expect_ok(&e, __LINE__);
  src2 = again ? sn_program_kernel_source(again, at, &e) : NULL;
  CHECK(contains(src2, "mma.sync.aligned.m16n8k16"));
  {
    char *o2 = again ? sn_program_kernel_opts(again, at, &e) : NULL;
    CHECK(o2 != NULL && strcmp(o2, opts) == 0);
    sn_string_free(o2);
  }
  old = sn_device_open_target(ctx, "CUDA", "sm_75", &e);
  expect_ok(&e, __LINE__);
  CHECK(compile_half_matmul(ctx, old, forced, 1, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "has 0 tensor cores");
  sn_string_free(src);
  sn_string_free(src2);
  sn_string_free(opts);
  sn_program_release(p);
  sn_program_release(again);
  sn_device_release(old);
  sn_device_release(dev);
}

static void test_errors(sn_context *ctx) {
  sn_error *e = NULL;
  sn_device *cpu;
  sn_program *p;
  size_t size = 0;
  CHECK(sn_device_open_target(ctx, "VULKAN", "x", &e) == NULL);
  EXPECT_ERROR(e, SN_E_DEVICE, "VULKAN");
  CHECK(sn_device_open_target(ctx, "CPU", "znver4", &e) == NULL);
  EXPECT_ERROR(e, SN_E_DEVICE, "CPU");
  CHECK(sn_device_open_target(ctx, "CUDA", "sm_12", &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "sm_12");
  CHECK(sn_device_open_target(ctx, "AMD", "gfx9000", &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "gfx9000");
  CHECK(sn_device_open_target(ctx, "AMD", "", &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "empty");
  CHECK(sn_device_open_target(ctx, "CUDA", NULL, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "arch");
  CHECK(sn_device_open_target(ctx, NULL, "sm_90", &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "backend");
  CHECK(sn_device_open_target(NULL, "CUDA", "sm_90", &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "ctx");
  /* The CPU keeps no binary. */
  cpu = sn_device_open(ctx, "CPU", &e);
  p = compile_axpy(ctx, cpu, &e);
  expect_ok(&e, __LINE__);
  CHECK(sn_program_kernel_binary(p, 0, &size, &e) == NULL);
  EXPECT_ERROR(e, SN_E_UNSUPPORTED, "CPU");
  sn_program_release(p);
  sn_device_release(cpu);
  /* Without the driver or a GPU, opening the runtime devices says what is missing. */
  if (sn_device_count(ctx, "CUDA", &e) == 0) {
    CHECK(sn_device_open(ctx, "CUDA", &e) == NULL);
    EXPECT_ERROR(e, SN_E_DEVICE, "CUDA");
  }
  if (sn_device_count(ctx, "AMD", &e) == 0) {
    CHECK(sn_device_open(ctx, "AMD", &e) == NULL);
    EXPECT_ERROR(e, SN_E_DEVICE, "AMD");
  }
  expect_ok(&e, __LINE__);
  {
    const sn_api *api = sn_get_api(8);
    CHECK(api != NULL && api->device_open_target == sn_device_open_target &&
          api->program_kernel_binary == sn_program_kernel_binary);
  }
}

int main(void) {
  sn_context *ctx = sn_context_create(NULL);
  /* A build without LLVM (or without liblld, for AMD) lacks these backends: nothing to test. */
  if (sn_device_count(ctx, "CUDA", NULL) < 0 || sn_device_count(ctx, "AMD", NULL) < 0) {
    printf("skip: this build has no CUDA or no AMD backend\n");
    sn_context_release(ctx);
    return sn_test_report();
  }
  test_cuda(ctx);
  test_amd(ctx);
  test_tensor_cores(ctx);
  test_errors(ctx);
  sn_context_release(ctx);
  return sn_test_report();
}
