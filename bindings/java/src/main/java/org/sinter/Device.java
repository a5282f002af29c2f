package org.sinter;

import java.lang.ref.Reference;
import org.sinter.jni.SinterNative;

/**
 * A device that runs programs ("CPU", "CL", ...) or, for "C", only compiles them to C source. Thread-safe;
 * buffers and programs keep it alive as long as they need it.
 */
public final class Device implements AutoCloseable {
  private final NativeHandle handle;

  Device(Context ctx, String name) {
    this(ctx, SinterNative.sn_device_open(ctx.ptr(), name));
  }

  private Device(Context ctx, long p) {
    Reference.reachabilityFence(ctx);
    handle = new NativeHandle(this, p, SinterNative::sn_device_release);
  }

  /**
   * A compile-only device for architecture {@code arch} of GPU backend {@code backend}: ("CUDA", "sm_90") makes
   * PTX, ("AMD", "gfx942") AMDGPU code objects, without the driver or a GPU. Programs compile for it
   * ({@link Program#kernelSource}, {@link Program#kernelBinary}) but running one fails with DEVICE. A backend
   * that cannot is DEVICE, an unknown arch INVALID_ARG, each named. (API version 8.)
   */
  public static Device openTarget(Context ctx, String backend, String arch) {
    return new Device(ctx, SinterNative.sn_device_open_target(ctx.ptr(), backend, arch));
  }

  long ptr() {
    return handle.get("Device");
  }

  /** The canonical name, e.g. "CPU". */
  public String name() {
    try {
      return SinterNative.sn_device_name(ptr());
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** What the device is, e.g. the OpenCL device and platform ("pthread-haswell-AMD EPYC (Portable Computing
   * Language, OpenCL 3.0 ...)"). */
  public String description() {
    try {
      return SinterNative.sn_device_description(ptr());
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** A new buffer of {@code dtype} and {@code shape} on this device (contents undefined). */
  public Buffer alloc(DType dtype, long... shape) {
    try {
      return new Buffer(SinterNative.sn_buffer_alloc(ptr(), dtype.value(), shape, shape.length));
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** A new float32 buffer of {@code shape} holding {@code data}. */
  public Buffer buffer(float[] data, long... shape) {
    Buffer b = alloc(DType.FLOAT32, shape);
    return fill(b, () -> b.copyFrom(data));
  }

  /** A new float64 buffer of {@code shape} holding {@code data}. */
  public Buffer buffer(double[] data, long... shape) {
    Buffer b = alloc(DType.FLOAT64, shape);
    return fill(b, () -> b.copyFrom(data));
  }

  /** A new int32 buffer of {@code shape} holding {@code data}. */
  public Buffer buffer(int[] data, long... shape) {
    Buffer b = alloc(DType.INT32, shape);
    return fill(b, () -> b.copyFrom(data));
  }

  /** A new int64 buffer of {@code shape} holding {@code data}. */
  public Buffer buffer(long[] data, long... shape) {
    Buffer b = alloc(DType.INT64, shape);
    return fill(b, () -> b.copyFrom(data));
  }

  /**
   * Imports a DLPack tensor as a buffer on this (CPU) device. A writable tensor with compact row-major strides and
   * element-aligned data becomes the buffer without copying: the buffer owns the tensor and calls its deleter when
   * the buffer and its views are released. Other tensors (strided, read-only) are copied, and their deleter runs
   * before this returns. Either way {@code tensor} is closed afterwards. On failure (SinterException: UNSUPPORTED
   * for a dtype Sinter lacks, VERSION for a tensor that is not DLPack 1.x, ...) the tensor still owns it.
   */
  public Buffer fromDLPack(DLPackTensor tensor) {
    if (tensor == null) throw new IllegalArgumentException("tensor is null");
    try {
      return new Buffer(tensor.consume(t -> SinterNative.sn_buffer_from_dlpack(ptr(), t)));
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  private static Buffer fill(Buffer b, Runnable copy) {
    try {
      copy.run();
      return b;
    } catch (RuntimeException e) {
      b.close();
      throw e;
    }
  }

  @Override
  public String toString() {
    return handle.isClosed() ? "Device[closed]" : "Device[" + name() + "]";
  }

  /** Releases this reference. Idempotent. */
  @Override
  public void close() {
    handle.close();
  }
}
