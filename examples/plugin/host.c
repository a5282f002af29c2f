/* host.c - use Sinter from a program that does not link it: load libsinter at run time with dlopen, resolve
 * ONE symbol, sn_get_api, and make every call through the versioned function table it returns.
 *
 * This is how a plugin host, a language runtime or an application with an optional accelerator uses Sinter:
 * the binary has no link-time dependency on libsinter (ctest checks `readelf -d` has no NEEDED libsinter), runs
 * without it installed, and works with any newer libsinter of the same major version, because the table is
 * append-only.
 *
 *   cc host.c -I<prefix>/include -ldl -o host && ./host [path/to/libsinter.so.0]
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sinter/sinter.h" /* types and the sn_api layout only; no function of it is called directly */

#ifndef SN_LIBSINTER_PATH
#define SN_LIBSINTER_PATH "libsinter.so.0" /* the SONAME: found through the loader's search path */
#endif

static const sn_api *api;
static int failures;

static void expect(int ok, const char *what) {
  printf("%s %s\n", ok ? "ok  " : "FAIL", what);
  if (!ok) failures++;
}

/* Reports and frees an error from the table's calls; exits, since the host cannot go on without a graph. */
static void check(sn_error *err, const char *what) {
  if (err != NULL) {
    fprintf(stderr, "%s failed: error %d: %s\n", what, (int)api->error_code(err), api->error_message(err));
    api->error_free(err);
    exit(1);
  }
}

static void print_owned(const char *title, char *text) {
  if (text == NULL) return;
  printf("%s\n%s\n", title, text);
  api->string_free(text);
}

/* Version 2 of the table: softmax of a 2x4 matrix, compiled for the CPU and run. The expected values are
   exp(x - max) / sum(exp(x - max)) per row, worked out in double precision (kept as constants so the host needs
   no libm). */
static void run_softmax(sn_graph *g) {
  static const float data[8] = {0.0f, 1.0f, 2.0f, 3.0f, -1.0f, 0.5f, 0.5f, 4.0f};
  static const float want[8] = {0.0320586f, 0.0871443f, 0.2368828f, 0.6439143f,
                                0.0063141f, 0.0282977f, 0.0282977f, 0.9370906f};
  const int64_t shape[2] = {2, 4};
  float out[8];
  sn_error *err = NULL;
  sn_context *ctx;
  sn_device *cpu;
  sn_uop *x, *y;
  sn_program *program;
  sn_buffer *in, *result;
  sn_code code;
  int i, ok = 1;

  ctx = api->context_create(&err);
  check(err, "context_create");
  cpu = api->device_open(ctx, "CPU", &err);
  api->context_release(ctx); /* the device keeps its context alive */
  check(err, "device_open");
  x = api->tensor_input(g, SN_DTYPE_FLOAT32, shape, 2, NULL, &err);
  y = api->tensor_softmax(g, x, -1, &err);
  program = api->compile(g, &y, 1, cpu, NULL, &err);
  check(err, "compile");
  in = api->buffer_alloc(cpu, SN_DTYPE_FLOAT32, shape, 2, &err);
  result = api->program_alloc_output(program, 0, &err);
  check(err, "allocating buffers");
  code = api->buffer_copy_in(in, data, sizeof data, &err);
  if (code == SN_OK) code = api->program_run(program, &in, 1, &result, 1, &err);
  if (code == SN_OK) code = api->buffer_copy_out(result, out, sizeof out, &err);
  check(err, "run");
  printf("softmax through the table, %lu kernel(s):\n", (unsigned long)api->program_num_kernels(program, NULL));
  for (i = 0; i < 8; i++) {
    float d = out[i] - want[i];
    printf("%s %.6f%s", i % 4 == 0 ? "    " : "", out[i], i % 4 == 3 ? "\n" : "");
    if (d > 1e-5f || d < -1e-5f) ok = 0;
  }
  expect(code == SN_OK && ok, "the compiled softmax gives the expected values");

  /* A buffer of the wrong dtype is refused with a message naming the input. */
  {
    sn_buffer *wrong = api->buffer_alloc(cpu, SN_DTYPE_INT32, shape, 2, &err);
    check(err, "buffer_alloc");
    code = api->program_run(program, &wrong, 1, &result, 1, &err);
    expect(code != SN_OK && err != NULL && strstr(api->error_message(err), "input 0") != NULL,
           "running on an int32 input fails naming input 0");
    api->error_free(err);
    api->buffer_release(wrong);
  }
  api->buffer_release(in);
  api->buffer_release(result);
  api->program_release(program);
  api->device_release(cpu);
}

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : SN_LIBSINTER_PATH;
  void *lib;
  sn_get_api_fn get_api;
  sn_error *err = NULL;
  sn_context *ctx;
  sn_graph *g;
  sn_uop *a, *b, *sum, *two, *scaled, *total, *i, *four, *expr, *simple;
  const int64_t shape[2] = {2, 3};
  const int64_t axis[1] = {1};
  const int64_t wrong[2] = {4, 2};

  /* RTLD_LOCAL: Sinter's symbols stay out of the global namespace, so they cannot clash with the host's. */
  lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
    return 1;
  }
  /* ISO C forbids converting void* to a function pointer; POSIX guarantees it works, and memcpy says so. */
  {
    void *sym = dlsym(lib, "sn_get_api");
    if (sym == NULL) {
      fprintf(stderr, "dlsym sn_get_api: %s\n", dlerror());
      return 1;
    }
    memcpy(&get_api, &sym, sizeof get_api);
  }

  /* Ask for the table version this host was compiled against. NULL means the library is older than that; this
     host can still build and inspect graphs with version 1 (it skips compiling and running then). */
  api = get_api(SN_API_VERSION);
  if (api == NULL) api = get_api(1);
  if (api == NULL) {
    fprintf(stderr, "%s does not provide API version 1\n", path);
    return 1;
  }
  printf("loaded %s: Sinter %s, API version %u, table of %u bytes\n", path, api->version_string(), api->api_version,
         api->struct_size);
  /* Entries past the version we asked for exist only if struct_size covers them; everything this host calls
     is in version 1, which this check guarantees. */
  expect(api->struct_size >= offsetof(sn_api, graph_simplify_given) + sizeof api->graph_simplify_given,
         "the table covers every version-1 entry");
  expect(api->api_version >= 1, "the library's API version is at least 1");
  expect(get_api(api->api_version + 1) == NULL, "a version newer than the library's is refused with NULL");
  expect(get_api(0) == NULL, "version 0 is refused");
  expect(api->version_number() / 10000 == SN_VERSION_MAJOR, "same major version as the header");

  ctx = api->context_create(&err);
  check(err, "context_create");
  g = api->graph_create(ctx, &err);
  check(err, "graph_create");
  api->context_release(ctx); /* the graph keeps its context alive */

  /* (a + b) * 2 summed over axis 1, for two 2x3 float32 buffers */
  a = api->uop_reshape(g, api->uop_buffer(g, SN_DTYPE_FLOAT32, 6, "CPU", &err), shape, 2, &err);
  b = api->uop_reshape(g, api->uop_buffer(g, SN_DTYPE_FLOAT32, 6, "CPU", &err), shape, 2, &err);
  sum = api->uop_binary(g, SN_OP_ADD, a, b, &err);
  two = api->uop_const_float(g, SN_DTYPE_FLOAT32, 2.0, &err);
  scaled = api->uop_binary(g, SN_OP_MUL, sum, two, &err);
  total = api->uop_reduce(g, scaled, SN_OP_ADD, axis, 1, &err);
  check(err, "building (a + b) * 2 summed over axis 1");
  print_owned("the program, through the table:", api->uop_to_string(total, &err));
  check(err, "uop_to_string");
  {
    int64_t d0 = 0, d1 = 0;
    sn_code c0 = api->uop_dim(total, 0, &d0, NULL, &err);
    sn_code c1 = api->uop_dim(total, 1, &d1, NULL, &err);
    check(err, "uop_dim");
    expect(c0 == SN_OK && c1 == SN_OK && api->uop_rank(total, NULL) == 2 && d0 == 2 && d1 == 1,
           "the sum has shape (2,1)");
  }
  expect(api->uop_op(total, NULL) == SN_OP_REDUCE && api->uop_dtype(total, NULL) == SN_DTYPE_FLOAT32,
         "the sum is a float32 Reduce");
  expect(api->uop_binary(g, SN_OP_ADD, a, b, NULL) == sum, "nodes are hash-consed: rebuilding gives the same node");

  /* Index math through the table: ((i * 4) + 3) // 4 is i for i in [0, 9]. */
  i = api->uop_var(g, "i", 0, 9, &err);
  four = api->uop_const_int(g, SN_DTYPE_INDEX, 4, &err);
  expr = api->uop_binary(g, SN_OP_IDIV,
                         api->uop_binary(g, SN_OP_ADD, api->uop_binary(g, SN_OP_MUL, i, four, &err),
                                         api->uop_const_int(g, SN_DTYPE_INDEX, 3, &err), &err),
                         four, &err);
  simple = api->graph_simplify(g, expr, &err);
  check(err, "simplify");
  expect(simple == i, "((i * 4) + 3) // 4 simplifies to i");
  {
    int64_t lo = -1, hi = -1;
    sn_code c = api->uop_min_max_int(expr, &lo, &hi, NULL, &err);
    check(err, "uop_min_max_int");
    expect(c == SN_OK && lo == 0 && hi == 9, "its bounds are [0, 9]");
  }

  /* Errors come back through the table too. */
  if (api->uop_reshape(g, a, wrong, 2, &err) == NULL && err != NULL) {
    expect(api->error_code(err) == SN_E_INVALID_ARG && strstr(api->error_message(err), "(4,2)") != NULL,
           "a bad reshape is SN_E_INVALID_ARG naming the shapes");
    printf("     (%s)\n", api->error_message(err));
    api->error_free(err);
    err = NULL;
  } else {
    expect(0, "a bad reshape fails");
  }

  if (api->api_version >= 2 && api->struct_size >= offsetof(sn_api, program_arena_bytes) + sizeof(void *)) {
    run_softmax(g);
  } else {
    printf("skip the library has API version %u: no compile/run table entries\n", api->api_version);
  }

  api->graph_release(g);
  if (dlclose(lib) != 0) {
    fprintf(stderr, "dlclose: %s\n", dlerror());
    return 1;
  }
  printf("%s\n", failures == 0 ? "plugin host: all checks passed" : "plugin host: FAILED");
  return failures == 0 ? 0 : 1;
}
