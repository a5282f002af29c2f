#!/usr/bin/env bash
# Installs every system package Sinter needs (Debian 12 / bookworm, apt only).
# Idempotent and quick: it asks dpkg first and only runs apt when something is missing.
# Usage: bash scripts/bootstrap.sh        (uses sudo when not root; never reads stdin)
set -euo pipefail

PACKAGES=(
  # toolchain
  cmake ninja-build gcc g++ pkg-config ccache clang-format
  # clang 19 + libFuzzer (scripts/fuzz.sh: the C API fuzz target, and the clang sanitizer build)
  clang-19
  # LLVM 19: the CPU backend (ORC JIT) and the NVPTX/AMDGPU code generators
  llvm-19-dev libclang-rt-19-dev zlib1g-dev libzstd-dev libedit-dev libxml2-dev libffi-dev libcurl4-openssl-dev
  # tests, benchmarks and their baselines
  libgtest-dev libgmock-dev googletest libbenchmark-dev libsqlite3-dev libopenblas-dev libdnnl-dev
  # OpenCL on the CPU for the "CL" backend's tests: the ICD loader and pocl (Sinter dlopens them; no headers)
  ocl-icd-libopencl1 pocl-opencl-icd
  # AMD: lld's ELF linker (liblld, in process) links AMDGPU objects into code objects (llvm-readobj-19, in llvm-19,
  # reads them back in the tests); the HSA runtime, so the tests open "AMD" through hsa_init on a machine without a GPU
  liblld-19-dev libhsa-runtime64-1
  # language bindings: Go (cgo), Rust (bindgen), Java (SWIG + JDK + JUnit)
  golang-go bindgen swig junit5 default-jdk-headless
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  # "install ok installed" is the only state that means the package is usable.
  if [[ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)" != "install ok installed" ]]; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "bootstrap: all ${#PACKAGES[@]} system packages present"
  exit 0
fi

echo "bootstrap: installing ${#missing[@]} missing package(s): ${missing[*]}"
SUDO=()
if [[ "$(id -u)" != 0 ]]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "bootstrap: not root and sudo is not installed; install as root: apt-get install ${missing[*]}" >&2
    exit 1
  fi
  # -n: never prompt (CI has no stdin); fail loudly instead of hanging.
  SUDO=(sudo -n)
fi
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
echo "bootstrap: done"
