// Bakes libsinter's directory (found by the sinter crate) into this package's binaries as an rpath, so they
// run without LD_LIBRARY_PATH. Cargo takes link arguments only from the package's own build script.
fn main() {
    if let Ok(dir) = std::env::var("DEP_SINTER_RS_LIB_DIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
}
