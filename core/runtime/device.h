// Devices: where buffers live and kernels run. A ComputeDevice allocates Storage, lowers kernel ASTs for its
// target, compiles them (cached by content) and launches them. A DeviceRegistry maps names ("CPU")
// to factories and opens each device once; the runtime context owns one registry, so there is no
// process-wide device state. Backends that are not built in, or whose driver is missing, are a
// clear Error(Device) when opened.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/codegen/codegen.h"
#include "core/ir/graph.h"
#include "core/runtime/buffer.h"

namespace sn {

// A compiled kernel as the runtime sees it: what to bind (params, vars), how wide it runs, and its
// source for inspection. Backends derive from it to keep their own handle.
struct DeviceKernel {
  virtual ~DeviceKernel() = default;
  std::string name;    // readable kernel name (not unique)
  std::string source;  // rendered source (LLVM IR on the CPU)
  std::vector<KernelParam> params;
  std::vector<KernelVar> vars;
  int64_t threads = 1;
  double compile_ms = 0;  // backend compile time (0 for a cache hit)
};

struct DeviceOptions {
  int threads = 0;  // CPU: thread pool width (0 = all cores)
};

class ComputeDevice : public std::enable_shared_from_this<ComputeDevice> {
 public:
  explicit ComputeDevice(std::string name) : name_(std::move(name)) {}
  virtual ~ComputeDevice() = default;
  ComputeDevice(const ComputeDevice&) = delete;
  ComputeDevice& operator=(const ComputeDevice&) = delete;

  // Canonical name ("CPU").
  const std::string& name() const { return name_; }

  // Why this device cannot store or compute `dtype` ("" when it can).
  virtual std::string unsupported_dtype(DType dtype) const = 0;

  // A new allocation of `bytes` (Error(OutOfMemory) when it fails). Never returns a null address,
  // even for 0 bytes.
  virtual std::shared_ptr<Storage> allocate(size_t bytes) = 0;
  // Host <-> device copies of `bytes` at `offset` bytes into `dst` / `src` (range checked by Buffer).
  virtual void copy_in(Storage& dst, size_t offset, const void* src, size_t bytes) = 0;
  virtual void copy_out(const Storage& src, size_t offset, void* dst, size_t bytes) = 0;

  // Codegen target, as the optimizer and the renderer see it.
  virtual const CpuTarget& target() const = 0;
  // A kernel compiled before for this lowered-kernel cache key, or nullptr.
  virtual std::shared_ptr<const DeviceKernel> find(uint64_t key) const = 0;
  // Renders and compiles a lowered kernel (cached by content: the same kernel compiles once).
  virtual std::shared_ptr<const DeviceKernel> compile(const LoweredKernel& k) = 0;
  // Runs the kernel with bufs[slot] = device address of Param slot `slot` and vars[i] = the value of
  // k.vars[i]. Blocks until the kernel finished.
  virtual void launch(const DeviceKernel& k, void* const* bufs, const int64_t* vars) = 0;
  // The compiled form after backend optimization, for debug dumps (LLVM IR after O3 on the CPU).
  virtual std::string optimized_source(const DeviceKernel& k) = 0;

  struct Stats {
    uint64_t compiled = 0;    // kernels given to the backend compiler
    uint64_t cache_hits = 0;  // kernels answered from the cache
    double compile_ms = 0;    // total backend compile time
  };
  virtual Stats stats() const = 0;

 private:
  std::string name_;
};

class DeviceRegistry {
 public:
  // Opens the device of a canonical name ("CPU", "CUDA:1"); throws Error(Device) for an index the
  // backend does not have or a driver that is missing.
  using Factory = std::function<std::shared_ptr<ComputeDevice>(const std::string& name, const DeviceOptions&)>;

  // Registers the backends compiled into this build (CPU when LLVM is available).
  explicit DeviceRegistry(DeviceOptions options = {});

  // Adds (or replaces) a backend under `name` (upper case, e.g. "CUDA"). Devices already opened
  // under that name stay open.
  void add(const std::string& name, Factory factory);

  // The device called `name` ("CPU", "cpu", "CPU:0"), opened on first use and shared afterwards.
  // Throws Error(Device) naming the device and the available ones when it is unknown, has an
  // index this backend does not have, or its factory fails.
  std::shared_ptr<ComputeDevice> open(std::string_view name);

  // The default device: the first registered (CPU).
  std::shared_ptr<ComputeDevice> default_device();

  // Names of the registered backends, in registration order.
  std::vector<std::string> names() const;

 private:
  mutable std::mutex mu_;
  DeviceOptions options_;
  std::vector<std::pair<std::string, Factory>> factories_;
  std::map<std::string, std::shared_ptr<ComputeDevice>> open_;
};

// Canonical device name for `name`: upper case, ":0" dropped ("cpu:0" -> "CPU"). Throws
// Error(Device) for an empty or malformed name.
std::string canonical_device_name(std::string_view name);

}  // namespace sn
