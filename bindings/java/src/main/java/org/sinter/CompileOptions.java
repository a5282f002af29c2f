package org.sinter;

import java.util.List;

/** Options of {@link Graph#compile}; {@code new CompileOptions()} has the library's defaults. Setters chain. */
public final class CompileOptions {
  int debug = -1;
  boolean optimize = true;
  boolean threads = true;
  boolean keepStages = false;
  boolean useCache = true;
  List<UOp> inputs = null;
  List<UOp> effects = List.of();
  int beam = -1;
  List<String> kernelOpts = List.of();

  /** SN_DEBUG level for this compile and the program's runs (-1: the context's). */
  public CompileOptions debug(int level) {
    debug = level;
    return this;
  }

  /** Run the kernel optimizer (loop order, vector tiles, threads). */
  public CompileOptions optimize(boolean on) {
    optimize = on;
    return this;
  }

  /** Allow kernels to run on all cores. */
  public CompileOptions threads(boolean on) {
    threads = on;
    return this;
  }

  /** Keep the graph after every stage as text ({@link Program#stage}). */
  public CompileOptions keepStages(boolean on) {
    keepStages = on;
    return this;
  }

  /** Reuse a program compiled before from the same content. */
  public CompileOptions useCache(boolean on) {
    useCache = on;
    return this;
  }

  /** In-place updates ({@link Graph#assign}) to run besides the outputs. (API version 5.) */
  public CompileOptions effects(UOp... updates) {
    effects = List.of(updates);
    return this;
  }

  /**
   * BEAM search width: each kernel's opts are chosen by timing candidates on the device (the {@code width}
   * fastest kept per step) instead of by the heuristic, once per kernel (kept in the disk cache). 0: off; at most
   * 64; -1 (the default): {@code $SN_BEAM}, else 0. (API version 6.)
   */
  public CompileOptions beam(int width) {
    beam = width;
    return this;
  }

  /**
   * Opts to force, one kernel per line {@code "<kernel id>: <opts>"} as {@link Program#kernelOpts} prints them,
   * e.g. {@code "5f0c3a9e12b4d678: UPCAST(1,8) UNROLL(0,4)"} (nothing after the colon: no opts). Kernels not
   * listed are optimized as usual. A line that does not parse, an id no kernel of the program has, or opts that
   * do not apply throw {@link SinterException} (INVALID_ARG) from {@link Graph#compile}. (API version 6.)
   */
  public CompileOptions kernelOpts(String... lines) {
    kernelOpts = List.of(lines);
    return this;
  }

  /** {@link #kernelOpts(String...)} from a list. */
  public CompileOptions kernelOpts(List<String> lines) {
    kernelOpts = List.copyOf(lines);
    return this;
  }

  /** The program's inputs in run order (default: every input the outputs read, in creation order). */
  public CompileOptions inputs(UOp... in) {
    inputs = List.of(in);
    return this;
  }
}
