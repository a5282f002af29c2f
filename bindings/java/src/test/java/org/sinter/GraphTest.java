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

class GraphTest {
  private Context ctx;
  private Graph g;

  @BeforeEach
  void open() {
    ctx = new Context();
    g = ctx.graph();
  }

  @AfterEach
  void close() {
    g.close();
    ctx.close();
  }

  private UOp matrix(long rows, long cols) {
    return g.buffer(DType.FLOAT32, rows * cols, "CPU").reshape(rows, cols);
  }

  @Test
  void versionMatchesHeader() {
    assertEquals(Sinter.HEADER_VERSION, Sinter.versionNumber());
    assertTrue(Sinter.version().startsWith("0."), Sinter.version());
  }

  @Test
  void buildAndQuery() {
    UOp a = matrix(2, 3);
    UOp b = matrix(2, 3);
    UOp y = a.add(b).mul(2.0);
    assertEquals(Op.MUL, y.op());
    assertEquals(DType.FLOAT32, y.dtype());
    assertArrayEquals(new long[] {2, 3}, y.shape());
    UOp s = y.sum(1);
    assertEquals(Op.REDUCE, s.op());
    assertArrayEquals(new long[] {2, 1}, s.shape(), "reduced axes keep size 1");
    assertEquals(List.of(y), s.srcs());
    assertEquals("CPU", s.device());
    assertEquals(-1, s.axis(), "single-device tensors have no sharding axis");
    assertFalse(s.isPointer());
    assertEquals(AddrSpace.NONE, s.pointerAddrSpace());
    assertEquals(1, s.lanes());
    assertEquals(DType.BOOL, a.lt(b).dtype());
    assertEquals(DType.FLOAT32, a.lt(b).where(a, b).dtype());
    assertTrue(y.toString().contains("(mul "), y.toString());
    assertTrue(y.tree().contains("float32"));
    assertTrue(y.dot().contains("digraph"));
    assertEquals("Add", Op.ADD.cName());
    assertEquals("float32", DType.FLOAT32.cName());
    assertEquals(-1, g.sink(a).rank(), "void nodes have no shape");
    assertNull(g.sink(a).dims());
  }

  @Test
  void hashConsing() {
    UOp x = g.constFloat(DType.FLOAT32, 1.5);
    long n = g.nodeCount();
    assertEquals(x, g.constFloat(DType.FLOAT32, 1.5));
    assertEquals(x.hashCode(), g.constFloat(DType.FLOAT32, 1.5).hashCode());
    assertEquals(n, g.nodeCount());
    assertNotEquals(x, g.constFloat(DType.FLOAT32, 2.5));
  }

  @Test
  void symbolicAndSimplify() {
    UOp i = g.var("i", 0, 9);
    UOp four = g.constInt(DType.INDEX, 4);
    UOp e = i.mul(four).add(3).idiv(four); // ((i*4)+3)//4 == i for i in [0, 9]
    assertNotEquals(i, e);
    assertEquals(i, e.simplify());
    assertArrayEquals(new long[] {0, 9}, e.minMaxInt());
    double[] f = g.constFloat(DType.FLOAT32, 4.0).sqrt().minMaxFloat();
    assertTrue(f[0] <= f[1]);
    UOp p = g.param(0, DType.FLOAT32, new long[] {2, 3, 4}, "CPU");
    assertArrayEquals(new long[] {4, 2, 3}, p.permute(2, 0, 1).shape());
    assertArrayEquals(new long[] {2, 3, 4}, p.flip(true, false, true).shape());
    assertArrayEquals(new long[] {1, 3, 2}, p.shrink(new long[] {0, 0, 1}, new long[] {1, 3, 2}).shape());
    assertEquals(DType.INT32, p.cast(DType.INT32).dtype());
  }

  @Test
  void genericBuilderAndArgs() {
    UOp x = g.param(0, DType.FLOAT32, new long[] {2, 3, 4}, "CPU");
    assertEquals(Arg.param(0, "CPU", AddrSpace.GLOBAL), x.arg());
    UOp p = g.node(Op.PERMUTE, DType.FLOAT32, Arg.ofInts(2, 0, 1), x);
    assertEquals(x.permute(2, 0, 1), p, "generic and typed builders give the same node");
    assertEquals(Arg.ofInts(2, 0, 1), p.arg());
    assertEquals(x.cast(DType.INT32), g.node(Op.CAST, DType.INT32, Arg.ofDType(DType.INT32), x));
    assertEquals(Arg.reduce(Op.ADD, 1), x.sum(1).arg());
    assertEquals(Arg.var("n", 1, 16), g.var("n", 1, 16).arg());
    assertEquals(Arg.ofFloat(1.5), g.constFloat(DType.FLOAT32, 1.5).arg());
    assertEquals(Arg.ofInt(-7), g.constInt(DType.INT64, -7).arg());
    UOp r = g.node(Op.RANGE, DType.INDEX, Arg.range(0, AxisType.LOOP), g.constInt(DType.INDEX, 8));
    assertEquals(Arg.range(0, AxisType.LOOP), r.arg());
    assertArrayEquals(new long[] {0, 7}, r.minMaxInt());
    assertEquals(Arg.none(), x.reshape(6, 4).arg());
    // A shrink to a symbolic length reports that dimension as its uop.
    UOp n = g.var("n", 1, 8);
    UOp buf = g.buffer(DType.FLOAT32, 8, null);
    UOp part = g.node(Op.SHRINK, DType.FLOAT32, Arg.none(), buf,
        g.node(Op.STACK, DType.INDEX, Arg.none(), g.constInt(DType.INDEX, 0)),
        g.node(Op.STACK, DType.INDEX, Arg.none(), n));
    List<Dim> dims = part.dims();
    assertEquals(1, dims.size());
    assertEquals(n, dims.get(0).sym());
    assertThrows(SinterException.class, part::shape, "symbolic shapes have no static sizes");
    SinterException e = assertThrows(SinterException.class,
        () -> g.node(Op.PERMUTE, DType.FLOAT32, Arg.ofDType(DType.INT32), x));
    assertEquals(Code.INVALID_ARG, e.code());
  }

  // ---- error paths ----

  @Test
  void shapeErrorThrowsWithTheCMessage() {
    UOp a = matrix(2, 3);
    SinterException e = assertThrows(SinterException.class, () -> a.reshape(4, 2));
    assertEquals(Code.INVALID_ARG, e.code());
    assertTrue(e.getMessage().contains("sn_uop_reshape"), e.getMessage());
    assertTrue(e.getMessage().contains("(2,3)") && e.getMessage().contains("(4,2)"), e.getMessage());
    assertThrows(SinterException.class, () -> a.add(matrix(3, 5)), "shapes that do not broadcast");
    // The graph is still usable after an error.
    assertArrayEquals(new long[] {3, 2}, a.reshape(3, 2).shape());
  }

  @Test
  void otherErrors() {
    UOp a = matrix(2, 2);
    assertEquals(Code.INVALID_ARG, assertThrows(SinterException.class,
        () -> g.constFloat(DType.INT32, 1.5)).code());
    assertThrows(SinterException.class, () -> a.reduce(Op.SUB, 0), "only ADD, MAX, MUL reduce");
    assertThrows(SinterException.class, () -> a.permute(0, 0));
    assertThrows(SinterException.class, () -> a.minMaxInt(), "float nodes have no integer bounds");
    assertThrows(SinterException.class, () -> g.alu(Op.INVALID, a));
    assertThrows(IllegalArgumentException.class, () -> a.pad(new long[] {0}, new long[] {1, 2}));
    assertThrows(IllegalArgumentException.class, () -> g.buffer(DType.INT32, 4, null).mul(2.5));
  }

  @Test
  void foreignAndClosed() {
    try (Graph other = ctx.graph()) {
      UOp b = other.constInt(DType.INT32, 1);
      UOp a = g.constInt(DType.INT32, 1);
      assertThrows(IllegalArgumentException.class, () -> a.add(b));
    }
    UOp a = g.constInt(DType.INT32, 1);
    Graph g2 = ctx.graph();
    UOp c = g2.constInt(DType.INT32, 2);
    ctx.close(); // graphs keep the C context alive
    assertEquals(Op.ADD, c.add(c).op());
    g2.close();
    g2.close(); // idempotent
    assertTrue(g2.isClosed());
    assertThrows(IllegalStateException.class, c::op);
    assertThrows(IllegalStateException.class, () -> c.add(c));
    assertThrows(IllegalStateException.class, ctx::graph);
    assertEquals(Op.CONST, a.op()); // g is still open
  }

  @Test
  void graphIsSafeToShareBetweenThreads() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<?>> fs = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        fs.add(pool.submit(() -> {
          for (int i = 0; i < 50; i++) {
            UOp x = g.constInt(DType.INT64, i % 7);
            assertEquals(Op.ADD, x.add(1).op());
          }
        }));
      }
      for (Future<?> f : fs) f.get(60, TimeUnit.SECONDS);
    } finally {
      pool.shutdownNow();
    }
    // The constants 0..6 (the 1 of x + 1 among them) and their 7 sums: every thread built the same nodes.
    assertEquals(14, g.nodeCount());
  }

  @Test
  void cleanerReleasesForgottenGraphs() throws InterruptedException {
    long before = NativeHandle.LIVE.get();
    for (int i = 0; i < 50; i++) {
      ctx.graph().constInt(DType.INT32, i); // never closed: the Cleaner is the safety net
    }
    assertTrue(NativeHandle.LIVE.get() >= before + 50);
    for (int tries = 0; tries < 200 && NativeHandle.LIVE.get() > before; tries++) {
      System.gc();
      Thread.sleep(10);
    }
    assertEquals(before, NativeHandle.LIVE.get(), "forgotten graphs were not released");
  }
}
