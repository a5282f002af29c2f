//! Finds libsinter without any crate from crates.io, links it, and makes programs find it at run time without
//! LD_LIBRARY_PATH. The directory is the first of:
//!   1. SINTER_LIB_DIR, the directory holding libsinter.so (ctest sets it to the build tree);
//!   2. `pkg-config --variable=libdir sinter`, when pkg-config finds an installed Sinter's sinter.pc (on its
//!      default path for /usr/local and /usr, or on PKG_CONFIG_PATH);
//!   3. none: the linker's and the loader's default paths (a Sinter installed in /usr/lib, or ldconfig'd).
//!
//! With a directory, this prints
//!   - `rustc-link-search` for it, and `rustc-link-arg=-Wl,-rpath,DIR` for this package's own targets;
//!   - `lib_dir` metadata (`links = "sinter"`): DEP_SINTER_LIB_DIR in the build script of the `sinter` crate,
//!     which puts the rpath into its own tests and examples and passes the directory on to its dependents.
//!     Cargo applies a `rustc-link-arg` only to the package whose build script printed it, never to dependents
//!     (rust-lang/cargo#9554), so a binary of yours gets the rpath from a three-line build.rs (README, Rust);
//!   - symlinks to the library in OUT_DIR, also a search path: `cargo run` and `cargo test` put the search
//!     paths inside the target directory on the loader's path, so they work in any crate without that build.rs.
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn pkg_config_libdir() -> Option<PathBuf> {
    let pkg_config = env::var_os("PKG_CONFIG").unwrap_or_else(|| "pkg-config".into());
    let out = Command::new(pkg_config).args(["--variable=libdir", "sinter"]).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let dir = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (!dir.is_empty()).then(|| PathBuf::from(dir))
}

/// OUT_DIR/NAME -> DIR/NAME for the names DIR has (a stale link from an earlier run is replaced).
fn link_into_out_dir(dir: &Path, out_dir: &Path) -> bool {
    let mut any = false;
    for name in ["libsinter.so", "libsinter.so.0"] {
        let target = dir.join(name);
        if !target.exists() {
            continue;
        }
        let link = out_dir.join(name);
        let _ = std::fs::remove_file(&link);
        any |= std::os::unix::fs::symlink(&target, &link).is_ok();
    }
    any
}

fn main() {
    println!("cargo:rerun-if-env-changed=SINTER_LIB_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_LIBDIR");
    let from_env = env::var_os("SINTER_LIB_DIR").filter(|d| !d.is_empty()).map(PathBuf::from);
    if let Some(dir) = &from_env {
        if !dir.join("libsinter.so").exists() && !dir.join("libsinter.so.0").exists() {
            panic!(
                "SINTER_LIB_DIR={} holds no libsinter.so: point it at the build tree or the installed lib",
                dir.display()
            );
        }
    }
    if let Some(dir) = from_env.or_else(pkg_config_libdir).map(|d| d.canonicalize().unwrap_or(d)) {
        println!("cargo:rustc-link-search=native={}", dir.display());
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
        // Exported to dependents (links = "sinter") as DEP_SINTER_LIB_DIR.
        println!("cargo:lib_dir={}", dir.display());
        let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
        if link_into_out_dir(&dir, &out_dir) {
            println!("cargo:rustc-link-search=native={}", out_dir.display());
        }
    }
    println!("cargo:rustc-link-lib=dylib=sinter");
}
