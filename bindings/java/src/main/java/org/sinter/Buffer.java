package org.sinter;

import java.lang.ref.Reference;
import org.sinter.jni.SinterNative;

/**
 * A typed, shaped block of device memory. Close it when done (a Cleaner releases forgotten ones). Typed copies
 * check that the Java array's element type is the buffer's dtype; the library checks the length.
 */
public final class Buffer implements AutoCloseable {
  private final NativeHandle handle;

  Buffer(long ptr) {
    handle = new NativeHandle(this, ptr, SinterNative::sn_buffer_release);
  }

  long ptr() {
    return handle.get("Buffer");
  }

  private void expect(DType want) {
    DType dt = dtype();
    if (dt != want) {
      throw new SinterException(Code.INVALID_ARG.value(),
          "Buffer: the buffer holds " + dt.cName() + ", the array " + want.cName());
    }
  }

  public void copyFrom(float[] data) {
    expect(DType.FLOAT32);
    try {
      SinterNative.snj_copy_in_f32(ptr(), data);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  public void copyFrom(double[] data) {
    expect(DType.FLOAT64);
    try {
      SinterNative.snj_copy_in_f64(ptr(), data);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** For int8 and uint8 buffers (the bytes as they are). */
  public void copyFrom(byte[] data) {
    DType dt = dtype();
    if (dt != DType.UINT8) expect(DType.INT8);
    try {
      SinterNative.snj_copy_in_i8(ptr(), data);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  public void copyFrom(int[] data) {
    expect(DType.INT32);
    try {
      SinterNative.snj_copy_in_i32(ptr(), data);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  public void copyFrom(long[] data) {
    expect(DType.INT64);
    try {
      SinterNative.snj_copy_in_i64(ptr(), data);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Copies the contents of {@code src} into this buffer: the same dtype and element count (the shapes may
   * differ), on this buffer's device or another (through host memory). Throws SinterException(INVALID_ARG)
   * otherwise, and for overlapping views of one buffer. Blocks until done.
   */
  public void copyFrom(Buffer src) {
    if (src == null) throw new IllegalArgumentException("src is null");
    try {
      SinterNative.sn_buffer_copy(ptr(), src.ptr());
    } finally {
      Reference.reachabilityFence(this);
      Reference.reachabilityFence(src);
    }
  }

  private int count() {
    long n = numel();
    if (n > Integer.MAX_VALUE) throw new IllegalStateException("buffer too large for a Java array: " + n);
    return (int) n;
  }

  public float[] toFloatArray() {
    expect(DType.FLOAT32);
    float[] out = new float[count()];
    try {
      SinterNative.snj_copy_out_f32(ptr(), out);
    } finally {
      Reference.reachabilityFence(this);
    }
    return out;
  }

  public double[] toDoubleArray() {
    expect(DType.FLOAT64);
    double[] out = new double[count()];
    try {
      SinterNative.snj_copy_out_f64(ptr(), out);
    } finally {
      Reference.reachabilityFence(this);
    }
    return out;
  }

  /** For int8 and uint8 buffers. */
  public byte[] toByteArray() {
    if (dtype() != DType.UINT8) expect(DType.INT8);
    byte[] out = new byte[count()];
    try {
      SinterNative.snj_copy_out_i8(ptr(), out);
    } finally {
      Reference.reachabilityFence(this);
    }
    return out;
  }

  public int[] toIntArray() {
    expect(DType.INT32);
    int[] out = new int[count()];
    try {
      SinterNative.snj_copy_out_i32(ptr(), out);
    } finally {
      Reference.reachabilityFence(this);
    }
    return out;
  }

  public long[] toLongArray() {
    expect(DType.INT64);
    long[] out = new long[count()];
    try {
      SinterNative.snj_copy_out_i64(ptr(), out);
    } finally {
      Reference.reachabilityFence(this);
    }
    return out;
  }

  /** The element type. */
  public DType dtype() {
    try {
      return DType.fromValue(SinterNative.sn_buffer_dtype(ptr()));
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** The shape. */
  public long[] shape() {
    try {
      long p = ptr();
      long[] s = new long[(int) SinterNative.sn_buffer_rank(p)];
      for (int i = 0; i < s.length; i++) s[i] = SinterNative.sn_buffer_dim(p, i);
      return s;
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** Number of elements. */
  public long numel() {
    try {
      return SinterNative.sn_buffer_numel(ptr());
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** Size in bytes. */
  public long nbytes() {
    try {
      return SinterNative.sn_buffer_nbytes(ptr());
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** The device's name ("CPU"). */
  public String deviceName() {
    try {
      return SinterNative.sn_buffer_device(ptr());
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** A view of {@code shape} elements from element {@code offset}, sharing this buffer's memory. */
  public Buffer view(long offset, long... shape) {
    try {
      return new Buffer(SinterNative.sn_buffer_view(ptr(), offset, shape, shape.length));
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Exports this buffer as a DLPack tensor without copying: its data is this buffer's memory, which it keeps alive
   * until the tensor is closed (its deleter runs), even after this buffer is closed. Buffers of the CPU and CUDA
   * devices (a CUDA tensor's data is a device address); others throw SinterException(UNSUPPORTED).
   */
  public DLPackTensor toDLPack() {
    try {
      return new DLPackTensor(SinterNative.sn_buffer_to_dlpack(ptr()));
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** Releases the buffer. Idempotent. */
  @Override
  public void close() {
    handle.close();
  }
}
