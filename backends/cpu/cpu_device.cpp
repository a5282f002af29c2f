// The CPU device: host memory (64-byte aligned), kernels lowered for the host CPU, compiled by the
// LLVM JIT (llvm_jit.cpp) and run on its thread pool. Launches run at once, on the caller's thread
// and the pool, so the queue is always empty. Registered as backend "CPU" with kCpuDevices devices,
// "CPU" (= "CPU:0") .. "CPU:7": each has its own memory, JIT and thread pool, so one program can
// span them (a multi-device program runs their kernels in parallel). They share the host's cores:
// CPU:0 gets all of them (a one-device program runs as fast as before), CPU:1 and up half of them
// each (at least one thread), unless DeviceOptions::threads says otherwise.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "backends/cpu/cpu_backend.h"
#include "core/util/error.h"

namespace sn {

namespace {

class CpuDevice final : public ComputeDevice {
 public:
  CpuDevice(std::string name, int threads, bool disk_cache)
      : CpuDevice(std::move(name), std::make_unique<CpuCompiler>(threads, disk_cache)) {}

  std::shared_ptr<Storage> allocate(size_t bytes) override {
    return std::make_shared<Storage>(shared_from_this(), host_allocate(name(), bytes), bytes, &std::free);
  }

  void copy_in(Storage& dst, size_t offset, const void* src, size_t bytes) override {
    std::memcpy(static_cast<char*>(dst.ptr()) + offset, src, bytes);
  }
  void copy_out(const Storage& src, size_t offset, void* dst, size_t bytes) override {
    std::memcpy(dst, static_cast<const char*>(src.ptr()) + offset, bytes);
  }
  void copy(Storage& dst, size_t dst_offset, const Storage& src, size_t src_offset, size_t bytes) override {
    std::memmove(static_cast<char*>(dst.ptr()) + dst_offset, static_cast<const char*>(src.ptr()) + src_offset, bytes);
  }
  bool host_memory() const override { return true; }

  std::shared_ptr<const DeviceKernel> find(uint64_t key) const override { return compiler_->find(key); }
  std::shared_ptr<const DeviceKernel> compile(const LoweredKernel& k) override { return compiler_->compile(k); }
  std::vector<std::shared_ptr<const DeviceKernel>> compile_together(std::span<const LoweredKernel* const> ks) override {
    auto compiled = compiler_->compile_together(ks);
    return {compiled.begin(), compiled.end()};
  }
  std::shared_ptr<const DeviceKernel> compile_scratch(const LoweredKernel& k) override {
    return compiler_->compile_scratch(k);
  }
  void set_disk_cache(bool on) override { compiler_->set_disk_cache(on); }
  std::string optimized_source(const DeviceKernel& k) override {
    return compiler_->optimized_ir(static_cast<const CpuKernel&>(k));
  }

  void launch(const DeviceKernel& k, std::span<const DevicePtr> bufs, std::span<const int64_t> vars,
              const LaunchSize&) override {
    ptrs_.clear();
    for (const DevicePtr& b : bufs) ptrs_.push_back(static_cast<char*>(b.base) + b.offset);
    compiler_->run(static_cast<const CpuKernel&>(k), ptrs_.data(), vars.empty() ? nullptr : vars.data());
  }
  void synchronize() override {}

  Stats stats() const override {
    CpuCompilerStats s = compiler_->stats();
    return Stats{s.compiled, s.cache_hits, s.compile_ms, s.disk_hits};
  }

 private:
  CpuDevice(std::string name, std::unique_ptr<CpuCompiler> c)
      : ComputeDevice(std::move(name), c->target()), compiler_(std::move(c)) {}
  std::unique_ptr<CpuCompiler> compiler_;
  static thread_local std::vector<void*> ptrs_;  // launch argument scratch (programs run on many threads)
};

thread_local std::vector<void*> CpuDevice::ptrs_;

// CPU:1 and up: half the cores each (at least one thread) unless the options name a width.
int cpu_threads(int index, const DeviceOptions& options) {
  if (options.threads > 0 || index == 0) return options.threads;
  return std::max(1, int(std::thread::hardware_concurrency()) / 2);
}

[[maybe_unused]] const bool registered = register_backend(
    Backend{"CPU", 0, [](std::string*) { return kCpuDevices; },
            [](const std::string& name, int index, const DeviceOptions& options) -> std::shared_ptr<ComputeDevice> {
              if (index < 0 || index >= kCpuDevices)
                fail(Code::Device, "device '", name, "' is not available: the CPU backend has ", kCpuDevices,
                     " devices, CPU:0 .. CPU:", kCpuDevices - 1);
              return std::make_shared<CpuDevice>(name, cpu_threads(index, options), options.disk_cache);
            }});

}  // namespace

}  // namespace sn
