/* Devices of every backend through the C API (API version 4): counting and opening them, the same
 * program on CPU and CL, buffers copied between devices, DLPack refused off the host, and a program
 * exported as C. When OpenCL has no device here (SN_REQUIRE_CL unset) the CL part is skipped and
 * says so; SN_EXPECT_NO_CL=1 (set by the missing-driver tests) checks the errors instead. */
#include <stdlib.h>

#include "check.h"
#include "sinter/sinter_dlpack.h"

static sn_program *compile_square_plus_one(sn_context *ctx, sn_device *dev, sn_error **e) {
  sn_graph *g = sn_graph_create(ctx, e);
  int64_t shape[2] = {3, 5};
  sn_uop *x = sn_tensor_input(g, SN_DTYPE_FLOAT32, shape, 2, sn_device_name(dev, e), e);
  sn_uop *y = sn_uop_binary(g, SN_OP_ADD, sn_uop_binary(g, SN_OP_MUL, x, x, e),
                            sn_uop_const_float(g, SN_DTYPE_FLOAT32, 1.0, e), e);
  sn_program *p = sn_compile(g, &y, 1, dev, NULL, e);
  sn_graph_release(g);
  return p;
}

static void test_counts(sn_context *ctx) {
  sn_error *e = NULL;
  CHECK(sn_device_count(ctx, "CPU", &e) == 8); /* CPU:0 .. CPU:7 */
  CHECK(sn_device_count(ctx, "cpu", &e) == 8);
  CHECK(sn_device_count(ctx, "C", &e) == 1);
  expect_ok(&e, __LINE__);
  CHECK(sn_device_count(ctx, "METAL", &e) == -1);
  EXPECT_ERROR(e, SN_E_NOT_FOUND, "METAL");
  CHECK(sn_device_count(ctx, NULL, &e) == -1);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "backend");
  CHECK(sn_device_count(NULL, "CPU", &e) == -1);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "ctx");
}

static void test_cl(sn_context *ctx) {
  sn_error *e = NULL;
  int n = sn_device_count(ctx, "CL", &e);
  const char *require = getenv("SN_REQUIRE_CL");
  sn_device *cl, *cpu;
  sn_program *pcl, *pcpu;
  sn_buffer *in_cpu, *in_cl, *out_cl, *out_cpu, *back;
  float x[15], got[15], want[15];
  char *desc;
  int i;
  expect_ok(&e, __LINE__);
  if (getenv("SN_EXPECT_NO_CL")) {
    /* No driver: a count of 0, and opening says why. */
    CHECK(n == 0);
    CHECK(sn_device_open(ctx, "CL", &e) == NULL);
    EXPECT_ERROR(e, SN_E_DEVICE, getenv("SN_EXPECT_NO_CL"));
    return;
  }
  if (n <= 0) {
    CHECK(!(require && strcmp(require, "1") == 0));
    printf("skipped: no OpenCL device\n");
    return;
  }
  cl = sn_device_open(ctx, "CL", &e);
  cpu = sn_device_open(ctx, "CPU", &e);
  expect_ok(&e, __LINE__);
  CHECK(strcmp(sn_device_name(cl, &e), "CL") == 0);
  desc = sn_device_description(cl, &e);
  CHECK(desc != NULL && strlen(desc) > 2);
  sn_string_free(desc);
  CHECK(sn_device_open(ctx, "CL:99", &e) == NULL);
  EXPECT_ERROR(e, SN_E_DEVICE, "CL:99");

  /* The same program on both devices gives the same numbers. */
  pcl = compile_square_plus_one(ctx, cl, &e);
  pcpu = compile_square_plus_one(ctx, cpu, &e);
  expect_ok(&e, __LINE__);
  for (i = 0; i < 15; i++) {
    x[i] = 0.5f * (float)i - 3.0f;
    want[i] = x[i] * x[i] + 1.0f;
  }
  {
    int64_t shape[2] = {3, 5};
    in_cpu = sn_buffer_alloc(cpu, SN_DTYPE_FLOAT32, shape, 2, &e);
    in_cl = sn_buffer_alloc(cl, SN_DTYPE_FLOAT32, shape, 2, &e);
  }
  CHECK(sn_buffer_copy_in(in_cpu, x, sizeof x, &e) == SN_OK);
  CHECK(sn_buffer_copy(in_cl, in_cpu, &e) == SN_OK); /* CPU -> CL */
  out_cl = sn_program_alloc_output(pcl, 0, &e);
  out_cpu = sn_program_alloc_output(pcpu, 0, &e);
  CHECK(sn_program_run(pcl, &in_cl, 1, &out_cl, 1, &e) == SN_OK);
  CHECK(sn_program_run(pcpu, &in_cpu, 1, &out_cpu, 1, &e) == SN_OK);
  expect_ok(&e, __LINE__);
  CHECK(strcmp(sn_buffer_device(out_cl, &e), "CL") == 0);
  CHECK(sn_buffer_host_pointer(out_cl, &e) == NULL); /* device memory */
  back = sn_program_alloc_output(pcpu, 0, &e);
  CHECK(sn_buffer_copy(back, out_cl, &e) == SN_OK); /* CL -> CPU */
  CHECK(sn_buffer_copy_out(back, got, sizeof got, &e) == SN_OK);
  expect_ok(&e, __LINE__);
  for (i = 0; i < 15; i++) CHECK(got[i] == want[i]);
  CHECK(sn_buffer_copy_out(out_cl, got, sizeof got, &e) == SN_OK); /* straight from the device too */
  for (i = 0; i < 15; i++) CHECK(got[i] == want[i]);

  /* Wrong pairings name the problem. */
  CHECK(sn_program_run(pcl, &in_cpu, 1, &out_cl, 1, &e) != SN_OK);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "CPU");
  CHECK(sn_buffer_copy(in_cl, out_cl, &e) == SN_OK);
  {
    int64_t two[1] = {2};
    sn_buffer *small = sn_buffer_alloc(cl, SN_DTYPE_FLOAT32, two, 1, &e);
    CHECK(sn_buffer_copy(small, in_cpu, &e) != SN_OK);
    EXPECT_ERROR(e, SN_E_INVALID_ARG, "does not fit");
    sn_buffer_release(small);
  }
  CHECK(sn_buffer_copy(NULL, in_cpu, &e) != SN_OK);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "dst");
  CHECK(sn_buffer_to_dlpack(out_cl, &e) == NULL);
  EXPECT_ERROR(e, SN_E_UNSUPPORTED, "CPU and CUDA memory only");
  CHECK(sn_program_export_c(pcl, "f", &e) == NULL);
  EXPECT_ERROR(e, SN_E_UNSUPPORTED, "\"C\"");

  sn_buffer_release(back);
  sn_buffer_release(in_cpu);
  sn_buffer_release(in_cl);
  sn_buffer_release(out_cl);
  sn_buffer_release(out_cpu);
  sn_program_release(pcl);
  sn_program_release(pcpu);
  sn_device_release(cl);
  sn_device_release(cpu);
}

static void test_export(sn_context *ctx) {
  sn_error *e = NULL;
  sn_device *c = sn_device_open(ctx, "C", &e);
  sn_program *p = compile_square_plus_one(ctx, c, &e);
  char *src;
  expect_ok(&e, __LINE__);
  src = sn_program_export_c(p, "square_plus_one", &e);
  expect_ok(&e, __LINE__);
  CHECK(contains(src, "int square_plus_one(void *const *inputs, void *const *outputs)"));
  CHECK(contains(src, "float32(3,5)"));
  sn_string_free(src);
  CHECK(sn_program_export_c(p, "3d", &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "C identifier");
  CHECK(sn_program_export_c(p, NULL, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "name");
  CHECK(sn_program_export_c(NULL, "f", &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "program");
  {
    /* Compile-only: it renders, it does not run. */
    sn_buffer *in = sn_program_alloc_output(p, 0, &e), *out = sn_program_alloc_output(p, 0, &e);
    CHECK(sn_program_run(p, &in, 1, &out, 1, &e) == SN_E_DEVICE);
    EXPECT_ERROR(e, SN_E_DEVICE, "runs nothing");
    sn_buffer_release(in);
    sn_buffer_release(out);
  }
  {
    const sn_api *api = sn_get_api(4);
    CHECK(api != NULL && api->program_export_c == sn_program_export_c && api->device_count == sn_device_count &&
          api->buffer_copy == sn_buffer_copy && api->device_description == sn_device_description);
  }
  sn_program_release(p);
  sn_device_release(c);
}

int main(void) {
  sn_context *ctx = sn_context_create(NULL);
  test_counts(ctx);
  test_cl(ctx);
  if (!getenv("SN_EXPECT_NO_CL")) test_export(ctx);
  sn_context_release(ctx);
  return sn_test_report();
}
