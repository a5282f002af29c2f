/* Robustness of the C API against misuse (C89), run under ASan+UBSan in the sanitizer build:
 *   - releases and frees of handles the caller no longer owns (released too often, kept alive only
 *     by a child, never made, fake pointers) are ignored with the last error naming the handle type,
 *     never a crash, double free or use after free;
 *   - sizes that do not fit int64 (shapes, element counts, byte sizes) and allocations no device can
 *     hold are errors naming the size, never undefined behaviour or an allocator abort;
 *   - a buffer of another context's device is rejected by sn_program_run.
 * Prints "N passed, N failed" last and exits non-zero on any failure. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "sinter/sinter.h"
#include "sinter/sinter_dlpack.h"

/* The last error is `code`, non-empty, and contains `a` and `b`; clears it. */
static void expect_last(sn_code code, const char *a, const char *b, int line) {
  const char *m = sn_last_error_message();
  if (sn_last_error_code() == code && m[0] != '\0' && contains(m, a) && contains(m, b)) {
    g_passed++;
  } else {
    g_failed++;
    printf("FAIL line %d: expected last error %d with \"%s\" and \"%s\", got %d: %s\n", line, (int)code, a, b,
           (int)sn_last_error_code(), m);
  }
  sn_clear_last_error();
}
#define EXPECT_LAST(code, a, b) expect_last((code), (a), (b), __LINE__)

/* neg(x) for a float32 x of shape (4,), compiled for `dev`. */
static sn_program *compile_neg(sn_context *ctx, sn_device *dev) {
  sn_error *e = NULL;
  int64_t s4[1] = {4};
  sn_graph *g = sn_graph_create(ctx, &e);
  sn_uop *x = sn_tensor_input(g, SN_DTYPE_FLOAT32, s4, 1, NULL, &e);
  sn_uop *y = sn_uop_unary(g, SN_OP_NEG, x, &e);
  sn_program *p = sn_compile(g, &y, 1, dev, NULL, &e);
  EXPECT_OK(e);
  sn_graph_release(g); /* the program does not need its graph */
  return p;
}

/* Runs neg on {1,2,3,4}; 1 when the output is {-1,-2,-3,-4}. */
static int run_neg(sn_program *p, sn_device *dev) {
  sn_error *e = NULL;
  int64_t s4[1] = {4};
  float in[4] = {1, 2, 3, 4}, out[4] = {0, 0, 0, 0};
  sn_buffer *bi = sn_buffer_alloc(dev, SN_DTYPE_FLOAT32, s4, 1, &e);
  sn_buffer *bo = sn_program_alloc_output(p, 0, &e);
  int ok = sn_buffer_copy_in(bi, in, sizeof in, &e) == SN_OK && sn_program_run(p, &bi, 1, &bo, 1, &e) == SN_OK &&
           sn_buffer_copy_out(bo, out, sizeof out, &e) == SN_OK;
  EXPECT_OK(e);
  sn_buffer_release(bi);
  sn_buffer_release(bo);
  return ok && out[0] == -1 && out[3] == -4;
}

/* ---- handle lifetimes ---- */

static void test_device_over_release(void) {
  sn_error *e = NULL;
  sn_context *ctx = sn_context_create(&e);
  sn_device *d = sn_device_open(ctx, "CPU", &e);
  sn_program *p = compile_neg(ctx, d);
  EXPECT_OK(e);
  sn_clear_last_error();
  sn_device_release(d); /* the caller's only reference; the program keeps the device */
  CHECK(sn_last_error_code() == SN_OK);
  sn_device_release(d); /* one too many: the program's reference must not be taken */
  EXPECT_LAST(SN_E_INVALID_ARG, "sn_device_release", "holds no reference to this sn_device");
  sn_device_release(d);
  EXPECT_LAST(SN_E_INVALID_ARG, "sn_device_release", "sn_device");
  sn_program_release(p); /* the last reference: frees the program, then the device */
  CHECK(sn_last_error_code() == SN_OK);
  sn_device_release(d); /* now gone altogether */
  EXPECT_LAST(SN_E_INVALID_ARG, "sn_device_release", "not a live sn_device");
  sn_context_release(ctx);
}

static void test_program_runs_after_its_device_is_released(void) {
  sn_error *e = NULL;
  sn_context *ctx = sn_context_create(&e);
  sn_device *d = sn_device_open(ctx, "CPU", &e);
  sn_device *d2 = sn_device_open(ctx, "CPU", &e); /* a second handle of the same device */
  sn_program *p = compile_neg(ctx, d);
  sn_device_release(d);
  sn_device_release(d);
  sn_device_release(d);
  sn_clear_last_error();
  CHECK(run_neg(p, d2)); /* the program and its device are intact */
  sn_program_release(p);
  sn_program_release(p);
  EXPECT_LAST(SN_E_INVALID_ARG, "sn_program_release", "not a live sn_program");
  sn_device_release(d2);
  sn_context_release(ctx);
}

static void test_context_over_release(void) {
  sn_error *e = NULL;
  sn_context *ctx = sn_context_create(&e);
  sn_graph *g = sn_graph_create(ctx, &e);
  sn_device *d = sn_device_open(ctx, "CPU", &e);
  sn_uop *c;
  EXPECT_OK(e);
  sn_clear_last_error();
  sn_context_release(ctx);
  CHECK(sn_last_error_code() == SN_OK);
  sn_context_release(ctx); /* the graph's and the device's references are not the caller's */
  EXPECT_LAST(SN_E_INVALID_ARG, "sn_context_release", "holds no reference to this sn_context");
  sn_context_release(ctx);
  EXPECT_LAST(SN_E_INVALID_ARG, "sn_context_release", "sn_context");
  /* both children still work on the context they keep alive */
  c = sn_uop_const_int(g, SN_DTYPE_INT32, 7, &e);
  CHECK(c != NULL && sn_graph_node_count(g, &e) == 1);
  CHECK(sn_device_name(d, &e) != NULL && strcmp(sn_device_name(d, &e), "CPU") == 0);
  {
    sn_program *p = compile_neg(ctx, d); /* compiles in the context the graph keeps */
    CHECK(run_neg(p, d));
    sn_program_release(p);
  }
  EXPECT_OK(e);
  sn_graph_release(g);
  sn_device_release(d); /* the last reference: the context goes too */
  sn_clear_last_error();
  sn_context_release(ctx);
  EXPECT_LAST(SN_E_INVALID_ARG, "sn_context_release", "not a live sn_context");
}

static void test_graph_and_buffer_over_release(void) {
  sn_error *e = NULL;
  int64_t s4[1] = {4};
  sn_context *ctx = sn_context_create(&e);
  sn_graph *g = sn_graph_create(ctx, &e);
  sn_device *d = sn_device_open(ctx, "CPU", &e);
  sn_buffer *b = sn_buffer_alloc(d, SN_DTYPE_FLOAT32, s4, 1, &e);
  sn_buffer *v = sn_buffer_view(b, 1, s4, 0, &e); /* a view: shape (), element 1 */
  EXPECT_OK(e);
  sn_graph_release(g);
  sn_graph_release(g);
  EXPECT_LAST(SN_E_INVALID_ARG, "sn_graph_release", "not a live sn_graph");
  sn_buffer_release(b);
  sn_buffer_release(b);
  EXPECT_LAST(SN_E_INVALID_ARG, "sn_buffer_release", "not a live sn_buffer");
  CHECK(sn_buffer_numel(v, &e) == 1); /* the view keeps the memory */
  sn_device_release(d);
  sn_device_release(d); /* the view's reference on the device stays */
  EXPECT_LAST(SN_E_INVALID_ARG, "sn_device_release", "holds no reference to this sn_device");
  CHECK(strcmp(sn_buffer_device(v, &e), "CPU") == 0);
  EXPECT_OK(e);
  sn_buffer_release(v);
  sn_context_release(ctx);
}

static void test_dlpack_over_release(void) {
  sn_error *e = NULL;
  int64_t s4[1] = {4};
  float data[4] = {1, 2, 3, 4};
  sn_context *ctx = sn_context_create(&e);
  sn_device *d = sn_device_open(ctx, "CPU", &e);
  sn_buffer *b = sn_buffer_alloc(d, SN_DTYPE_FLOAT32, s4, 1, &e);
  sn_dlpack_tensor *t;
  void (*deleter)(sn_dlpack_tensor *);
  CHECK(sn_buffer_copy_in(b, data, sizeof data, &e) == SN_OK);
  t = sn_buffer_to_dlpack(b, &e);
  EXPECT_OK(e);
  CHECK(t != NULL);
  sn_buffer_release(b);
  sn_buffer_release(b); /* the export's reference is not the caller's */
  EXPECT_LAST(SN_E_INVALID_ARG, "sn_buffer_release", "holds no reference to this sn_buffer");
  sn_device_release(d);
  sn_context_release(ctx);
  CHECK(((float *)t->dl_tensor.data)[3] == 4); /* still the buffer's memory */
  deleter = t->deleter;                        /* t is freed by the first call */
  deleter(t);
  CHECK(sn_last_error_code() == SN_OK);
  deleter(t); /* a second delete is ignored */
  EXPECT_LAST(SN_E_INVALID_ARG, "deleter", "already deleted");
  sn_buffer_release(b);
  EXPECT_LAST(SN_E_INVALID_ARG, "sn_buffer_release", "not a live sn_buffer");
}

static void test_errors_and_strings_freed_twice(void) {
  sn_error *e = NULL;
  sn_context *ctx = sn_context_create(&e);
  sn_device *d = sn_device_open(ctx, "CPU", &e);
  char *s;
  CHECK(sn_device_open(ctx, "no-such-device", &e) == NULL);
  CHECK(e != NULL && sn_error_code(e) != SN_OK);
  sn_error_free(e);
  sn_clear_last_error();
  sn_error_free(e); /* freed already: ignored, never freed again */
  EXPECT_LAST(SN_E_INVALID_ARG, "sn_error_free", "not a live sn_error");
  CHECK(sn_error_code(e) == SN_E_INVALID_ARG); /* reading a freed error never reads freed memory */
  CHECK(contains(sn_error_message(e), "not a live sn_error"));
  sn_clear_last_error();
  e = NULL;

  s = sn_device_description(d, &e);
  CHECK(s != NULL);
  sn_string_free(s);
  sn_string_free(s);
  EXPECT_LAST(SN_E_INVALID_ARG, "sn_string_free", "not a live string");
  sn_device_release(d);
  sn_context_release(ctx);
}

static void test_fake_handles(void) {
  /* Pointers this library never made: stack memory shaped like nothing it knows. */
  union {
    double align;
    unsigned char bytes[256];
  } fake;
  memset(&fake, 0x5a, sizeof fake);
  sn_context_release((sn_context *)&fake);
  EXPECT_LAST(SN_E_INVALID_ARG, "sn_context_release", "not a live sn_context");
  sn_graph_release((sn_graph *)&fake);
  EXPECT_LAST(SN_E_INVALID_ARG, "sn_graph_release", "not a live sn_graph");
  sn_device_release((sn_device *)&fake);
  EXPECT_LAST(SN_E_INVALID_ARG, "sn_device_release", "not a live sn_device");
  sn_buffer_release((sn_buffer *)&fake);
  EXPECT_LAST(SN_E_INVALID_ARG, "sn_buffer_release", "not a live sn_buffer");
  sn_program_release((sn_program *)&fake);
  EXPECT_LAST(SN_E_INVALID_ARG, "sn_program_release", "not a live sn_program");
  sn_error_free((sn_error *)&fake);
  EXPECT_LAST(SN_E_INVALID_ARG, "sn_error_free", "not a live sn_error");
  sn_string_free((char *)&fake);
  EXPECT_LAST(SN_E_INVALID_ARG, "sn_string_free", "not a live string");
  CHECK(sn_context_retain((sn_context *)&fake) == NULL);
  EXPECT_LAST(SN_E_INVALID_ARG, "sn_context_retain", "sn_context");
  CHECK(sn_device_retain((sn_device *)&fake) == NULL);
  EXPECT_LAST(SN_E_INVALID_ARG, "sn_device_retain", "not a live sn_device");
  CHECK(sn_buffer_retain((sn_buffer *)&fake) == NULL);
  EXPECT_LAST(SN_E_INVALID_ARG, "sn_buffer_retain", "not a live sn_buffer");
  CHECK(sn_program_retain((sn_program *)&fake) == NULL);
  EXPECT_LAST(SN_E_INVALID_ARG, "sn_program_retain", "not a live sn_program");
  {
    sn_dlpack_tensor t;
    memset(&t, 0, sizeof t);
    /* a deleter of ours given a tensor it never exported */
    sn_error *e = NULL;
    sn_context *ctx = sn_context_create(&e);
    sn_device *d = sn_device_open(ctx, "CPU", &e);
    int64_t s1[1] = {1};
    sn_buffer *b = sn_buffer_alloc(d, SN_DTYPE_FLOAT32, s1, 1, &e);
    sn_dlpack_tensor *real = sn_buffer_to_dlpack(b, &e);
    EXPECT_OK(e);
    t = *real;
    sn_clear_last_error();
    real->deleter(&t);
    EXPECT_LAST(SN_E_INVALID_ARG, "deleter", "DLPack tensor");
    real->deleter(real);
    sn_buffer_release(b);
    sn_device_release(d);
    sn_context_release(ctx);
  }
}

/* ---- sizes that do not fit ---- */

static void test_shape_overflow(void) {
  sn_error *e = NULL;
  sn_context *ctx = sn_context_create(&e);
  sn_graph *g = sn_graph_create(ctx, &e);
  int64_t s5[1] = {5}, big[2] = {5, INT64_MAX}, huge[1] = {(int64_t)1 << 62}, two31[1] = {(int64_t)1 << 31};
  sn_uop *x5, *h16, *h32, *h8;

  CHECK(sn_uop_buffer(g, SN_DTYPE_FLOAT32, INT64_MAX, "(CPU,CPU)", &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "9223372036854775807 * 2 overflows int64");

  x5 = sn_tensor_input(g, SN_DTYPE_FLOAT32, s5, 1, NULL, &e);
  EXPECT_OK(e);
  CHECK(sn_uop_reshape(g, x5, big, 2, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "Reshape: new shape: shape (5,9223372036854775807) has too many elements");
  {
    int64_t off[1] = {INT64_MAX}, size[1] = {1}, pad_to[1] = {INT64_MAX};
    CHECK(sn_uop_shrink(g, x5, off, size, 1, &e) == NULL);
    EXPECT_ERROR(e, SN_E_INVALID_ARG, "Shrink: axis 0 offset + size: 9223372036854775807 + 1 overflows int64");
    CHECK(sn_uop_pad(g, x5, off, pad_to, 1, &e) == NULL);
    EXPECT_ERROR(e, SN_E_INVALID_ARG, "Pad: axis 0 offset + size: 9223372036854775807 + 5 overflows int64");
  }
  CHECK(sn_tensor_input(g, SN_DTYPE_FLOAT32, big, 2, NULL, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "input: shape (5,9223372036854775807) has too many elements");

  CHECK(sn_tensor_arange(g, INT64_MAX, SN_DTYPE_FLOAT32, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "arange: 9223372036854775807 values");

  h32 = sn_tensor_input(g, SN_DTYPE_FLOAT32, huge, 1, NULL, &e);
  EXPECT_OK(e);
  CHECK(sn_tensor_cumsum(g, h32, 0, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "cumsum: axis of 4611686018427387904 elements");
  h8 = sn_tensor_input(g, SN_DTYPE_INT8, two31, 1, NULL, &e);
  EXPECT_OK(e);
  /* 2^31 elements once overflowed the quadratic window; the scan in blocks builds it */
  CHECK(sn_tensor_cumsum(g, h8, 0, &e) != NULL);
  EXPECT_OK(e);

  h16 = sn_tensor_input(g, SN_DTYPE_INT16, huge, 1, NULL, &e);
  EXPECT_OK(e);
  CHECK(sn_uop_bitcast(g, h16, SN_DTYPE_INT32, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "Bitcast: bytes of the last axis of int16");
  {
    int64_t smax[1] = {INT64_MAX}, s2[2] = {(int64_t)1 << 62, 4};
    sn_uop *m = sn_tensor_input(g, SN_DTYPE_INT8, smax, 1, NULL, &e), *both[2];
    EXPECT_OK(e);
    both[0] = m;
    both[1] = m;
    CHECK(sn_tensor_cat(g, both, 2, 0, &e) == NULL);
    EXPECT_ERROR(e, SN_E_INVALID_ARG, "concat: length of axis 0: 9223372036854775807 + 9223372036854775807 overflows");
    CHECK(sn_tensor_rand(g, s2, 2, 1, SN_DTYPE_FLOAT32, &e) == NULL);
    EXPECT_ERROR(e, SN_E_INVALID_ARG, "(4611686018427387904,4) has too many elements");
  }

  sn_graph_release(g);
  sn_context_release(ctx);
}

static void test_absurd_allocations(void) {
  sn_error *e = NULL;
  sn_context *ctx = sn_context_create(&e);
  sn_device *cpu = sn_device_open(ctx, "CPU", &e);
  int64_t max1[1] = {INT64_MAX}, f32[1] = {(int64_t)1 << 62}, two[2] = {INT64_MAX, 2};
  CHECK(sn_buffer_alloc(cpu, SN_DTYPE_INT8, max1, 1, &e) == NULL);
  EXPECT_ERROR(e, SN_E_OUT_OF_MEMORY, "cannot allocate 9223372036854775807 bytes");
  CHECK(sn_buffer_alloc(cpu, SN_DTYPE_FLOAT32, f32, 1, &e) == NULL);
  EXPECT_ERROR(e, SN_E_OUT_OF_MEMORY, "4611686018427387904 elements of 4 bytes overflow int64 bytes");
  CHECK(sn_buffer_alloc(cpu, SN_DTYPE_FLOAT32, two, 2, &e) == NULL);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "buffer: shape (9223372036854775807,2) has too many elements");
  {
    sn_device *c = sn_device_open(ctx, "C", &e);
    EXPECT_OK(e);
    CHECK(sn_buffer_alloc(c, SN_DTYPE_INT8, max1, 1, &e) == NULL);
    EXPECT_ERROR(e, SN_E_OUT_OF_MEMORY, "cannot allocate 9223372036854775807 bytes");
    sn_device_release(c);
  }
  {
    /* a program whose output holds 2^61 float32 (2^63 bytes): compiling it must fail cleanly */
    int64_t s[1] = {(int64_t)1 << 61};
    sn_graph *g = sn_graph_create(ctx, &e);
    sn_uop *x = sn_tensor_input(g, SN_DTYPE_FLOAT32, s, 1, NULL, &e);
    sn_uop *y = sn_uop_unary(g, SN_OP_NEG, x, &e);
    EXPECT_OK(e);
    CHECK(sn_compile(g, &y, 1, cpu, NULL, &e) == NULL);
    EXPECT_ERROR(e, SN_E_OUT_OF_MEMORY, "2305843009213693952 elements of 4 bytes overflow int64 bytes");
    sn_graph_release(g);
  }
  sn_device_release(cpu);
  sn_context_release(ctx);
}

/* ---- buffers of another context ---- */

static void test_buffer_of_another_context(void) {
  sn_error *e = NULL;
  int64_t s4[1] = {4};
  sn_context *ctx = sn_context_create(&e), *other = sn_context_create(&e);
  sn_device *cpu = sn_device_open(ctx, "CPU", &e), *other_cpu = sn_device_open(other, "CPU", &e);
  sn_program *p = compile_neg(ctx, cpu);
  sn_buffer *foreign = sn_buffer_alloc(other_cpu, SN_DTYPE_FLOAT32, s4, 1, &e);
  sn_buffer *mine = sn_buffer_alloc(cpu, SN_DTYPE_FLOAT32, s4, 1, &e);
  sn_buffer *o = sn_program_alloc_output(p, 0, &e);
  sn_buffer *foreign_out = sn_buffer_alloc(other_cpu, SN_DTYPE_FLOAT32, s4, 1, &e);
  EXPECT_OK(e);
  CHECK(sn_program_run(p, &foreign, 1, &o, 1, &e) == SN_E_INVALID_ARG);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "input 0: the buffer is on CPU of another context, the program runs on CPU");
  CHECK(sn_program_run(p, &mine, 1, &foreign_out, 1, &e) == SN_E_INVALID_ARG);
  EXPECT_ERROR(e, SN_E_INVALID_ARG, "output 0: the buffer is on CPU of another context");
  {
    const char *names[1] = {"unused"};
    int64_t values[1] = {0};
    CHECK(sn_program_run_vars(p, &foreign, 1, &o, 1, names, values, 0, &e) != SN_OK);
    EXPECT_ERROR(e, SN_E_INVALID_ARG, "of another context");
  }
  CHECK(sn_program_run(p, &mine, 1, &o, 1, &e) == SN_OK);
  EXPECT_OK(e);
  sn_buffer_release(foreign);
  sn_buffer_release(foreign_out);
  sn_buffer_release(mine);
  sn_buffer_release(o);
  sn_program_release(p);
  sn_device_release(cpu);
  sn_device_release(other_cpu);
  sn_context_release(ctx);
  sn_context_release(other);
}

int main(void) {
  test_device_over_release();
  test_program_runs_after_its_device_is_released();
  test_context_over_release();
  test_graph_and_buffer_over_release();
  test_dlpack_over_release();
  test_errors_and_strings_freed_twice();
  test_fake_handles();
  test_shape_overflow();
  test_absurd_allocations();
  test_buffer_of_another_context();
  return sn_test_report();
}
