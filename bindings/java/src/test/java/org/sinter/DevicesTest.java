package org.sinter;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Devices and backends (API version 4): counts, descriptions, buffer-to-buffer copies and C export. */
class DevicesTest {
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

  /** x * x + 1 over a float32 (3, 5) input on {@code dev}. */
  private Program squarePlusOne(Device dev) {
    try (Graph g = ctx.graph()) {
      UOp x = g.input(DType.FLOAT32, new long[] {3, 5}, dev.name());
      return g.compile(dev, x.mul(x).add(1.0));
    }
  }

  private static float[] ramp(int n) {
    float[] v = new float[n];
    for (int i = 0; i < n; i++) v[i] = i;
    return v;
  }

  @Test
  void deviceCountsAndDescriptions() {
    assertEquals(8, ctx.deviceCount("CPU"));
    assertEquals(1, ctx.deviceCount("C"));
    assertTrue(ctx.deviceCount("CL") >= 0);
    SinterException e = assertThrows(SinterException.class, () -> ctx.deviceCount("METAL"));
    assertEquals(Code.NOT_FOUND, e.code());
    assertTrue(e.getMessage().startsWith("sn_device_count: "), e.getMessage());
    assertTrue(e.getMessage().contains("METAL"), e.getMessage());
    assertFalse(cpu.description().isEmpty());
    try (Device c = ctx.device("C")) {
      assertFalse(c.description().isEmpty());
    }
  }

  @Test
  void gpuTargetsCompileWithoutAGpu() {
    try (Device cuda = Device.openTarget(ctx, "CUDA", "sm_80"); Program p = squarePlusOne(cuda)) {
      assertEquals("CUDA", cuda.name());
      String ptx = p.kernelSource(0);
      assertTrue(ptx.contains(".target sm_80"), ptx);
      assertArrayEquals(ptx.getBytes(java.nio.charset.StandardCharsets.UTF_8), p.kernelBinary(0));
    }
    try (Device amd = Device.openTarget(ctx, "AMD", "gfx942"); Program p = squarePlusOne(amd)) {
      byte[] elf = p.kernelBinary(0);
      assertArrayEquals(new byte[] {0x7f, 'E', 'L', 'F'}, java.util.Arrays.copyOf(elf, 4));
    }
    SinterException e = assertThrows(SinterException.class, () -> Device.openTarget(ctx, "CUDA", "sm_1"));
    assertEquals(Code.INVALID_ARG, e.code());
    assertTrue(e.getMessage().contains("sm_1"), e.getMessage());
    try (Program p = squarePlusOne(cpu)) {
      assertEquals(Code.UNSUPPORTED, assertThrows(SinterException.class, () -> p.kernelBinary(0)).code());
    }
  }

  @Test
  void exportC() {
    try (Device c = ctx.device("C"); Program p = squarePlusOne(c); Buffer x = c.alloc(DType.FLOAT32, 3, 5)) {
      String src = p.exportC("square_plus_one");
      assertTrue(src.contains("int square_plus_one(void *const *inputs, void *const *outputs)"), src);
      SinterException e = assertThrows(SinterException.class, () -> p.exportC("1st"));
      assertEquals(Code.INVALID_ARG, e.code());
      assertTrue(e.getMessage().contains("not a C identifier"), e.getMessage());
      // Device "C" only compiles.
      e = assertThrows(SinterException.class, () -> p.run(x));
      assertEquals(Code.DEVICE, e.code());
      assertTrue(e.getMessage().contains("runs nothing"), e.getMessage());
    }
    try (Program p = squarePlusOne(cpu)) {
      SinterException e = assertThrows(SinterException.class, () -> p.exportC("square_plus_one"));
      assertEquals(Code.UNSUPPORTED, e.code());
      assertTrue(e.getMessage().startsWith("sn_program_export_c: "), e.getMessage());
    }
  }

  @Test
  void copyBetweenBuffers() {
    float[] want = ramp(15);
    for (int i = 0; i < want.length; i++) want[i] = want[i] * want[i] + 1;
    try (Program p = squarePlusOne(cpu);
        Buffer x = cpu.buffer(ramp(15), 3, 5);
        Buffer flat = cpu.alloc(DType.FLOAT32, 15);
        Buffer ints = cpu.alloc(DType.INT32, 3, 5);
        Buffer small = cpu.alloc(DType.FLOAT32, 14)) {
      List<Buffer> outs = p.run(x);
      flat.copyFrom(outs.get(0)); // same dtype and element count; the shapes may differ
      assertArrayEquals(want, flat.toFloatArray());
      SinterException e = assertThrows(SinterException.class, () -> ints.copyFrom(outs.get(0)));
      assertEquals(Code.INVALID_ARG, e.code());
      assertTrue(e.getMessage().contains("does not fit"), e.getMessage());
      assertEquals(Code.INVALID_ARG, assertThrows(SinterException.class, () -> small.copyFrom(outs.get(0))).code());
      assertThrows(IllegalArgumentException.class, () -> flat.copyFrom((Buffer) null));
      outs.forEach(Buffer::close);
      assertThrows(IllegalStateException.class, () -> flat.copyFrom(outs.get(0)));
    }
    // Views of one buffer: disjoint ones copy, overlapping ones are refused.
    try (Buffer b = cpu.buffer(new float[] {1, 2, 3, 4}, 4);
        Buffer lo = b.view(0, 2);
        Buffer hi = b.view(2, 2);
        Buffer mid = b.view(1, 2)) {
      lo.copyFrom(hi);
      assertArrayEquals(new float[] {3, 4, 3, 4}, b.toFloatArray());
      SinterException e = assertThrows(SinterException.class, () -> lo.copyFrom(mid));
      assertEquals(Code.INVALID_ARG, e.code());
      assertTrue(e.getMessage().contains("overlaps"), e.getMessage());
    }
  }

  @Test
  void copyAcrossDevices() {
    assumeTrue(ctx.deviceCount("CL") > 0, "no OpenCL device");
    try (Device cl = ctx.device("CL");
        Buffer src = cpu.buffer(ramp(15), 3, 5);
        Buffer onCl = cl.alloc(DType.FLOAT32, 3, 5);
        Buffer back = cpu.alloc(DType.FLOAT32, 3, 5)) {
      assertFalse(cl.description().isEmpty());
      assertEquals(cl.name(), onCl.deviceName());
      onCl.copyFrom(src);
      back.copyFrom(onCl);
      assertArrayEquals(ramp(15), back.toFloatArray());
    }
  }
}
