package org.sinter;

import org.sinter.jni.SinterNative;
import org.sinter.jni.SinterNativeConstants;

/** Library-wide information. */
public final class Sinter {
  private Sinter() {}

  /** The version of the sinter.h the glue was generated from (MAJOR * 10000 + MINOR * 100 + PATCH). */
  public static final int HEADER_VERSION = SinterNativeConstants.SN_VERSION_NUMBER;

  /** The library's version string, e.g. "0.1.0". */
  public static String version() {
    return SinterNative.sn_version_string();
  }

  /** The library's version number; compare with {@link #HEADER_VERSION}. */
  public static long versionNumber() {
    return SinterNative.sn_version_number();
  }
}
