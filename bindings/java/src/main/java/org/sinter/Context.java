package org.sinter;

import org.sinter.jni.SinterNative;

/**
 * Library state shared by graphs. Thread-safe. Close it when done; graphs keep the C context alive as long as
 * they need it, so closing the Context first is fine.
 */
public final class Context implements AutoCloseable {
  private final NativeHandle handle;

  /** A new context. */
  public Context() {
    handle = new NativeHandle(this, SinterNative.sn_context_create(), SinterNative::sn_context_release);
  }

  /** A new empty graph in this context. */
  public Graph graph() {
    return new Graph(this);
  }

  /** Opens the device called {@code name} ("CPU", "CL", "CL:1", "C"; "" for the default). Throws
   * SinterException(DEVICE) for an unknown or unavailable device, naming the device and the reason. */
  public Device device(String name) {
    return new Device(this, name);
  }

  /**
   * How many devices backend {@code backend} ("CPU", "CL", "C") has on this machine: 0 when its driver or
   * hardware is missing ({@link #device} then says why). Throws SinterException(NOT_FOUND) for a backend this
   * build lacks.
   */
  public int deviceCount(String backend) {
    try {
      return SinterNative.sn_device_count(ptr(), backend);
    } finally {
      java.lang.ref.Reference.reachabilityFence(this);
    }
  }

  /** Sets the SN_DEBUG level (0 quiet .. 5 linearized UOps, printed to stderr). */
  public void setDebug(int level) {
    try {
      SinterNative.sn_context_set_debug(ptr(), level);
    } finally {
      java.lang.ref.Reference.reachabilityFence(this);
    }
  }

  /**
   * Whether this context's devices keep compiled kernels and BEAM results in the disk cache ({@code
   * $SN_CACHE_DIR}, else {@code $XDG_CACHE_HOME/sinter}, else {@code ~/.cache/sinter}). On by default; {@code
   * SN_CACHE=0} turns it off for the whole process. Applies to devices open now and later. (API version 6.)
   */
  public void setDiskCache(boolean enabled) {
    try {
      SinterNative.sn_context_set_disk_cache(ptr(), enabled ? 1 : 0);
    } finally {
      java.lang.ref.Reference.reachabilityFence(this);
    }
  }

  long ptr() {
    return handle.get("Context");
  }

  @Override
  public void close() {
    handle.close();
  }
}
