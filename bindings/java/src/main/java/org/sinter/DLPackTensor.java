package org.sinter;

import org.sinter.jni.SinterNative;
import org.sinter.jni.SinterNativeConstants;

/**
 * One DLPack 1.x managed tensor ({@code DLManagedTensorVersioned}; {@code sn_dlpack_tensor} in sinter_dlpack.h)
 * that Java owns. Exactly one of these ends the ownership, so the tensor's deleter runs once:
 *
 * <ul>
 *   <li>{@link #close()} calls the deleter (a Cleaner does it for a forgotten tensor);
 *   <li>{@link Device#fromDLPack} hands the tensor to the new buffer, which calls the deleter when it no longer
 *       needs the memory;
 *   <li>{@link #release()} hands it to another library, which must then call the deleter.
 * </ul>
 *
 * <p>After any of them the object is closed: the accessors throw IllegalStateException, and close() does nothing.
 * Addresses are plain {@code long}s, so that other JVM libraries (JNI, the Foreign Function &amp; Memory API, JNA)
 * can read the struct and the data, or take the tensor over with {@link #release()}; {@link #adopt} takes a
 * tensor from them. The methods are thread-safe.
 */
public final class DLPackTensor implements AutoCloseable {
  /** DLDeviceType values. */
  public static final int DEVICE_CPU = SinterNativeConstants.SN_DLPACK_DEVICE_CPU;

  public static final int DEVICE_CUDA = SinterNativeConstants.SN_DLPACK_DEVICE_CUDA;
  public static final int DEVICE_CUDA_HOST = SinterNativeConstants.SN_DLPACK_DEVICE_CUDA_HOST;
  public static final int DEVICE_ROCM = SinterNativeConstants.SN_DLPACK_DEVICE_ROCM;

  /** DLDataTypeCode values. */
  public static final int CODE_INT = SinterNativeConstants.SN_DLPACK_INT;

  public static final int CODE_UINT = SinterNativeConstants.SN_DLPACK_UINT;
  public static final int CODE_FLOAT = SinterNativeConstants.SN_DLPACK_FLOAT;
  public static final int CODE_BFLOAT = SinterNativeConstants.SN_DLPACK_BFLOAT;
  public static final int CODE_BOOL = SinterNativeConstants.SN_DLPACK_BOOL;

  /** Bits of {@link #flags()}. */
  public static final long FLAG_READ_ONLY = SinterNativeConstants.SN_DLPACK_FLAG_READ_ONLY;

  public static final long FLAG_IS_COPIED = SinterNativeConstants.SN_DLPACK_FLAG_IS_COPIED;

  private final NativeHandle handle;

  DLPackTensor(long address) {
    handle = new NativeHandle(this, address, SinterNative::snj_dlpack_delete);
  }

  /**
   * Takes ownership of the {@code DLManagedTensorVersioned} at {@code address}, which another library produced,
   * for {@link Device#fromDLPack} or {@link #close()}. Only DLPack 1.x tensors have this layout; fromDLPack checks
   * the version.
   */
  public static DLPackTensor adopt(long address) {
    if (address == 0) throw new IllegalArgumentException("DLPackTensor.adopt: address is 0");
    return new DLPackTensor(address);
  }

  /** The address of the {@code DLManagedTensorVersioned}; this object still owns it. */
  public synchronized long address() {
    return handle.get("DLPackTensor");
  }

  /** Gives up ownership and returns the address: whoever receives it calls the deleter. Closes this object. */
  public synchronized long release() {
    return handle.take("DLPackTensor");
  }

  /** Hands the tensor to the buffer {@code consume} makes of it, only if that succeeds (see Device.fromDLPack). */
  synchronized long consume(java.util.function.LongUnaryOperator consume) {
    long buffer = consume.applyAsLong(handle.get("DLPackTensor")); // throws: we still own the tensor
    handle.take("DLPackTensor");
    return buffer;
  }

  /** Whether the tensor was deleted, imported or released. */
  public boolean isClosed() {
    return handle.isClosed();
  }

  private synchronized long[] fields() {
    long[] f = new long[12];
    SinterNative.snj_dlpack_fields(handle.get("DLPackTensor"), f);
    return f;
  }

  /** The DLPack major version (1). */
  public int versionMajor() {
    return (int) fields()[0];
  }

  /** The DLPack minor version. */
  public int versionMinor() {
    return (int) fields()[1];
  }

  /** {@code DLTensor.data}: the address of the memory; the first element is {@link #byteOffset()} after it. */
  public long dataAddress() {
    return fields()[2];
  }

  /** {@code DLTensor.byte_offset} (0 for Sinter's exports). */
  public long byteOffset() {
    return fields()[3];
  }

  /** The rank. */
  public int ndim() {
    return (int) fields()[4];
  }

  /** The element type's code: {@link #CODE_FLOAT}, {@link #CODE_INT}, ... */
  public int dtypeCode() {
    return (int) fields()[5];
  }

  /** The bits of one element (one lane). */
  public int dtypeBits() {
    return (int) fields()[6];
  }

  /** The lanes of one element (1 for everything Sinter exchanges). */
  public int dtypeLanes() {
    return (int) fields()[7];
  }

  /** Where the data lives: {@link #DEVICE_CPU}, ... */
  public int deviceType() {
    return (int) fields()[8];
  }

  /** The device's index. */
  public int deviceId() {
    return (int) fields()[9];
  }

  /** {@link #FLAG_READ_ONLY}, {@link #FLAG_IS_COPIED}. */
  public long flags() {
    return fields()[10];
  }

  /** The shape (a copy). */
  public synchronized long[] shape() {
    long p = handle.get("DLPackTensor");
    long[] s = new long[ndim()];
    SinterNative.snj_dlpack_dims(p, 0, s);
    return s;
  }

  /** The strides in elements (a copy), or null for compact row-major data, which is what Sinter exports. */
  public synchronized long[] strides() {
    long p = handle.get("DLPackTensor");
    long[] f = fields();
    if (f[11] == 0) return null;
    long[] s = new long[(int) f[4]];
    SinterNative.snj_dlpack_dims(p, 1, s);
    return s;
  }

  /** Calls the tensor's deleter unless it was imported or released. Idempotent. */
  @Override
  public synchronized void close() {
    handle.close();
  }

  @Override
  public synchronized String toString() {
    if (isClosed()) return "DLPackTensor[closed]";
    return "DLPackTensor[code " + dtypeCode() + " bits " + dtypeBits() + " shape " + java.util.Arrays.toString(shape())
        + "]";
  }
}
