/* The C API's threading contract (sinter.h, "Threads"): the last error is per thread, graphs on one
 * shared context can be built in parallel, and the structural queries on one graph may overlap;
 * one program runs from many threads at once (each with its own buffers, sharing the device's
 * thread pool), and graphs compiled on several threads share the kernel and program caches.
 * Small on purpose (the machine has two cores); CI runs it under ThreadSanitizer too (build-tsan in
 * scripts/test.sh), which checks the locking of the registry, the caches, the arena and the pool.
 * Prints "N passed, N failed" last and exits non-zero on failure. */
#define _POSIX_C_SOURCE 200112L
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "sinter/sinter.h"

#define NTHREADS 4
#define NNODES 200
#define NRUNS 8
#define N (1 << 18) /* large enough for multi-core kernels; sums of small integers stay exact in float */

static sn_context *g_ctx;
static sn_device *g_cpu;
static sn_program *g_program; /* y = x * 2 + 1 over N floats, then its sum: two kernels, multi-core */
static sn_graph *g_shared;
static sn_uop *g_shared_root;

/* Each thread records its own verdicts; main sums them after join (no shared counters). */
struct result {
  int id; /* the thread's number, 0 .. NTHREADS-1 */
  int passed;
  int failed;
  char first_failure[160];
};

static void record(struct result *r, int ok, const char *what) {
  if (ok) {
    r->passed++;
  } else {
    if (r->failed == 0) {
      strncpy(r->first_failure, what, sizeof r->first_failure - 1);
      r->first_failure[sizeof r->first_failure - 1] = '\0';
    }
    r->failed++;
  }
}
#define RECORD(r, cond) record((r), (cond) ? 1 : 0, #cond)

/* Builds a private graph on the shared context, fails on purpose with err == NULL, and walks the
   shared graph's structure. */
static void *worker(void *arg) {
  struct result *r = (struct result *)arg;
  sn_error *e = NULL;
  sn_graph *g = sn_graph_create(g_ctx, &e);
  sn_uop *acc, *one;
  sn_uop *u;
  int i, depth;

  RECORD(r, g != NULL && e == NULL);
  acc = sn_uop_var(g, "i", 0, 100, &e);
  one = sn_uop_const_int(g, SN_DTYPE_INDEX, 1, &e);
  for (i = 0; i < NNODES; i++) acc = sn_uop_binary(g, SN_OP_ADD, acc, one, &e);
  RECORD(r, acc != NULL && e == NULL);
  RECORD(r, sn_graph_node_count(g, &e) == NNODES + 2);

  /* this thread's failure is this thread's last error */
  sn_clear_last_error();
  RECORD(r, sn_uop_binary(g, SN_OP_ADD, acc, NULL, NULL) == NULL);
  RECORD(r, sn_last_error_code() == SN_E_INVALID_ARG);
  RECORD(r, strstr(sn_last_error_message(), "srcs[1] is NULL") != NULL);

  /* structural queries on the shared graph, concurrently with the other threads */
  depth = 0;
  for (u = g_shared_root; u != NULL && sn_uop_num_srcs(u, &e) > 0; u = sn_uop_src(u, 0, &e)) depth++;
  RECORD(r, depth == NNODES && e == NULL);
  RECORD(r, u != NULL && sn_uop_op(u, &e) == SN_OP_DEFINE_VAR);

  sn_graph_release(g);
  return NULL;
}

/* y = x * 2 + 1 (N,) and sum(y): compiled on `g` for the shared device. */
static sn_program *compile_affine(sn_graph *g, sn_error **e) {
  int64_t shape[1] = {N}, axis[1] = {0};
  sn_uop *x = sn_tensor_input(g, SN_DTYPE_FLOAT32, shape, 1, NULL, e);
  sn_uop *two = sn_uop_const_float(g, SN_DTYPE_FLOAT32, 2.0, e);
  sn_uop *one = sn_uop_const_float(g, SN_DTYPE_FLOAT32, 1.0, e);
  sn_uop *y = sn_uop_binary(g, SN_OP_ADD, sn_uop_binary(g, SN_OP_MUL, x, two, e), one, e);
  sn_uop *outs[2];
  outs[0] = y;
  outs[1] = sn_uop_reduce(g, y, SN_OP_ADD, axis, 1, e);
  return sn_compile(g, outs, 2, g_cpu, NULL, e);
}

/* A program whose first kernel (a 64x64 matmul: large enough to compile on its own) compiles on a
 * helper thread while this one lowers the next kernels (softmax of its rows, then a matmul of that)
 * in the same graph: under ThreadSanitizer this checks the hand-over (UOp::derive_for_readers).
 * With x all ones and w all twos, x @ w is 128 everywhere, its softmax is 1/64 everywhere, and
 * softmax @ w is 2 everywhere. */
static int overlapped_compile(void) {
  sn_error *e = NULL;
  int64_t shape[2] = {64, 64};
  float in[64 * 64], twos[64 * 64], out[64 * 64];
  int i, ok = 1;
  sn_graph *g = sn_graph_create(g_ctx, &e);
  sn_uop *x = sn_tensor_input(g, SN_DTYPE_FLOAT32, shape, 2, NULL, &e);
  sn_uop *w = sn_tensor_input(g, SN_DTYPE_FLOAT32, shape, 2, NULL, &e);
  sn_uop *y = sn_tensor_matmul(g, sn_tensor_softmax(g, sn_tensor_matmul(g, x, w, &e), -1, &e), w, &e);
  sn_program *p = sn_compile(g, &y, 1, g_cpu, NULL, &e);
  sn_buffer *bx = sn_buffer_alloc(g_cpu, SN_DTYPE_FLOAT32, shape, 2, &e);
  sn_buffer *bw = sn_buffer_alloc(g_cpu, SN_DTYPE_FLOAT32, shape, 2, &e);
  sn_buffer *by = p != NULL ? sn_program_alloc_output(p, 0, &e) : NULL;
  for (i = 0; i < 64 * 64; i++) in[i] = 1.0f, twos[i] = 2.0f;
  if (e == NULL && sn_buffer_copy_in(bx, in, sizeof in, &e) == SN_OK &&
      sn_buffer_copy_in(bw, twos, sizeof twos, &e) == SN_OK) {
    sn_buffer *ins[2];
    ins[0] = bx;
    ins[1] = bw;
    if (sn_program_run(p, ins, 2, &by, 1, &e) == SN_OK && sn_buffer_copy_out(by, out, sizeof out, &e) == SN_OK)
      for (i = 0; i < 64 * 64; i++)
        if (out[i] < 1.999f || out[i] > 2.001f) {
          printf("FAIL: overlapped compile: element %d is %g, not 2\n", i, out[i]);
          ok = 0;
          break;
        }
  }
  if (e != NULL) {
    printf("FAIL: overlapped compile: %s\n", sn_error_message(e));
    sn_error_free(e);
    ok = 0;
  }
  sn_buffer_release(bx);
  sn_buffer_release(bw);
  sn_buffer_release(by);
  sn_program_release(p);
  sn_graph_release(g);
  return ok;
}

/* Runs `p` NRUNS times on this thread's own buffers, each time with other data, and checks the results. */
static void run_affine(struct result *r, sn_program *p, int seed) {
  sn_error *e = NULL;
  int64_t shape[1] = {N};
  static float in[NTHREADS][N]; /* per thread: large for a stack */
  float out[8], total = 0;
  float *x = in[r->id];
  int run, i;
  sn_buffer *bx = sn_buffer_alloc(g_cpu, SN_DTYPE_FLOAT32, shape, 1, &e);
  sn_buffer *by = sn_program_alloc_output(p, 0, &e);
  sn_buffer *bs = sn_program_alloc_output(p, 1, &e);
  sn_buffer *outs[2];
  outs[0] = by;
  outs[1] = bs;
  for (run = 0; run < NRUNS && e == NULL; run++) {
    for (i = 0; i < N; i++) x[i] = (float)((i + seed + run) % 7);
    if (sn_buffer_copy_in(bx, x, sizeof(float) * N, &e) != SN_OK) break;
    if (sn_program_run(p, &bx, 1, outs, 2, &e) != SN_OK) break;
    if (sn_buffer_copy_out(bs, &total, sizeof total, &e) != SN_OK) break;
    {
      /* small integers: the float sum is exact */
      double want = 0;
      for (i = 0; i < N; i++) want += x[i] * 2.0 + 1.0;
      RECORD(r, (double)total == want);
    }
  }
  {
    sn_buffer *view;
    int64_t s8[1] = {8};
    view = sn_buffer_view(by, N - 8, s8, 1, &e);
    RECORD(r, view != NULL && sn_buffer_copy_out(view, out, sizeof out, &e) == SN_OK);
    RECORD(r, out[7] == x[N - 1] * 2 + 1);
    sn_buffer_release(view);
  }
  RECORD(r, e == NULL);
  if (e) {
    printf("thread %d: %s\n", r->id, sn_error_message(e));
    sn_error_free(e);
  }
  sn_buffer_release(bx);
  sn_buffer_release(by);
  sn_buffer_release(bs);
}

/* One program, many threads: the program's cached arena is taken by one run at a time. */
static void *runner(void *arg) {
  struct result *r = (struct result *)arg;
  run_affine(r, g_program, r->id);
  return NULL;
}

/* A graph per thread compiled to the same program (the caches see it four times at once), then run. */
static void *compiler(void *arg) {
  struct result *r = (struct result *)arg;
  sn_error *e = NULL;
  sn_graph *g = sn_graph_create(g_ctx, &e);
  sn_program *p = compile_affine(g, &e);
  RECORD(r, p != NULL && e == NULL);
  if (p) run_affine(r, p, 3 * r->id + 1);
  if (e) sn_error_free(e);
  sn_program_release(p);
  sn_graph_release(g);
  return NULL;
}

/* Runs `fn` on NTHREADS threads and adds their verdicts to *passed / *failed. */
static int run_threads(void *(*fn)(void *), const char *what, int *passed, int *failed) {
  pthread_t threads[NTHREADS];
  struct result results[NTHREADS];
  int i;
  memset(results, 0, sizeof results);
  for (i = 0; i < NTHREADS; i++) {
    results[i].id = i;
    if (pthread_create(&threads[i], NULL, fn, &results[i]) != 0) {
      printf("pthread_create failed\n");
      return 0;
    }
  }
  for (i = 0; i < NTHREADS; i++) pthread_join(threads[i], NULL);
  for (i = 0; i < NTHREADS; i++) {
    *passed += results[i].passed;
    *failed += results[i].failed;
    if (results[i].failed) printf("FAIL (%s, thread %d): %s\n", what, i, results[i].first_failure);
  }
  return 1;
}

int main(void) {
  sn_error *e = NULL;
  pthread_t threads[NTHREADS];
  struct result results[NTHREADS];
  sn_uop *one;
  int i, passed = 0, failed = 0;

  g_ctx = sn_context_create(&e);
  g_shared = sn_graph_create(g_ctx, &e);
  g_shared_root = sn_uop_var(g_shared, "s", 0, 7, &e);
  one = sn_uop_const_int(g_shared, SN_DTYPE_INDEX, 1, &e);
  for (i = 0; i < NNODES; i++) g_shared_root = sn_uop_binary(g_shared, SN_OP_MUL, g_shared_root, one, &e);
  if (e != NULL) {
    printf("setup failed: %s\n0 passed, 1 failed\n", sn_error_message(e));
    sn_error_free(e);
    return 1;
  }

  sn_clear_last_error();
  memset(results, 0, sizeof results);
  for (i = 0; i < NTHREADS; i++) {
    if (pthread_create(&threads[i], NULL, worker, &results[i]) != 0) {
      printf("pthread_create failed\n0 passed, 1 failed\n");
      return 1;
    }
  }
  for (i = 0; i < NTHREADS; i++) pthread_join(threads[i], NULL);
  for (i = 0; i < NTHREADS; i++) {
    passed += results[i].passed;
    failed += results[i].failed;
    if (results[i].failed) printf("FAIL (thread %d): %s\n", i, results[i].first_failure);
  }

  /* the workers' failures did not leak into this thread's last error */
  if (sn_last_error_code() == SN_OK && strcmp(sn_last_error_message(), "") == 0) {
    passed++;
  } else {
    failed++;
    printf("FAIL: main thread sees a last error: %s\n", sn_last_error_message());
  }

  /* programs: one compiled program run from every thread; graphs compiled on every thread */
  g_cpu = sn_device_open(g_ctx, "CPU", &e);
  {
    sn_graph *g = sn_graph_create(g_ctx, &e);
    g_program = compile_affine(g, &e);
    sn_graph_release(g);
  }
  if (e != NULL) {
    printf("FAIL: compile: %s\n", sn_error_message(e));
    sn_error_free(e);
    failed++;
  } else if (!run_threads(runner, "one program", &passed, &failed) ||
             !run_threads(compiler, "compile on every thread", &passed, &failed)) {
    failed++;
  }
  if (overlapped_compile())
    passed++;
  else
    failed++;
  sn_program_release(g_program);
  sn_device_release(g_cpu);

  sn_graph_release(g_shared);
  sn_context_release(g_ctx);
  printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
