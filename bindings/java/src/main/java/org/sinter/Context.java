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

  long ptr() {
    return handle.get("Context");
  }

  @Override
  public void close() {
    handle.close();
  }
}
