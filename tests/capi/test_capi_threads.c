/* The C API's threading contract (sinter.h, "Threads"): the last error is per thread, graphs on one
 * shared context can be built in parallel, and the structural queries on one graph may overlap.
 * Small on purpose (the machine has two cores); run it under TSan to check the registry's locking.
 * Prints "N passed, N failed" last and exits non-zero on failure. */
#define _POSIX_C_SOURCE 200112L
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "sinter/sinter.h"

#define NTHREADS 4
#define NNODES 200

static sn_context *g_ctx;
static sn_graph *g_shared;
static sn_uop *g_shared_root;

/* Each thread records its own verdicts; main sums them after join (no shared counters). */
struct result {
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

  sn_graph_release(g_shared);
  sn_context_release(g_ctx);
  printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
