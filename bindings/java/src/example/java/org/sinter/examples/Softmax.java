package org.sinter.examples;

import java.util.List;
import org.sinter.Buffer;
import org.sinter.Context;
import org.sinter.DType;
import org.sinter.Device;
import org.sinter.Graph;
import org.sinter.Program;
import org.sinter.Sinter;
import org.sinter.SinterException;
import org.sinter.UOp;

/** Softmax of a 4x8 matrix, row by row: build the graph, compile it for the CPU, run it, check the numbers. */
public final class Softmax {
  private Softmax() {}

  static final int ROWS = 4;
  static final int COLS = 8;

  /** exp(x - max) / sum(exp(x - max)); the reductions keep their axis as size 1, so they broadcast back. */
  static UOp softmax(UOp x) {
    UOp e = x.sub(x.max(1)).exp();
    return e.div(e.sum(1));
  }

  public static void main(String[] args) {
    System.out.println("Sinter " + Sinter.version());
    float[] data = new float[ROWS * COLS];
    for (int i = 0; i < data.length; i++) data[i] = ((i * 7) % 13) * 0.5f - 2f;

    try (Context ctx = new Context(); Device cpu = ctx.device("CPU"); Graph g = ctx.graph()) {
      UOp x = g.input(DType.FLOAT32, ROWS, COLS);
      UOp y = softmax(x);
      System.out.println("softmax as built from primitives:\n" + y + "\n");
      try (Program p = g.compile(cpu, y, x.softmax(1)); Buffer in = cpu.buffer(data, ROWS, COLS)) {
        System.out.println("compiled to kernels " + p.kernelNames());
        List<Buffer> outs = p.run(in);
        float[] ours = outs.get(0).toFloatArray();
        float[] lib = outs.get(1).toFloatArray();
        outs.forEach(Buffer::close);
        for (int r = 0; r < ROWS; r++) {
          double m = Double.NEGATIVE_INFINITY;
          for (int c = 0; c < COLS; c++) m = Math.max(m, data[r * COLS + c]);
          double sum = 0;
          for (int c = 0; c < COLS; c++) sum += Math.exp(data[r * COLS + c] - m);
          for (int c = 0; c < COLS; c++) {
            double want = Math.exp(data[r * COLS + c] - m) / sum;
            int i = r * COLS + c;
            if (Math.abs(ours[i] - want) > 1e-5 || Math.abs(lib[i] - want) > 1e-5) {
              throw new AssertionError("row " + r + " col " + c + ": " + ours[i] + " / " + lib[i] + " vs " + want);
            }
          }
        }
        System.out.println("all " + ROWS * COLS + " values match a reference softmax");
      }
      try {
        y.reshape(3, 3);
        throw new AssertionError("a reshape that changes the element count must fail");
      } catch (SinterException e) {
        System.out.println("\nreshaping 4x8 to 3x3 fails cleanly: " + e.getMessage());
      }
    }
  }
}
