/* The CUDA backend's runtime through the C API, against the stand-in driver fake_cuda.c (loaded as
 * libcuda.so.1: ctest sets LD_LIBRARY_PATH). What a machine without a GPU can check of it: the
 * device opens with the driver's description and limits, buffers round-trip, device memory is
 * reused, a program's PTX loads and its launch passes live device pointers on a grid that covers
 * the output, every thread binds the context before its calls, running out of memory and PTX the
 * driver rejects are clean errors, and the context is released at the end. The numbers a kernel
 * computes are checked only on a real GPU (the fake runs no kernel). */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "../capi/check.h"
#include "sinter/sinter_dlpack.h"

typedef void (*counts_fn)(int *, int *, int *, int *);
typedef void (*last_launch_fn)(unsigned *, unsigned *, int *, int *);
static counts_fn fake_counts;
static last_launch_fn fake_last_launch;

enum { N = 1000 };

static sn_program *compile_add(sn_context *ctx, sn_device *dev, sn_error **e) {
  sn_graph *g = sn_graph_create(ctx, e);
  int64_t shape[1] = {N};
  sn_uop *a = sn_tensor_input(g, SN_DTYPE_FLOAT32, shape, 1, "CUDA", e);
  sn_uop *b = sn_tensor_input(g, SN_DTYPE_FLOAT32, shape, 1, "CUDA", e);
  sn_uop *c = sn_uop_binary(g, SN_OP_ADD, a, b, e);
  sn_program *p = sn_compile(g, &c, 1, dev, NULL, e);
  sn_graph_release(g);
  return p;
}

struct run_args {
  sn_program *program;
  sn_buffer *in[2], *out;
  sn_code code;
};
static void *run_on_thread(void *p) {
  struct run_args *r = (struct run_args *)p;
  sn_error *e = NULL;
  r->code = sn_program_run(r->program, r->in, 2, &r->out, 1, &e);
  if (e) {
    printf("thread: %s\n", sn_error_message(e));
    sn_error_free(e);
  }
  return NULL;
}

int main(void) {
  sn_error *e = NULL;
  sn_context *ctx = sn_context_create(&e);
  sn_device *dev;
  sn_program *p;
  char *desc, *src;
  float x[N], y[N], back[N];
  int64_t shape[1] = {N};
  int allocs, frees, launches, refs, allocs_before, launches_before, i;
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  expect_ok(&e, __LINE__);

  /* A driver that fails to start or has no GPU (the driver is loaded once per process, so ctest
     runs these as their own processes): a count of 0 and a clean SN_E_DEVICE naming why. */
  if (getenv("FAKE_CUDA_INIT_FAILS") || getenv("FAKE_CUDA_NO_DEVICES")) {
    const char *why = getenv("FAKE_CUDA_INIT_FAILS") ? "cuInit failed: CUDA_ERROR_NO_DEVICE" : "found no device";
    CHECK(sn_device_count(ctx, "CUDA", &e) == 0);
    expect_ok(&e, __LINE__);
    CHECK(sn_device_open(ctx, "CUDA", &e) == NULL);
    EXPECT_ERROR(e, SN_E_DEVICE, why);
    CHECK(sn_device_open(ctx, "CUDA:1", &e) == NULL);
    EXPECT_ERROR(e, SN_E_DEVICE, why);
    sn_context_release(ctx);
    return sn_test_report();
  }

  CHECK(sn_device_count(ctx, "CUDA", &e) == 1);
  dev = sn_device_open(ctx, "CUDA", &e);
  expect_ok(&e, __LINE__);
  if (!dev) return sn_test_report();
  lib = lib ? lib : dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  CHECK(lib != NULL);
  if (!lib) return sn_test_report();
  fake_counts = (counts_fn)(uintptr_t)dlsym(lib, "fake_cuda_counts");
  fake_last_launch = (last_launch_fn)(uintptr_t)dlsym(lib, "fake_cuda_last_launch");
  CHECK(fake_counts != NULL && fake_last_launch != NULL); /* the stand-in, not a real driver */
  if (!fake_counts || !fake_last_launch) return sn_test_report();

  desc = sn_device_description(dev, &e);
  CHECK(contains(desc, "Sinter fake GPU") && contains(desc, "sm_90") && contains(desc, "132 SMs"));
  sn_string_free(desc);
  CHECK(sn_device_open(ctx, "CUDA:1", &e) == NULL);
  EXPECT_ERROR(e, SN_E_DEVICE, "there are 1 CUDA devices");

  /* buffers: a round trip, and freed memory reused (no second cuMemAlloc for the same size) */
  for (i = 0; i < N; i++) x[i] = (float)i * 0.5f, y[i] = (float)(N - i);
  {
    sn_buffer *b = sn_buffer_alloc(dev, SN_DTYPE_FLOAT32, shape, 1, &e);
    CHECK(sn_buffer_copy_in(b, x, sizeof x, &e) == SN_OK);
    CHECK(sn_buffer_copy_out(b, back, sizeof back, &e) == SN_OK);
    CHECK(memcmp(x, back, sizeof x) == 0);
    CHECK(sn_buffer_host_pointer(b, &e) == NULL); /* device memory */
    sn_error_free(e);
    e = NULL;
    sn_buffer_release(b);
    fake_counts(&allocs_before, &frees, &launches, &refs);
    for (i = 0; i < 10; i++) sn_buffer_release(sn_buffer_alloc(dev, SN_DTYPE_FLOAT32, shape, 1, &e));
    fake_counts(&allocs, &frees, &launches, &refs);
    CHECK(allocs == allocs_before);
    expect_ok(&e, __LINE__);
  }

  /* the same program compiled first for a compile-only sm_90 target (same backend name and arch as
     the GPU) stays that target's: it cannot run, and the GPU's compile below gets its own program
     (the program cache once handed the compile-only one out for the GPU; seen on an H200) */
  {
    sn_device *target = sn_device_open_target(ctx, "cuda", "sm_90", &e);
    sn_program *tp = compile_add(ctx, target, &e);
    sn_buffer *in[2], *out;
    expect_ok(&e, __LINE__);
    in[0] = sn_buffer_alloc(dev, SN_DTYPE_FLOAT32, shape, 1, &e);
    in[1] = sn_buffer_alloc(dev, SN_DTYPE_FLOAT32, shape, 1, &e);
    out = sn_buffer_alloc(dev, SN_DTYPE_FLOAT32, shape, 1, &e);
    CHECK(sn_program_run(tp, in, 2, &out, 1, &e) != SN_OK);
    EXPECT_ERROR(e, SN_E_DEVICE, "cannot run kernels");
    sn_buffer_release(in[0]);
    sn_buffer_release(in[1]);
    sn_buffer_release(out);
    sn_program_release(tp);
    sn_device_release(target);
  }

  /* a program: its PTX loads, and the launch passes three live device pointers */
  p = compile_add(ctx, dev, &e);
  expect_ok(&e, __LINE__);
  if (p) {
    struct run_args r;
    pthread_t t;
    unsigned grid[3], block[3];
    int nparams = 0, live = 0;
    src = sn_program_kernel_source(p, 0, &e);
    CHECK(contains(src, ".entry") && contains(src, ".target sm_90"));
    sn_string_free(src);
    r.program = p;
    r.in[0] = sn_buffer_alloc(dev, SN_DTYPE_FLOAT32, shape, 1, &e);
    r.in[1] = sn_buffer_alloc(dev, SN_DTYPE_FLOAT32, shape, 1, &e);
    r.out = sn_program_alloc_output(p, 0, &e);
    CHECK(sn_buffer_copy_in(r.in[0], x, sizeof x, &e) == SN_OK);
    CHECK(sn_buffer_copy_in(r.in[1], y, sizeof y, &e) == SN_OK);
    fake_counts(&allocs, &frees, &launches_before, &refs);
    CHECK(sn_program_run(p, r.in, 2, &r.out, 1, &e) == SN_OK);
    expect_ok(&e, __LINE__);
    fake_counts(&allocs, &frees, &launches, &refs);
    CHECK(launches == launches_before + 1);
    fake_last_launch(grid, block, &nparams, &live);
    CHECK(nparams == 3 && live == 3);
    CHECK((unsigned long)grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2] >= N);
    /* another thread has no current context until the backend binds it */
    r.code = SN_E_INTERNAL;
    CHECK(pthread_create(&t, NULL, run_on_thread, &r) == 0);
    pthread_join(t, NULL);
    CHECK(r.code == SN_OK);
    fake_counts(&allocs, &frees, &launches, &refs);
    CHECK(launches == launches_before + 2);
    sn_buffer_release(r.in[0]);
    sn_buffer_release(r.in[1]);
    sn_buffer_release(r.out);
    sn_program_release(p);
  }

  /* DLPack: a CUDA buffer (a view at an offset) exports its device address and byte offset, and
     imports back onto the CUDA device without a copy; other pairings are refused */
  {
    sn_buffer *b = sn_buffer_alloc(dev, SN_DTYPE_FLOAT32, shape, 1, &e), *view, *back_buf;
    sn_device *cpu = sn_device_open(ctx, "CPU", &e);
    int64_t four[1] = {4};
    sn_dlpack_tensor *t;
    CHECK(sn_buffer_copy_in(b, x, sizeof x, &e) == SN_OK);
    view = sn_buffer_view(b, 10, four, 1, &e);
    t = sn_buffer_to_dlpack(view, &e);
    expect_ok(&e, __LINE__);
    if (t) {
      CHECK(t->dl_tensor.device.device_type == SN_DLPACK_DEVICE_CUDA && t->dl_tensor.device.device_id == 0);
      CHECK(t->dl_tensor.byte_offset == 10 * sizeof(float) && t->dl_tensor.ndim == 1 && t->dl_tensor.shape[0] == 4);
      /* the fake's device memory is host memory: the address can be read here */
      CHECK(memcmp((char *)t->dl_tensor.data + t->dl_tensor.byte_offset, x + 10, 4 * sizeof(float)) == 0);
      CHECK(sn_buffer_from_dlpack(cpu, t, &e) == NULL);
      EXPECT_ERROR(e, SN_E_UNSUPPORTED, "cannot be imported onto CPU");
      t->dl_tensor.device.device_id = 1;
      CHECK(sn_buffer_from_dlpack(dev, t, &e) == NULL);
      EXPECT_ERROR(e, SN_E_UNSUPPORTED, "id 1");
      t->dl_tensor.device.device_id = 0;
      t->flags |= SN_DLPACK_FLAG_READ_ONLY;
      CHECK(sn_buffer_from_dlpack(dev, t, &e) == NULL);
      EXPECT_ERROR(e, SN_E_UNSUPPORTED, "read-only");
      t->flags &= ~(uint64_t)SN_DLPACK_FLAG_READ_ONLY;
      back_buf = sn_buffer_from_dlpack(dev, t, &e); /* owns t from here */
      expect_ok(&e, __LINE__);
      CHECK(sn_buffer_copy_out(back_buf, back, 4 * sizeof(float), &e) == SN_OK);
      CHECK(memcmp(back, x + 10, 4 * sizeof(float)) == 0);
      sn_buffer_release(back_buf);
    }
    {
      sn_buffer *host = sn_buffer_alloc(cpu, SN_DTYPE_FLOAT32, four, 1, &e);
      sn_dlpack_tensor *ht = sn_buffer_to_dlpack(host, &e);
      CHECK(sn_buffer_from_dlpack(dev, ht, &e) == NULL);
      EXPECT_ERROR(e, SN_E_UNSUPPORTED, "cannot be imported onto CUDA");
      if (ht) ht->deleter(ht);
      sn_buffer_release(host);
    }
    sn_buffer_release(view);
    sn_buffer_release(b);
    sn_device_release(cpu);
  }

  /* CUDA graphs: a run of 4 or more launches that comes again is captured on its second run and
     replayed from then on; every run still launches each kernel once */
  {
    typedef void (*graphs_fn)(int *, int *, int *);
    graphs_fn fake_graphs = (graphs_fn)(uintptr_t)dlsym(lib, "fake_cuda_graphs");
    sn_graph *g = sn_graph_create(ctx, &e);
    int64_t rows[2] = {8, 125};
    sn_uop *a = sn_tensor_input(g, SN_DTYPE_FLOAT32, rows, 2, "CUDA", &e);
    sn_uop *y = sn_tensor_softmax(g, sn_tensor_softmax(g, a, 1, &e), 0, &e);
    sn_program *sp = sn_compile(g, &y, 1, dev, NULL, &e);
    size_t nk = sn_program_num_kernels(sp, &e);
    sn_buffer *in = sn_buffer_alloc(dev, SN_DTYPE_FLOAT32, rows, 2, &e), *out = sn_program_alloc_output(sp, 0, &e);
    int inst[4], glaunch[4], glive, run;
    expect_ok(&e, __LINE__);
    CHECK(fake_graphs != NULL && nk >= 4);
    if (fake_graphs && nk >= 4) {
      fake_graphs(&inst[0], &glaunch[0], &glive);
      for (run = 1; run <= 3; run++) {
        fake_counts(&allocs, &frees, &launches_before, &refs);
        CHECK(sn_program_run(sp, &in, 1, &out, 1, &e) == SN_OK);
        expect_ok(&e, __LINE__);
        fake_counts(&allocs, &frees, &launches, &refs);
        CHECK(launches == launches_before + (int)nk);
        fake_graphs(&inst[run], &glaunch[run], &glive);
      }
      CHECK(inst[1] == inst[0] && glaunch[1] == glaunch[0]);         /* run 1: launch by launch */
      CHECK(inst[2] == inst[0] + 1 && glaunch[2] == glaunch[0] + 1); /* run 2: captured, replayed */
      CHECK(inst[3] == inst[0] + 1 && glaunch[3] == glaunch[0] + 2); /* run 3: replayed */
      {
        unsigned grid[3], block[3];
        int nparams = 0, live = 0;
        fake_last_launch(grid, block, &nparams, &live);
        CHECK(nparams >= 2 && live == nparams); /* the replayed launch's buffers are live */
      }
    }
    sn_buffer_release(in);
    sn_buffer_release(out);
    sn_program_release(sp);
    sn_graph_release(g);
  }

  /* BEAM times its candidates with events around each launch on the stream (time_launch) */
  {
    typedef int (*events_fn)(void);
    events_fn fake_events = (events_fn)(uintptr_t)dlsym(lib, "fake_cuda_events");
    sn_compile_options o;
    int64_t axis0[1] = {0};
    sn_graph *g = sn_graph_create(ctx, &e);
    sn_uop *a = sn_tensor_input(g, SN_DTYPE_FLOAT32, shape, 1, "CUDA", &e);
    sn_uop *s = sn_uop_reduce(g, sn_uop_binary(g, SN_OP_MUL, a, a, &e), SN_OP_ADD, axis0, 1, &e);
    sn_program *bp;
    int before_events = fake_events ? fake_events() : 0;
    CHECK(fake_events != NULL);
    CHECK(sn_compile_options_init(&o, sizeof o, &e) == SN_OK);
    o.beam = 2;
    o.use_cache = 0;
    CHECK(sn_context_set_disk_cache(ctx, 0, &e) == SN_OK); /* a BEAM result from an earlier run: no timing */
    bp = sn_compile(g, &s, 1, dev, &o, &e);
    expect_ok(&e, __LINE__);
    CHECK(sn_context_set_disk_cache(ctx, 1, &e) == SN_OK);
    CHECK(bp != NULL && fake_events && fake_events() >= before_events + 4);
    sn_program_release(bp);
    sn_graph_release(g);
  }

  /* out of memory: a clean SN_E_OUT_OF_MEMORY naming the size */
  {
    int64_t big[1] = {(int64_t)1 << 29}; /* 2 GiB of floats; the fake has 1 GiB */
    CHECK(sn_buffer_alloc(dev, SN_DTYPE_FLOAT32, big, 1, &e) == NULL);
    EXPECT_ERROR(e, SN_E_OUT_OF_MEMORY, "2147483648 bytes");
  }

  /* PTX the driver rejects: a compile error with the driver's log */
  setenv("FAKE_CUDA_REJECT_PTX", "1", 1);
  {
    sn_graph *g = sn_graph_create(ctx, &e);
    sn_uop *a = sn_tensor_input(g, SN_DTYPE_FLOAT32, shape, 1, "CUDA", &e);
    sn_uop *m = sn_uop_binary(g, SN_OP_MUL, a, a, &e);
    CHECK(sn_compile(g, &m, 1, dev, NULL, &e) == NULL);
    EXPECT_ERROR(e, SN_E_COMPILE, "fake driver rejects this PTX");
    sn_graph_release(g);
  }
  unsetenv("FAKE_CUDA_REJECT_PTX");

  sn_device_release(dev);
  sn_context_release(ctx);
  fake_counts(&allocs, &frees, &launches, &refs);
  CHECK(refs == 0); /* the primary context released */
  {
    typedef void (*graphs_fn)(int *, int *, int *);
    graphs_fn fake_graphs = (graphs_fn)(uintptr_t)dlsym(lib, "fake_cuda_graphs");
    int inst = 0, gl = 0, glive = -1;
    if (fake_graphs) fake_graphs(&inst, &gl, &glive);
    CHECK(glive == 0); /* every graph destroyed */
  }
  CHECK(allocs == frees); /* every block freed, pooled ones included */
  return sn_test_report();
}
