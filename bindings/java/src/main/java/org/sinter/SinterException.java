package org.sinter;

/**
 * A failed call: the C API's error code and its message, which names the function, the rule and the values
 * (e.g. {@code sn_uop_reshape: Reshape: element count changes: (2,3) to (4,2)}). Thrown by the JNI glue.
 */
public class SinterException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final int code;

  /** Called from JNI (signature {@code (ILjava/lang/String;)V}); keep it. */
  public SinterException(int code, String message) {
    super(message);
    this.code = code;
  }

  /** The error code. */
  public Code code() {
    return Code.fromValue(code);
  }

  /** The error code as the C API numbers it. */
  public int codeValue() {
    return code;
  }

  @Override
  public String toString() {
    return "SinterException[" + code() + "]: " + getMessage();
  }
}
