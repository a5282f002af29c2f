// GPU code from LLVM IR in process: LLVM's NVPTX target makes PTX, its AMDGPU target AMDGPU
// assembly and relocatable objects (backends/amd links those into code objects). And the device
// both GPU backends open for an architecture without its driver or hardware
// (sn_device_open_target): it compiles every kernel and runs nothing.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "backends/llvm/llvm_ir.h"
#include "core/runtime/device.h"

namespace sn {

struct GpuCode {
  std::string assembly;  // PTX (NVPTX) or AMDGPU assembly text
  std::string object;    // a relocatable ELF object (when asked for)
  std::string ir;        // the LLVM IR after optimization
};

// Parses `ir` (render_llvm_ir's NVPTX or AMDGPU dialect), optimizes it (LLVM's O3 pipeline for
// target.triple / target.arch / target.features) and emits the assembly, and the object file when
// `want_object`. Throws Error(Compile) with LLVM's message.
GpuCode compile_gpu_ir(const std::string& ir, const Target& target, bool want_object);

// An entry point name for kernel `k` that every GPU assembler accepts: the kernel's name with
// [A-Za-z0-9_] only, then its key in hex.
std::string gpu_symbol(const LoweredKernel& k);

// A compile-only GPU device: kernels are rendered in `dialect`, compiled with compile_gpu_ir, and
// finished by `finish` (which fills DeviceKernel::source and ::binary from the code, e.g. linking
// a code object). Buffers are host memory, so programs can still be given inputs; launches fail
// with cannot_run().
class GpuTargetDevice final : public ComputeDevice {
 public:
  using Finish = std::function<void(DeviceKernel& kernel, GpuCode code)>;
  GpuTargetDevice(std::string name, Target target, LlvmDialect dialect, bool want_object, std::string description,
                  Finish finish);

  std::string description() const override { return description_; }
  std::string cannot_run() const override;

  std::shared_ptr<Storage> allocate(size_t bytes) override;
  void copy_in(Storage& dst, size_t offset, const void* src, size_t bytes) override;
  void copy_out(const Storage& src, size_t offset, void* dst, size_t bytes) override;
  bool host_memory() const override { return true; }

  std::shared_ptr<const DeviceKernel> find(uint64_t key) const override { return cache_.find(key); }
  std::shared_ptr<const DeviceKernel> compile(const LoweredKernel& k) override;
  // The LLVM IR after optimization (DeviceKernel::source is the assembly).
  std::string optimized_source(const DeviceKernel& k) override;

  void launch(const DeviceKernel&, std::span<const DevicePtr>, std::span<const int64_t>, const LaunchSize&) override;
  void synchronize() override {}
  Stats stats() const override { return cache_.stats(); }

 private:
  LlvmDialect dialect_;
  bool want_object_;
  std::string description_;
  Finish finish_;
  KernelCache cache_;
};

}  // namespace sn
