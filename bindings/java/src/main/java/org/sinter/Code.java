package org.sinter;

import static org.sinter.jni.SinterNativeConstants.*;

/** Error codes (sn_code). A code this version does not know reads as INTERNAL. */
public enum Code {
  OK(SN_OK),
  INVALID_ARG(SN_E_INVALID_ARG),
  UNSUPPORTED(SN_E_UNSUPPORTED),
  COMPILE(SN_E_COMPILE),
  DEVICE(SN_E_DEVICE),
  OUT_OF_MEMORY(SN_E_OUT_OF_MEMORY),
  VERSION(SN_E_VERSION),
  NOT_FOUND(SN_E_NOT_FOUND),
  INTERNAL(SN_E_INTERNAL);

  private final int value;

  Code(int value) {
    this.value = value;
  }

  /** The C API's number for this code. */
  public int value() {
    return value;
  }

  /** The constant for a C value (INTERNAL when unknown). */
  public static Code fromValue(int value) {
    for (Code c : values()) {
      if (c.value == value) return c;
    }
    return INTERNAL;
  }
}
