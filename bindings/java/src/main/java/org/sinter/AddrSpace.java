package org.sinter;

import static org.sinter.jni.SinterNativeConstants.*;

/** Address spaces of buffers and pointers (sn_addrspace). A value this version does not know reads as NONE. */
public enum AddrSpace {
  NONE(SN_ADDRSPACE_NONE),
  GLOBAL(SN_ADDRSPACE_GLOBAL),
  LOCAL(SN_ADDRSPACE_LOCAL),
  REG(SN_ADDRSPACE_REG);

  private final int value;

  AddrSpace(int value) {
    this.value = value;
  }

  /** The C API's number for this value. */
  public int value() {
    return value;
  }

  /** The constant for a C value (NONE when unknown). */
  public static AddrSpace fromValue(int value) {
    for (AddrSpace a : values()) {
      if (a.value == value) return a;
    }
    return NONE;
  }
}
