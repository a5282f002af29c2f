package org.sinter;

import java.lang.ref.Reference;
import org.sinter.jni.SinterNative;
import org.sinter.jni.SinterNativeConstants;

/**
 * A reusable sub-graph of a {@link Graph} (the spec's Function/Call, API version 5): begin it with {@link
 * Graph#function}, build its body from {@link #param} with any builder, {@link #end} it with the body's outputs,
 * then {@link #call} it on arguments any number of times:
 *
 * <pre>{@code
 * Function f = g.function(new Function.Param(DType.FLOAT32, 4), new Function.Param(DType.FLOAT32, 4));
 * f.end(f.param(0).add(f.param(1)).relu());
 * UOp y = f.call(a, b)[0]; // relu(a + b)
 * }</pre>
 *
 * <p>A call is substituted when compiled, so it fuses with its callers, unless the function has the {@link
 * #PRECOMPILE} flag: then its arguments and results are materialized and every call runs the same kernels,
 * compiled once. A function belongs to its graph and needs no close; once the graph is closed its methods throw
 * IllegalStateException. Like the graph's, its calls are serialized on the Graph object.
 */
public final class Function {
  /** Flag: materialize arguments and results, and compile the body once for every call. */
  public static final int PRECOMPILE = SinterNativeConstants.SN_FUNCTION_PRECOMPILE;

  /** The dtype and shape of one parameter. */
  public record Param(DType dtype, long... shape) {}

  final Graph graph;
  final long ptr;
  private final int nparams;
  private int noutputs; // 0 until end succeeds; guarded by the graph's lock

  Function(Graph graph, long ptr, int nparams) {
    if (ptr == 0) throw new OutOfMemoryError("sinter: sn_function_begin");
    this.graph = graph;
    this.ptr = ptr;
    this.nparams = nparams;
  }

  /** The graph this function belongs to. */
  public Graph graph() {
    return graph;
  }

  /** The number of parameters. */
  public int numParams() {
    return nparams;
  }

  /** The number of outputs, 0 before {@link #end}. */
  public int numOutputs() {
    synchronized (graph) {
      return noutputs;
    }
  }

  /** The node standing for parameter {@code i} inside the body. */
  public UOp param(int i) {
    if (i < 0) throw new IllegalArgumentException("Function.param: negative parameter index " + i);
    return graph.build(g -> SinterNative.sn_function_param(ptr, i));
  }

  /** The nodes of all parameters, in order. */
  public UOp[] params() {
    UOp[] out = new UOp[nparams];
    for (int i = 0; i < nparams; i++) out[i] = param(i);
    return out;
  }

  /** Ends the body: the function returns {@code outputs} (nodes of its graph). Once per function. */
  public void end(UOp... outputs) {
    long[] h = graph.own(outputs);
    synchronized (graph) {
      graph.ptr(); // throws when closed
      try {
        SinterNative.sn_function_end(ptr, h, h.length);
        noutputs = h.length;
      } finally {
        Reference.reachabilityFence(graph);
      }
    }
  }

  /**
   * Sets the flags ({@link #PRECOMPILE} or 0), replacing the previous ones, before or after {@link #end}; calls
   * made afterwards see them.
   */
  public void setFlags(int flags) {
    synchronized (graph) {
      graph.ptr();
      try {
        SinterNative.sn_function_set_flags(ptr, flags);
      } finally {
        Reference.reachabilityFence(graph);
      }
    }
  }

  /**
   * Calls the ended function on {@code args} (nodes of its graph, each of its parameter's shape and dtype): result
   * {@code i} is output {@code i}. A wrong argument throws {@link SinterException} (INVALID_ARG) naming it.
   */
  public UOp[] call(UOp... args) {
    long[] a = graph.own(args);
    synchronized (graph) {
      long g = graph.ptr();
      try {
        // Before end the library reports "no body yet" without writing results; one slot keeps it non-NULL.
        long[] res = new long[Math.max(noutputs, 1)];
        int rc = SinterNative.snj_function_call(g, ptr, a, a.length, res);
        if (rc != Code.OK.value()) throw new SinterException(rc, "sn_function_call: out of memory");
        if (noutputs == 0) {
          throw new SinterException(Code.INTERNAL.value(), "Function.call: no body, yet the call succeeded");
        }
        UOp[] out = new UOp[noutputs];
        for (int i = 0; i < noutputs; i++) out[i] = new UOp(graph, res[i]);
        return out;
      } finally {
        Reference.reachabilityFence(graph);
      }
    }
  }
}
