package org.sinter;

import static org.junit.jupiter.api.Assertions.*;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class DLPackTest {
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
  void exportReadsTheBuffer() {
    float[] values = {1, 2, 3, 4, 5, 6};
    Buffer b = cpu.buffer(values, 2, 3);
    DLPackTensor t = b.toDLPack();
    assertEquals(1, t.versionMajor());
    assertEquals(0, t.versionMinor());
    assertEquals(2, t.ndim());
    assertArrayEquals(new long[] {2, 3}, t.shape());
    assertNull(t.strides());
    assertEquals(DLPackTensor.CODE_FLOAT, t.dtypeCode());
    assertEquals(32, t.dtypeBits());
    assertEquals(1, t.dtypeLanes());
    assertEquals(DLPackTensor.DEVICE_CPU, t.deviceType());
    assertEquals(0, t.deviceId());
    assertEquals(0, t.flags());
    assertEquals(0, t.byteOffset());
    assertNotEquals(0, t.address());
    // Zero-copy: the tensor's data is the buffer's memory, both ways.
    long data = t.dataAddress();
    for (int i = 0; i < values.length; i++) assertEquals(values[i], ForeignTensor.peekFloat(data, i));
    ForeignTensor.pokeFloat(data, 0, 42);
    assertEquals(42, b.toFloatArray()[0]);
    // The export keeps the memory alive after the buffer is closed.
    b.close();
    assertEquals(6, ForeignTensor.peekFloat(data, 5));
    t.close();
    t.close(); // idempotent
    assertTrue(t.isClosed());
    assertThrows(IllegalStateException.class, t::shape);
    assertThrows(IllegalStateException.class, t::address);
  }

  @Test
  void roundTripIsZeroCopy() {
    try (Buffer f32 = cpu.buffer(new float[] {0.5f, -1, 2, 8}, 2, 2);
        Buffer f64 = cpu.buffer(new double[] {3.25}, new long[0]);
        Buffer i32 = cpu.buffer(new int[] {-7, 1 << 30}, 2);
        Buffer i64 = cpu.buffer(new long[] {-3, 1L << 40, 7}, 3, 1)) {
      for (Buffer b : new Buffer[] {f32, f64, i32, i64}) {
        DLPackTensor t = b.toDLPack();
        long data = t.dataAddress();
        try (Buffer back = cpu.fromDLPack(t)) {
          assertTrue(t.isClosed(), "fromDLPack took the tensor");
          t.close(); // no second deleter call
          assertEquals(b.dtype(), back.dtype());
          assertArrayEquals(b.shape(), back.shape());
          try (DLPackTensor again = back.toDLPack()) {
            assertEquals(data, again.dataAddress(), b.dtype() + ": the import copied");
          }
          switch (b.dtype()) {
            case FLOAT32:
              assertArrayEquals(b.toFloatArray(), back.toFloatArray());
              break;
            case FLOAT64:
              assertArrayEquals(b.toDoubleArray(), back.toDoubleArray());
              break;
            case INT32:
              assertArrayEquals(b.toIntArray(), back.toIntArray());
              break;
            default:
              assertArrayEquals(b.toLongArray(), back.toLongArray());
          }
        }
      }
    }
  }

  @Test
  void foreignTensorImportedWithoutCopyIsDeletedByItsLastBuffer() {
    float[] values = {1, 2, 3, 4, 5, 6};
    long f = ForeignTensor.create(values, 2, 3);
    try {
      DLPackTensor t = DLPackTensor.adopt(f);
      assertEquals(f, t.address());
      Buffer b = cpu.fromDLPack(t);
      t.close(); // closed by the import: must not call the deleter
      Buffer view = b.view(3, 3);
      try (DLPackTensor e = b.toDLPack()) {
        assertEquals(ForeignTensor.data(f), e.dataAddress(), "the import copied");
      }
      assertArrayEquals(new float[] {4, 5, 6}, view.toFloatArray());
      b.close();
      assertEquals(0, ForeignTensor.deleted(f), "deleted while a view still uses the memory");
      view.close();
      assertEquals(1, ForeignTensor.deleted(f));
    } finally {
      ForeignTensor.free(f);
    }
  }

  @Test
  void stridedOrReadOnlyTensorsAreCopiedAndDeletedAtOnce() {
    float[] values = {1, 2, 3, 4, 5, 6};
    long[] fs = {
      // the transpose of the (2, 3) data, and a read-only tensor
      ForeignTensor.create(values, new long[] {3, 2}, new long[] {1, 3}, 0, DLPackTensor.CODE_FLOAT, 32, 1),
      ForeignTensor.create(values, new long[] {2, 3}, null, DLPackTensor.FLAG_READ_ONLY, DLPackTensor.CODE_FLOAT, 32, 1)
    };
    float[][] want = {{1, 4, 2, 5, 3, 6}, values};
    for (int i = 0; i < fs.length; i++) {
      try (DLPackTensor t = DLPackTensor.adopt(fs[i]); Buffer b = cpu.fromDLPack(t)) {
        assertEquals(1, ForeignTensor.deleted(fs[i]), "the deleter runs once the data is copied");
        assertArrayEquals(want[i], b.toFloatArray());
      }
      assertEquals(1, ForeignTensor.deleted(fs[i]));
      ForeignTensor.free(fs[i]);
    }
  }

  @Test
  void aRefusedImportLeavesTheTensorToItsOwner() {
    long[] fs = {
      ForeignTensor.create(new float[] {1, 2}, new long[] {2}, null, 0, DLPackTensor.CODE_FLOAT, 8, 1),
      ForeignTensor.create(new float[] {1, 2}, new long[] {2}, null, 0, DLPackTensor.CODE_FLOAT, 32, 2)
    };
    Code[] codes = {Code.UNSUPPORTED, Code.VERSION};
    String[] texts = {"DLPack dtype", "is not 1.x"};
    for (int i = 0; i < fs.length; i++) {
      DLPackTensor t = DLPackTensor.adopt(fs[i]);
      SinterException e = assertThrows(SinterException.class, () -> cpu.fromDLPack(t));
      assertEquals(codes[i], e.code());
      assertTrue(e.getMessage().startsWith("sn_buffer_from_dlpack: ") && e.getMessage().contains(texts[i]),
          e.getMessage());
      assertFalse(t.isClosed());
      assertEquals(0, ForeignTensor.deleted(fs[i]));
      t.close();
      t.close();
      assertEquals(1, ForeignTensor.deleted(fs[i]));
      ForeignTensor.free(fs[i]);
    }
  }

  @Test
  void releaseHandsTheTensorOn() {
    long f = ForeignTensor.create(new float[] {1}, 1);
    try {
      DLPackTensor t = DLPackTensor.adopt(f);
      assertEquals(f, t.release());
      assertTrue(t.isClosed());
      assertThrows(IllegalStateException.class, t::release);
      t.close();
      assertEquals(0, ForeignTensor.deleted(f), "close after release called the deleter");
      DLPackTensor.adopt(f).close();
      assertEquals(1, ForeignTensor.deleted(f));
    } finally {
      ForeignTensor.free(f);
    }
  }

  @Test
  void theCleanerDeletesAForgottenTensor() throws InterruptedException {
    long f = ForeignTensor.create(new float[] {1}, 1);
    try {
      DLPackTensor.adopt(f); // never closed
      for (int tries = 0; tries < 200 && ForeignTensor.deleted(f) == 0; tries++) {
        System.gc();
        Thread.sleep(10);
      }
      assertEquals(1, ForeignTensor.deleted(f));
    } finally {
      ForeignTensor.free(f);
    }
  }

  @Test
  void errors() {
    assertThrows(IllegalArgumentException.class, () -> DLPackTensor.adopt(0));
    assertThrows(IllegalArgumentException.class, () -> cpu.fromDLPack(null));
    Buffer b = cpu.buffer(new float[] {1}, 1);
    DLPackTensor t = b.toDLPack();
    t.close();
    assertThrows(IllegalStateException.class, () -> cpu.fromDLPack(t));
    b.close();
    assertThrows(IllegalStateException.class, b::toDLPack);
    if (ctx.deviceCount("CL") > 0) { // only CPU and CUDA memory are exported
      try (Device cl = ctx.device("CL"); Buffer onCl = cl.buffer(new float[] {1, 2}, 2)) {
        SinterException e = assertThrows(SinterException.class, onCl::toDLPack);
        assertEquals(Code.UNSUPPORTED, e.code());
        assertTrue(e.getMessage().contains("CPU and CUDA memory only"), e.getMessage());
      }
    }
  }
}
