package org.sinter;

/** One dimension of a shape: a size, or a symbolic index expression ({@link #sym()} not null). */
public record Dim(long size, UOp sym) {
  /** Whether the dimension is symbolic. */
  public boolean isSymbolic() {
    return sym != null;
  }

  @Override
  public String toString() {
    return sym != null ? sym.toString() : Long.toString(size);
  }
}
