package org.sinter.jni;

import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.CodeSource;
import java.util.ArrayList;
import java.util.List;

/**
 * Loads the JNI glue, libsinterjni.so, which links libsinter.so.0. {@link SinterNativeJNI} calls {@link #load()}
 * before its first native call. The places, in order:
 *
 * <ol>
 *   <li>{@code System.loadLibrary("sinterjni")}: {@code -Djava.library.path}, else the JVM's default (which
 *       includes LD_LIBRARY_PATH);
 *   <li>{@code $SINTER_LIB_DIR}, the directory that holds libsinter.so (a build tree, an installed lib directory);
 *   <li>the directory of sinter.jar (the build tree keeps a link to the glue there);
 *   <li>the installed lib directory, found from an installed sinter.jar (share/java/sinter.jar: lib/), so a
 *       relocated or staged install works;
 *   <li>the lib directory of the prefix this build was configured for.
 * </ol>
 *
 * From a directory the glue is loaded by absolute path, after libsinter.so.0 from the same directory when it is
 * there (so the glue links that one). If every place fails, the UnsatisfiedLinkError names each and why.
 */
public final class NativeLibrary {
  private NativeLibrary() {}

  static final String GLUE = "sinterjni";
  static final String SINTER = "libsinter.so.0";

  private static String loadedFrom;

  /** Where the glue was loaded from (e.g. "SINTER_LIB_DIR=/opt/sinter/lib"), or null before it is loaded. */
  public static synchronized String loadedFrom() {
    return loadedFrom;
  }

  /** Loads the glue once; throws UnsatisfiedLinkError naming every place tried. */
  public static synchronized void load() {
    if (loadedFrom == null) {
      loadedFrom =
          load(SYSTEM, places(System.getenv("SINTER_LIB_DIR"), jarDirectory(), InstallPaths.JAR_TO_LIBDIR,
                                InstallPaths.LIBDIR));
    }
  }

  /** How libraries are loaded: the JVM's System in production, a fake in the tests. */
  interface Loader {
    void loadLibrary(String name);

    void load(String absolutePath);

    boolean exists(Path file);
  }

  static final Loader SYSTEM = new Loader() {
    @Override
    public void loadLibrary(String name) {
      System.loadLibrary(name);
    }

    @Override
    public void load(String absolutePath) {
      System.load(absolutePath);
    }

    @Override
    public boolean exists(Path file) {
      return Files.isRegularFile(file);
    }
  };

  /** A place to look: what messages call it, and a directory; or java.library.path; or only a note. */
  static final class Place {
    final String label;
    final Path dir; // null: System.loadLibrary, unless note
    final boolean note; // nothing to try (e.g. $SINTER_LIB_DIR is not set), but the error names it

    private Place(String label, Path dir, boolean note) {
      this.label = label;
      this.dir = dir;
      this.note = note;
    }

    static Place libraryPath() {
      return new Place("System.loadLibrary(\"" + GLUE + "\")", null, false);
    }

    static Place directory(String label, Path dir) {
      return new Place(label, dir, false);
    }

    static Place note(String label) {
      return new Place(label, null, true);
    }
  }

  /** The places in order (see the class comment). */
  static List<Place> places(String sinterLibDir, Path jarDir, String jarToLibdir, String libdir) {
    List<Place> out = new ArrayList<>();
    out.add(Place.libraryPath());
    if (sinterLibDir == null || sinterLibDir.isEmpty()) {
      out.add(Place.note("$SINTER_LIB_DIR: not set"));
    } else {
      out.add(Place.directory("SINTER_LIB_DIR=" + sinterLibDir, Paths.get(sinterLibDir).toAbsolutePath().normalize()));
    }
    if (jarDir == null) {
      out.add(Place.note("beside sinter.jar: the jar's location is unknown"));
    } else {
      out.add(Place.directory("beside sinter.jar: " + jarDir, jarDir));
      if (jarToLibdir != null && !jarToLibdir.isEmpty()) {
        Path lib = jarDir.resolve(jarToLibdir).normalize();
        out.add(Place.directory("the installed lib directory of that sinter.jar: " + lib, lib));
      }
    }
    if (libdir != null && !libdir.isEmpty()) {
      out.add(Place.directory("the configured install prefix: " + libdir, Paths.get(libdir)));
    }
    return out;
  }

  /** Tries each place in turn (a directory once) and returns the label of the first that works. */
  static String load(Loader loader, List<Place> places) {
    StringBuilder tried = new StringBuilder();
    List<Path> seen = new ArrayList<>();
    for (Place place : places) {
      if (place.note) {
        tried.append("\n  ").append(place.label);
        continue;
      }
      try {
        if (place.dir == null) {
          loader.loadLibrary(GLUE);
          return place.label;
        }
        if (seen.contains(place.dir)) continue;
        seen.add(place.dir);
        Path glue = place.dir.resolve(System.mapLibraryName(GLUE));
        if (!loader.exists(glue)) {
          tried.append("\n  ").append(place.label).append(": no ").append(glue.getFileName()).append(" there");
          continue;
        }
        Path sinter = place.dir.resolve(SINTER);
        if (loader.exists(sinter)) loader.load(sinter.toString());
        loader.load(glue.toString());
        return place.label;
      } catch (UnsatisfiedLinkError e) {
        tried.append("\n  ").append(place.label).append(": ").append(e.getMessage());
      }
    }
    throw new UnsatisfiedLinkError("sinter: cannot load the JNI library " + System.mapLibraryName(GLUE)
        + " (it links " + SINTER + "). Tried:" + tried
        + "\nSet SINTER_LIB_DIR to the directory that holds libsinter.so and " + System.mapLibraryName(GLUE)
        + ", or pass -Djava.library.path=<that directory>.");
  }

  /** The directory of the jar this class was loaded from (null when unknown). */
  static Path jarDirectory() {
    try {
      CodeSource cs = NativeLibrary.class.getProtectionDomain().getCodeSource();
      if (cs == null || cs.getLocation() == null) return null;
      Path p = Paths.get(cs.getLocation().toURI());
      return Files.isDirectory(p) ? p : p.getParent();
    } catch (URISyntaxException | RuntimeException e) {
      return null;
    }
  }
}
