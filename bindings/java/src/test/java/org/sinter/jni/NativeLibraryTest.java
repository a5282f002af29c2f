package org.sinter.jni;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class NativeLibraryTest {
  /** Records what it is asked to load; loadLibrary fails unless told, load fails for paths in failing. */
  static final class FakeLoader implements NativeLibrary.Loader {
    final List<String> loaded = new ArrayList<>();
    final Set<Path> files;
    final Set<String> failing;
    final boolean libraryPathWorks;

    FakeLoader(boolean libraryPathWorks, Set<Path> files, Set<String> failing) {
      this.libraryPathWorks = libraryPathWorks;
      this.files = files;
      this.failing = failing;
    }

    @Override
    public void loadLibrary(String name) {
      if (!libraryPathWorks) throw new UnsatisfiedLinkError("no " + name + " in java.library.path: /nowhere");
      loaded.add("loadLibrary " + name);
    }

    @Override
    public void load(String path) {
      if (failing.contains(path)) throw new UnsatisfiedLinkError(path + ": libsinter.so.0: cannot open it");
      loaded.add(path);
    }

    @Override
    public boolean exists(Path file) {
      return files.contains(file);
    }
  }

  static final Path JARS = Paths.get("/opt/app/share/java");

  static List<NativeLibrary.Place> places(String sinterLibDir) {
    return NativeLibrary.places(sinterLibDir, JARS, "../../lib", "/usr/local/lib");
  }

  @Test
  void theErrorNamesEveryPlaceTried() {
    FakeLoader l = new FakeLoader(false, Set.of(Paths.get("/opt/app/lib/libsinterjni.so")),
        Set.of("/opt/app/lib/libsinterjni.so"));
    UnsatisfiedLinkError e =
        assertThrows(UnsatisfiedLinkError.class, () -> NativeLibrary.load(l, places("/env/lib")));
    String m = e.getMessage();
    for (String want : new String[] {"cannot load the JNI library libsinterjni.so",
             "System.loadLibrary(\"sinterjni\"): no sinterjni in java.library.path",
             "SINTER_LIB_DIR=/env/lib: no libsinterjni.so there", "beside sinter.jar: /opt/app/share/java: no",
             "the installed lib directory of that sinter.jar: /opt/app/lib: /opt/app/lib/libsinterjni.so: "
                 + "libsinter.so.0: cannot open it",
             "the configured install prefix: /usr/local/lib: no libsinterjni.so there", "Set SINTER_LIB_DIR"}) {
      assertTrue(m.contains(want), "missing \"" + want + "\" in:\n" + m);
    }
    assertEquals(List.of(), l.loaded);
  }

  @Test
  void anUnsetSinterLibDirIsNamed() {
    FakeLoader l = new FakeLoader(false, Set.of(), Set.of());
    UnsatisfiedLinkError e = assertThrows(UnsatisfiedLinkError.class, () -> NativeLibrary.load(l, places(null)));
    assertTrue(e.getMessage().contains("$SINTER_LIB_DIR: not set"), e.getMessage());
    UnsatisfiedLinkError noJar = assertThrows(UnsatisfiedLinkError.class,
        () -> NativeLibrary.load(l, NativeLibrary.places("", null, "../../lib", "")));
    assertTrue(noJar.getMessage().contains("the jar's location is unknown"), noJar.getMessage());
  }

  @Test
  void javaLibraryPathComesFirst() {
    FakeLoader l = new FakeLoader(true, Set.of(Paths.get("/env/lib/libsinterjni.so")), Set.of());
    assertTrue(NativeLibrary.load(l, places("/env/lib")).startsWith("System.loadLibrary"));
    assertEquals(List.of("loadLibrary sinterjni"), l.loaded);
  }

  @Test
  void aDirectoryLoadsItsLibsinterFirst() {
    FakeLoader l = new FakeLoader(false,
        Set.of(Paths.get("/env/lib/libsinterjni.so"), Paths.get("/env/lib/libsinter.so.0")), Set.of());
    assertEquals("SINTER_LIB_DIR=/env/lib", NativeLibrary.load(l, places("/env/lib")));
    assertEquals(List.of("/env/lib/libsinter.so.0", "/env/lib/libsinterjni.so"), l.loaded);
  }

  @Test
  void thePlacesAfterSinterLibDir() {
    FakeLoader besideJar = new FakeLoader(false, Set.of(JARS.resolve("libsinterjni.so")), Set.of());
    assertEquals("beside sinter.jar: " + JARS, NativeLibrary.load(besideJar, places(null)));
    assertEquals(List.of(JARS.resolve("libsinterjni.so").toString()), besideJar.loaded);

    FakeLoader installed = new FakeLoader(false, Set.of(Paths.get("/opt/app/lib/libsinterjni.so")), Set.of());
    assertEquals("the installed lib directory of that sinter.jar: /opt/app/lib",
        NativeLibrary.load(installed, places(null)));

    FakeLoader prefix = new FakeLoader(false, Set.of(Paths.get("/usr/local/lib/libsinterjni.so")), Set.of());
    assertEquals("the configured install prefix: /usr/local/lib", NativeLibrary.load(prefix, places(null)));
  }

  @Test
  void aDirectoryIsTriedOnce() {
    // The jar's installed lib directory is the configured prefix's: one attempt, one line.
    FakeLoader l = new FakeLoader(false, Set.of(), Set.of());
    UnsatisfiedLinkError e = assertThrows(UnsatisfiedLinkError.class,
        () -> NativeLibrary.load(l, NativeLibrary.places(null, JARS, "../../lib", "/opt/app/lib")));
    assertFalse(e.getMessage().contains("the configured install prefix"), e.getMessage());
  }

  /** ctest says where this JVM's glue must have come from (java.junit: SINTER_LIB_DIR, no java.library.path). */
  @Test
  void thisJvmLoadedTheGlueFromTheExpectedPlace() {
    assertNotNull(SinterNative.sn_version_string());
    String want = System.getProperty("sinter.test.loadedFrom");
    String from = NativeLibrary.loadedFrom();
    assertNotNull(from);
    if (want != null) assertTrue(from.startsWith(want), "loaded from " + from + ", expected " + want + "...");
  }
}
