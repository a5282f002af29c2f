package org.sinter;

import static org.junit.jupiter.api.Assertions.*;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class RunTest {
  private Context ctx;
  private Device cpu;
  private Graph g;

  @BeforeEach
  void open() {
    ctx = new Context();
    cpu = ctx.device("CPU");
    g = ctx.graph();
  }

  @AfterEach
  void close() {
    g.close();
    cpu.close();
    ctx.close();
  }

  @Test
  void compileAndRun() {
    assertEquals("CPU", cpu.name());
    UOp a = g.input(DType.FLOAT32, 2, 3);
    UOp b = g.input(DType.FLOAT32, 2, 3);
    UOp y = a.add(b).mul(2.0).sum(1);
    try (Program p = g.compile(cpu, y);
        Buffer xa = cpu.buffer(new float[] {1, 2, 3, 4, 5, 6}, 2, 3);
        Buffer xb = cpu.buffer(new float[] {10, 20, 30, 40, 50, 60}, 2, 3);
        Buffer out = p.allocOutput(0)) {
      g.close(); // the program does not need the graph
      assertEquals(2, p.numInputs());
      assertEquals(1, p.numOutputs());
      assertEquals(DType.FLOAT32, p.outputDType(0));
      assertArrayEquals(new long[] {2, 1}, p.outputShape(0));
      assertArrayEquals(new long[] {2, 3}, p.inputShape(1));
      assertFalse(p.kernelNames().isEmpty());
      p.run(new Buffer[] {xa, xb}, new Buffer[] {out});
      assertArrayEquals(new float[] {132, 330}, out.toFloatArray());
      assertArrayEquals(new long[] {2, 1}, out.shape());
      assertEquals(8, out.nbytes());
      assertEquals("CPU", out.deviceName());
    }
  }

  /**
   * A symbolic batch: x (b,2,3) flattened to (b,6), times w (1,6) broadcast to (b,6), summed per row; one
   * compile, two batch sizes, hand-computed sums.
   */
  @Test
  void symbolicBatch() {
    UOp b = g.var("b", 1, 4);
    UOp two = g.constInt(DType.INDEX, 2), three = g.constInt(DType.INDEX, 3), six = g.constInt(DType.INDEX, 6);
    UOp x = g.inputSym(DType.FLOAT32, b, two, three);
    UOp w = g.input(DType.FLOAT32, 1, 6);
    UOp y = x.reshapeSym(b, six).mul(w.expandSym(b, six)).sum(1);
    float[] xd = new float[24];
    for (int i = 0; i < 24; i++) xd[i] = (i % 5) - 2;
    float[] wd = {1, -2, 0.5f, 3, -1, 0.25f};
    try (Program p = g.compile(cpu, y); Buffer wb = cpu.buffer(wd, 1, 6)) {
      assertArrayEquals(new long[] {-1, 2, 3}, p.inputShape(0));
      for (long rows : new long[] {2, 4}) {
        java.util.Map<String, Long> vars = java.util.Map.of("b", rows);
        try (Buffer xb = cpu.buffer(java.util.Arrays.copyOf(xd, (int) rows * 6), rows, 2, 3);
            Buffer out = p.allocOutput(0, vars)) {
          p.run(new Buffer[] {xb, wb}, new Buffer[] {out}, vars);
          float[] got = out.toFloatArray();
          assertEquals(rows, got.length);
          for (int i = 0; i < rows; i++) {
            float want = 0;
            for (int j = 0; j < 6; j++) want += xd[i * 6 + j] * wd[j];
            assertEquals(want, got[i], 1e-5f, "b=" + rows + " row " + i);
          }
        }
      }
      SinterException e = assertThrows(SinterException.class, () -> p.allocOutput(0, java.util.Map.of("b", 9L)));
      assertTrue(e.getMessage().contains("outside its range"), e.getMessage());
    }
    assertThrows(SinterException.class, () -> x.reshapeSym(b.mul(two), three));
  }

  @Test
  void tensorBuilders() {
    UOp x = g.input(DType.FLOAT32, 2, 3);
    UOp w = g.input(DType.FLOAT32, 3, 2);
    float[] xv = {1, 2, 3, 3, 1, 2};
    try (Program p = g.compile(cpu, new CompileOptions().keepStages(true), x.softmax(-1), x.matmul(w),
            x.argmax(1, false), x.sub(2.0).relu());
        Buffer xb = cpu.buffer(xv, 2, 3);
        Buffer wb = cpu.buffer(new float[] {1, 0, 0, 1, 1, 1}, 3, 2)) {
      List<Buffer> outs = p.run(xb, wb);
      float[] sm = outs.get(0).toFloatArray();
      for (int r = 0; r < 2; r++) {
        double m = Math.max(xv[r * 3], Math.max(xv[r * 3 + 1], xv[r * 3 + 2]));
        double s = 0;
        for (int c = 0; c < 3; c++) s += Math.exp(xv[r * 3 + c] - m);
        for (int c = 0; c < 3; c++) assertEquals(Math.exp(xv[r * 3 + c] - m) / s, sm[r * 3 + c], 1e-5);
      }
      assertArrayEquals(new float[] {4, 5, 5, 3}, outs.get(1).toFloatArray());
      assertArrayEquals(new int[] {2, 0}, outs.get(2).toIntArray());
      assertArrayEquals(new float[] {0, 0, 1, 1, 0, 0}, outs.get(3).toFloatArray());
      assertTrue(p.stage("schedule").contains("kernel"));
      assertFalse(p.kernelSource(0).isEmpty());
      outs.forEach(Buffer::close);
    }
  }

  @Test
  void explicitInputOrder() {
    UOp a = g.input(DType.INT64, 4);
    UOp b = g.input(DType.INT64, 4);
    try (Program p = g.compile(cpu, new CompileOptions().inputs(b, a), a.sub(b));
        Buffer ab = cpu.buffer(new long[] {10, 20, 30, 40}, 4);
        Buffer bb = cpu.buffer(new long[] {1, 2, 3, 4}, 4)) {
      List<Buffer> outs = p.run(bb, ab); // b first, as asked
      assertArrayEquals(new long[] {9, 18, 27, 36}, outs.get(0).toLongArray());
      outs.forEach(Buffer::close);
    }
  }

  @Test
  void programsRunFromSeveralThreads() throws Exception {
    UOp x = g.input(DType.INT32, 8);
    ExecutorService pool = Executors.newFixedThreadPool(3);
    try (Program p = g.compile(cpu, x.mul(3))) {
      List<Future<?>> fs = new ArrayList<>();
      for (int t = 0; t < 3; t++) {
        final int off = t;
        fs.add(pool.submit(() -> {
          int[] data = new int[8];
          int[] want = new int[8];
          for (int i = 0; i < 8; i++) {
            data[i] = i + off;
            want[i] = 3 * data[i];
          }
          try (Buffer in = cpu.buffer(data, 8)) {
            List<Buffer> outs = p.run(in);
            assertArrayEquals(want, outs.get(0).toIntArray());
            outs.forEach(Buffer::close);
          }
        }));
      }
      for (Future<?> f : fs) f.get(60, TimeUnit.SECONDS);
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void everyTensorBuilder() {
    UOp img = g.input(DType.FLOAT32, 1, 2, 5, 5);
    UOp w = g.input(DType.FLOAT32, 3, 2, 3, 3);
    UOp bias = g.input(DType.FLOAT32, 3);
    assertArrayEquals(new long[] {1, 3, 5, 5}, img.conv2d(w, bias, null, new long[] {1, 1}, null, 1).shape());
    assertArrayEquals(new long[] {1, 3, 2, 2}, img.conv2d(w, null, new long[] {2, 2}, null, null, 1).shape());
    assertArrayEquals(new long[] {1, 2, 2, 2}, img.avgPool2d(new long[] {2, 2}, null, null).shape());
    assertArrayEquals(new long[] {1, 2, 3, 3}, img.maxPool2d(new long[] {3, 3}, new long[] {1, 1}, null).shape());
    UOp m = g.input(DType.FLOAT32, 2, 3);
    assertArrayEquals(new long[] {2, 4}, m.gemm(g.input(DType.FLOAT32, 3, 4)).shape());
    assertArrayEquals(new long[] {2, 3}, m.layerNorm(1, null, null, 1e-5).shape());
    for (UOp u : new UOp[] {m.logSoftmax(1), m.gelu(), m.sigmoid(), m.tanh(), m.log(), m.relu()}) {
      assertArrayEquals(new long[] {2, 3}, u.shape());
    }
    assertArrayEquals(new long[] {4, 3}, g.cat(0, m, m).shape());
    assertArrayEquals(new long[] {2, 2, 3}, g.stack(0, m, m).shape());
    assertArrayEquals(new long[] {4, 2}, g.rand(new long[] {4, 2}, 7, DType.FLOAT32).shape());
    assertArrayEquals(new long[] {3}, g.randn(new long[] {3}, 7, DType.FLOAT32).shape());
    UOp idx = g.input(DType.INT32, 3);
    UOp v = g.input(DType.FLOAT32, 4);
    assertArrayEquals(new long[] {4}, v.scatterAdd(0, idx, g.input(DType.FLOAT32, 3)).shape());
    try (Program p = g.compile(cpu, new CompileOptions().inputs(idx, v), g.arange(5, DType.INT32).cumsum(0),
            idx.oneHot(3, DType.INT32), v.gather(0, idx));
        Buffer ib = cpu.buffer(new int[] {2, 0, 2}, 3);
        Buffer vb = cpu.buffer(new float[] {10, 20, 30, 40}, 4)) {
      List<Buffer> r = p.run(ib, vb);
      assertArrayEquals(new int[] {0, 1, 3, 6, 10}, r.get(0).toIntArray());
      assertArrayEquals(new int[] {0, 0, 1, 1, 0, 0, 0, 0, 1}, r.get(1).toIntArray());
      assertArrayEquals(new float[] {30, 10, 30}, r.get(2).toFloatArray());
      r.forEach(Buffer::close);
    }
    ctx.setDebug(0);
  }

  // ---- error paths ----

  @Test
  void runErrors() {
    SinterException e = assertThrows(SinterException.class, () -> ctx.device("NOPE:7"));
    assertEquals(Code.DEVICE, e.code());
    assertTrue(e.getMessage().contains("NOPE"), e.getMessage());
    UOp x = g.input(DType.FLOAT32, 4, 4);
    assertThrows(SinterException.class, () -> x.matmul(g.input(DType.FLOAT32, 3, 4)));
    assertThrows(SinterException.class, () -> x.softmax(5), "axis out of range");
    Program p = g.compile(cpu, x.add(x));
    try (Buffer wrong = cpu.alloc(DType.INT32, 4, 4); Buffer out = p.allocOutput(0)) {
      e = assertThrows(SinterException.class, () -> p.run(new Buffer[] {wrong}, new Buffer[] {out}));
      assertEquals(Code.INVALID_ARG, e.code());
      assertTrue(e.getMessage().contains("input 0"), e.getMessage());
      assertThrows(SinterException.class, () -> p.run(new Buffer[0], new Buffer[] {out}), "missing input");
      assertThrows(SinterException.class, () -> p.stage("no-such-stage"));
      assertThrows(SinterException.class, () -> p.allocOutput(5));
    }
    try (Buffer b = cpu.buffer(new float[] {1, 2, 3, 4}, 4)) {
      assertTrue(assertThrows(SinterException.class, () -> b.copyFrom(new int[] {1, 2, 3, 4}))
          .getMessage().contains("float32"));
      assertEquals(Code.INVALID_ARG, assertThrows(SinterException.class,
          () -> b.copyFrom(new float[] {1, 2})).code());
      try (Buffer v = b.view(2, 2)) {
        assertArrayEquals(new float[] {3, 4}, v.toFloatArray());
      }
      assertThrows(SinterException.class, () -> b.view(3, 2), "a view past the end");
    }
    p.close();
    assertThrows(IllegalStateException.class, () -> p.run());
  }

  @Test
  void launchTimeVariables() {
    UOp x = g.input(DType.FLOAT32, 4);
    UOp y = x.mul(g.var("scale", 1, 100).cast(DType.FLOAT32));
    try (Program p = g.compile(cpu, y);
        Buffer xb = cpu.buffer(new float[] {1, 2, 3, -4}, 4);
        Buffer out = p.allocOutput(0)) {
      assertEquals(List.of(new Program.Var("scale", 1, 100)), p.vars());
      for (long s : new long[] {3, 10}) {
        p.run(new Buffer[] {xb}, new Buffer[] {out}, java.util.Map.of("scale", s));
        assertArrayEquals(new float[] {s, 2 * s, 3 * s, -4 * s}, out.toFloatArray());
      }
      SinterException e =
          assertThrows(SinterException.class, () -> p.run(new Buffer[] {xb}, new Buffer[] {out}, java.util.Map.of("scale", 0L)));
      assertEquals(Code.INVALID_ARG, e.code());
      assertTrue(e.getMessage().contains("outside its range [1, 100]"), e.getMessage());
      e = assertThrows(SinterException.class, () -> p.run(new Buffer[] {xb}, new Buffer[] {out}));
      assertTrue(e.getMessage().contains("scale is not bound"), e.getMessage());
    }
  }
}
