package org.sinter;

import static org.sinter.jni.SinterNativeConstants.*;

import org.sinter.jni.SinterNative;

/** Loop kinds of a Range (sn_axis_type). A value this version does not know reads as INVALID. */
public enum AxisType {
  INVALID(SN_AXIS_INVALID),
  GLOBAL(SN_AXIS_GLOBAL),
  LOCAL(SN_AXIS_LOCAL),
  WARP(SN_AXIS_WARP),
  THREAD(SN_AXIS_THREAD),
  LOOP(SN_AXIS_LOOP),
  REDUCE(SN_AXIS_REDUCE),
  GROUP_REDUCE(SN_AXIS_GROUP_REDUCE),
  UPCAST(SN_AXIS_UPCAST),
  UNROLL(SN_AXIS_UNROLL);

  private final int value;

  AxisType(int value) {
    this.value = value;
  }

  /** The C API's number for this value. */
  public int value() {
    return value;
  }

  /** The library's name, e.g. "LOOP". */
  public String cName() {
    String n = SinterNative.sn_axis_type_name(value);
    return n != null ? n : name();
  }

  /** The constant for a C value (INVALID when unknown). */
  public static AxisType fromValue(int value) {
    for (AxisType a : values()) {
      if (a.value == value) return a;
    }
    return INVALID;
  }
}
