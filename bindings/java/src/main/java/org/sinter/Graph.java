package org.sinter;

import java.lang.ref.Reference;
import org.sinter.jni.SinterNative;

/**
 * An arena of hash-consed UOps. Every {@link UOp} refers to its graph, so a reachable node keeps its graph
 * reachable. Close the graph when done (try-with-resources); afterwards its nodes throw IllegalStateException.
 *
 * <p>The C API allows one thread at a time per graph; this class serializes its calls (and those of its
 * nodes) on the Graph object, so sharing one between threads is safe, though not parallel.
 */
public final class Graph implements AutoCloseable {
  private final NativeHandle handle;

  Graph(Context ctx) {
    long p = SinterNative.sn_graph_create(ctx.ptr());
    Reference.reachabilityFence(ctx);
    handle = new NativeHandle(this, p, SinterNative::sn_graph_release);
  }

  /** A new empty graph in {@code ctx} (same as {@code ctx.graph()}). */
  public static Graph create(Context ctx) {
    return new Graph(ctx);
  }

  /** One native call that returns a node handle of this graph. */
  @FunctionalInterface
  interface NodeCall {
    long call(long graph);
  }

  /** Runs {@code c} with the graph locked and open, and wraps the node it returns. */
  synchronized UOp build(NodeCall c) {
    try {
      return new UOp(this, c.call(ptr()));
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  long ptr() {
    return handle.get("Graph");
  }

  long own(UOp u) {
    if (u == null || u.graph != this) {
      throw new IllegalArgumentException("the uop is null or belongs to another graph");
    }
    return u.ptr;
  }

  long[] own(UOp... us) {
    long[] out = new long[us.length];
    for (int i = 0; i < us.length; i++) out[i] = own(us[i]);
    return out;
  }

  /** Number of distinct nodes. */
  public synchronized long nodeCount() {
    try {
      return SinterNative.sn_graph_node_count(ptr());
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** The generic builder: the node (op, dtype, srcs, arg), verified against the spec. */
  public UOp node(Op op, DType dtype, Arg arg, UOp... srcs) {
    long[] s = own(srcs);
    long[] fields = arg.kind() == Arg.Kind.NONE ? null : arg.fields();
    long[] ints = arg.ints();
    byte[] bytes = arg.bytes();
    String device = arg.device().isEmpty() ? null : arg.device();
    return build(g -> SinterNative.snj_uop_new(g, op.value(), dtype.value(), s, s.length, fields, arg.floatValue(),
        ints, ints.length, bytes, device));
  }

  /** A scalar constant (every dtype but void; a float dtype gets the value converted). */
  public UOp constInt(DType dtype, long value) {
    return build(g -> SinterNative.sn_uop_const_int(g, dtype.value(), value));
  }

  /** A scalar constant of a float dtype (rounded to it). */
  public UOp constFloat(DType dtype, double value) {
    return build(g -> SinterNative.sn_uop_const_float(g, dtype.value(), value));
  }

  /** A bounded symbolic integer {@code min <= name <= max} (index dtype). */
  public UOp var(String name, long min, long max) {
    return build(g -> SinterNative.sn_uop_var(g, name, min, max));
  }

  /** A new, distinct buffer of {@code size} elements on {@code device} (null for none). Shape (size,). */
  public UOp buffer(DType dtype, long size, String device) {
    return build(g -> SinterNative.sn_uop_buffer(g, dtype.value(), size, device));
  }

  /** Placeholder number {@code slot} of the given shape on {@code device} (null for none). */
  public UOp param(long slot, DType dtype, long[] shape, String device) {
    return build(g -> SinterNative.sn_uop_param(g, slot, dtype.value(), shape, shape.length, device));
  }

  /** An elementwise op over 1 to 3 sources (the dtype is derived). */
  public UOp alu(Op op, UOp... srcs) {
    long[] s = own(srcs);
    return build(g -> SinterNative.sn_uop_alu(g, op.value(), s, s.length));
  }

  /** Collects several roots into one void node. */
  public UOp sink(UOp... srcs) {
    long[] s = own(srcs);
    return build(g -> SinterNative.sn_uop_sink(g, s, s.length));
  }

  /** Simplifies {@code root} with the symbolic rules to a fixed point (root itself when nothing changes). */
  public UOp simplify(UOp root) {
    long r = own(root);
    return build(g -> SinterNative.sn_graph_simplify(g, r));
  }

  /** Simplifies {@code expr} assuming the bool expression {@code valid} holds. */
  public UOp simplifyGiven(UOp valid, UOp expr) {
    long v = own(valid);
    long e = own(expr);
    return build(g -> SinterNative.sn_graph_simplify_given(g, v, e));
  }

  // ---- tensor level ----

  /** A new input tensor of {@code dtype} and {@code shape} on {@code device} (null: "CPU"). */
  public UOp input(DType dtype, long[] shape, String device) {
    return build(g -> SinterNative.sn_tensor_input(g, dtype.value(), shape, shape.length, device));
  }

  /** A new input tensor on the CPU. */
  public UOp input(DType dtype, long... shape) {
    return input(dtype, shape, null);
  }

  /**
   * An input tensor whose dims may be symbolic (API version 7): each dim is an index uop, a constant ({@link
   * #constInt} with {@link DType#INDEX}), a bounded {@link #var} or index arithmetic of those. A program built
   * on it compiles once and runs at any values in bounds ({@link Program#run(Buffer[], Buffer[],
   * java.util.Map)}; {@link Program#allocOutput(long, java.util.Map)} sizes its outputs).
   */
  public UOp inputSym(DType dtype, UOp[] dims, String device) {
    long[] h = own(dims);
    return build(g -> SinterNative.sn_tensor_input_sym(g, dtype.value(), h, h.length, device));
  }

  /** {@link #inputSym(DType, UOp[], String)} on the CPU. */
  public UOp inputSym(DType dtype, UOp... dims) {
    return inputSym(dtype, dims, null);
  }

  /** [0, 1, ..., n-1] of {@code dtype}. */
  public UOp arange(long n, DType dtype) {
    return build(g -> SinterNative.sn_tensor_arange(g, n, dtype.value()));
  }

  /** Uniform values in [0, 1) of a float dtype from a counter-based generator keyed by {@code seed}. */
  public UOp rand(long[] shape, long seed, DType dtype) {
    return build(g -> SinterNative.sn_tensor_rand(g, shape, shape.length, seed, dtype.value()));
  }

  /** Standard normal values from the same generator. */
  public UOp randn(long[] shape, long seed, DType dtype) {
    return build(g -> SinterNative.sn_tensor_randn(g, shape, shape.length, seed, dtype.value()));
  }

  /** Concatenates {@code xs} (one dtype and rank) along {@code axis}. */
  public UOp cat(long axis, UOp... xs) {
    long[] h = own(xs);
    return build(g -> SinterNative.sn_tensor_cat(g, h, h.length, axis));
  }

  /** Stacks same-shape {@code xs} along a new {@code axis}. */
  public UOp stack(long axis, UOp... xs) {
    long[] h = own(xs);
    return build(g -> SinterNative.sn_tensor_stack(g, h, h.length, axis));
  }

  /**
   * The spec's Binary: a copy of {@code data} as a constant uint8 tensor of shape (data.length,); view it with
   * {@link UOp#bitcast} or {@link UOp#slice}. A program that reads it holds the bytes in device memory, filled
   * once when compiled. (API version 5.)
   */
  public UOp binary(byte[] data) {
    return build(g -> SinterNative.sn_tensor_binary(g, data));
  }

  /**
   * Begins a {@link Function} with one parameter per {@code params} entry: build its body from {@link
   * Function#param}, then {@link Function#end} it. (API version 5.)
   */
  public Function function(Function.Param... params) {
    int n = params.length, total = 0;
    long[] dtypes = new long[n], ranks = new long[n];
    for (int k = 0; k < n; k++) {
      dtypes[k] = params[k].dtype().value();
      ranks[k] = params[k].shape().length;
      total += params[k].shape().length;
    }
    long[] dims = new long[total];
    int at = 0;
    for (Function.Param p : params) {
      System.arraycopy(p.shape(), 0, dims, at, p.shape().length);
      at += p.shape().length;
    }
    synchronized (this) {
      try {
        // null rather than empty arrays: the glue passes NULL, which is what the C API expects then
        long f = SinterNative.snj_function_begin(ptr(), n == 0 ? null : dtypes, n == 0 ? null : ranks, n,
            total == 0 ? null : dims, total);
        return new Function(this, f, n);
      } finally {
        Reference.reachabilityFence(this);
      }
    }
  }

  /**
   * Reverse-mode gradients: {@code d loss / d wrt[i]} for every {@code wrt[i]}, each of its shape and dtype.
   * {@code loss} is a float tensor of one element (e.g. a full sum). (API version 5.)
   */
  public UOp[] gradient(UOp loss, UOp... wrt) {
    long l = own(loss);
    long[] w = own(wrt);
    UOp[] out = new UOp[w.length];
    for (int i = 0; i < w.length; i++) {
      final int k = i;
      out[i] = build(g -> SinterNative.snj_gradient(g, l, w, w.length, k));
    }
    return out;
  }

  /**
   * An in-place update: writes {@code value} into the buffer of input {@code target} when a program that
   * includes the result (among its outputs or in {@link CompileOptions#effects}) runs, after every read of the
   * old value. The result reads as {@code value}. (API version 5.)
   */
  public UOp assign(UOp target, UOp value) {
    long t = own(target), v = own(value);
    return build(g -> SinterNative.sn_tensor_assign(g, t, v));
  }

  /** Compiles the tensor program under {@code outputs} for {@code device} (null: the context's default). */
  public Program compile(Device device, CompileOptions options, UOp... outputs) {
    long[] outs = own(outputs);
    long[] ins = options.inputs == null ? null : own(options.inputs.toArray(new UOp[0]));
    long[] effects = own(options.effects.toArray(new UOp[0]));
    String[] lines = options.kernelOpts.toArray(new String[0]);
    long dev = device == null ? 0 : device.ptr();
    synchronized (this) {
      try {
        return new Program(SinterNative.snj_compile(ptr(), outs, outs.length, dev, options.debug,
            options.optimize ? 1 : 0, options.threads ? 1 : 0, options.keepStages ? 1 : 0, options.useCache ? 1 : 0,
            ins, ins == null ? 0 : ins.length, ins == null ? 0 : 1, effects, effects.length, options.beam, lines,
            lines.length));
      } finally {
        Reference.reachabilityFence(this);
        Reference.reachabilityFence(device);
      }
    }
  }

  /** Compiles with the default options. */
  public Program compile(Device device, UOp... outputs) {
    return compile(device, new CompileOptions(), outputs);
  }

  /** Whether {@link #close()} was called. */
  public boolean isClosed() {
    return handle.isClosed();
  }

  /** Releases the graph and all its nodes. Idempotent. */
  @Override
  public synchronized void close() {
    handle.close();
  }
}
