//! Lets this crate's own tests and examples find libsinter at run time without LD_LIBRARY_PATH: sinter-sys
//! (links = "sinter") reports the directory it linked from as DEP_SINTER_LIB_DIR, and we bake it in as an
//! rpath. (A `rustc-link-arg` emitted by sinter-sys itself would not reach this crate's test binaries.)
//!
//! The directory is passed on as `lib_dir` metadata (links = "sinter_rs"): a crate that depends on `sinter`
//! reads it as DEP_SINTER_RS_LIB_DIR in its own build script and bakes the same rpath into its binaries:
//!
//! ```ignore
//! fn main() {
//!     if let Ok(dir) = std::env::var("DEP_SINTER_RS_LIB_DIR") {
//!         println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
//!     }
//! }
//! ```
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_SINTER_LIB_DIR");
    if let Ok(dir) = std::env::var("DEP_SINTER_LIB_DIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
        println!("cargo:lib_dir={dir}");
    }
}
