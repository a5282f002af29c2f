package org.sinter.jni;

/**
 * Loads the glue and prints where from: {@code java org.sinter.jni.LoadCheck [EXPECTED_PREFIX]} exits 1 when
 * {@link NativeLibrary#loadedFrom()} does not start with EXPECTED_PREFIX (the java.installed test).
 */
public final class LoadCheck {
  private LoadCheck() {}

  public static void main(String[] args) {
    String version = SinterNative.sn_version_string(); // loads the glue
    String from = NativeLibrary.loadedFrom();
    System.out.println("Sinter " + version + ": libsinterjni loaded from " + from);
    if (args.length > 0 && (from == null || !from.startsWith(args[0]))) {
      System.err.println("expected a place starting with: " + args[0]);
      System.exit(1);
    }
  }
}
