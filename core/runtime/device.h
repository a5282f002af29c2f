// Devices: where buffers live and kernels run. A ComputeDevice is a Target (what its compiler can
// generate) plus an allocator, a compiler (kernels cached by content) and a queue: launches carry
// their grid, run asynchronously in order, and synchronize() waits for them. Copies to and from the
// host wait for the queue first; copies between devices go through the host.
//
// Backends register themselves (register_backend, from a static initializer in backends/): core/
// never names one. A DeviceRegistry (one per runtime context) opens each device once by name:
// "CPU", "CL", "CL:1" (the second OpenCL device), "C" (compile-only: C source for export).
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/codegen/codegen.h"
#include "core/ir/graph.h"
#include "core/runtime/buffer.h"

namespace sn {

class Program;

// A compiled kernel as the runtime sees it: what to bind (params, vars), how it launches, and its
// source for inspection. Backends derive from it to keep their own handle.
struct DeviceKernel {
  virtual ~DeviceKernel() = default;
  std::string name;    // readable kernel name (not unique)
  std::string source;  // rendered source (LLVM IR on the CPU, OpenCL C on CL, C on C, PTX on CUDA, AMDGPU assembly)
  // What a GPU driver loads (CUDA: PTX text or a cubin; AMD: a code object ELF); empty where the
  // backend keeps none (CPU, CL, C).
  std::string binary;
  std::vector<KernelParam> params;
  std::vector<KernelVar> vars;
  int64_t threads = 1;  // THREAD launches (CPU)
  LaunchDims dims;      // the grid (GPU-style targets)
  KernelFeatures features;
  std::vector<Opt> opts;  // the optimizer's choices
  double compile_ms = 0;  // backend compile time (0 for a cache hit)
  // CPU milliseconds of each lowering stage (optimized .. linear) when it was lowered, for SN_DEBUG=2.
  std::vector<std::pair<std::string, double>> stage_ms;

  // The fields every backend copies from the lowered kernel (all but source and compile_ms).
  void describe(const LoweredKernel& k);
  // How it launches, for debug output: "threads 2", or "grid 64x1x1 of 32x4x1" (work-groups of
  // work-items; a size that follows a variable prints as its expression).
  std::string launch_shape() const;
};

// The grid of one launch: work-groups per dimension and work-items per group.
struct LaunchSize {
  std::array<int64_t, 3> global{1, 1, 1};
  std::array<int64_t, 3> local{1, 1, 1};
};

struct DeviceOptions {
  int threads = 0;         // CPU: thread pool width (0 = all cores)
  bool disk_cache = true;  // use the persistent kernel cache (ComputeDevice::set_disk_cache)
};

class ComputeDevice : public std::enable_shared_from_this<ComputeDevice> {
 public:
  ComputeDevice(std::string name, Target target) : name_(std::move(name)), target_(std::move(target)) {}
  virtual ~ComputeDevice() = default;
  ComputeDevice(const ComputeDevice&) = delete;
  ComputeDevice& operator=(const ComputeDevice&) = delete;

  // Canonical name ("CPU", "CL:1").
  const std::string& name() const { return name_; }
  // What its compiler generates code for, as the optimizer and the renderer see it.
  const Target& target() const { return target_; }
  // A human-readable description ("pthread-haswell-AMD EPYC (Portable Computing Language)").
  virtual std::string description() const { return name_; }

  // Why this device cannot store or compute `dtype` ("" when it can).
  virtual std::string unsupported_dtype(DType dtype) const { return target_.unsupported_dtype(dtype); }

  // ---- memory ---------------------------------------------------------------------------------
  // A new allocation of `bytes` (Error(OutOfMemory) when it fails). Never returns a null handle,
  // even for 0 bytes.
  virtual std::shared_ptr<Storage> allocate(size_t bytes) = 0;
  // Host <-> device copies of `bytes` at `offset` bytes into `dst` / `src` (range checked by
  // Buffer). They wait for the launches queued before them.
  virtual void copy_in(Storage& dst, size_t offset, const void* src, size_t bytes) = 0;
  virtual void copy_out(const Storage& src, size_t offset, void* dst, size_t bytes) = 0;
  // A copy between two storages of this device (through the host unless the backend does better).
  virtual void copy(Storage& dst, size_t dst_offset, const Storage& src, size_t src_offset, size_t bytes);
  // Whether the host reads and writes its storages directly (their handles are host pointers).
  virtual bool host_memory() const { return false; }
  // Where its memory sits for DLPack: (DLDeviceType, device id); type 0 when its buffers cannot be
  // exchanged. Host memory of a device that runs is DLPack's CPU (1, 0).
  virtual std::pair<int32_t, int32_t> dlpack_device() const {
    return host_memory() && cannot_run().empty() ? std::pair<int32_t, int32_t>{1, 0}
                                                 : std::pair<int32_t, int32_t>{0, 0};
  }

  // ---- compiler -------------------------------------------------------------------------------
  // A kernel compiled before for this lowered-kernel cache key, or nullptr.
  virtual std::shared_ptr<const DeviceKernel> find(uint64_t key) const = 0;
  // Renders and compiles a lowered kernel (cached by content: the same kernel compiles once).
  virtual std::shared_ptr<const DeviceKernel> compile(const LoweredKernel& k) = 0;
  // Compiles several kernels at once, where the backend gains by it (the CPU: one LLVM module, one
  // fixed cost); result i is ks[i]'s. The default compiles them one by one.
  virtual std::vector<std::shared_ptr<const DeviceKernel>> compile_together(std::span<const LoweredKernel* const> ks) {
    std::vector<std::shared_ptr<const DeviceKernel>> out;
    for (const LoweredKernel* k : ks) out.push_back(compile(*k));
    return out;
  }
  // Compiles a kernel to be timed and thrown away (a BEAM candidate): not cached, in memory or on
  // disk, and safe to call from several threads at once; its code is freed with the kernel where
  // the backend can. The default is compile().
  virtual std::shared_ptr<const DeviceKernel> compile_scratch(const LoweredKernel& k) { return compile(k); }
  // Whether compile() and find() use the persistent cache (core/runtime/disk_cache.h), for
  // backends that have one; on by default (SN_CACHE=0 turns it off for the whole process).
  virtual void set_disk_cache(bool /*on*/) {}
  // The compiled form after backend optimization, for debug dumps (LLVM IR after O3 on the CPU).
  virtual std::string optimized_source(const DeviceKernel& k) { return k.source; }
  // A whole program as one standalone C file (sn_program_export_c); only source devices can.
  virtual std::string export_c(const Program& program, const std::string& name) const;

  // ---- queue ----------------------------------------------------------------------------------
  // "" when kernels can run here; else why not (a compile-only device).
  virtual std::string cannot_run() const { return ""; }
  // Queues the kernel with bufs[slot] = the buffer of Param slot `slot` and vars[i] = the value of
  // k.vars[i], on `size` (the kernel's grid for these vars). Returns before it finishes when the
  // backend can; errors of the launch itself are thrown here or by synchronize().
  virtual void launch(const DeviceKernel& k, std::span<const DevicePtr> bufs, std::span<const int64_t> vars,
                      const LaunchSize& size) = 0;
  // One launch of a program run: launch()'s arguments.
  struct Command {
    const DeviceKernel* kernel;
    std::vector<DevicePtr> bufs;
    std::vector<int64_t> vars;
    LaunchSize size;
  };
  // Queues a program run's launches in order, as launch() does each. A backend may replay a list it
  // has seen before in one go (CUDA: as a graph).
  virtual void run(std::span<const Command> commands) {
    for (const Command& c : commands) launch(*c.kernel, c.bufs, c.vars, c.size);
  }
  // Waits until every queued launch has finished.
  virtual void synchronize() = 0;
  // One launch (launch()'s arguments), waited for, and how long it took in milliseconds: BEAM's
  // timer. The default is launch() then synchronize() on the host's clock; a GPU backend times the
  // kernel alone on the device (CUDA: events around it on its stream), without the launch's host cost.
  virtual double time_launch(const DeviceKernel& k, std::span<const DevicePtr> bufs, std::span<const int64_t> vars,
                             const LaunchSize& size);

  struct Stats {
    uint64_t compiled = 0;    // kernels given to the backend compiler
    uint64_t cache_hits = 0;  // kernels answered from the cache
    double compile_ms = 0;    // total backend compile time
    uint64_t disk_hits = 0;   // kernels loaded from the disk cache (core/runtime/disk_cache.h), not compiled
  };
  virtual Stats stats() const = 0;

 protected:
  // For launch(): false for an empty grid (nothing to run); Error(InvalidArg) naming the kernel when
  // the grid or its work-groups are over the target's limits.
  bool launch_fits(const DeviceKernel& k, const LaunchSize& size) const;

 private:
  std::string name_;
  Target target_;
};

// Copies the contents of `src` into `dst` (same dtype and element count), on one device or
// between two (through the host).
void copy_buffer(Buffer& dst, const Buffer& src);

// Compiled kernels by lowered-kernel key, with the counts of ComputeDevice::stats(): the cache a
// backend's find() and compile() share. Compiles are serialized (drivers' compilers need not be
// thread-safe), but find() never waits for one: the pipeline looks kernels up while an earlier one
// compiles.
class KernelCache {
 public:
  using Compiler = std::function<std::shared_ptr<const DeviceKernel>(const LoweredKernel&)>;
  std::shared_ptr<const DeviceKernel> find(uint64_t key) const;
  // The kernel cached under k.key, else compile(k) (its compile_ms is counted) cached from now on.
  std::shared_ptr<const DeviceKernel> get(const LoweredKernel& k, const Compiler& compile);
  ComputeDevice::Stats stats() const;

 private:
  mutable std::mutex mu_;  // kernels_ and stats_
  std::mutex compile_mu_;  // one compile at a time
  std::map<uint64_t, std::shared_ptr<const DeviceKernel>> kernels_;
  ComputeDevice::Stats stats_;
};

// ---- backends -----------------------------------------------------------------------------------

struct Backend {
  std::string name;  // upper case: "CPU", "CL", "C"
  int preference;    // the default device is the available runnable one with the lowest
  // How many devices there are; 0 (with the reason in *why) when its driver or hardware is missing.
  std::function<int(std::string* why)> count;
  // Opens device `index` under its canonical name ("CL:1"); throws Error(Device) naming the reason.
  std::function<std::shared_ptr<ComputeDevice>(const std::string& name, int index, const DeviceOptions&)> open;
};

// Adds a backend to the process-wide list (backends call it from a static initializer, so every
// build has exactly the backends it links). Returns true, for use in an initializer.
bool register_backend(Backend backend);
// The backends registered so far, by preference.
std::vector<Backend> registered_backends();

// A compile-only device for an architecture of a backend ("CUDA" + "sm_90", "AMD" + "gfx942") that
// needs neither its driver nor its hardware (sn_device_open_target). Throws Error(InvalidArg)
// naming an architecture the backend does not know.
using TargetOpener = std::function<std::shared_ptr<ComputeDevice>(const std::string& arch, const DeviceOptions&)>;
// Adds one for `backend` (upper case), from a static initializer like register_backend.
bool register_target_opener(std::string backend, TargetOpener open);

class DeviceRegistry {
 public:
  // Opens the device of a canonical name ("CPU", "CUDA:1"); throws Error(Device) for an index the
  // backend does not have or a driver that is missing.
  using Factory = std::function<std::shared_ptr<ComputeDevice>(const std::string& name, const DeviceOptions&)>;

  // Knows every registered backend.
  explicit DeviceRegistry(DeviceOptions options = {});

  // Adds (or replaces) a backend under `name` (upper case, e.g. "CUDA") with one device (for
  // tests and embedders). Devices already opened under that name stay open.
  void add(const std::string& name, Factory factory);
  void add(Backend backend);

  // The device called `name` ("CPU", "cpu", "CPU:0", "CL:1"), opened on first use and shared
  // afterwards. Throws Error(Device) naming the device and the available ones when it is unknown,
  // has an index this backend does not have, or fails to open.
  std::shared_ptr<ComputeDevice> open(std::string_view name);

  // The default device: the runnable backend with the lowest preference that has a device (CPU).
  std::shared_ptr<ComputeDevice> default_device();

  // How many devices backend `name` has (0 when its driver is missing; *why says why). Throws
  // Error(NotFound) for a backend this build does not have.
  int count(std::string_view backend, std::string* why = nullptr);

  // Names of the known backends, by preference.
  std::vector<std::string> names() const;

  // The compile-only device of backend `backend` ("CUDA", "amd") for architecture `arch`, opened on
  // first use and shared afterwards (register_target_opener). Throws Error(Device) for a backend
  // that has none in this build (naming those that do), Error(InvalidArg) for an unknown arch.
  std::shared_ptr<ComputeDevice> open_target(std::string_view backend, std::string_view arch);

  // Turns the persistent kernel cache on or off for the devices open now and those opened later.
  void set_disk_cache(bool on);
  bool disk_cache() const;

 private:
  const Backend* find(const std::string& base) const;
  mutable std::mutex mu_;
  DeviceOptions options_;
  std::vector<Backend> backends_;
  std::map<std::string, std::shared_ptr<ComputeDevice>> open_;
  std::map<std::pair<std::string, std::string>, std::shared_ptr<ComputeDevice>> targets_;  // (backend, arch)
};

// Canonical device name for `name`: upper case, ":0" dropped ("cpu:0" -> "CPU"). Throws
// Error(Device) for an empty or malformed name.
std::string canonical_device_name(std::string_view name);

}  // namespace sn
