/* The AMD backend's runtime through the C API, against the stand-in HSA runtime fake_hsa.c (loaded
 * as libhsa-runtime64.so.1: ctest sets LD_LIBRARY_PATH). What a machine without a GPU can check of
 * it: the device opens on the GPU agent with its description and limits, buffers round-trip
 * through the staging buffer and the DMA copy, a program's code object loads into an executable
 * whose kernel descriptor symbol exists, its launch is a well-formed AQL dispatch packet (the fake
 * aborts on anything else) whose kernel arguments are live device buffers on a grid that covers
 * the output, running out of device memory is a clean error, and releasing everything frees every
 * allocation and executable. The numbers a kernel computes are checked only on a real GPU (the
 * fake runs no kernel). */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

#include "../capi/check.h"

typedef void (*counts_fn)(int *, int *, int *, int *, int *);
typedef void (*last_dispatch_fn)(uint32_t *, uint16_t *, int *);

enum { N = 1000 };

int main(void) {
  sn_error *e = NULL;
  sn_context *ctx = sn_context_create(&e);
  sn_device *dev;
  char *desc, *src;
  float x[N], y[N], back[N];
  int64_t shape[1] = {N};
  int allocs, frees, dispatches, executables, copies, before, i;
  void *lib;
  counts_fn fake_counts;
  last_dispatch_fn fake_last_dispatch;
  expect_ok(&e, __LINE__);

  /* A runtime that fails to start or has no GPU agent (the runtime is loaded once per process, so
     ctest runs these as their own processes): a count of 0 and a clean SN_E_DEVICE naming why. */
  if (getenv("FAKE_HSA_INIT_FAILS") || getenv("FAKE_HSA_NO_GPU")) {
    const char *why = getenv("FAKE_HSA_INIT_FAILS") ? "hsa_init failed: HSA_STATUS_ERROR_OUT_OF_RESOURCES"
                                                    : "HSA runtime found no GPU agent";
    CHECK(sn_device_count(ctx, "AMD", &e) == 0);
    expect_ok(&e, __LINE__);
    CHECK(sn_device_open(ctx, "AMD", &e) == NULL);
    EXPECT_ERROR(e, SN_E_DEVICE, why);
    sn_context_release(ctx);
    return sn_test_report();
  }

  CHECK(sn_device_count(ctx, "AMD", &e) == 1);
  dev = sn_device_open(ctx, "AMD", &e);
  expect_ok(&e, __LINE__);
  if (!dev) return sn_test_report();
  lib = dlopen("libhsa-runtime64.so.1", RTLD_NOW | RTLD_NOLOAD);
  CHECK(lib != NULL);
  if (!lib) return sn_test_report();
  fake_counts = (counts_fn)(uintptr_t)dlsym(lib, "fake_hsa_counts");
  fake_last_dispatch = (last_dispatch_fn)(uintptr_t)dlsym(lib, "fake_hsa_last_dispatch");
  CHECK(fake_counts != NULL && fake_last_dispatch != NULL); /* the stand-in, not a real runtime */
  if (!fake_counts || !fake_last_dispatch) return sn_test_report();

  desc = sn_device_description(dev, &e);
  CHECK(contains(desc, "Fake Instinct MI300X") && contains(desc, "gfx942") && contains(desc, "304 CUs"));
  sn_string_free(desc);
  CHECK(sn_device_open(ctx, "AMD:1", &e) == NULL);
  EXPECT_ERROR(e, SN_E_DEVICE, "there are 1 AMD devices");

  /* buffers: a round trip through the staging buffer and the DMA copy */
  for (i = 0; i < N; i++) x[i] = (float)i * 0.5f, y[i] = (float)(N - i);
  {
    sn_buffer *b = sn_buffer_alloc(dev, SN_DTYPE_FLOAT32, shape, 1, &e);
    fake_counts(&allocs, &frees, &dispatches, &executables, &before);
    CHECK(sn_buffer_copy_in(b, x, sizeof x, &e) == SN_OK);
    CHECK(sn_buffer_copy_out(b, back, sizeof back, &e) == SN_OK);
    CHECK(memcmp(x, back, sizeof x) == 0);
    fake_counts(&allocs, &frees, &dispatches, &executables, &copies);
    CHECK(copies == before + 2);
    CHECK(sn_buffer_host_pointer(b, &e) == NULL); /* device memory */
    sn_error_free(e);
    e = NULL;
    sn_buffer_release(b);
  }

  /* a program: its code object loads, and the dispatch passes three live device buffers */
  {
    sn_graph *g = sn_graph_create(ctx, &e);
    sn_uop *a = sn_tensor_input(g, SN_DTYPE_FLOAT32, shape, 1, "AMD", &e);
    sn_uop *b = sn_tensor_input(g, SN_DTYPE_FLOAT32, shape, 1, "AMD", &e);
    sn_uop *c = sn_uop_binary(g, SN_OP_ADD, a, b, &e);
    sn_program *p = sn_compile(g, &c, 1, dev, NULL, &e);
    sn_graph_release(g);
    expect_ok(&e, __LINE__);
    if (p) {
      sn_buffer *in[2], *out;
      uint32_t grid[3];
      uint16_t wg[3];
      int live = 0;
      size_t bin_size = 0;
      const void *bin;
      src = sn_program_kernel_source(p, 0, &e);
      CHECK(contains(src, ".amdhsa_kernel") && contains(src, "gfx942"));
      sn_string_free(src);
      bin = sn_program_kernel_binary(p, 0, &bin_size, &e);
      CHECK(bin != NULL && bin_size > 4 &&
            memcmp(bin,
                   "\x7f"
                   "ELF",
                   4) == 0);
      in[0] = sn_buffer_alloc(dev, SN_DTYPE_FLOAT32, shape, 1, &e);
      in[1] = sn_buffer_alloc(dev, SN_DTYPE_FLOAT32, shape, 1, &e);
      out = sn_program_alloc_output(p, 0, &e);
      CHECK(sn_buffer_copy_in(in[0], x, sizeof x, &e) == SN_OK);
      CHECK(sn_buffer_copy_in(in[1], y, sizeof y, &e) == SN_OK);
      fake_counts(&allocs, &frees, &before, &executables, &copies);
      CHECK(executables == 1);
      CHECK(sn_program_run(p, in, 2, &out, 1, &e) == SN_OK);
      expect_ok(&e, __LINE__);
      CHECK(sn_program_run(p, in, 2, &out, 1, &e) == SN_OK);
      fake_counts(&allocs, &frees, &dispatches, &executables, &copies);
      CHECK(dispatches == before + 2);
      fake_last_dispatch(grid, wg, &live);
      CHECK(live == 3);
      CHECK((unsigned long)grid[0] * grid[1] * grid[2] >= N); /* work-items, not work-groups */
      CHECK(grid[0] % wg[0] == 0 && grid[1] % wg[1] == 0 && grid[2] % wg[2] == 0);
      CHECK(sn_buffer_copy_out(out, back, sizeof back, &e) == SN_OK);
      sn_buffer_release(in[0]);
      sn_buffer_release(in[1]);
      sn_buffer_release(out);
      sn_program_release(p);
    }
  }

  /* running out of device memory is a clean error that names the runtime's reason */
  setenv("FAKE_HSA_DEVICE_BYTES", "1000000", 1);
  {
    int64_t big[1] = {1 << 20};
    CHECK(sn_buffer_alloc(dev, SN_DTYPE_FLOAT32, big, 1, &e) == NULL);
    EXPECT_ERROR(e, SN_E_OUT_OF_MEMORY, "HSA_STATUS_ERROR_OUT_OF_RESOURCES");
  }
  unsetenv("FAKE_HSA_DEVICE_BYTES");

  sn_device_release(dev);
  sn_context_release(ctx);
  /* everything freed: device buffers, kernel arguments, the staging buffer, executables */
  fake_counts(&allocs, &frees, &dispatches, &executables, &copies);
  CHECK(allocs == frees + 1); /* the allocation refused above was never made */
  CHECK(executables == 0);
  return sn_test_report();
}
