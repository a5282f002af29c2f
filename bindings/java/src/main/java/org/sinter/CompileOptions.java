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

  /** The program's inputs in run order (default: every input the outputs read, in creation order). */
  public CompileOptions inputs(UOp... in) {
    inputs = List.of(in);
    return this;
  }
}
