/* quickstart.c - compile a tensor program and run it on the CPU.
 *
 * Builds y = softmax(x @ w + b) for a 2x3 input and a 3x4 weight, compiles it for the CPU (kernel
 * fusion, loop optimization, LLVM), runs it on buffers, prints the result, then shows what the
 * compiler made: the kernels and the LLVM IR of the first one.
 *
 *   cc quickstart.c -lsinter && ./a.out        (SN_DEBUG=2 ./a.out also lists the kernels as it compiles)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sinter/sinter.h"

/* The first failing call records its error in `err`; later calls fed its NULL fail too and keep it,
   so one check after a chain of calls reports the root cause. */
static void check(sn_error *err) {
  if (err != NULL) {
    fprintf(stderr, "error %d: %s\n", (int)sn_error_code(err), sn_error_message(err));
    sn_error_free(err);
    exit(1);
  }
}

int main(void) {
  sn_error *err = NULL;
  const int64_t x_shape[2] = {2, 3}, w_shape[2] = {3, 4}, b_shape[1] = {4};
  const float x_data[6] = {1, 2, 3, -1, 0, 1};
  const float w_data[12] = {0.5f, -0.5f, 0.25f, 0, 0.1f, 0.2f, 0.3f, 0.4f, -1, 1, 0, 0.5f};
  const float b_data[4] = {0, 0.1f, 0.2f, 0.3f};
  float y[8];
  sn_context *ctx;
  sn_graph *g;
  sn_device *cpu;
  sn_uop *x, *w, *b, *logits, *probs;
  sn_program *prog;
  sn_buffer *inputs[3], *out;
  size_t i, j, nkernels;
  char *source;

  ctx = sn_context_create(&err);
  g = sn_graph_create(ctx, &err);
  cpu = sn_device_open(ctx, "CPU", &err);
  check(err);

  /* 1. Build: inputs are taken by the program in the order they are created. */
  x = sn_tensor_input(g, SN_DTYPE_FLOAT32, x_shape, 2, NULL, &err);
  w = sn_tensor_input(g, SN_DTYPE_FLOAT32, w_shape, 2, NULL, &err);
  b = sn_tensor_input(g, SN_DTYPE_FLOAT32, b_shape, 1, NULL, &err);
  logits = sn_uop_binary(g, SN_OP_ADD, sn_tensor_gemm(g, x, w, &err), b, &err); /* b broadcasts over rows */
  probs = sn_tensor_softmax(g, logits, -1, &err);
  check(err);

  /* 2. Compile once ... */
  prog = sn_compile(g, &probs, 1, cpu, NULL, &err);
  check(err);
  sn_graph_release(g); /* the program does not need the graph */

  /* 3. ... and run on buffers, as often as needed. */
  inputs[0] = sn_buffer_alloc(cpu, SN_DTYPE_FLOAT32, x_shape, 2, &err);
  inputs[1] = sn_buffer_alloc(cpu, SN_DTYPE_FLOAT32, w_shape, 2, &err);
  inputs[2] = sn_buffer_alloc(cpu, SN_DTYPE_FLOAT32, b_shape, 1, &err);
  out = sn_program_alloc_output(prog, 0, &err);
  check(err);
  if (sn_buffer_copy_in(inputs[0], x_data, sizeof x_data, &err) != SN_OK ||
      sn_buffer_copy_in(inputs[1], w_data, sizeof w_data, &err) != SN_OK ||
      sn_buffer_copy_in(inputs[2], b_data, sizeof b_data, &err) != SN_OK ||
      sn_program_run(prog, inputs, 3, &out, 1, &err) != SN_OK || sn_buffer_copy_out(out, y, sizeof y, &err) != SN_OK)
    check(err);

  printf("softmax(x @ w + b):\n");
  for (i = 0; i < 2; i++) {
    float row_sum = 0;
    for (j = 0; j < 4; j++) {
      printf("  %.6f", y[i * 4 + j]);
      row_sum += y[i * 4 + j];
    }
    printf("    (row sum %.6f)\n", row_sum);
  }

  /* 4. Inspect what the compiler made. */
  nkernels = sn_program_num_kernels(prog, &err);
  check(err);
  printf("\n%lu kernels:", (unsigned long)nkernels);
  for (i = 0; i < nkernels; i++) printf(" %s", sn_program_kernel_name(prog, i, &err));
  printf("\n\nLLVM IR of kernel 0 (%s):\n", sn_program_kernel_name(prog, 0, &err));
  source = sn_program_kernel_source(prog, 0, &err);
  check(err);
  printf("%s", source);
  sn_string_free(source);

  for (i = 0; i < 3; i++) sn_buffer_release(inputs[i]);
  sn_buffer_release(out);
  sn_program_release(prog);
  sn_device_release(cpu);
  sn_context_release(ctx);
  return 0;
}
