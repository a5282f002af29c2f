package org.sinter;

/**
 * DLPack tensors made the way another library would (libsinterjni_test.so, from src/test/c/foreign_tensor.c):
 * float32 data in C memory and a deleter that only counts its calls. {@link #free} releases one; nothing else
 * does. The library's path comes in the system property sinter.test.support.
 */
final class ForeignTensor {
  static {
    System.load(System.getProperty("sinter.test.support"));
  }

  private ForeignTensor() {}

  /** A tensor's address; strides null for compact row-major data. */
  static native long create(float[] values, long[] shape, long[] strides, long flags, int code, int bits, int major);

  static long create(float[] values, long... shape) {
    return create(values, shape, null, 0, DLPackTensor.CODE_FLOAT, 32, 1);
  }

  /** How many times the tensor's deleter has run. */
  static native int deleted(long tensor);

  /** The tensor's data pointer. */
  static native long data(long tensor);

  static native void free(long tensor);

  /** Reads and writes float memory at a data address, e.g. DLPackTensor.dataAddress(). */
  static native float peekFloat(long data, long index);

  static native void pokeFloat(long data, long index, float value);
}
