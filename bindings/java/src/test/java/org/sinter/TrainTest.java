package org.sinter;

import static org.junit.jupiter.api.Assertions.*;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Gradients, detach and in-place updates (API version 5). */
class TrainTest {
  private Context ctx;
  private Device cpu;

  @BeforeEach
  void open() {
    ctx = new Context();
    cpu = ctx.device("CPU");
  }

  @AfterEach
  void close() {
    cpu.close();
    ctx.close();
  }

  @Test
  void gradientMatchesHandComputedValues() {
    double[] xv = {1, -2, 0.5, 3}, wv = {0.25, 1, -1, 2};
    try (Graph g = ctx.graph()) {
      UOp x = g.input(DType.FLOAT64, new long[] {4}, null);
      UOp w = g.input(DType.FLOAT64, new long[] {4}, null);
      // loss = sum(x*x*w + x*detach(x)): d/dx = 2xw + x, d/dw = x^2
      UOp loss = x.mul(x).mul(w).add(x.mul(x.detach())).sum(0);
      UOp[] grads = g.gradient(loss, x, w);
      assertEquals(2, grads.length);
      try (Program p = g.compile(cpu, grads);
          Buffer bx = cpu.buffer(xv, 4);
          Buffer bw = cpu.buffer(wv, 4)) {
        java.util.List<Buffer> outs = p.run(bx, bw);
        double[] dx = outs.get(0).toDoubleArray(), dw = outs.get(1).toDoubleArray();
        for (int i = 0; i < 4; i++) {
          assertEquals(2 * xv[i] * wv[i] + xv[i], dx[i], 1e-12);
          assertEquals(xv[i] * xv[i], dw[i], 1e-12);
        }
        for (Buffer b : outs) b.close();
      }
      SinterException e = assertThrows(SinterException.class, () -> g.gradient(x, x));
      assertTrue(e.getMessage().contains("one element"), e.getMessage());
    }
  }

  @Test
  void assignUpdatesTheInputBufferInPlace() {
    try (Graph g = ctx.graph()) {
      UOp w = g.input(DType.FLOAT32, new long[] {3}, null);
      UOp update = g.assign(w, w.add(w));
      CompileOptions opts = new CompileOptions().effects(update);
      try (Program p = g.compile(cpu, opts, w.sum(0));
          Program only = g.compile(cpu, opts);
          Buffer buf = cpu.buffer(new float[] {1, 2, 3}, 3)) {
        java.util.List<Buffer> outs = p.run(buf);
        assertArrayEquals(new float[] {6}, outs.get(0).toFloatArray());
        assertArrayEquals(new float[] {2, 4, 6}, buf.toFloatArray());
        outs.get(0).close();
        only.run(new Buffer[] {buf}, new Buffer[0]);
        assertArrayEquals(new float[] {4, 8, 12}, buf.toFloatArray());
      }
      SinterException e = assertThrows(SinterException.class, () -> g.assign(w.add(w), w));
      assertTrue(e.getMessage().contains("input tensor"), e.getMessage());
    }
  }
}
