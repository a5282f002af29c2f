// The CUDA backend, device "CUDA": kernels are PTX from LLVM's NVPTX target (backends/llvm).
//
// sn_device_open_target(ctx, "CUDA", "sm_90") opens a compile-only device for an architecture: it
// needs no driver and no GPU; a kernel's source and binary are its PTX. The driver itself
// (libcuda.so.1, dlopen'ed, hand-written declarations) is only asked how many devices there are:
// running kernels on them is not implemented yet, so sn_device_open(ctx, "CUDA") fails with the
// reason (no driver, no device, or not implemented).
#include <algorithm>
#include <mutex>

#include "backends/llvm/llvm_gpu.h"
#include "core/util/dynlib.h"
#include "core/util/error.h"

namespace sn {

namespace {

// An architecture LLVM 19's NVPTX target knows, with the PTX ISA version it needs.
struct SmArch {
  const char* name;
  const char* ptx;
};
constexpr SmArch kArchs[] = {{"sm_75", "+ptx63"}, {"sm_80", "+ptx70"}, {"sm_86", "+ptx71"}, {"sm_87", "+ptx74"},
                             {"sm_89", "+ptx78"}, {"sm_90", "+ptx78"}, {"sm_90a", "+ptx80"}};

std::string known_archs() {
  std::string s;
  for (const SmArch& a : kArchs) s += cat(s.empty() ? "" : ", ", a.name);
  return s;
}

// What the optimizer and the renderer may assume about an NVIDIA GPU of compute capability `arch`.
Target cuda_target(const std::string& arch) {
  const SmArch* found = nullptr;
  for (const SmArch& a : kArchs)
    if (arch == a.name) found = &a;
  if (!found) fail(Code::InvalidArg, "unknown CUDA architecture '", arch, "' (known: ", known_archs(), ")");
  Target t;
  t.renderer = "CUDA";
  t.arch = arch;
  t.triple = "nvptx64-nvidia-cuda";
  t.features = found->ptx;
  t.has_local = true;
  t.has_shared = true;
  t.local_memory_bytes = 48 * 1024;  // static shared memory per block
  t.max_local_size = {1024, 1024, 64};
  t.max_local_total = 1024;
  t.max_global_size = {int64_t(INT32_MAX), 65535, 65535};
  t.warp_size = 32;
  t.vector_bits = 0;  // scalar code per thread (memory coalesces across the warp)
  // NVPTX lowers sqrt without libdevice; exp2/log2/sin only as approximations: isel decomposes them.
  t.native_math = {Op::Sqrt};
  return t;
}

// The CUDA driver, asked how many devices there are (hand-written declarations of the Driver API).
const GpuProbe& probe_driver() {
  static GpuProbe probe;
  static std::once_flag once;
  std::call_once(once, [] {
    using CUresult = int;
    CUresult (*cuInit)(unsigned) = nullptr;
    CUresult (*cuDeviceGetCount)(int*) = nullptr;
    CUresult (*cuGetErrorName)(CUresult, const char**) = nullptr;
    DynLib lib("libcuda.so.1");
    lib.sym(cuInit, "cuInit");
    lib.sym(cuDeviceGetCount, "cuDeviceGetCount");
    lib.sym(cuGetErrorName, "cuGetErrorName");
    if (!lib.ok()) {
      probe.why = cat(lib.error(), " (the NVIDIA driver is not installed)");
      return;
    }
    auto name = [&](CUresult r) {
      const char* n = nullptr;
      return cuGetErrorName(r, &n) == 0 && n ? std::string(n) : cat("error ", r);
    };
    if (CUresult r = cuInit(0); r != 0) {
      probe.why = cat("cuInit failed: ", name(r));
      return;
    }
    if (CUresult r = cuDeviceGetCount(&probe.count); r != 0) {
      probe.count = 0;
      probe.why = cat("cuDeviceGetCount failed: ", name(r));
      return;
    }
    if (probe.count == 0) probe.why = "the CUDA driver found no device";
  });
  return probe;
}

std::shared_ptr<ComputeDevice> open_cuda_target(const std::string& arch) {
  Target t = cuda_target(arch);
  return std::make_shared<GpuTargetDevice>(
      "CUDA", t, LlvmDialect::Nvptx, false, cat("CUDA ", arch, " (compile-only: PTX from LLVM's NVPTX target)"),
      [](DeviceKernel& k, GpuCode code) {
        k.source = code.assembly;
        k.binary = std::move(code.assembly);  // the driver JIT-compiles PTX (no ptxas in process)
      });
}

[[maybe_unused]] const bool registered = register_backend(probed_gpu_backend("CUDA", 5, probe_driver, "sm_90"));
[[maybe_unused]] const bool registered_target = register_target_opener(
    "CUDA", [](const std::string& arch, const DeviceOptions&) { return open_cuda_target(arch); });

}  // namespace

}  // namespace sn
