#include "core/runtime/cpu_device.h"

#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "core/util/error.h"

#if SN_BACKEND_CPU
#include "backends/cpu/cpu_backend.h"
#endif

namespace sn {

#if SN_BACKEND_CPU

namespace {

struct CpuKernel final : DeviceKernel {
  std::shared_ptr<const CompiledKernel> compiled;
};

class CpuDevice final : public ComputeDevice {
 public:
  explicit CpuDevice(const DeviceOptions& options) : ComputeDevice("CPU"), compiler_(options.threads) {}

  std::string unsupported_dtype(DType dtype) const override {
    if (dtype.is_void() || dtype.ptr || dtype.lanes != 1) return "not a tensor element type";
    return "";
  }

  std::shared_ptr<Storage> allocate(size_t bytes) override {
    // aligned_alloc needs a multiple of the alignment; a 0-byte buffer still gets a real address.
    size_t rounded = (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
    if (rounded < bytes) fail(Code::OutOfMemory, "CPU: cannot allocate ", bytes, " bytes");
    if (rounded == 0) rounded = kBufferAlignment;
    void* p = std::aligned_alloc(kBufferAlignment, rounded);
    if (!p) fail(Code::OutOfMemory, "CPU: cannot allocate ", bytes, " bytes");
    return std::make_shared<Storage>(shared_from_this(), p, bytes, &std::free);
  }

  void copy_in(Storage& dst, size_t offset, const void* src, size_t bytes) override {
    std::memcpy(static_cast<char*>(dst.ptr()) + offset, src, bytes);
  }
  void copy_out(const Storage& src, size_t offset, void* dst, size_t bytes) override {
    std::memcpy(dst, static_cast<const char*>(src.ptr()) + offset, bytes);
  }

  const CpuTarget& target() const override { return compiler_.target(); }

  std::shared_ptr<const DeviceKernel> find(uint64_t key) const override {
    auto ck = compiler_.find(key);
    return ck ? wrap(ck) : nullptr;
  }

  std::shared_ptr<const DeviceKernel> compile(const LoweredKernel& k) override { return wrap(compiler_.compile(k)); }

  void launch(const DeviceKernel& k, void* const* bufs, const int64_t* vars) override {
    compiler_.run(*static_cast<const CpuKernel&>(k).compiled, bufs, vars);
  }

  std::string optimized_source(const DeviceKernel& k) override {
    return compiler_.optimized_ir(*static_cast<const CpuKernel&>(k).compiled);
  }

  Stats stats() const override {
    CpuCompilerStats s = compiler_.stats();
    return Stats{s.compiled, s.cache_hits, s.compile_ms};
  }

 private:
  // One DeviceKernel per compiled kernel, so a kernel found twice is the same object.
  std::shared_ptr<const DeviceKernel> wrap(const std::shared_ptr<const CompiledKernel>& ck) const {
    std::lock_guard<std::mutex> lk(mu_);
    auto& slot = wrapped_[ck.get()];
    if (!slot) {
      auto k = std::make_shared<CpuKernel>();
      k->compiled = ck;
      k->name = ck->name;
      k->source = ck->source;
      k->params = ck->params;
      k->vars = ck->vars;
      k->threads = ck->threads;
      k->compile_ms = ck->compile_ms;
      slot = std::move(k);
    }
    return slot;
  }

  mutable CpuCompiler compiler_;
  mutable std::mutex mu_;
  mutable std::unordered_map<const CompiledKernel*, std::shared_ptr<const DeviceKernel>> wrapped_;
};

}  // namespace

bool cpu_backend_available() { return true; }

std::shared_ptr<ComputeDevice> make_cpu_device(const std::string& name, const DeviceOptions& options) {
  if (name != "CPU") fail(Code::Device, "device '", name, "' is not available: the CPU backend has one device, CPU:0");
  return std::make_shared<CpuDevice>(options);
}

#else

bool cpu_backend_available() { return false; }

std::shared_ptr<ComputeDevice> make_cpu_device(const std::string&, const DeviceOptions&) {
  fail(Code::Device, "device CPU is not available: this build has no CPU backend (LLVM 19 was not found)");
}

#endif

}  // namespace sn
