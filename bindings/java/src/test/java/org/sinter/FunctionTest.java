package org.sinter;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Functions, Index, Slice and Binary (API version 5), and Stack, checked against hand-computed values. */
class FunctionTest {
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

  /** Compiles {@code outputs}, runs them on {@code inputs} and returns each output as float[]. */
  private float[][] run(Graph g, Buffer[] inputs, UOp... outputs) {
    try (Program p = g.compile(cpu, outputs)) {
      List<Buffer> outs = p.run(inputs);
      float[][] r = new float[outs.size()][];
      for (int i = 0; i < r.length; i++) {
        r[i] = outs.get(i).toFloatArray();
        outs.get(i).close();
      }
      return r;
    }
  }

  private static float relu(float v) {
    return Math.max(v, 0);
  }

  @Test
  void functionCalledTwiceOnDifferentArguments() {
    float[] av = {1, -2, 3, -4}, bv = {0.5f, 1, -5, 2}, cv = {-1, 4, 1, 5};
    try (Graph g = ctx.graph();
        Buffer ba = cpu.buffer(av, 4);
        Buffer bb = cpu.buffer(bv, 4);
        Buffer bc = cpu.buffer(cv, 4)) {
      Function f = g.function(new Function.Param(DType.FLOAT32, 4), new Function.Param(DType.FLOAT32, 4));
      assertEquals(2, f.numParams());
      assertEquals(0, f.numOutputs());
      UOp[] ps = f.params();
      f.end(ps[0].add(ps[1]).relu()); // relu(a + b)
      assertEquals(1, f.numOutputs());
      UOp a = g.input(DType.FLOAT32, 4), b = g.input(DType.FLOAT32, 4), c = g.input(DType.FLOAT32, 4);
      UOp y1 = f.call(a, b)[0];
      UOp y2 = f.call(c, a)[0];
      float[][] r = run(g, new Buffer[] {ba, bb, bc}, y1, y2);
      assertArrayEquals(new float[] {1.5f, 0, 0, 0}, r[0]);
      assertArrayEquals(new float[] {0, 2, 4, 1}, r[1]);
      for (int i = 0; i < 4; i++) {
        assertEquals(relu(av[i] + bv[i]), r[0][i]);
        assertEquals(relu(cv[i] + av[i]), r[1][i]);
      }
    }
  }

  @Test
  void precompiledFunctionCalledThreeTimes() {
    float[] av = {1, 2, -3, 0.5f}, bv = {2, -1, 4, 4};
    try (Graph g = ctx.graph();
        Buffer ba = cpu.buffer(av, 2, 2);
        Buffer bb = cpu.buffer(bv, 2, 2)) {
      Function f = g.function(new Function.Param(DType.FLOAT32, 2, 2), new Function.Param(DType.FLOAT32, 2, 2));
      f.setFlags(Function.PRECOMPILE);
      UOp x = f.param(0), y = f.param(1);
      f.end(x.mul(y).add(1.0), x.sub(y)); // (x*y + 1, x - y)
      UOp a = g.input(DType.FLOAT32, 2, 2), b = g.input(DType.FLOAT32, 2, 2);
      UOp[] r1 = f.call(a, b);
      assertEquals(2, r1.length);
      UOp[] r2 = f.call(r1[0], r1[1]); // on the first call's results
      UOp[] r3 = f.call(b, a);
      float[][] r = run(g, new Buffer[] {ba, bb}, r2[0], r2[1], r3[1]);
      for (int i = 0; i < 4; i++) {
        float s = av[i] * bv[i] + 1, d = av[i] - bv[i];
        assertEquals(s * d + 1, r[0][i], "r2[0][" + i + "]");
        assertEquals(s - d, r[1][i], "r2[1][" + i + "]");
        assertEquals(bv[i] - av[i], r[2][i], "r3[1][" + i + "]");
      }
      // a=1, b=2 -> (3, -1) -> (-2, 4); b - a = 1
      assertEquals(-2f, r[0][0]);
      assertEquals(4f, r[1][0]);
      assertEquals(1f, r[2][0]);
    }
  }

  @Test
  void functionErrorsCarryTheCMessage() {
    Graph g = ctx.graph();
    Function f = g.function(new Function.Param(DType.FLOAT32, 4), new Function.Param(DType.FLOAT32, 4));
    UOp a = g.input(DType.FLOAT32, 4), wrong = g.input(DType.FLOAT32, 5);
    SinterException e = assertThrows(SinterException.class, () -> f.call(a, a));
    assertTrue(e.getMessage().contains("no body yet"), e.getMessage());
    f.end(f.param(0).mul(f.param(1)));
    e = assertThrows(SinterException.class, () -> f.call(a, wrong));
    assertEquals(Code.INVALID_ARG, e.code());
    assertTrue(e.getMessage().startsWith("sn_function_call: "), e.getMessage());
    assertTrue(e.getMessage().contains("argument 1 is float32 (5,)"), e.getMessage());
    e = assertThrows(SinterException.class, () -> f.call(a));
    assertTrue(e.getMessage().contains("takes 2 arguments"), e.getMessage());
    e = assertThrows(SinterException.class, () -> f.end(a));
    assertTrue(e.getMessage().contains("ended already"), e.getMessage());
    e = assertThrows(SinterException.class, () -> f.param(2));
    assertTrue(e.getMessage().contains("out of range"), e.getMessage());
    e = assertThrows(SinterException.class, () -> f.setFlags(8));
    assertTrue(e.getMessage().contains("unknown flags"), e.getMessage());
    try (Graph other = ctx.graph()) {
      UOp x = other.input(DType.FLOAT32, 4);
      assertThrows(IllegalArgumentException.class, () -> f.call(a, x));
    }
    g.close();
    assertThrows(IllegalStateException.class, () -> f.call(a, a));
    assertThrows(IllegalStateException.class, () -> f.param(0));
  }

  @Test
  void indexGathersRowsAndReadsZeroOutOfRange() {
    try (Graph g = ctx.graph();
        Buffer table = cpu.buffer(new float[] {10, 11, 20, 21, 30, 31}, 3, 2);
        Buffer ids = cpu.buffer(new int[] {2, 0, 5, 1}, 4)) {
      UOp t = g.input(DType.FLOAT32, 3, 2);
      UOp idx = g.input(DType.INT32, 4);
      UOp rows = t.index(idx);
      assertArrayEquals(new long[] {4, 2}, rows.shape());
      // rows 2, 0, (5 is outside the axis: zeros), 1
      assertArrayEquals(new float[] {30, 31, 10, 11, 0, 0, 20, 21}, run(g, new Buffer[] {table, ids}, rows)[0]);
      SinterException e = assertThrows(SinterException.class, () -> t.index(t));
      assertEquals(Code.INVALID_ARG, e.code());
      assertTrue(e.getMessage().contains("integer"), e.getMessage());
    }
  }

  @Test
  void sliceReinterpretsStorage() {
    try (Graph g = ctx.graph(); Buffer table = cpu.buffer(new float[] {10, 11, 20, 21, 30, 31}, 3, 2)) {
      UOp t = g.input(DType.FLOAT32, 3, 2);
      UOp two = t.slice(3, 2, DType.FLOAT32); // elements 3 and 4 of the row-major storage
      UOp bits = t.slice(1, 1, DType.INT32); // element 1's bits
      try (Program p = g.compile(cpu, two, bits)) {
        List<Buffer> outs = p.run(table);
        assertArrayEquals(new float[] {21, 30}, outs.get(0).toFloatArray());
        assertArrayEquals(new int[] {0x41300000}, outs.get(1).toIntArray());
        assertEquals(0x41300000, Float.floatToRawIntBits(11f));
        for (Buffer b : outs) b.close();
      }
      SinterException e = assertThrows(SinterException.class, () -> t.slice(5, 2, DType.FLOAT32));
      assertEquals(Code.INVALID_ARG, e.code());
      assertTrue(e.getMessage().startsWith("sn_tensor_slice: "), e.getMessage());
      assertTrue(e.getMessage().contains("run past"), e.getMessage());
    }
  }

  @Test
  void binaryConstantBytesAsF32() {
    ByteBuffer bytes = ByteBuffer.allocate(12).order(ByteOrder.LITTLE_ENDIAN);
    bytes.putFloat(0.5f).putFloat(-4f).putFloat(7.25f);
    try (Graph g = ctx.graph(); Buffer xb = cpu.buffer(new float[] {2, 3, -1}, 3)) {
      UOp bin = g.binary(bytes.array());
      assertEquals(DType.UINT8, bin.dtype());
      assertArrayEquals(new long[] {12}, bin.shape());
      UOp x = g.input(DType.FLOAT32, 3);
      UOp scaled = x.mul(bin.bitcast(DType.FLOAT32)); // x * [0.5, -4, 7.25]
      UOp tail = bin.slice(4, 2, DType.FLOAT32); // bytes 4.. as two f32: [-4, 7.25]
      float[][] r = run(g, new Buffer[] {xb}, scaled, tail);
      assertArrayEquals(new float[] {1, -12, -7.25f}, r[0]);
      assertArrayEquals(new float[] {-4, 7.25f}, r[1]);
      SinterException e = assertThrows(SinterException.class, () -> bin.slice(8, 2, DType.FLOAT32));
      assertTrue(e.getMessage().contains("run past"), e.getMessage());
    }
  }

  @Test
  void stackValuesAlongEachAxis() {
    try (Graph g = ctx.graph();
        Buffer ba = cpu.buffer(new float[] {1, 2, 3}, 3);
        Buffer bb = cpu.buffer(new float[] {4, 5, 6}, 3)) {
      UOp a = g.input(DType.FLOAT32, 3), b = g.input(DType.FLOAT32, 3);
      UOp s0 = g.stack(0, a, b), s1 = g.stack(-1, a, b);
      assertArrayEquals(new long[] {3, 2}, s1.shape());
      float[][] r = run(g, new Buffer[] {ba, bb}, s0, s1);
      assertArrayEquals(new float[] {1, 2, 3, 4, 5, 6}, r[0]);
      assertArrayEquals(new float[] {1, 4, 2, 5, 3, 6}, r[1]);
      assertEquals(Code.INVALID_ARG, assertThrows(SinterException.class, () -> g.stack(2, a, b)).code());
    }
  }
}
