package org.sinter;

import java.lang.ref.Reference;
import java.util.ArrayList;
import java.util.List;
import org.sinter.jni.SinterNative;

/**
 * A compiled tensor program, independent of the graph it came from. Thread-safe: several threads may run
 * one program at once. Close it when done.
 */
public final class Program implements AutoCloseable {
  private final NativeHandle handle;

  Program(long ptr) {
    handle = new NativeHandle(this, ptr, SinterNative::sn_program_release);
  }

  long ptr() {
    return handle.get("Program");
  }

  private static long[] handles(Buffer... bufs) {
    long[] h = new long[bufs.length];
    for (int i = 0; i < bufs.length; i++) {
      if (bufs[i] == null) throw new IllegalArgumentException("buffer " + i + " is null");
      h[i] = bufs[i].ptr();
    }
    return h;
  }

  /**
   * Runs the program: {@code inputs} in its input order, {@code outputs} in its output order. Each buffer
   * must have the dtype and shape the program expects. Blocks until done.
   */
  public void run(Buffer[] inputs, Buffer[] outputs) {
    long[] in = handles(inputs);
    long[] out = handles(outputs);
    try {
      SinterNative.sn_program_run(ptr(), in, in.length, out, out.length);
    } finally {
      Reference.reachabilityFence(this);
      Reference.reachabilityFence(inputs);
      Reference.reachabilityFence(outputs);
    }
  }

  /**
   * {@link #run(Buffer[], Buffer[])} with values for the program's launch-time variables ({@link
   * Graph#var}), by name. Every variable needs a value within its bounds ({@link #vars()}); the values
   * change what runs without recompiling.
   */
  public void run(Buffer[] inputs, Buffer[] outputs, java.util.Map<String, Long> vars) {
    long[] in = handles(inputs);
    long[] out = handles(outputs);
    String[] names = varNames(vars);
    long[] values = varValues(vars, names);
    try {
      SinterNative.sn_program_run_vars(ptr(), in, in.length, out, out.length, names, values, names.length);
    } finally {
      Reference.reachabilityFence(this);
      Reference.reachabilityFence(inputs);
      Reference.reachabilityFence(outputs);
    }
  }

  private static String[] varNames(java.util.Map<String, Long> vars) {
    String[] names = vars.keySet().toArray(new String[0]);
    for (String n : names) {
      if (n == null) throw new IllegalArgumentException("null variable name");
    }
    return names;
  }

  private static long[] varValues(java.util.Map<String, Long> vars, String[] names) {
    long[] values = new long[names.length];
    for (int i = 0; i < names.length; i++) {
      Long v = vars.get(names[i]);
      if (v == null) throw new IllegalArgumentException("null value for variable " + names[i]);
      values[i] = v;
    }
    return values;
  }

  /** A launch-time variable of a program: its name and bounds. */
  public record Var(String name, long min, long max) {}

  /** The launch-time variables the program reads, sorted by name. */
  public List<Var> vars() {
    try {
      long n = SinterNative.sn_program_num_vars(ptr());
      List<Var> out = new ArrayList<>();
      for (long i = 0; i < n; i++) {
        String[] name = new String[1];
        long[] min = new long[1], max = new long[1];
        SinterNative.sn_program_var_info(ptr(), i, name, min, max);
        out.add(new Var(name[0], min[0], max[0]));
      }
      return out;
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** Allocates every output, runs, and returns the outputs (close them when done). */
  public List<Buffer> run(Buffer... inputs) {
    Buffer[] outs = new Buffer[(int) numOutputs()];
    try {
      for (int i = 0; i < outs.length; i++) outs[i] = allocOutput(i);
      run(inputs, outs);
      return List.of(outs);
    } catch (RuntimeException e) {
      for (Buffer b : outs) {
        if (b != null) b.close();
      }
      throw e;
    }
  }

  /** A new buffer shaped like output {@code index}, on the program's device. */
  public Buffer allocOutput(long index) {
    try {
      return new Buffer(SinterNative.sn_program_alloc_output(ptr(), index));
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * A new buffer for output {@code index} of symbolic shape at the launch-time variables {@code vars}
   * (every variable its shape uses, within its bounds). API version 7.
   */
  public Buffer allocOutput(long index, java.util.Map<String, Long> vars) {
    String[] names = varNames(vars);
    long[] values = varValues(vars, names);
    try {
      return new Buffer(SinterNative.sn_program_alloc_output_vars(ptr(), index, names, values, names.length));
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  public long numInputs() {
    try {
      return SinterNative.sn_program_num_inputs(ptr());
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  public long numOutputs() {
    try {
      return SinterNative.sn_program_num_outputs(ptr());
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  private DType ioDType(int output, long index) {
    try {
      return DType.fromValue(SinterNative.snj_program_io_dtype(ptr(), output, index));
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  private long[] ioShape(int output, long index) {
    try {
      long p = ptr();
      long[] shape = new long[(int) SinterNative.snj_program_io_rank(p, output, index)];
      SinterNative.snj_program_io_shape(p, output, index, shape);
      return shape;
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  public DType inputDType(long index) {
    return ioDType(0, index);
  }

  public long[] inputShape(long index) {
    return ioShape(0, index);
  }

  public DType outputDType(long index) {
    return ioDType(1, index);
  }

  public long[] outputShape(long index) {
    return ioShape(1, index);
  }

  /** Names of the kernels one run launches ("r_16_64", ...). */
  public List<String> kernelNames() {
    try {
      long p = ptr();
      long n = SinterNative.sn_program_num_kernels(p);
      List<String> names = new ArrayList<>();
      for (long i = 0; i < n; i++) names.add(SinterNative.sn_program_kernel_name(p, i));
      return names;
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * The binary of kernel {@code index} as its driver loads it: the PTX text on CUDA, the code object (ELF) on AMD.
   * A device that keeps none (CPU, CL, C) is UNSUPPORTED. (API version 8.)
   */
  public byte[] kernelBinary(long index) {
    try {
      long size = SinterNative.snj_program_kernel_binary_size(ptr(), index);
      byte[] out = new byte[Math.toIntExact(size)];
      SinterNative.snj_program_kernel_binary_copy(ptr(), index, out);
      return out;
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** Source of kernel {@code index} (LLVM IR on the CPU, OpenCL C on CL, C99 on C). */
  public String kernelSource(long index) {
    try {
      return SinterNative.sn_program_kernel_source(ptr(), index);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * The opts kernel {@code index} got, as one line {@code "<kernel id>: <opts>"}, e.g. {@code "5f0c3a9e12b4d678:
   * UPCAST(1,8) UNROLL(0,4) THREAD(0,2)"}. The id (16 hex digits) is the content hash of the kernel as scheduled,
   * the same in every process; passing the line back in {@link CompileOptions#kernelOpts} rebuilds exactly this
   * kernel. (API version 6.)
   */
  public String kernelOpts(long index) {
    try {
      return SinterNative.sn_program_kernel_opts(ptr(), index);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** The graph after a pipeline stage ("schedule", "optimized", "linear", "source", ...) as text. */
  public String stage(String name) {
    try {
      return SinterNative.sn_program_stage(ptr(), name);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * The program as one standalone C99 file (needs only libc and libm) with one entry point {@code int
   * NAME(void *const *inputs, void *const *outputs)} taking the buffers in the program's input and output
   * order; {@code name} must be a C identifier. The program must be compiled for device "C" (otherwise
   * SinterException(UNSUPPORTED)), and without launch-time variables for now.
   */
  public String exportC(String name) {
    try {
      return SinterNative.sn_program_export_c(ptr(), name);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** Bytes of the arena the program's intermediate values share. */
  public long arenaBytes() {
    try {
      return SinterNative.sn_program_arena_bytes(ptr());
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** Releases the program. Idempotent. */
  @Override
  public void close() {
    handle.close();
  }
}
