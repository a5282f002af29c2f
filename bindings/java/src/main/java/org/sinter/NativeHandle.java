package org.sinter;

import java.lang.ref.Cleaner;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongConsumer;

/**
 * One owned reference to a C object, released exactly once: by {@link #close()} or, if the owner is
 * forgotten, by the {@link Cleaner} once the owner is unreachable (a safety net, not a substitute for close);
 * or handed elsewhere, unreleased, by {@link #take}. The cleaning action holds only the raw pointer and the
 * release function, never the owner.
 */
final class NativeHandle implements AutoCloseable {
  private static final Cleaner CLEANER = Cleaner.create();
  /** Handles not yet released (tests use it to check the Cleaner safety net). */
  static final AtomicLong LIVE = new AtomicLong();

  private static final class Release implements Runnable {
    private final LongConsumer release;
    private final AtomicLong ptr;

    Release(long ptr, LongConsumer release) {
      this.ptr = new AtomicLong(ptr);
      this.release = release;
    }

    @Override
    public void run() {
      long p = ptr.getAndSet(0);
      if (p != 0) {
        release.accept(p);
        LIVE.decrementAndGet();
      }
    }
  }

  private final Release state;
  private final Cleaner.Cleanable cleanable;

  NativeHandle(Object owner, long ptr, LongConsumer release) {
    this.state = new Release(ptr, release);
    LIVE.incrementAndGet();
    this.cleanable = CLEANER.register(owner, state);
  }

  /** The pointer; throws IllegalStateException after close. */
  long get(String what) {
    long p = state.ptr.get();
    if (p == 0) throw new IllegalStateException(what + " is closed");
    return p;
  }

  /** Gives up ownership without releasing: returns the pointer, and close() does nothing from now on. */
  long take(String what) {
    long p = state.ptr.getAndSet(0);
    if (p == 0) throw new IllegalStateException(what + " is closed");
    LIVE.decrementAndGet();
    cleanable.clean(); // unregisters; the action finds nothing left to release
    return p;
  }

  boolean isClosed() {
    return state.ptr.get() == 0;
  }

  @Override
  public void close() {
    cleanable.clean(); // runs Release at most once
  }
}
