//! Finds libsinter without any crate from crates.io:
//!   1. SINTER_LIB_DIR, the directory holding libsinter.so (ctest sets it to the build tree), else
//!   2. `pkg-config --variable=libdir sinter` (an installed Sinter), else
//!   3. the linker's default search path.
use std::env;
use std::path::PathBuf;
use std::process::Command;

fn pkg_config_libdir() -> Option<PathBuf> {
    let out = Command::new("pkg-config").args(["--variable=libdir", "sinter"]).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let dir = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (!dir.is_empty()).then(|| PathBuf::from(dir))
}

fn main() {
    println!("cargo:rerun-if-env-changed=SINTER_LIB_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    let dir = env::var_os("SINTER_LIB_DIR").filter(|d| !d.is_empty()).map(PathBuf::from).or_else(pkg_config_libdir);
    if let Some(dir) = dir {
        println!("cargo:rustc-link-search=native={}", dir.display());
        // Exported to dependents (links = "sinter") as DEP_SINTER_LIB_DIR.
        println!("cargo:lib_dir={}", dir.display());
    }
    println!("cargo:rustc-link-lib=dylib=sinter");
}
