package org.sinter;

import static org.junit.jupiter.api.Assertions.*;

import org.junit.jupiter.api.Test;

class MultiDeviceTest {
  @Test
  void shardAllReduceAndTo() {
    try (Context ctx = new Context();
        Device cpu = ctx.device("CPU");
        Graph g = ctx.graph()) {
      assertEquals(8, ctx.deviceCount("CPU"));
      // each of two devices holds 4 values: (1,2,3,4) and (10,20,30,40); allReduce sums them
      UOp x = g.input(DType.FLOAT32, 8);
      UOp s = x.shard("CPU:0,CPU:1", 0);
      assertEquals(0, s.axis());
      UOp sum = s.allReduce();
      UOp twice = s.mul(2.0).to("CPU");
      try (Program p = g.compile(cpu, sum, twice);
          Buffer in = cpu.buffer(new float[] {1, 2, 3, 4, 10, 20, 30, 40}, 8);
          Buffer a = p.allocOutput(0);
          Buffer b = p.allocOutput(1)) {
        p.run(new Buffer[] {in}, new Buffer[] {a, b});
        assertArrayEquals(new float[] {11, 22, 33, 44}, a.toFloatArray());
        assertArrayEquals(new float[] {2, 4, 6, 8, 20, 40, 60, 80}, b.toFloatArray());
      }
      SinterException e = assertThrows(SinterException.class, () -> x.shard("CPU:0,CPU:1,CPU:2", 0));
      assertEquals(Code.INVALID_ARG, e.code());
      assertTrue(e.getMessage().contains("do not divide"), e.getMessage());
      e = assertThrows(SinterException.class, () -> x.to("CPU:9"));
      assertEquals(Code.DEVICE, e.code());
    }
  }
}
