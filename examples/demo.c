/* demo.c - a first look at Sinter through its C API.
 *
 * Builds a small tensor program, (a + b) * 2 summed over axis 1 for two 2x3 float32 buffers,
 * prints it as a tree with each node's derived properties (dtype, shape, device, min/max) and as an
 * S-expression, then simplifies an index expression over a bounded variable.
 *
 *   cc demo.c -lsinter && ./a.out
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sinter/sinter.h"

/* Every fallible call takes a trailing sn_error**. The first error wins, so a chain of calls can share
   one `err` and be checked once: a call handed the NULL of a failed one fails too, keeping the cause. */
static void check(sn_error *err) {
  if (err != NULL) {
    fprintf(stderr, "error %d: %s\n", (int)sn_error_code(err), sn_error_message(err));
    sn_error_free(err);
    exit(1);
  }
}

/* Prints a string returned by the API, then frees it. */
static void print_owned(const char *title, char *text) {
  size_t n;
  if (text == NULL) return; /* failed: the caller's check(err) reports why */
  n = strlen(text);
  printf("%s\n%s%s\n", title, text, n > 0 && text[n - 1] == '\n' ? "" : "\n");
  sn_string_free(text);
}

int main(void) {
  sn_error *err = NULL;
  sn_context *ctx;
  sn_graph *g;
  sn_uop *a, *b, *sum, *scaled, *total, *out, *i, *four, *ten, *expr, *simple;
  const int64_t shape[2] = {2, 3};
  const int64_t axis[1] = {1};
  const int64_t flat[1] = {2};

  printf("Sinter %s\n\n", sn_version_string());
  ctx = sn_context_create(&err);
  check(err);
  g = sn_graph_create(ctx, &err);
  check(err);
  sn_context_release(ctx); /* the graph keeps its context alive */

  /* a, b: 2x3 views of two 6-element float32 buffers on the CPU */
  a = sn_uop_reshape(g, sn_uop_buffer(g, SN_DTYPE_FLOAT32, 6, "CPU", &err), shape, 2, &err);
  b = sn_uop_reshape(g, sn_uop_buffer(g, SN_DTYPE_FLOAT32, 6, "CPU", &err), shape, 2, &err);
  sum = sn_uop_binary(g, SN_OP_ADD, a, b, &err);
  scaled = sn_uop_binary(g, SN_OP_MUL, sum, sn_uop_const_float(g, SN_DTYPE_FLOAT32, 2.0, &err), &err);
  total = sn_uop_reduce(g, scaled, SN_OP_ADD, axis, 1, &err); /* shape (2,1): reduced axes keep size 1 */
  out = sn_uop_reshape(g, total, flat, 1, &err);              /* shape (2,) */
  check(err);

  print_owned("tensor program as a tree (dtype, shape, device, min/max per node):", sn_uop_to_tree(out, &err));
  check(err);
  print_owned("as an S-expression:", sn_uop_to_string(out, &err));
  check(err);

  /* Index math: for i in [0, 9], ((i * 4) + 3) // 4 is just i and (i + 10) % 10 is i again, so their
     sum simplifies to i * 2 (// and % are floor division and modulo). */
  i = sn_uop_var(g, "i", 0, 9, &err);
  four = sn_uop_const_int(g, SN_DTYPE_INDEX, 4, &err);
  ten = sn_uop_const_int(g, SN_DTYPE_INDEX, 10, &err);
  expr = sn_uop_binary(g, SN_OP_IDIV,
                       sn_uop_binary(g, SN_OP_ADD, sn_uop_binary(g, SN_OP_MUL, i, four, &err),
                                     sn_uop_const_int(g, SN_DTYPE_INDEX, 3, &err), &err),
                       four, &err);
  expr = sn_uop_binary(g, SN_OP_ADD, expr,
                       sn_uop_binary(g, SN_OP_MOD, sn_uop_binary(g, SN_OP_ADD, i, ten, &err), ten, &err), &err);
  check(err);
  simple = sn_graph_simplify(g, expr, &err);
  check(err);
  print_owned("index expression over i in [0, 9], before:", sn_uop_to_string(expr, &err));
  check(err);
  print_owned("after simplification:", sn_uop_to_string(simple, &err));
  check(err);
  {
    int64_t lo, hi;
    if (sn_uop_min_max_int(simple, &lo, &hi, NULL, &err) != SN_OK) check(err);
    printf("bounds of the result: [%ld, %ld]\n", (long)lo, (long)hi);
  }

  /* A mistake is an error value naming the rule, never a crash. */
  {
    const int64_t wrong[2] = {4, 2};
    if (sn_uop_reshape(g, a, wrong, 2, &err) == NULL) {
      printf("\nreshaping 2x3 to 4x2 fails cleanly: %s\n", sn_error_message(err));
      sn_error_free(err);
      err = NULL;
    }
  }

  sn_graph_release(g);
  return 0;
}
