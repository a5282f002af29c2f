#!/bin/sh
# Builds this directory as a crate outside the repository and runs it the ways a user does, with
# LD_LIBRARY_PATH unset (the test fails if libsinter.so.0 cannot be found):
#   1. `cargo build`, then the binary itself: it finds libsinter through the rpath that its build.rs bakes in
#      from DEP_SINTER_RS_LIB_DIR;
#   2. `cargo run` of the same program without that build.rs: cargo puts sinter-sys's OUT_DIR, which links to
#      the library, on the loader's path.
# sinter-sys finds the library as it always does, from this environment: SINTER_LIB_DIR, else pkg-config.
#   check.sh CARGO WORK_DIR
set -eu
cargo=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
crate=$(cd "$here/../sinter" && pwd)
unset LD_LIBRARY_PATH
rm -rf "$work/app" "$work/app-no-build-rs"
for app in app app-no-build-rs; do
  mkdir -p "$work/$app/src"
  sed -e "s|@SINTER_CRATE@|$crate|" -e "s|@NAME@|sinter-$app|" "$here/Cargo.toml.in" >"$work/$app/Cargo.toml"
  cp "$here/src/main.rs" "$work/$app/src/"
done
cp "$here/build.rs" "$work/app/"
export CARGO_TARGET_DIR="$work/target" # shared: sinter-sys and sinter are built once

(cd "$work/app" && "$cargo" build --offline -q)
echo "== the binary, run directly:"
"$CARGO_TARGET_DIR/debug/sinter-app"
echo "== cargo run, without a build.rs:"
(cd "$work/app-no-build-rs" && "$cargo" run --offline -q)
