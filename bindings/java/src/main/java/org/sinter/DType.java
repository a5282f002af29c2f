package org.sinter;

import static org.sinter.jni.SinterNativeConstants.*;

import org.sinter.jni.SinterNative;

/** Scalar data types (sn_dtype). The values come from sinter.h through the SWIG layer; the C enum is
 * append-only, and a value this version does not know reads as INVALID. */
public enum DType {
  INVALID(SN_DTYPE_INVALID),
  BOOL(SN_DTYPE_BOOL),
  INT8(SN_DTYPE_INT8),
  INT16(SN_DTYPE_INT16),
  INT32(SN_DTYPE_INT32),
  INT64(SN_DTYPE_INT64),
  UINT8(SN_DTYPE_UINT8),
  UINT16(SN_DTYPE_UINT16),
  UINT32(SN_DTYPE_UINT32),
  UINT64(SN_DTYPE_UINT64),
  FLOAT16(SN_DTYPE_FLOAT16),
  BFLOAT16(SN_DTYPE_BFLOAT16),
  FLOAT32(SN_DTYPE_FLOAT32),
  FLOAT64(SN_DTYPE_FLOAT64),
  FP8E4M3(SN_DTYPE_FP8E4M3),
  FP8E5M2(SN_DTYPE_FP8E5M2),
  INDEX(SN_DTYPE_INDEX),
  VOID(SN_DTYPE_VOID);

  private final int value;

  DType(int value) {
    this.value = value;
  }

  /** The C API's number for this value. */
  public int value() {
    return value;
  }

  /** The library's name, e.g. "float32". */
  public String cName() {
    String n = SinterNative.sn_dtype_name(value);
    return n != null ? n : name();
  }

  private static final DType[] BY_VALUE;

  static {
    int max = 0;
    for (DType v : values()) max = Math.max(max, v.value);
    BY_VALUE = new DType[max + 1];
    for (DType v : values()) BY_VALUE[v.value] = v;
  }

  /** The constant for a C value (INVALID when unknown). */
  public static DType fromValue(int value) {
    DType v = value >= 0 && value < BY_VALUE.length ? BY_VALUE[value] : null;
    return v != null ? v : INVALID;
  }
}
