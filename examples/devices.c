/* devices.c - one tensor program on every device this machine has, and exported as C.
 *
 * Lists the backends' device counts, runs softmax(x) over rows on the CPU and on each OpenCL device
 * (GPU-style kernels: work-groups, local memory; on a machine without a GPU, pocl runs them on the
 * CPU), checks that every device agrees with the CPU, then compiles the same program for device "C"
 * and writes it as one standalone C file (softmax_rows.c) that needs only libc and libm.
 *
 *   cc devices.c -lsinter && ./a.out && cc -O2 -c softmax_rows.c
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sinter/sinter.h"

#define ROWS 4
#define COLS 1000

static void check(sn_error *err) {
  if (err != NULL) {
    fprintf(stderr, "error %d: %s\n", (int)sn_error_code(err), sn_error_message(err));
    sn_error_free(err);
    exit(1);
  }
}

/* softmax over the rows of a ROWS x COLS float32 input on `device`. */
static sn_program *compile_softmax(sn_context *ctx, sn_device *device, sn_error **err) {
  const int64_t shape[2] = {ROWS, COLS};
  sn_graph *g = sn_graph_create(ctx, err);
  sn_uop *x = sn_tensor_input(g, SN_DTYPE_FLOAT32, shape, 2, sn_device_name(device, err), err);
  sn_uop *y = sn_tensor_softmax(g, x, 1, err);
  sn_program *p = sn_compile(g, &y, 1, device, NULL, err);
  sn_graph_release(g);
  return p;
}

/* Runs the program on `x` (host memory) and copies the result into `y`. */
static void run(sn_program *p, sn_device *device, const float *x, float *y, sn_error **err) {
  const int64_t shape[2] = {ROWS, COLS};
  sn_buffer *in = sn_buffer_alloc(device, SN_DTYPE_FLOAT32, shape, 2, err);
  sn_buffer *out = sn_program_alloc_output(p, 0, err);
  if (*err == NULL && sn_buffer_copy_in(in, x, sizeof(float) * ROWS * COLS, err) == SN_OK &&
      sn_program_run(p, &in, 1, &out, 1, err) == SN_OK && sn_buffer_copy_out(out, y, sizeof(float) * ROWS * COLS, err))
    fprintf(stderr, "copying the result failed\n"); /* the error is in *err */
  sn_buffer_release(in);
  sn_buffer_release(out);
}

int main(void) {
  static float x[ROWS * COLS], want[ROWS * COLS], got[ROWS * COLS];
  const char *backends[3] = {"CPU", "CL", "C"};
  sn_error *err = NULL;
  sn_context *ctx = sn_context_create(&err);
  sn_device *cpu = sn_device_open(ctx, "CPU", &err);
  sn_program *p;
  int i, n, d;
  check(err);
  for (i = 0; i < ROWS * COLS; i++) x[i] = (float)((i * 37) % 101) / 25.0f - 2.0f;

  for (i = 0; i < 3; i++) printf("%-4s %d device(s)\n", backends[i], sn_device_count(ctx, backends[i], &err));
  check(err);

  p = compile_softmax(ctx, cpu, &err);
  run(p, cpu, x, want, &err);
  check(err);
  sn_program_release(p);

  /* Every OpenCL device ("CL", "CL:1", ...) computes the same numbers. */
  n = sn_device_count(ctx, "CL", &err);
  check(err);
  if (n == 0) {
    sn_device_open(ctx, "CL", &err); /* says why there is none */
    printf("no OpenCL device: %s\n", err ? sn_error_message(err) : "?");
    sn_error_free(err);
    err = NULL;
  }
  for (d = 0; d < n; d++) {
    char name[16];
    float worst = 0;
    sn_device *cl;
    char *desc;
    if (d == 0)
      strcpy(name, "CL");
    else
      sprintf(name, "CL:%d", d);
    cl = sn_device_open(ctx, name, &err);
    desc = sn_device_description(cl, &err);
    p = compile_softmax(ctx, cl, &err);
    run(p, cl, x, got, &err);
    check(err);
    for (i = 0; i < ROWS * COLS; i++) {
      float diff = got[i] > want[i] ? got[i] - want[i] : want[i] - got[i];
      if (diff > worst) worst = diff;
    }
    printf("%s, %s: %zu kernel(s), largest difference from the CPU %.2g\n", name, desc, sn_program_num_kernels(p, &err),
           (double)worst);
    if (worst > 1e-6f) return 1;
    sn_string_free(desc);
    sn_program_release(p);
    sn_device_release(cl);
  }

  /* The same program as C source: compile it for device "C" and export it. */
  {
    sn_device *c = sn_device_open(ctx, "C", &err);
    char *src;
    FILE *f;
    p = compile_softmax(ctx, c, &err);
    src = sn_program_export_c(p, "softmax_rows", &err);
    check(err);
    f = fopen("softmax_rows.c", "w");
    if (f == NULL || fputs(src, f) < 0) return 1;
    fclose(f);
    printf("wrote softmax_rows.c: int softmax_rows(void *const *inputs, void *const *outputs), %zu bytes\n",
           strlen(src));
    sn_string_free(src);
    sn_program_release(p);
    sn_device_release(c);
  }
  sn_device_release(cpu);
  sn_context_release(ctx);
  return 0;
}
