package org.sinter;

import java.lang.ref.Reference;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.sinter.jni.SinterNative;

/**
 * A node of a {@link Graph}. It needs no close: it belongs to its graph and is valid until the graph is
 * closed (then every method throws IllegalStateException). Nodes are hash-consed, so {@code equals} (same
 * node) is structural equality. Builders throw {@link SinterException} with the C message when the node
 * breaks a rule of the spec (shapes that do not broadcast, a reshape that changes the element count, ...).
 */
public final class UOp {
  final Graph graph;
  final long ptr;

  UOp(Graph graph, long ptr) {
    this.graph = graph;
    this.ptr = ptr;
  }

  /** The graph this node belongs to. */
  public Graph graph() {
    return graph;
  }

  // ---- queries, under the graph's lock while it is open ----

  private <T> T query(Supplier<T> f) {
    synchronized (graph) {
      graph.ptr(); // throws when closed
      try {
        return f.get();
      } finally {
        Reference.reachabilityFence(graph);
      }
    }
  }

  private long queryLong(LongSupplier f) {
    synchronized (graph) {
      graph.ptr();
      try {
        return f.getAsLong();
      } finally {
        Reference.reachabilityFence(graph);
      }
    }
  }

  /** The op. */
  public Op op() {
    return Op.fromValue((int) queryLong(() -> SinterNative.sn_uop_op(ptr)));
  }

  /** The scalar dtype (a vector's element type, a pointer's pointee). */
  public DType dtype() {
    return DType.fromValue((int) queryLong(() -> SinterNative.sn_uop_dtype(ptr)));
  }

  /** Vector width of the dtype (1 for scalars). */
  public long lanes() {
    return queryLong(() -> SinterNative.sn_uop_lanes(ptr));
  }

  /** Whether the dtype is a pointer. */
  public boolean isPointer() {
    return queryLong(() -> SinterNative.sn_uop_is_pointer(ptr)) == 1;
  }

  /** The address space a pointer dtype points into (NONE for values). */
  public AddrSpace pointerAddrSpace() {
    return AddrSpace.fromValue((int) queryLong(() -> SinterNative.sn_uop_pointer_addrspace(ptr)));
  }

  /** The sharding axis of a multi-device tensor, or -1 for none. */
  public long axis() {
    return queryLong(() -> SinterNative.sn_uop_axis(ptr));
  }

  /** The arg, copied out of the graph. */
  public Arg arg() {
    return query(() -> Arg.fromNative(ptr));
  }

  /** The sources. */
  public List<UOp> srcs() {
    return query(() -> {
      long n = SinterNative.sn_uop_num_srcs(ptr);
      List<UOp> out = new ArrayList<>((int) n);
      for (long i = 0; i < n; i++) out.add(new UOp(graph, SinterNative.sn_uop_src(ptr, i)));
      return out;
    });
  }

  /** The rank, or -1 for nodes without a shape (void ops such as Sink). */
  public long rank() {
    return queryLong(() -> SinterNative.sn_uop_rank(ptr));
  }

  /** The shape, or null for nodes without one. */
  public List<Dim> dims() {
    return query(() -> {
      long rank = SinterNative.sn_uop_rank(ptr);
      if (rank < 0) return null;
      List<Dim> out = new ArrayList<>((int) rank);
      long[] value = new long[1];
      long[] sym = new long[1];
      for (long i = 0; i < rank; i++) {
        SinterNative.sn_uop_dim(ptr, i, value, sym);
        out.add(new Dim(value[0], sym[0] != 0 ? new UOp(graph, sym[0]) : null));
      }
      return out;
    });
  }

  /** The shape as sizes; throws SinterException for nodes without a shape or with a symbolic dimension. */
  public long[] shape() {
    List<Dim> dims = dims();
    if (dims == null) throw new SinterException(Code.INVALID_ARG.value(), "shape: the node has no shape");
    long[] out = new long[dims.size()];
    for (int i = 0; i < out.length; i++) {
      Dim d = dims.get(i);
      if (d.isSymbolic()) throw new SinterException(Code.INVALID_ARG.value(), "shape: symbolic dimension " + d);
      out[i] = d.size();
    }
    return out;
  }

  /** The device: "CPU", "(CPU:0,CPU:1)" for a multi-device tuple, "" for none. */
  public String device() {
    return query(() -> SinterNative.sn_uop_device(ptr));
  }

  /** {min, max} of an integer/bool/index node (clamped to the long range); a float node throws. */
  public long[] minMaxInt() {
    return query(() -> {
      long[] lo = new long[1];
      long[] hi = new long[1];
      SinterNative.sn_uop_min_max_int(ptr, lo, hi, null);
      return new long[] {lo[0], hi[0]};
    });
  }

  /** {min, max} as doubles, for every dtype (infinite when unbounded). */
  public double[] minMaxFloat() {
    return query(() -> {
      double[] lo = new double[1];
      double[] hi = new double[1];
      SinterNative.sn_uop_min_max_float(ptr, lo, hi);
      return new double[] {lo[0], hi[0]};
    });
  }

  /** S-expression, e.g. {@code (add (mul a 2) 12)}. */
  @Override
  public String toString() {
    return query(() -> SinterNative.sn_uop_to_string(ptr));
  }

  /** Indented tree with each node's derived properties. */
  public String tree() {
    return query(() -> SinterNative.sn_uop_to_tree(ptr));
  }

  /** Graphviz DOT of the DAG under this node. */
  public String dot() {
    return query(() -> SinterNative.sn_uop_to_dot(ptr));
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof UOp u && u.graph == graph && u.ptr == ptr;
  }

  @Override
  public int hashCode() {
    return Long.hashCode(ptr);
  }

  // ---- builders (in this node's graph) ----

  /** A unary elementwise op ({@code Op.EXP2}, {@code Op.SQRT}, ...). */
  public UOp unary(Op op) {
    return graph.build(g -> SinterNative.sn_uop_unary(g, op.value(), ptr));
  }

  /** A binary elementwise op ({@code Op.ADD}, {@code Op.CMPLT}, ...); shapes broadcast right-aligned. */
  public UOp binary(Op op, UOp other) {
    long b = graph.own(other);
    return graph.build(g -> SinterNative.sn_uop_binary(g, op.value(), ptr, b));
  }

  /** {@code this ? a : b} elementwise (this is bool). */
  public UOp where(UOp a, UOp b) {
    long pa = graph.own(a);
    long pb = graph.own(b);
    return graph.build(g -> SinterNative.sn_uop_ternary(g, Op.WHERE.value(), ptr, pa, pb));
  }

  /** Converts the values to {@code dtype}. */
  public UOp cast(DType dtype) {
    return graph.build(g -> SinterNative.sn_uop_cast(g, ptr, dtype.value()));
  }

  /** Reinterprets the storage as {@code dtype}. */
  public UOp bitcast(DType dtype) {
    return graph.build(g -> SinterNative.sn_uop_bitcast(g, ptr, dtype.value()));
  }

  /** Row-major reshape; the element count must not change. */
  public UOp reshape(long... shape) {
    return graph.build(g -> SinterNative.sn_uop_reshape(g, ptr, shape, shape.length));
  }

  /** Broadcasts size-1 axes to {@code shape} (same rank). */
  public UOp expand(long... shape) {
    return graph.build(g -> SinterNative.sn_uop_expand(g, ptr, shape, shape.length));
  }

  /**
   * Reshapes to dims that may be symbolic, as in {@link Graph#inputSym} (API version 8): a symbolic dim stays
   * its own axis; only the constant dims regroup.
   */
  public UOp reshapeSym(UOp... dims) {
    long[] h = graph.own(dims);
    return graph.build(g -> SinterNative.sn_tensor_reshape_sym(g, ptr, h, h.length));
  }

  /** Broadcasts size-1 axes to dims that may be symbolic, as in {@link Graph#inputSym} (API version 8). */
  public UOp expandSym(UOp... dims) {
    long[] h = graph.own(dims);
    return graph.build(g -> SinterNative.sn_tensor_expand_sym(g, ptr, h, h.length));
  }

  /** Reorders the axes: output axis k is input axis {@code order[k]}. */
  public UOp permute(long... order) {
    return graph.build(g -> SinterNative.sn_uop_permute(g, ptr, order, order.length));
  }

  /** Reverses the axes whose flag is true. */
  public UOp flip(boolean... flags) {
    long[] f = new long[flags.length];
    for (int i = 0; i < f.length; i++) f[i] = flags[i] ? 1 : 0;
    return graph.build(g -> SinterNative.sn_uop_flip(g, ptr, f, f.length));
  }

  private static void samePairLength(String what, long[] offsets, long[] sizes) {
    if (offsets.length != sizes.length) {
      throw new IllegalArgumentException(what + ": " + offsets.length + " offsets but " + sizes.length + " sizes");
    }
  }

  /** Places this node at {@code offsets} in a zero-filled tensor of shape {@code sizes}. */
  public UOp pad(long[] offsets, long[] sizes) {
    samePairLength("pad", offsets, sizes);
    return graph.build(g -> SinterNative.sn_uop_pad(g, ptr, offsets, sizes, sizes.length));
  }

  /** Keeps {@code sizes[k]} elements from {@code offsets[k]} on each axis. */
  public UOp shrink(long[] offsets, long[] sizes) {
    samePairLength("shrink", offsets, sizes);
    return graph.build(g -> SinterNative.sn_uop_shrink(g, ptr, offsets, sizes, sizes.length));
  }

  /** Reduces {@code axes} with ADD, MAX or MUL; reduced axes keep size 1. */
  public UOp reduce(Op op, long... axes) {
    return graph.build(g -> SinterNative.sn_uop_reduce(g, ptr, op.value(), axes, axes.length));
  }

  /** Sum over {@code axes} (kept as size 1). */
  public UOp sum(long... axes) {
    return reduce(Op.ADD, axes);
  }

  /** Maximum over {@code axes} (kept as size 1). */
  public UOp max(long... axes) {
    return reduce(Op.MAX, axes);
  }

  /** Forces a contiguous materialization. */
  public UOp contiguous() {
    return graph.build(g -> SinterNative.sn_uop_contiguous(g, ptr));
  }

  /** Simplifies this node with the symbolic rules. */
  public UOp simplify() {
    return graph.simplify(this);
  }

  public UOp add(UOp o) {
    return binary(Op.ADD, o);
  }

  public UOp sub(UOp o) {
    return binary(Op.SUB, o);
  }

  public UOp mul(UOp o) {
    return binary(Op.MUL, o);
  }

  /** The dialect's Div. */
  public UOp div(UOp o) {
    return binary(Op.DIV, o);
  }

  /** Floor division. */
  public UOp idiv(UOp o) {
    return binary(Op.IDIV, o);
  }

  /** Floor modulo. */
  public UOp mod(UOp o) {
    return binary(Op.MOD, o);
  }

  /** Elementwise maximum. */
  public UOp maximum(UOp o) {
    return binary(Op.MAX, o);
  }

  /** {@code this < o} (bool). */
  public UOp lt(UOp o) {
    return binary(Op.CMPLT, o);
  }

  /** {@code this == o} (bool). */
  public UOp eq(UOp o) {
    return binary(Op.CMPEQ, o);
  }

  public UOp neg() {
    return unary(Op.NEG);
  }

  public UOp exp2() {
    return unary(Op.EXP2);
  }

  public UOp log2() {
    return unary(Op.LOG2);
  }

  public UOp sqrt() {
    return unary(Op.SQRT);
  }

  public UOp recip() {
    return unary(Op.RECIP);
  }

  // ---- tensor level (axis arguments may be negative, counted from the end) ----

  /** {@code e^this}. */
  public UOp exp() {
    return graph.build(g -> SinterNative.sn_tensor_exp(g, ptr));
  }

  /** Natural logarithm. */
  public UOp log() {
    return graph.build(g -> SinterNative.sn_tensor_log(g, ptr));
  }

  /** This value with the gradient stopped ({@link Graph#gradient} does not flow through this use). */
  public UOp detach() {
    return graph.build(g -> SinterNative.sn_tensor_detach(g, ptr));
  }

  /** max(x, 0). */
  public UOp relu() {
    return graph.build(g -> SinterNative.sn_tensor_relu(g, ptr));
  }

  /** GELU (tanh approximation). */
  public UOp gelu() {
    return graph.build(g -> SinterNative.sn_tensor_gelu(g, ptr));
  }

  public UOp sigmoid() {
    return graph.build(g -> SinterNative.sn_tensor_sigmoid(g, ptr));
  }

  public UOp tanh() {
    return graph.build(g -> SinterNative.sn_tensor_tanh(g, ptr));
  }

  /** (M,K) @ (K,N) -> (M,N). */
  public UOp gemm(UOp b) {
    long pb = graph.own(b);
    return graph.build(g -> SinterNative.sn_tensor_gemm(g, ptr, pb));
  }

  /** (..., M,K) @ (..., K,N) -> (..., M,N) with broadcast batch dims. */
  public UOp matmul(UOp b) {
    long pb = graph.own(b);
    return graph.build(g -> SinterNative.sn_tensor_matmul(g, ptr, pb));
  }

  /**
   * 2-D convolution of this (N,Cin,H,W) with {@code w} (Cout,Cin/groups,KH,KW) plus {@code bias} (Cout,) or
   * null; stride, padding and dilation are {rows, columns} or null for 1, 0 and 1.
   */
  public UOp conv2d(UOp w, UOp bias, long[] stride, long[] padding, long[] dilation, long groups) {
    long pw = graph.own(w);
    long pb = bias == null ? 0 : graph.own(bias);
    return graph.build(g -> SinterNative.sn_tensor_conv2d(g, ptr, pw, pb, stride, padding, dilation, groups));
  }

  /** Max pooling over the last two axes; stride null = kernel, padding null = none. */
  public UOp maxPool2d(long[] kernel, long[] stride, long[] padding) {
    return graph.build(g -> SinterNative.sn_tensor_max_pool2d(g, ptr, kernel, stride, padding));
  }

  /** Average pooling over the last two axes (zero padding counts). */
  public UOp avgPool2d(long[] kernel, long[] stride, long[] padding) {
    return graph.build(g -> SinterNative.sn_tensor_avg_pool2d(g, ptr, kernel, stride, padding));
  }

  public UOp softmax(long axis) {
    return graph.build(g -> SinterNative.sn_tensor_softmax(g, ptr, axis));
  }

  public UOp logSoftmax(long axis) {
    return graph.build(g -> SinterNative.sn_tensor_log_softmax(g, ptr, axis));
  }

  /** Normalizes over the last {@code naxes} axes, then {@code * weight + bias} when not null. */
  public UOp layerNorm(long naxes, UOp weight, UOp bias, double eps) {
    long pw = weight == null ? 0 : graph.own(weight);
    long pb = bias == null ? 0 : graph.own(bias);
    return graph.build(g -> SinterNative.sn_tensor_layernorm(g, ptr, naxes, pw, pb, eps));
  }

  /** Inclusive cumulative sum along {@code axis}. */
  public UOp cumsum(long axis) {
    return graph.build(g -> SinterNative.sn_tensor_cumsum(g, ptr, axis));
  }

  /** Index (int32) of the first maximum along {@code axis}; the axis is removed unless {@code keepdim}. */
  public UOp argmax(long axis, boolean keepdim) {
    return graph.build(g -> SinterNative.sn_tensor_argmax(g, ptr, axis, keepdim ? 1 : 0));
  }

  /** Integer indices -> shape + (n,) of {@code dtype}: 1 where index == j, else 0. */
  public UOp oneHot(long n, DType dtype) {
    return graph.build(g -> SinterNative.sn_tensor_one_hot(g, ptr, n, dtype.value()));
  }

  /**
   * The spec's Index: {@code indices[k]} (an integer tensor of shape () or (m,)) selects along axis k of this
   * tensor, from the left; a ()-shaped index removes the axis, an (m,)-shaped one makes it m long (a gather of
   * rows for one index). An index outside its axis reads 0. (API version 5.)
   */
  public UOp index(UOp... indices) {
    long[] h = graph.own(indices);
    return graph.build(g -> SinterNative.sn_tensor_index(g, ptr, h, h.length));
  }

  /**
   * The spec's Slice: {@code size} elements of {@code dtype} read from this tensor's storage (its row-major
   * bytes), starting {@code offset} elements of its dtype in; shape (size,). Past the end throws {@link
   * SinterException} (INVALID_ARG). (API version 5.)
   */
  public UOp slice(long offset, long size, DType dtype) {
    return graph.build(g -> SinterNative.sn_tensor_slice(g, ptr, offset, size, dtype.value()));
  }

  /** PyTorch's gather along {@code axis}. */
  public UOp gather(long axis, UOp idx) {
    long pi = graph.own(idx);
    return graph.build(g -> SinterNative.sn_tensor_gather(g, ptr, axis, pi));
  }

  /** PyTorch's scatter_add along {@code axis}. */
  public UOp scatterAdd(long axis, UOp idx, UOp val) {
    long pi = graph.own(idx);
    long pv = graph.own(val);
    return graph.build(g -> SinterNative.sn_tensor_scatter_add(g, ptr, axis, pi, pv));
  }

  // ---- multi-device (API version 8) ----

  /**
   * This tensor split along {@code axis} over the devices of the tuple {@code devices} ("CPU:0,CPU:1"); the axis
   * length must divide by the device count.
   */
  public UOp shard(String devices, long axis) {
    return graph.build(g -> SinterNative.sn_tensor_shard(g, ptr, devices, axis));
  }

  /** The spec's Copy: this tensor on {@code device} (one device gathers it; a tuple shards axis 0). */
  public UOp to(String device) {
    return graph.build(g -> SinterNative.sn_tensor_to(g, ptr, device));
  }

  /** This tensor (on one device) replicated on every device of the tuple {@code devices}. */
  public UOp broadcast(String devices) {
    return graph.build(g -> SinterNative.sn_tensor_broadcast(g, ptr, devices));
  }

  /** This tensor (on one device) split on axis 0 over the tuple {@code devices}. */
  public UOp scatter(String devices) {
    return graph.build(g -> SinterNative.sn_tensor_scatter(g, ptr, devices));
  }

  /** The shards (sharded on axis 0) collected on the first device of the tuple. */
  public UOp gatherDevices() {
    return graph.build(g -> SinterNative.sn_tensor_gather_devices(g, ptr));
  }

  /** The shards (sharded on axis 0) summed, on the first device of the tuple. */
  public UOp reduceDevices() {
    return graph.build(g -> SinterNative.sn_tensor_reduce_devices(g, ptr));
  }

  /** The shards (sharded on axis 0) collected on every device (replicated). */
  public UOp allGather() {
    return graph.build(g -> SinterNative.sn_tensor_allgather(g, ptr));
  }

  /** The shards (sharded on axis 0) summed over the devices, the sum sharded on axis 0. */
  public UOp reduceScatter() {
    return graph.build(g -> SinterNative.sn_tensor_reduce_scatter(g, ptr));
  }

  /** The shards (sharded on axis 0) summed over the devices, the sum on every device (replicated). */
  public UOp allReduce() {
    return graph.build(g -> SinterNative.sn_tensor_allreduce(g, ptr));
  }

  /** A constant of this node's dtype: constFloat for float dtypes, else constInt (v must be integral). */
  public UOp scalar(double v) {
    DType dt = dtype();
    return switch (dt) {
      case FLOAT16, BFLOAT16, FLOAT32, FLOAT64, FP8E4M3, FP8E5M2 -> graph.constFloat(dt, v);
      default -> {
        if (v != Math.rint(v)) throw new IllegalArgumentException(v + " is not an integer for " + dt.cName());
        yield graph.constInt(dt, (long) v);
      }
    };
  }

  public UOp add(double v) {
    return add(scalar(v));
  }

  public UOp mul(double v) {
    return mul(scalar(v));
  }

  public UOp sub(double v) {
    return sub(scalar(v));
  }

  public UOp div(double v) {
    return div(scalar(v));
  }
}
