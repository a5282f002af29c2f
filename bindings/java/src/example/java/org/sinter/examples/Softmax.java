package org.sinter.examples;

import org.sinter.Context;
import org.sinter.DType;
import org.sinter.Graph;
import org.sinter.Sinter;
import org.sinter.SinterException;
import org.sinter.UOp;

/** Softmax of a 4x8 matrix, row by row: exp(x - max(x)) / sum(exp(x - max(x))). */
public final class Softmax {
  private Softmax() {}

  /** Row-wise softmax; the reductions keep their axis as size 1, so they broadcast back over the columns. */
  static UOp softmax(UOp x) {
    UOp e = x.sub(x.max(1)).exp();
    return e.div(e.sum(1));
  }

  public static void main(String[] args) {
    System.out.println("Sinter " + Sinter.version());
    try (Context ctx = new Context(); Graph g = ctx.graph()) {
      UOp x = g.buffer(DType.FLOAT32, 4 * 8, "CPU").reshape(4, 8);
      UOp y = softmax(x);
      long[] shape = y.shape();
      if (shape.length != 2 || shape[0] != 4 || shape[1] != 8) throw new AssertionError("shape");
      System.out.println("softmax over a 4x8 matrix, as a tree:\n" + y.tree());
      System.out.println("as an S-expression:\n" + y);
      try {
        y.reshape(3, 3);
        throw new AssertionError("a reshape that changes the element count must fail");
      } catch (SinterException e) {
        System.out.println("\nreshaping 4x8 to 3x3 fails cleanly: " + e.getMessage());
      }
    }
  }
}
