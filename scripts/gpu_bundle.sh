#!/bin/bash
# Packs the CUDA checks for a machine with an NVIDIA GPU that lacks this build's libraries (LLVM 19
# and the rest of Debian 12's): stripped sn_unit and bench_gpu, the shared libraries they load
# (xz), the conformance cases, and check.sh, which unpacks them there and runs every CUDA test with
# SN_REQUIRE_CUDA=1, then bench_gpu three times. About 60 MB.
#   scripts/gpu_bundle.sh [build dir] [bundle dir]     (defaults: build, .gpu)
# On the GPU machine, from a copy of the repository root that holds the bundle:
#   bash .gpu/check.sh        (logs also go to $OUT when it is set)
set -euo pipefail
build=${1:-build}
out=${2:-.gpu}
shared=$(sed -n 's/^SN_SHARED_DIR:PATH=//p' "$build/CMakeCache.txt")
[ -n "$shared" ] && [ -d "$shared/conformance" ] || { echo "gpu_bundle: no conformance cases under '$shared'" >&2; exit 1; }
rm -rf "$out" && mkdir -p "$out/lib"
strip -o "$out/sn_unit" "$build/tests/sn_unit"
strip -o "$out/bench_gpu" "$build/bench/bench_gpu"
# Every library sn_unit loads except the C and C++ runtimes, which any newer system has.
for lib in $(ldd "$build/tests/sn_unit" | awk '/=>/ {print $3}'); do
  case $(basename "$lib") in libc.so* | libm.so* | libstdc++* | libgcc_s*) ;; *) cp -L "$lib" "$out/lib/" ;; esac
done
tar -C "$out" -cf - lib | xz -T0 -6 > "$out/lib.tar.xz" && rm -rf "$out/lib"
tar -C "$shared" -cJf "$out/shared.tar.xz" conformance
cat > "$out/check.sh" <<CHECK
#!/bin/bash
# Made by scripts/gpu_bundle.sh: runs the CUDA tests and bench_gpu from this bundle.
cd "\$(dirname "\$0")"
mkdir -p /tmp/sn-bundle/shared
tar -xJf lib.tar.xz -C /tmp/sn-bundle && tar -xJf shared.tar.xz -C /tmp/sn-bundle/shared || exit 1
# sn_unit reads the conformance cases where this build found them: $shared
[ -d "$shared/conformance" ] || { mkdir -p "$(dirname "$shared")" && ln -sfn /tmp/sn-bundle/shared "$shared"; }
export LD_LIBRARY_PATH=/tmp/sn-bundle/lib:\${LD_LIBRARY_PATH:+\$LD_LIBRARY_PATH:}/usr/local/nvidia/lib64:/usr/local/cuda/lib64
export PATH=\$PATH:/usr/local/cuda/bin SN_REQUIRE_CUDA=1 SN_CACHE=0
log=\${OUT:-/tmp/sn-bundle}
nvidia-smi -L || true
rc=0
for f in 'TensorCoresOnGpu*:IndexOps.*Cuda*:GpuDrivers.*:CStyle.*Cuda*:GpuTargets.Cuda*' \\
         'CompiledOps.EveryConformanceCaseRunsOnCuda' 'FuzzDiff.*Cuda*'; do
  timeout 300 ./sn_unit --gtest_filter="\$f" > "\$log/unit.log" 2>&1 || rc=1
  grep -E 'conformance on CUDA|fuzz on CUDA|Failure|FAILED|PASSED|SKIPPED \]' "\$log/unit.log"
  cat "\$log/unit.log" >> "\$log/unit_all.log"
done
for i in 1 2 3; do timeout 120 ./bench_gpu 2>&1 | tee -a "\$log/bench_gpu.log"; done
exit \$rc
CHECK
chmod +x "$out/check.sh"
du -sh "$out"
