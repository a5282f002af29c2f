package org.sinter;

import static org.junit.jupiter.api.Assertions.*;

import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Kernel opts as data, BEAM search and the disk-cache switch (API version 6). */
class OptsTest {
  private static final Pattern LINE = Pattern.compile("[0-9a-f]{16}:.*");

  private Context ctx;
  private Device cpu;
  private Graph g;
  private UOp y;
  private final float[] data = new float[512];
  private final float[] want = new float[8];

  /** A row-sum of squares of an (8,64) f32 input; the values are small integers, so the sums are exact. */
  @BeforeEach
  void open() {
    ctx = new Context();
    cpu = ctx.device("CPU");
    g = ctx.graph();
    UOp x = g.input(DType.FLOAT32, 8, 64);
    y = x.mul(x).sum(1);
    for (int i = 0; i < 512; i++) data[i] = (float) ((i * 7) % 13) - 6.0f;
    for (int r = 0; r < 8; r++) for (int k = 0; k < 64; k++) want[r] += data[r * 64 + k] * data[r * 64 + k];
  }

  @AfterEach
  void close() {
    g.close();
    cpu.close();
    ctx.close();
  }

  private float[] run(Program p) {
    try (Buffer in = cpu.buffer(data, 8, 64)) {
      List<Buffer> outs = p.run(in);
      try (Buffer out = outs.get(0)) {
        return out.toFloatArray();
      }
    }
  }

  private SinterException compileError(CompileOptions options) {
    return assertThrows(SinterException.class, () -> g.compile(cpu, options, y).close());
  }

  @Test
  void kernelOptsRoundTrip() {
    String line;
    try (Program p = g.compile(cpu, new CompileOptions().beam(0), y)) {
      assertEquals(1, p.kernelNames().size());
      line = p.kernelOpts(0);
      assertTrue(LINE.matcher(line).matches(), line);
      assertTrue(line.substring(17).contains("UNROLL("), "the heuristic's vector accumulator of a row sum: " + line);
      assertArrayEquals(want, run(p));
      SinterException e = assertThrows(SinterException.class, () -> p.kernelOpts(1));
      assertEquals(Code.INVALID_ARG, e.code());
    }
    // Forced back (and not served from the program cache): the identical line, the same numbers.
    try (Program q = g.compile(cpu, new CompileOptions().beam(0).useCache(false).kernelOpts(line), y)) {
      assertEquals(line, q.kernelOpts(0));
      assertArrayEquals(want, run(q));
    }
    // Nothing after the colon: no opts at all for that kernel, still the right numbers.
    String bare = line.substring(0, 17);
    try (Program r = g.compile(cpu, new CompileOptions().useCache(false).kernelOpts(List.of(bare)), y)) {
      assertEquals(bare, r.kernelOpts(0));
      assertArrayEquals(want, run(r));
    }
  }

  @Test
  void beamSearch() {
    ctx.setDiskCache(false); // search here, not a result another test kept on disk
    try (Program p = g.compile(cpu, new CompileOptions().beam(2), y)) {
      assertTrue(LINE.matcher(p.kernelOpts(0)).matches(), p.kernelOpts(0));
      assertArrayEquals(want, run(p));
    }
    for (int beam : new int[] {65, -2}) {
      SinterException e = compileError(new CompileOptions().beam(beam));
      assertEquals(Code.INVALID_ARG, e.code());
      assertTrue(e.getMessage().contains("beam"), e.getMessage());
    }
  }

  @Test
  void kernelOptsErrors() {
    String[][] cases = {
      {"not a line", "<kernel id>: <opts>"},
      {"00000000000000ab: UPCAST(0,4)", "does not have"},
      {"00000000000000ab: UPCAST(0,4) WIDEN(1)", "'WIDEN(1)' is not an opt"},
    };
    for (String[] c : cases) {
      SinterException e = compileError(new CompileOptions().kernelOpts(c[0]));
      assertEquals(Code.INVALID_ARG, e.code(), c[0]);
      assertTrue(e.getMessage().contains(c[1]), e.getMessage());
    }
    // A line that names the kernel twice, through several lines: every line reaches C.
    String line;
    try (Program p = g.compile(cpu, y)) {
      line = p.kernelOpts(0);
    }
    SinterException e = compileError(new CompileOptions().kernelOpts(line, line));
    assertTrue(e.getMessage().contains("a second time"), e.getMessage());
    assertThrows(NullPointerException.class, () -> new CompileOptions().kernelOpts("x", null));
  }

  @Test
  void diskCacheSwitch() {
    ctx.setDiskCache(false);
    try (Program p = g.compile(cpu, new CompileOptions().useCache(false), y)) {
      assertArrayEquals(want, run(p));
    }
    ctx.setDiskCache(true);
    try (Program p = g.compile(cpu, new CompileOptions().useCache(false), y)) {
      assertArrayEquals(want, run(p));
    }
  }
}
