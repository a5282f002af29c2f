//! Lets this crate's own tests and examples find libsinter at run time without LD_LIBRARY_PATH: sinter-sys
//! (links = "sinter") reports the directory it linked from as DEP_SINTER_LIB_DIR, and we bake it in as an
//! rpath. (A `rustc-link-arg` emitted by sinter-sys itself would not reach this crate's test binaries.)
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_SINTER_LIB_DIR");
    if let Ok(dir) = std::env::var("DEP_SINTER_LIB_DIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
}
