/* Behavioural tests of the graph part of the public C API, written against sinter.h only (C89).
 * Builds graphs, checks every query, and drives every error path: each failure must come back as a
 * code plus a message that names the problem, never as a crash. Prints "N passed, N failed" last and
 * exits non-zero on any failure. Every error and string is freed, so LeakSanitizer stays quiet. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "sinter/sinter.h"

/* Shape of u as "(d0,d1,...)", or "none"; symbolic dims print as "?". */
static const char *shape_of(const sn_uop *u, char *buf) {
  int64_t rank = sn_uop_rank(u, NULL);
  size_t i;
  if (rank < 0) return "none";
  strcpy(buf, "(");
  for (i = 0; i < (size_t)rank; i++) {
    int64_t v = 0;
    if (sn_uop_dim(u, i, &v, NULL, NULL) != SN_OK) return "error";
    if (i) strcat(buf, ",");
    if (v < 0) {
      strcat(buf, "?");
    } else {
      sprintf(buf + strlen(buf), "%ld", (long)v);
    }
  }
  strcat(buf, ")");
  return buf;
}
#define CHECK_SHAPE(u, text)                                         \
  do {                                                               \
    char buf_[256];                                                  \
    const char *s_ = shape_of((u), buf_);                            \
    check(strcmp(s_, (text)) == 0, #u " has shape " text, __LINE__); \
    if (strcmp(s_, (text)) != 0) printf("  got %s\n", s_);           \
  } while (0)

static void test_versions(void) {
  const sn_api *api;
  CHECK(strcmp(sn_version_string(), "0.1.0") == 0);
  CHECK(sn_version_number() == SN_VERSION_NUMBER);
  CHECK(SN_VERSION_NUMBER == 100);
  CHECK(strcmp(sn_dtype_name(SN_DTYPE_FLOAT32), "float32") == 0);
  CHECK(strcmp(sn_dtype_name(SN_DTYPE_BFLOAT16), "bfloat16") == 0);
  CHECK(strcmp(sn_dtype_name(SN_DTYPE_INDEX), "index") == 0);
  CHECK(sn_dtype_name((sn_dtype)999) == NULL);
  CHECK(sn_dtype_name(SN_DTYPE_INVALID) == NULL);
  CHECK(contains(sn_op_name(SN_OP_ADD), "Add"));
  CHECK(contains(sn_op_name(SN_OP_CONTIGUOUS_BACKWARD), "ContiguousBackward"));
  CHECK(sn_op_name((sn_op)9999) == NULL);
  CHECK(sn_op_name(SN_OP_INVALID) == NULL);
  CHECK(strcmp(sn_axis_type_name(SN_AXIS_REDUCE), "REDUCE") == 0);
  CHECK(sn_axis_type_name((sn_axis_type)42) == NULL);
  CHECK(strcmp(sn_addrspace_name(SN_ADDRSPACE_LOCAL), "local") == 0);
  CHECK(sn_addrspace_name((sn_addrspace)42) == NULL);

  api = sn_get_api(SN_API_VERSION);
  CHECK(api != NULL);
  if (api != NULL) {
    CHECK(api->api_version >= SN_API_VERSION);
    CHECK(api->struct_size >= sizeof(sn_api));
    CHECK(api->version_string == sn_version_string);
    CHECK(api->graph_simplify_given == sn_graph_simplify_given);
  }
  CHECK(sn_get_api(SN_API_VERSION + 1) == NULL);
  CHECK(sn_get_api(0) == NULL);
}

/* A full build through the function table only, as a dlopen host would do it. */
static void test_api_table(void) {
  const sn_api *api = sn_get_api(1);
  sn_error *e = NULL;
  sn_context *ctx;
  sn_graph *g;
  sn_uop *a, *b, *sum;
  if (api == NULL) {
    CHECK(api != NULL);
    return;
  }
  ctx = api->context_create(&e);
  g = api->graph_create(ctx, &e);
  api->context_release(ctx);
  a = api->uop_const_int(g, SN_DTYPE_INT32, 40, &e);
  b = api->uop_const_int(g, SN_DTYPE_INT32, 2, &e);
  sum = api->uop_binary(g, SN_OP_ADD, a, b, &e);
  CHECK(e == NULL);
  CHECK(sum != NULL);
  CHECK(api->uop_op(sum, &e) == SN_OP_ADD);
  CHECK(api->uop_src(sum, 1, &e) == b);
  {
    char *s = api->uop_to_string(sum, &e);
    CHECK(contains(s, "add"));
    CHECK(contains(s, "40"));
    api->string_free(s);
  }
  api->uop_binary(g, SN_OP_ADD, a, NULL, &e);
  CHECK(e != NULL && api->error_code(e) == SN_E_INVALID_ARG && contains(api->error_message(e), "srcs[1] is NULL"));
  api->error_free(e);
  api->graph_release(g);
}

static void test_lifecycle(void) {
  sn_error *e = NULL;
  sn_context *ctx = sn_context_create(&e);
  sn_graph *g, *g2;
  sn_uop *c;
  CHECK(ctx != NULL && e == NULL);
  CHECK(sn_context_retain(ctx) == ctx);
  sn_context_release(ctx); /* back to one reference */
  g = sn_graph_create(ctx, &e);
  CHECK(g != NULL && e == NULL);
  /* The graph keeps the context alive: releasing the context first is fine. */
  sn_context_release(ctx);
  c = sn_uop_const_int(g, SN_DTYPE_INT32, 7, &e);
  CHECK(c != NULL && e == NULL);
  CHECK(sn_graph_retain(g) == g);
  sn_graph_release(g); /* one reference left */
  CHECK(sn_uop_op(c, &e) == SN_OP_CONST);
  CHECK(sn_graph_node_count(g, &e) == 1);
  g2 = sn_graph_create(ctx, &e); /* the context is still alive through g */
  CHECK(g2 != NULL);
  sn_graph_release(g2);
  sn_graph_release(g);
  /* NULL-safe releases */
  sn_graph_release(NULL);
  sn_context_release(NULL);
  CHECK(sn_context_retain(NULL) == NULL);
  CHECK(sn_graph_retain(NULL) == NULL);
}

/* The README's shape of graph: two 2x3 buffers, add, scale, reduce, reshape; then every query. */
static void test_build_and_query(void) {
  sn_error *e = NULL;
  sn_context *ctx = sn_context_create(&e);
  sn_graph *g = sn_graph_create(ctx, &e);
  int64_t shape23[2] = {2, 3};
  int64_t axis1[1] = {1};
  int64_t shape2[1] = {2};
  int64_t perm[2] = {1, 0};
  sn_uop *bufa, *bufb, *a, *b, *sum, *two, *scaled, *red, *out, *t, *sink, *x;
  sn_arg arg;
  int64_t lo, hi, v;
  double flo, fhi;
  int clamped;
  sn_uop *sym;
  char *dev;

  sn_context_release(ctx);
  bufa = sn_uop_buffer(g, SN_DTYPE_FLOAT32, 6, "CPU", &e);
  bufb = sn_uop_buffer(g, SN_DTYPE_FLOAT32, 6, "CPU", &e);
  CHECK(bufa != NULL && bufb != NULL && bufa != bufb); /* distinct buffers stay distinct */
  a = sn_uop_reshape(g, bufa, shape23, 2, &e);
  b = sn_uop_reshape(g, bufb, shape23, 2, &e);
  sum = sn_uop_binary(g, SN_OP_ADD, a, b, &e);
  two = sn_uop_const_float(g, SN_DTYPE_FLOAT32, 2.0, &e);
  scaled = sn_uop_binary(g, SN_OP_MUL, sum, two, &e);
  red = sn_uop_reduce(g, scaled, SN_OP_ADD, axis1, 1, &e);
  out = sn_uop_reshape(g, red, shape2, 1, &e);
  CHECK(e == NULL);
  if (e != NULL) {
    printf("  unexpected: %s\n", sn_error_message(e));
    sn_error_free(e);
    e = NULL;
  }
  CHECK(out != NULL);

  /* hash-consing: the same node twice is the same pointer */
  CHECK(sn_uop_binary(g, SN_OP_ADD, a, b, &e) == sum);
  CHECK(sn_uop_reshape(g, bufa, shape23, 2, &e) == a);

  /* op, dtype, sources */
  CHECK(sn_uop_op(out, &e) == SN_OP_RESHAPE);
  CHECK(sn_uop_op(red, &e) == SN_OP_REDUCE);
  CHECK(sn_uop_op(bufa, &e) == SN_OP_BUFFER);
  CHECK(sn_uop_dtype(out, &e) == SN_DTYPE_FLOAT32);
  CHECK(sn_uop_lanes(out, &e) == 1);
  CHECK(sn_uop_is_pointer(out, &e) == 0);
  CHECK(sn_uop_pointer_addrspace(out, &e) == SN_ADDRSPACE_NONE);
  CHECK(sn_uop_num_srcs(sum, &e) == 2);
  CHECK(sn_uop_src(sum, 0, &e) == a);
  CHECK(sn_uop_src(sum, 1, &e) == b);
  CHECK(sn_uop_num_srcs(bufa, &e) == 0);
  CHECK(sn_uop_num_srcs(a, &e) == 2); /* Reshape(x, shape operand) */
  x = sn_uop_src(a, 1, &e);           /* the shape operand: a Stack of index constants */
  CHECK(sn_uop_op(x, &e) == SN_OP_STACK);
  CHECK(sn_uop_dtype(x, &e) == SN_DTYPE_INDEX);
  CHECK(sn_uop_op(sn_uop_src(x, 0, &e), &e) == SN_OP_CONST);
  CHECK(e == NULL);

  /* shapes */
  CHECK_SHAPE(bufa, "(6)");
  CHECK_SHAPE(a, "(2,3)");
  CHECK_SHAPE(sum, "(2,3)");
  CHECK_SHAPE(two, "()");
  CHECK_SHAPE(scaled, "(2,3)");
  CHECK_SHAPE(red, "(2,1)");
  CHECK_SHAPE(out, "(2)");
  CHECK(sn_uop_rank(two, &e) == 0);
  v = 0;
  sym = bufa;
  CHECK(sn_uop_dim(red, 0, &v, &sym, &e) == SN_OK && v == 2 && sym == NULL);
  t = sn_uop_permute(g, a, perm, 2, &e);
  CHECK_SHAPE(t, "(3,2)");
  t = sn_uop_expand(g, red, shape23, 2, &e);
  CHECK_SHAPE(t, "(2,3)");
  {
    int64_t off[2] = {1, 0}, sz[2] = {4, 5}, soff[2] = {0, 1}, ssz[2] = {2, 2}, flags[2] = {0, 1};
    t = sn_uop_pad(g, a, off, sz, 2, &e);
    CHECK_SHAPE(t, "(4,5)");
    t = sn_uop_shrink(g, a, soff, ssz, 2, &e);
    CHECK_SHAPE(t, "(2,2)");
    t = sn_uop_flip(g, a, flags, 2, &e);
    CHECK_SHAPE(t, "(2,3)");
    CHECK(sn_uop_op(t, &e) == SN_OP_FLIP);
  }
  t = sn_uop_contiguous(g, out, &e);
  CHECK(sn_uop_op(t, &e) == SN_OP_CONTIGUOUS);
  CHECK_SHAPE(t, "(2)");
  t = sn_uop_cast(g, out, SN_DTYPE_INT32, &e);
  CHECK(sn_uop_dtype(t, &e) == SN_DTYPE_INT32);
  CHECK(sn_uop_op(t, &e) == SN_OP_CAST);
  t = sn_uop_bitcast(g, out, SN_DTYPE_UINT32, &e);
  CHECK(sn_uop_dtype(t, &e) == SN_DTYPE_UINT32);
  CHECK_SHAPE(t, "(2)");
  t = sn_uop_binary(g, SN_OP_CMPLT, a, b, &e);
  CHECK(sn_uop_dtype(t, &e) == SN_DTYPE_BOOL);
  t = sn_uop_ternary(g, SN_OP_WHERE, t, a, b, &e);
  CHECK(sn_uop_dtype(t, &e) == SN_DTYPE_FLOAT32 && sn_uop_op(t, &e) == SN_OP_WHERE);
  t = sn_uop_unary(g, SN_OP_SQRT, a, &e);
  CHECK(sn_uop_op(t, &e) == SN_OP_SQRT);
  CHECK(e == NULL);

  /* sink: void, no shape */
  {
    sn_uop *roots[2];
    roots[0] = out;
    roots[1] = sum;
    sink = sn_uop_sink(g, roots, 2, &e);
  }
  CHECK(sn_uop_op(sink, &e) == SN_OP_SINK);
  CHECK(sn_uop_dtype(sink, &e) == SN_DTYPE_VOID);
  CHECK(sn_uop_rank(sink, &e) == -1);
  CHECK(e == NULL);
  CHECK(sn_uop_dim(sink, 0, &v, NULL, &e) == SN_E_INVALID_ARG);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "has no shape");

  /* device */
  dev = sn_uop_device(out, &e);
  CHECK(dev != NULL && strcmp(dev, "CPU") == 0);
  sn_string_free(dev);
  dev = sn_uop_device(two, &e);
  CHECK(dev != NULL && strcmp(dev, "") == 0); /* a Const has no device */
  sn_string_free(dev);
  CHECK(sn_uop_axis(out, &e) == -1);

  /* args */
  CHECK(sn_arg_init(&arg, sizeof arg, &e) == SN_OK);
  CHECK(arg.struct_size == sizeof arg && arg.kind == SN_ARG_NONE && arg.addrspace == SN_ADDRSPACE_GLOBAL);
  CHECK(sn_uop_arg(red, &arg, &e) == SN_OK);
  CHECK(arg.kind == SN_ARG_REDUCE && arg.reduce_op == SN_OP_ADD && arg.nints == 1 && arg.ints != NULL &&
        arg.ints[0] == 1);
  CHECK(arg.struct_size == sizeof arg);
  CHECK(sn_uop_arg(bufa, &arg, &e) == SN_OK);
  CHECK(arg.kind == SN_ARG_BUFFER && arg.size == 6 && arg.addrspace == SN_ADDRSPACE_GLOBAL && arg.id != 0);
  CHECK(arg.device != NULL && strcmp(arg.device, "CPU") == 0);
  CHECK(sn_uop_arg(two, &arg, &e) == SN_OK);
  CHECK(arg.kind == SN_ARG_FLOAT && arg.float_value == 2.0);
  CHECK(sn_uop_arg(sum, &arg, &e) == SN_OK);
  CHECK(arg.kind == SN_ARG_NONE);
  CHECK(sn_uop_arg(sn_uop_permute(g, a, perm, 2, &e), &arg, &e) == SN_OK);
  CHECK(arg.kind == SN_ARG_INTS && arg.nints == 2 && arg.ints[0] == 1 && arg.ints[1] == 0);
  CHECK(sn_uop_arg(sn_uop_cast(g, out, SN_DTYPE_FLOAT16, &e), &arg, &e) == SN_OK);
  CHECK(arg.kind == SN_ARG_DTYPE && arg.dtype == SN_DTYPE_FLOAT16);
  CHECK(sn_uop_arg(sn_uop_const_int(g, SN_DTYPE_INT64, -5, &e), &arg, &e) == SN_OK);
  CHECK(arg.kind == SN_ARG_INT && arg.int_value == -5);
  CHECK(e == NULL);

  /* min/max */
  CHECK(sn_uop_min_max_float(two, &flo, &fhi, &e) == SN_OK && flo == 2.0 && fhi == 2.0);
  CHECK(sn_uop_min_max_int(two, &lo, &hi, NULL, &e) == SN_E_INVALID_ARG);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "sn_uop_min_max_float");
  t = sn_uop_const_int(g, SN_DTYPE_INT8, 100, &e);
  clamped = 7;
  CHECK(sn_uop_min_max_int(t, &lo, &hi, &clamped, &e) == SN_OK && lo == 100 && hi == 100 && clamped == 0);
  t = sn_uop_buffer(g, SN_DTYPE_UINT8, 4, "CPU", &e);
  CHECK(sn_uop_min_max_int(t, &lo, &hi, NULL, &e) == SN_OK && lo == 0 && hi == 255);
  CHECK(sn_uop_min_max_float(t, &flo, &fhi, &e) == SN_OK && flo == 0.0 && fhi == 255.0);
  t = sn_uop_const_int(g, SN_DTYPE_BOOL, 5, &e); /* bool consts normalize to true */
  CHECK(sn_uop_min_max_int(t, &lo, &hi, NULL, &e) == SN_OK && lo == 1 && hi == 1);
  t = sn_uop_const_int(g, SN_DTYPE_FLOAT64, 3, &e); /* int value, float dtype */
  CHECK(sn_uop_arg(t, &arg, &e) == SN_OK && arg.kind == SN_ARG_FLOAT && arg.float_value == 3.0);
  CHECK(e == NULL);

  /* printing */
  EXPECT_TEXT(sn_uop_to_string(out, &e), "(reshape");
  EXPECT_TEXT(sn_uop_to_string(out, &e), "reduce");
  EXPECT_TEXT(sn_uop_to_tree(out, &e), "float32");
  EXPECT_TEXT(sn_uop_to_tree(out, &e), "CPU");
  EXPECT_TEXT(sn_uop_to_dot(out, &e), "digraph");
  CHECK(e == NULL);

  CHECK(sn_graph_node_count(g, &e) > 10);
  sn_graph_release(g);
}

/* Index math: bounded variables, bounds of expressions, symbolic shapes, simplification. */
static void test_symbolic(void) {
  sn_error *e = NULL;
  sn_context *ctx = sn_context_create(&e);
  sn_graph *g = sn_graph_create(ctx, &e);
  sn_uop *i, *four, *three, *zero, *expr, *simple, *n, *dims[2], *stack, *p, *sym, *big, *two;
  sn_arg arg;
  int64_t lo, hi, v;
  int clamped;

  sn_context_release(ctx);
  i = sn_uop_var(g, "i", 0, 9, &e);
  four = sn_uop_const_int(g, SN_DTYPE_INDEX, 4, &e);
  three = sn_uop_const_int(g, SN_DTYPE_INDEX, 3, &e);
  zero = sn_uop_const_int(g, SN_DTYPE_INDEX, 0, &e);
  CHECK(sn_uop_op(i, &e) == SN_OP_DEFINE_VAR && sn_uop_dtype(i, &e) == SN_DTYPE_INDEX);
  CHECK(sn_uop_min_max_int(i, &lo, &hi, NULL, &e) == SN_OK && lo == 0 && hi == 9);
  CHECK(sn_arg_init(&arg, sizeof arg, &e) == SN_OK);
  CHECK(sn_uop_arg(i, &arg, &e) == SN_OK);
  CHECK(arg.kind == SN_ARG_VAR && arg.str_len == 1 && arg.str[0] == 'i' && arg.min == 0 && arg.max == 9);

  /* (i*4 + 3) // 4 over i in [0, 9] has bounds [0, 9] */
  expr = sn_uop_binary(g, SN_OP_IDIV, sn_uop_binary(g, SN_OP_ADD, sn_uop_binary(g, SN_OP_MUL, i, four, &e), three, &e),
                       four, &e);
  CHECK(expr != NULL && e == NULL);
  CHECK(sn_uop_min_max_int(expr, &lo, &hi, NULL, &e) == SN_OK && lo >= 0 && hi <= 12);
  simple = sn_graph_simplify(g, expr, &e);
  CHECK(simple != NULL && e == NULL);
  CHECK(simple == i); /* (4i + 3) // 4 == i */
  CHECK(sn_graph_simplify(g, sn_uop_binary(g, SN_OP_ADD, i, zero, &e), &e) == i);
  CHECK(sn_graph_simplify(g, i, &e) == i);
  /* i < 10 always holds for i in [0, 9]: the comparison folds to the constant true */
  {
    sn_uop *ten = sn_uop_const_int(g, SN_DTYPE_INDEX, 10, &e);
    sn_uop *lt = sn_graph_simplify(g, sn_uop_binary(g, SN_OP_CMPLT, i, ten, &e), &e);
    CHECK(sn_uop_op(lt, &e) == SN_OP_CONST && sn_uop_min_max_int(lt, &lo, &hi, NULL, &e) == SN_OK && lo == 1);
    /* under the validity gate i < 4, i // 4 is 0 */
    {
      sn_uop *gate = sn_uop_binary(g, SN_OP_CMPLT, i, four, &e);
      sn_uop *q = sn_graph_simplify_given(g, gate, sn_uop_binary(g, SN_OP_IDIV, i, four, &e), &e);
      CHECK(q == zero);
    }
  }
  CHECK(e == NULL);
  if (e != NULL) {
    printf("  unexpected: %s\n", sn_error_message(e));
    sn_error_free(e);
    e = NULL;
  }

  /* a symbolic shape: Param with shape (2, n), built with the generic builder */
  n = sn_uop_var(g, "n", 1, 16, &e);
  dims[0] = sn_uop_const_int(g, SN_DTYPE_INDEX, 2, &e);
  dims[1] = n;
  stack = sn_uop_new(g, SN_OP_STACK, SN_DTYPE_INDEX, dims, 2, NULL, &e);
  CHECK(sn_arg_init(&arg, sizeof arg, &e) == SN_OK);
  arg.kind = SN_ARG_PARAM;
  arg.id = 3;
  arg.device = "CPU";
  p = sn_uop_new(g, SN_OP_PARAM, SN_DTYPE_FLOAT32, &stack, 1, &arg, &e);
  CHECK(p != NULL && e == NULL);
  CHECK(sn_uop_rank(p, &e) == 2);
  sym = NULL;
  CHECK(sn_uop_dim(p, 0, &v, &sym, &e) == SN_OK && v == 2 && sym == NULL);
  CHECK(sn_uop_dim(p, 1, &v, &sym, &e) == SN_OK && v == -1 && sym == n);
  CHECK(sn_uop_dim(p, 1, &v, NULL, &e) == SN_OK && v == -1);
  CHECK(sn_uop_arg(p, &arg, &e) == SN_OK && arg.kind == SN_ARG_PARAM && arg.id == 3);
  CHECK(arg.device != NULL && strcmp(arg.device, "CPU") == 0);
  CHECK(sn_uop_arg(stack, &arg, &e) == SN_OK && arg.kind == SN_ARG_NONE);
  /* the typed Param builder */
  {
    int64_t shp[3] = {4, 1, 2};
    sn_uop *q = sn_uop_param(g, 0, SN_DTYPE_INT32, shp, 3, NULL, &e);
    CHECK_SHAPE(q, "(4,1,2)");
    CHECK(sn_uop_op(q, &e) == SN_OP_PARAM);
    CHECK(sn_uop_arg(q, &arg, &e) == SN_OK && arg.kind == SN_ARG_PARAM && arg.id == 0 && arg.device != NULL &&
          arg.device[0] == '\0');
  }

  /* bounds beyond int64 are clamped and flagged */
  big = sn_uop_var(g, "big", 0, INT64_MAX, &e);
  two = sn_uop_const_int(g, SN_DTYPE_INDEX, 2, &e);
  clamped = 0;
  CHECK(sn_uop_min_max_int(sn_uop_binary(g, SN_OP_MUL, big, two, &e), &lo, &hi, &clamped, &e) == SN_OK);
  CHECK(clamped == 1 && hi == INT64_MAX && lo == 0);
  clamped = 5;
  CHECK(sn_uop_min_max_int(big, &lo, &hi, &clamped, &e) == SN_OK && clamped == 0 && hi == INT64_MAX);

  /* Range and generic Const through sn_uop_new */
  CHECK(sn_arg_init(&arg, sizeof arg, &e) == SN_OK);
  arg.kind = SN_ARG_RANGE;
  arg.id = 7;
  arg.axis_type = SN_AXIS_LOOP;
  {
    sn_uop *r = sn_uop_new(g, SN_OP_RANGE, SN_DTYPE_INDEX, &four, 1, &arg, &e);
    CHECK(r != NULL && sn_uop_min_max_int(r, &lo, &hi, NULL, &e) == SN_OK && lo == 0 && hi == 3);
    CHECK(sn_uop_arg(r, &arg, &e) == SN_OK && arg.kind == SN_ARG_RANGE && arg.id == 7 && arg.axis_type == SN_AXIS_LOOP);
  }
  CHECK(sn_arg_init(&arg, sizeof arg, &e) == SN_OK);
  arg.kind = SN_ARG_INT;
  arg.int_value = 4;
  CHECK(sn_uop_new(g, SN_OP_CONST, SN_DTYPE_INDEX, NULL, 0, &arg, &e) == four);
  arg.kind = SN_ARG_FLOAT;
  arg.float_value = 4.0; /* an integral float value is accepted for an integer Const */
  CHECK(sn_uop_new(g, SN_OP_CONST, SN_DTYPE_INDEX, NULL, 0, &arg, &e) == four);
  /* the generic builder normalizes Consts like the typed ones: the same constant is the same node */
  arg.float_value = 0.1;
  CHECK(sn_uop_new(g, SN_OP_CONST, SN_DTYPE_FLOAT32, NULL, 0, &arg, &e) ==
        sn_uop_const_float(g, SN_DTYPE_FLOAT32, 0.1, &e));
  arg.kind = SN_ARG_INT;
  arg.int_value = 7;
  CHECK(sn_uop_new(g, SN_OP_CONST, SN_DTYPE_BOOL, NULL, 0, &arg, &e) == sn_uop_const_int(g, SN_DTYPE_BOOL, 1, &e));
  CHECK(sn_uop_new(g, SN_OP_CONST, SN_DTYPE_FLOAT16, NULL, 0, &arg, &e) ==
        sn_uop_const_float(g, SN_DTYPE_FLOAT16, 7.0, &e));
  /* uint64 constants travel as their bit pattern */
  {
    sn_uop *umax = sn_uop_const_int(g, SN_DTYPE_UINT64, -1, &e);
    double fmax = 0;
    CHECK(sn_uop_min_max_float(umax, &fmax, &fmax, &e) == SN_OK && fmax == 18446744073709551615.0);
    CHECK(sn_uop_min_max_int(umax, &lo, &hi, &clamped, &e) == SN_OK && clamped == 1 && hi == INT64_MAX);
  }
  CHECK(e == NULL);

  sn_graph_release(g);
}

/* Multi-device tuples and the Buffer arg through the generic builder. */
static void test_devices(void) {
  sn_error *e = NULL;
  sn_context *ctx = sn_context_create(&e);
  sn_graph *g = sn_graph_create(ctx, &e);
  sn_arg arg;
  sn_uop *b, *b2;
  char *dev;
  sn_context_release(ctx);

  b = sn_uop_buffer(g, SN_DTYPE_FLOAT32, 8, "(CPU:0, CPU:1)", &e);
  CHECK(b != NULL && e == NULL);
  CHECK_SHAPE(b, "(16)"); /* n devices x size */
  dev = sn_uop_device(b, &e);
  CHECK(dev != NULL && strcmp(dev, "(CPU:0,CPU:1)") == 0);
  sn_string_free(dev);
  CHECK(sn_uop_axis(b, &e) == 0);

  CHECK(sn_arg_init(&arg, sizeof arg, &e) == SN_OK);
  arg.kind = SN_ARG_BUFFER;
  arg.size = 5;
  arg.device = "CPU";
  b = sn_uop_new(g, SN_OP_BUFFER, SN_DTYPE_INT32, NULL, 0, &arg, &e);
  b2 = sn_uop_new(g, SN_OP_BUFFER, SN_DTYPE_INT32, NULL, 0, &arg, &e);
  CHECK(b != NULL && b2 != NULL && b != b2); /* id 0: each call is a new buffer */
  CHECK(sn_uop_arg(b, &arg, &e) == SN_OK && arg.kind == SN_ARG_BUFFER && arg.size == 5 && arg.id != 0);
  /* rebuilding from the queried arg (same id) gives the same node */
  CHECK(sn_uop_new(g, SN_OP_BUFFER, SN_DTYPE_INT32, NULL, 0, &arg, &e) == b);
  CHECK(e == NULL);

  sn_uop_buffer(g, SN_DTYPE_FLOAT32, 8, "(CPU:0", &e);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "closing");
  sn_uop_buffer(g, SN_DTYPE_FLOAT32, 8, "(CPU:0,,CPU:1)", &e);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "empty or malformed");
  sn_uop_buffer(g, SN_DTYPE_FLOAT32, 8, "CPU)", &e);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "is not a name or a tuple");
  /* (API version 8) a tuple may also be written without parentheses */
  b = sn_uop_buffer(g, SN_DTYPE_FLOAT32, 8, "CPU:0,CPU:1", &e);
  dev = sn_uop_device(b, &e);
  CHECK(dev != NULL && strcmp(dev, "(CPU:0,CPU:1)") == 0);
  sn_string_free(dev);
  sn_graph_release(g);
}

/* Every error path of the graph API. */
static void test_errors(void) {
  sn_error *e = NULL;
  sn_context *ctx = sn_context_create(&e);
  sn_graph *g = sn_graph_create(ctx, &e);
  sn_graph *other = sn_graph_create(ctx, &e);
  sn_graph *dead;
  int64_t shape23[2] = {2, 3};
  int64_t v;
  double d;
  sn_arg arg;
  sn_uop *bi, *bf, *a, *x, *foreign, *srcs[3], *dead_uop;
  int not_a_handle = 0;

  bi = sn_uop_buffer(g, SN_DTYPE_INT32, 6, "CPU", &e);
  bf = sn_uop_buffer(g, SN_DTYPE_FLOAT32, 6, "CPU", &e);
  a = sn_uop_reshape(g, bf, shape23, 2, &e);
  foreign = sn_uop_const_int(other, SN_DTYPE_FLOAT32, 1, &e);
  CHECK(e == NULL);

  /* NULL handles */
  CHECK(sn_graph_create(NULL, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "ctx is NULL");
  CHECK(sn_uop_const_int(NULL, SN_DTYPE_INT32, 1, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "graph is NULL");
  CHECK(sn_graph_node_count(NULL, &e) == 0);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "graph is NULL");
  CHECK(sn_uop_op(NULL, &e) == SN_OP_INVALID);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "uop is NULL");
  CHECK(sn_uop_dtype(NULL, &e) == SN_DTYPE_INVALID);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "uop is NULL");
  CHECK(sn_uop_cast(g, NULL, SN_DTYPE_INT32, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "x is NULL");
  CHECK(sn_uop_binary(g, SN_OP_ADD, a, NULL, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "srcs[1] is NULL");
  CHECK(sn_uop_to_string(NULL, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "uop is NULL");
  CHECK(sn_graph_simplify(g, NULL, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "root is NULL");
  CHECK(sn_uop_sink(g, NULL, 2, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "srcs is NULL but nsrcs is 2");
  CHECK(sn_uop_reshape(g, a, NULL, 2, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "shape is NULL");
  CHECK(sn_uop_var(g, NULL, 0, 1, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "name is NULL");

  /* NULL out pointers */
  CHECK(sn_uop_arg(a, NULL, &e) == SN_E_INVALID_ARG);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "out is NULL");
  CHECK(sn_uop_dim(a, 0, NULL, NULL, &e) == SN_E_INVALID_ARG);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "value is NULL");
  CHECK(sn_uop_min_max_int(bi, NULL, &v, NULL, &e) == SN_E_INVALID_ARG);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "min is NULL");
  CHECK(sn_uop_min_max_float(bi, &d, NULL, &e) == SN_E_INVALID_ARG);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "max is NULL");
  CHECK(sn_arg_init(NULL, sizeof arg, &e) == SN_E_INVALID_ARG);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "arg is NULL");

  /* foreign and stale handles */
  CHECK(sn_uop_const_int((sn_graph *)&not_a_handle, SN_DTYPE_INT32, 1, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "graph handle is not a live sn_graph");
  CHECK(sn_uop_const_int((sn_graph *)ctx, SN_DTYPE_INT32, 1, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "graph handle is not a live sn_graph");
  CHECK(sn_graph_create((sn_context *)g, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "context handle is not a live sn_context");
  CHECK(sn_uop_op((sn_uop *)&not_a_handle, &e) == SN_OP_INVALID);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "not a live sn_uop");
  CHECK(sn_uop_binary(g, SN_OP_ADD, a, foreign, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "srcs[1]: uop does not belong to this graph");
  CHECK(sn_uop_reshape(g, (sn_uop *)&not_a_handle, shape23, 2, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "uop does not belong to this graph");
  CHECK(sn_graph_simplify(g, foreign, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "root: uop does not belong to this graph");
  CHECK(sn_uop_op(foreign, &e) == SN_OP_CONST); /* queries accept a uop of any live graph */
  /* a released graph: its handle and its uops are rejected, not dereferenced */
  dead = sn_graph_create(ctx, &e);
  dead_uop = sn_uop_const_int(dead, SN_DTYPE_INT32, 3, &e);
  CHECK(sn_uop_op(dead_uop, &e) == SN_OP_CONST);
  sn_graph_release(dead);
  CHECK(sn_uop_const_int(dead, SN_DTYPE_INT32, 1, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "graph handle is not a live sn_graph");
  CHECK(sn_uop_op(dead_uop, &e) == SN_OP_INVALID);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "not a live sn_uop");
  CHECK(sn_graph_node_count(dead, &e) == 0);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "not a live sn_graph");
  sn_clear_last_error();
  sn_graph_release(dead); /* a second release is ignored and reported */
  CHECK(sn_last_error_code() == SN_E_INVALID_ARG && contains(sn_last_error_message(), "sn_graph_release"));
  CHECK(sn_graph_retain(dead) == NULL);

  /* unknown enum values */
  CHECK(sn_uop_new(g, (sn_op)9999, SN_DTYPE_INT32, NULL, 0, NULL, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "unknown sn_op value 9999");
  CHECK(sn_uop_new(g, SN_OP_INVALID, SN_DTYPE_INT32, NULL, 0, NULL, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "unknown sn_op value 0");
  CHECK(sn_uop_const_int(g, (sn_dtype)777, 1, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "unknown sn_dtype value 777");
  CHECK(sn_uop_const_int(g, SN_DTYPE_INVALID, 1, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "unknown sn_dtype value 0");
  CHECK(sn_uop_cast(g, a, (sn_dtype)-3, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "unknown sn_dtype value -3");
  CHECK(sn_uop_binary(g, (sn_op)12345, a, a, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "unknown sn_op value 12345");
  CHECK(sn_uop_reduce(g, a, (sn_op)500, NULL, 0, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "unknown sn_op value 500");
  CHECK(sn_arg_init(&arg, sizeof arg, &e) == SN_OK);
  arg.kind = (sn_arg_kind)77;
  CHECK(sn_uop_new(g, SN_OP_ADD, SN_DTYPE_FLOAT32, NULL, 0, NULL, &e) == NULL); /* arity first */
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "Add takes 2 sources, got 0");
  srcs[0] = a;
  srcs[1] = a;
  CHECK(sn_uop_new(g, SN_OP_ADD, SN_DTYPE_FLOAT32, srcs, 2, &arg, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "unknown sn_arg_kind value 77");
  CHECK(sn_arg_init(&arg, sizeof arg, &e) == SN_OK);
  arg.kind = SN_ARG_RANGE;
  arg.axis_type = (sn_axis_type)99;
  srcs[0] = sn_uop_const_int(g, SN_DTYPE_INDEX, 4, &e);
  CHECK(sn_uop_new(g, SN_OP_RANGE, SN_DTYPE_INDEX, srcs, 1, &arg, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "unknown sn_axis_type value 99");
  CHECK(sn_arg_init(&arg, sizeof arg, &e) == SN_OK);
  arg.kind = SN_ARG_BUFFER;
  arg.size = 4;
  arg.addrspace = (sn_addrspace)9;
  CHECK(sn_uop_new(g, SN_OP_BUFFER, SN_DTYPE_INT32, NULL, 0, &arg, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "unknown sn_addrspace value 9");

  /* arg kind that does not fit the op */
  CHECK(sn_arg_init(&arg, sizeof arg, &e) == SN_OK);
  arg.kind = SN_ARG_INT;
  arg.int_value = 3;
  CHECK(sn_uop_new(g, SN_OP_ADD, SN_DTYPE_FLOAT32, srcs + 0, 0, &arg, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "Add takes 2 sources");
  srcs[0] = a;
  srcs[1] = a;
  CHECK(sn_uop_new(g, SN_OP_ADD, SN_DTYPE_FLOAT32, srcs, 2, &arg, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "Add takes an arg of kind SN_ARG_NONE, got SN_ARG_INT");
  CHECK(sn_uop_new(g, SN_OP_CONST, SN_DTYPE_INT32, NULL, 0, NULL, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "Const takes an arg of kind SN_ARG_INT or SN_ARG_FLOAT, got SN_ARG_NONE");
  arg.kind = SN_ARG_FLOAT;
  arg.float_value = 1.5;
  CHECK(sn_uop_new(g, SN_OP_CONST, SN_DTYPE_INT32, NULL, 0, &arg, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "needs an integer value");
  arg.kind = SN_ARG_INTS;
  arg.ints = NULL;
  arg.nints = 2;
  srcs[0] = a;
  CHECK(sn_uop_new(g, SN_OP_PERMUTE, SN_DTYPE_FLOAT32, srcs, 1, &arg, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "arg->ints is NULL");
  arg.kind = SN_ARG_REDUCE;
  arg.reduce_op = SN_OP_SUB;
  arg.nints = 0;
  CHECK(sn_uop_new(g, SN_OP_REDUCE, SN_DTYPE_FLOAT32, srcs, 1, &arg, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "Reduce op must be Add, Max or Mul, got Sub");

  /* struct_size too small */
  CHECK(sn_arg_init(&arg, 8, &e) == SN_E_INVALID_ARG);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "struct_size 8 is smaller than sizeof(sn_arg)");
  CHECK(sn_arg_init(&arg, sizeof arg, &e) == SN_OK);
  arg.struct_size = 8;
  arg.kind = SN_ARG_NONE;
  CHECK(sn_uop_new(g, SN_OP_CONTIGUOUS, SN_DTYPE_FLOAT32, srcs, 1, &arg, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "arg->struct_size is 8");
  CHECK(sn_uop_arg(a, &arg, &e) == SN_E_INVALID_ARG);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "out->struct_size is 8");
  /* a larger struct (a newer header) is fine */
  {
    struct {
      sn_arg base;
      int64_t newer_field;
    } big;
    CHECK(sn_arg_init(&big.base, sizeof big, &e) == SN_OK);
    CHECK(big.newer_field == 0);
    big.newer_field = 42;
    CHECK(sn_uop_arg(bi, &big.base, &e) == SN_OK && big.base.kind == SN_ARG_BUFFER && big.newer_field == 42);
    CHECK(big.base.struct_size == sizeof big);
  }

  /* wrong arity */
  srcs[0] = a;
  CHECK(sn_uop_alu(g, SN_OP_ADD, srcs, 1, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "Add takes 2 sources, got 1");
  srcs[1] = a;
  CHECK(sn_uop_new(g, SN_OP_WHERE, SN_DTYPE_FLOAT32, srcs, 2, NULL, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "Where takes 3 sources, got 2");
  CHECK(sn_uop_unary(g, SN_OP_ADD, a, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "Add takes 2 sources, got 1");
  CHECK(sn_uop_binary(g, SN_OP_RESHAPE, a, a, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "Reshape is not an elementwise op");
  CHECK(sn_uop_unary(g, SN_OP_CAST, a, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "use sn_uop_cast");
  CHECK(sn_uop_src(a, 2, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "source index 2 is out of range");
  CHECK(sn_uop_dim(a, 2, &v, NULL, &e) == SN_E_INVALID_ARG);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "dimension index 2 is out of range (rank 2)");

  /* dtype rules (the core's verifier; messages name the op, the rule and the values) */
  x = sn_uop_reshape(g, bi, shape23, 2, &e);
  CHECK(sn_uop_binary(g, SN_OP_ADD, x, a, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "dtype mismatch: int32 vs float32");
  CHECK(sn_uop_binary(g, SN_OP_IDIV, a, a, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "needs integer sources, got float32");
  CHECK(sn_uop_ternary(g, SN_OP_WHERE, a, a, a, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "condition must be bool");
  CHECK(sn_uop_const_float(g, SN_DTYPE_INT32, 1.5, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "int32 is not a float dtype");
  CHECK(sn_uop_const_int(g, SN_DTYPE_VOID, 1, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "void is not a value dtype");
  CHECK(sn_uop_var(g, "k", 5, 1, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "min 5 > max 1");
  CHECK(sn_uop_buffer(g, SN_DTYPE_FLOAT32, -1, "CPU", &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "size -1 is negative");

  /* shape rules */
  {
    int64_t s2[1] = {2}, s42[2] = {4, 2}, s43[2] = {4, 3}, off[2] = {1, 0}, sz[2] = {2, 3}, bad_perm[2] = {0, 0},
            ax5[1] = {5}, flags[2] = {0, 2};
    sn_uop *v2 = sn_uop_reshape(g, sn_uop_buffer(g, SN_DTYPE_FLOAT32, 2, "CPU", &e), s2, 1, &e);
    CHECK(sn_uop_binary(g, SN_OP_ADD, a, v2, &e) == NULL);
    EXPECT_ERROR(e, SN_E_INVALID_ARG, "do not broadcast");
    CHECK(sn_uop_reshape(g, a, s42, 2, &e) == NULL);
    EXPECT_ERROR(e, SN_E_INVALID_ARG, "element count changes");
    CHECK(sn_uop_expand(g, a, s43, 2, &e) == NULL);
    EXPECT_ERROR(e, SN_E_INVALID_ARG, "is not 1 and cannot expand");
    CHECK(sn_uop_expand(g, a, s2, 1, &e) == NULL);
    EXPECT_ERROR(e, SN_E_INVALID_ARG, "rank changes");
    CHECK(sn_uop_pad(g, a, off, sz, 2, &e) == NULL);
    EXPECT_ERROR(e, SN_E_INVALID_ARG, "exceeds the padded size");
    CHECK(sn_uop_shrink(g, a, off, sz, 2, &e) == NULL);
    EXPECT_ERROR(e, SN_E_INVALID_ARG, "exceeds the axis size");
    CHECK(sn_uop_permute(g, a, bad_perm, 2, &e) == NULL);
    EXPECT_ERROR(e, SN_E_INVALID_ARG, "is not a permutation");
    CHECK(sn_uop_reduce(g, a, SN_OP_ADD, ax5, 1, &e) == NULL);
    EXPECT_ERROR(e, SN_E_INVALID_ARG, "axis 5 is out of range for rank 2");
    CHECK(sn_uop_reduce(g, a, SN_OP_SUB, s2, 1, &e) == NULL);
    EXPECT_ERROR(e, SN_E_INVALID_ARG, "Reduce op must be Add, Max or Mul");
    CHECK(sn_uop_flip(g, a, flags, 2, &e) == NULL);
    EXPECT_ERROR(e, SN_E_INVALID_ARG, "flags must be 0 or 1");
  }

  /* the first error wins: a chain of calls sharing one err reports its root cause, and the later
     failure (a NULL source) only becomes the last error */
  {
    int64_t s42[2] = {4, 2};
    CHECK(sn_uop_binary(g, SN_OP_ADD, sn_uop_reshape(g, a, s42, 2, &e), a, &e) == NULL);
    CHECK(contains(sn_last_error_message(), "sn_uop_binary: srcs[0] is NULL"));
    EXPECT_ERROR(e, SN_E_INVALID_ARG, "sn_uop_reshape: Reshape: element count changes");
  }

  /* the function name leads every message */
  CHECK(sn_uop_permute(g, a, NULL, 2, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "sn_uop_permute: order is NULL");

  /* err == NULL: the per-thread last error is set, and also when err is given */
  sn_clear_last_error();
  CHECK(sn_last_error_code() == SN_OK && strcmp(sn_last_error_message(), "") == 0);
  CHECK(sn_uop_reshape(g, a, shape23, 1, NULL) == NULL);
  CHECK(sn_last_error_code() == SN_E_INVALID_ARG);
  CHECK(contains(sn_last_error_message(), "sn_uop_reshape"));
  CHECK(contains(sn_last_error_message(), "element count changes"));
  CHECK(sn_uop_const_int(g, SN_DTYPE_INT32, 1, NULL) != NULL); /* success leaves it alone */
  CHECK(sn_last_error_code() == SN_E_INVALID_ARG);
  CHECK(sn_uop_op(NULL, &e) == SN_OP_INVALID);
  CHECK(contains(sn_last_error_message(), "sn_uop_op: uop is NULL"));
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "sn_uop_op: uop is NULL");
  sn_clear_last_error();
  CHECK(sn_last_error_code() == SN_OK);

  /* error objects: NULL-safe accessors */
  sn_error_free(NULL);
  sn_string_free(NULL);
  CHECK(sn_error_code(NULL) == SN_OK);
  CHECK(strcmp(sn_error_message(NULL), "") == 0);

  sn_graph_release(other);
  sn_graph_release(g);
  sn_context_release(ctx);
  /* the context is gone now too */
  CHECK(sn_graph_create(ctx, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "context handle is not a live sn_context");
}

int main(void) {
  test_versions();
  test_api_table();
  test_lifecycle();
  test_build_and_query();
  test_symbolic();
  test_devices();
  test_errors();
  return sn_test_report();
}
