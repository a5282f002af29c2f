// The CUDA backend, devices "CUDA", "CUDA:1", ...: kernels are PTX from LLVM's NVPTX target
// (backends/llvm), run through the CUDA Driver API (libcuda.so.1, dlopen'ed, hand-written
// declarations in cuda_api.h): no CUDA toolkit is needed to build or run.
//
// sn_device_open_target(ctx, "CUDA", "sm_90") opens a compile-only device for an architecture: it
// needs no driver and no GPU; a kernel's source and binary are its PTX.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <vector>

#include "backends/cuda/cuda_api.h"
#include "backends/llvm/llvm_gpu.h"
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
  t.tensor_cores = nvidia_tensor_cores(std::atoi(arch.c_str() + 3));  // mma.sync from sm_80
  // NVPTX lowers sqrt without libdevice; exp2/log2/sin only as approximations: isel decomposes them.
  t.native_math = {Op::Sqrt};
  return t;
}

// The driver's current context for one device (its primary context), shared by the device, its
// kernels and its memory so that it outlives all of them.
class Context {
 public:
  Context(const cu::Api* api, int ordinal, const std::string& name) : api_(api) {
    check(api_->DeviceGet(&dev_, ordinal), "cuDeviceGet", name);
    check(api_->DevicePrimaryCtxRetain(&ctx_, dev_), "cuDevicePrimaryCtxRetain", name);
  }
  ~Context() {
    api_->CtxSetCurrent(nullptr);
    api_->DevicePrimaryCtxRelease(dev_);
  }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const cu::Api* api() const { return api_; }
  cu::CUdevice device() const { return dev_; }
  // Makes the context current on the calling thread (the driver's current context is per thread).
  void bind(const std::string& name) const { check(api_->CtxSetCurrent(ctx_), "cuCtxSetCurrent", name); }
  // The same in destructors, which cannot report a failure.
  void bind_quietly() const noexcept { api_->CtxSetCurrent(ctx_); }
  // How many modules were unloaded so far: a graph that launches a kernel of an unloaded module
  // must not run, and a new kernel may take the old one's address (CudaDevice::run).
  uint64_t unloads() const { return unloads_.load(); }
  void unloaded() const { unloads_++; }
  int attribute(cu::CUdevice_attribute a, const std::string& name) const {
    int v = 0;
    check(api_->DeviceGetAttribute(&v, a, dev_), "cuDeviceGetAttribute", name);
    return v;
  }
  // Throws Error(Device) (Error(OutOfMemory) for CUDA_ERROR_OUT_OF_MEMORY) naming the call.
  void check(cu::CUresult r, const char* call, const std::string& name) const {
    if (r == cu::CUDA_SUCCESS) return;
    fail(r == cu::CUDA_ERROR_OUT_OF_MEMORY ? Code::OutOfMemory : Code::Device, name, ": ", call,
         " failed: ", cu::error_name(api_, r));
  }

 private:
  const cu::Api* api_;
  cu::CUdevice dev_ = 0;
  cu::CUcontext ctx_ = nullptr;
  mutable std::atomic<uint64_t> unloads_{0};
};

// A kernel loaded into the context: its PTX module and entry point.
struct CudaKernel final : DeviceKernel {
  std::shared_ptr<const Context> ctx;
  cu::CUmodule module = nullptr;
  cu::CUfunction function = nullptr;
  std::string optimized_ir;
  ~CudaKernel() override {
    if (module) {
      ctx->bind_quietly();
      ctx->api()->ModuleUnload(module);
      ctx->unloaded();
    }
  }
};

// Device memory in blocks the device keeps for reuse: a freed buffer goes back to the pool, and an
// allocation takes the smallest pooled block that fits it and is at most twice its size (programs
// run again and again allocate the same sizes; cuMemAlloc and cuMemFree synchronize the device).
class BlockPool {
 public:
  static constexpr size_t kGranule = 512;
  explicit BlockPool(std::shared_ptr<const Context> ctx) : ctx_(std::move(ctx)) {}
  ~BlockPool() { trim(); }

  // A block of at least `bytes` (rounded up to the granule; 0 bytes get one granule).
  std::pair<cu::CUdeviceptr, size_t> take(size_t bytes, const std::string& name) {
    size_t n = (std::max<size_t>(bytes, 1) + kGranule - 1) / kGranule * kGranule;
    {
      std::lock_guard<std::mutex> lk(mu_);
      auto it = free_.lower_bound(n);
      if (it != free_.end() && it->first <= 2 * n) {
        auto block = *it;
        free_.erase(it);
        return {block.second, block.first};
      }
    }
    cu::CUdeviceptr p = 0;
    cu::CUresult r = ctx_->api()->MemAlloc(&p, n);
    if (r == cu::CUDA_ERROR_OUT_OF_MEMORY) {  // the pool's blocks may be what fills the device
      trim();
      r = ctx_->api()->MemAlloc(&p, n);
    }
    if (r != cu::CUDA_SUCCESS)
      fail(r == cu::CUDA_ERROR_OUT_OF_MEMORY ? Code::OutOfMemory : Code::Device, name, ": cannot allocate ", bytes,
           " bytes: cuMemAlloc failed: ", cu::error_name(ctx_->api(), r));
    return {p, n};
  }
  void give(cu::CUdeviceptr p, size_t n) {
    std::lock_guard<std::mutex> lk(mu_);
    free_.emplace(n, p);
  }
  // Frees every pooled block.
  void trim() {
    std::lock_guard<std::mutex> lk(mu_);
    for (auto& [n, p] : free_) ctx_->api()->MemFree(p);
    free_.clear();
  }

 private:
  std::shared_ptr<const Context> ctx_;
  std::mutex mu_;
  std::multimap<size_t, cu::CUdeviceptr> free_;
};

// An NVIDIA GPU through the CUDA Driver API: kernels are PTX from LLVM's NVPTX target, loaded with
// cuModuleLoadData (the driver compiles PTX for the GPU it runs on); launches and copies go in
// order on one stream of the device's primary context; host copies wait for what is before them.
class CudaDevice final : public ComputeDevice {
 public:
  CudaDevice(std::string name, Target target, std::shared_ptr<const Context> ctx, int ordinal)
      : ComputeDevice(std::move(name), std::move(target)), ctx_(std::move(ctx)), pool_(ctx_), ordinal_(ordinal) {
    ctx_->bind(this->name());
    check(api()->StreamCreate(&stream_, cu::CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  }
  ~CudaDevice() override {
    ctx_->bind_quietly();
    api()->StreamSynchronize(stream_);
    clear_graphs();
    if (start_) api()->EventDestroy(start_);
    if (stop_) api()->EventDestroy(stop_);
    api()->StreamDestroy(stream_);
  }

  std::string description() const override {
    char gpu[256] = {0};
    std::string label = api()->DeviceGetName(gpu, sizeof gpu - 1, ctx_->device()) == cu::CUDA_SUCCESS ? gpu : "GPU";
    size_t mem = 0;
    api()->DeviceTotalMem(&mem, ctx_->device());
    return cat(label, " (CUDA ", target().arch, ", ",
               ctx_->attribute(cu::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, name()), " SMs, ", mem >> 20, " MiB)");
  }

  // ---- memory ---------------------------------------------------------------------------------
  std::pair<int32_t, int32_t> dlpack_device() const override { return {kDlpackCuda, ordinal_}; }
  std::shared_ptr<Storage> allocate(size_t bytes) override {
    ctx_->bind(name());
    auto [p, n] = pool_.take(bytes, name());
    BlockPool* pool = &pool_;
    const size_t block = n;
    return std::make_shared<Storage>(shared_from_this(), reinterpret_cast<void*>(uintptr_t(p)), bytes,
                                     [pool, block](void* q) { pool->give(cu::CUdeviceptr(uintptr_t(q)), block); });
  }
  void copy_in(Storage& dst, size_t offset, const void* src, size_t bytes) override {
    ctx_->bind(name());
    check(api()->MemcpyHtoDAsync(address(dst.ptr(), offset), src, bytes, stream_), "cuMemcpyHtoDAsync");
    synchronize();  // the caller may reuse `src` at once
  }
  void copy_out(const Storage& src, size_t offset, void* dst, size_t bytes) override {
    ctx_->bind(name());
    check(api()->MemcpyDtoHAsync(dst, address(src.ptr(), offset), bytes, stream_), "cuMemcpyDtoHAsync");
    synchronize();
  }
  void copy(Storage& dst, size_t dst_offset, const Storage& src, size_t src_offset, size_t bytes) override {
    if (&src.device() != this) return ComputeDevice::copy(dst, dst_offset, src, src_offset, bytes);
    ctx_->bind(name());
    check(api()->MemcpyDtoDAsync(address(dst.ptr(), dst_offset), address(src.ptr(), src_offset), bytes, stream_),
          "cuMemcpyDtoDAsync");
  }

  // ---- compiler -------------------------------------------------------------------------------
  std::shared_ptr<const DeviceKernel> find(uint64_t key) const override { return cache_.find(key); }
  std::shared_ptr<const DeviceKernel> compile(const LoweredKernel& lk) override {
    return cache_.get(lk, [this](const LoweredKernel& k) { return load(k); });
  }
  std::string optimized_source(const DeviceKernel& k) override {
    if (auto* c = dynamic_cast<const CudaKernel*>(&k)) return c->optimized_ir;
    return k.source;
  }

  // ---- stream ---------------------------------------------------------------------------------
  void launch(const DeviceKernel& dk, std::span<const DevicePtr> bufs, std::span<const int64_t> vars,
              const LaunchSize& size) override {
    std::lock_guard<std::mutex> lk(stream_mu_);
    launch_locked(dk, bufs, vars, size);
  }

  // A program run of kGraphLaunches or more launches that comes again with the same kernels,
  // buffers, variables and grids is captured as a CUDA graph on its second run and replayed with
  // one cuGraphLaunch from then on (one submission instead of a launch each: the host-side cost
  // of a launch loop is what graphs save). A first run, short runs and drivers without graphs go
  // launch by launch.
  void run(std::span<const Command> commands) override {
    std::lock_guard<std::mutex> lk(stream_mu_);  // a capture must see this run's launches only
    if (commands.size() < kGraphLaunches || !api()->has_graphs()) {
      for (const Command& c : commands) launch_locked(*c.kernel, c.bufs, c.vars, c.size);
      return;
    }
    std::vector<uint64_t> key;
    for (const Command& c : commands) {
      key.push_back(uint64_t(reinterpret_cast<uintptr_t>(c.kernel)));
      for (const DevicePtr& b : c.bufs) key.push_back(address(b.base, b.offset));
      for (int64_t v : c.vars) key.push_back(uint64_t(v));
      for (size_t d = 0; d < 3; d++) key.push_back(uint64_t(c.size.global[d]) << 32 | uint64_t(c.size.local[d]));
      key.push_back(~0ull);  // end of a command
    }
    ctx_->bind(name());
    if (ctx_->unloads() != graphs_unloads_) {  // keys may name kernels that are gone
      clear_graphs();
      graphs_unloads_ = ctx_->unloads();
    }
    auto it = graphs_.find(key);
    if (it != graphs_.end() && it->second) {
      check(api()->GraphLaunch(it->second, stream_), "cuGraphLaunch");
      return;
    }
    if (it == graphs_.end()) {  // seen once: remember it, run it as launches
      if (graphs_.size() >= kGraphCache) clear_graphs();
      graphs_.emplace(std::move(key), nullptr);
      for (const Command& c : commands) launch_locked(*c.kernel, c.bufs, c.vars, c.size);
      return;
    }
    check(api()->StreamBeginCapture(stream_, cu::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "cuStreamBeginCapture");
    cu::CUgraph graph = nullptr;
    try {
      for (const Command& c : commands) launch_locked(*c.kernel, c.bufs, c.vars, c.size);
    } catch (...) {
      api()->StreamEndCapture(stream_, &graph);
      if (graph) api()->GraphDestroy(graph);
      throw;
    }
    check(api()->StreamEndCapture(stream_, &graph), "cuStreamEndCapture");
    cu::CUgraphExec exec = nullptr;
    cu::CUresult r = api()->GraphInstantiate(&exec, graph, 0);
    api()->GraphDestroy(graph);
    check(r, "cuGraphInstantiate");
    it->second = exec;
    check(api()->GraphLaunch(exec, stream_), "cuGraphLaunch");
  }

 private:
  static constexpr size_t kGraphLaunches = 4;  // fewer launches gain little from a graph
  static constexpr size_t kGraphCache = 64;    // runs remembered (all dropped when full)

  void clear_graphs() {
    for (auto& [key, exec] : graphs_)
      if (exec) api()->GraphExecDestroy(exec);
    graphs_.clear();
  }

  void launch_locked(const DeviceKernel& dk, std::span<const DevicePtr> bufs, std::span<const int64_t> vars,
                     const LaunchSize& size) {
    const auto& k = static_cast<const CudaKernel&>(dk);
    if (!launch_fits(k, size)) return;
    // kernelParams: one pointer per argument, to its value (buffers' device addresses, then the
    // variables), in the order the kernel declares them.
    std::vector<uint64_t> values;
    values.reserve(k.params.size() + vars.size());
    for (const KernelParam& p : k.params) {
      if (size_t(p.slot) >= bufs.size()) fail(Code::Internal, name(), ": ", k.name, " has no buffer for slot ", p.slot);
      values.push_back(address(bufs[size_t(p.slot)].base, bufs[size_t(p.slot)].offset));
    }
    for (int64_t v : vars) values.push_back(uint64_t(v));
    std::vector<void*> args;
    for (uint64_t& v : values) args.push_back(&v);
    ctx_->bind(name());
    check(api()->LaunchKernel(k.function, unsigned(size.global[0]), unsigned(size.global[1]), unsigned(size.global[2]),
                              unsigned(size.local[0]), unsigned(size.local[1]), unsigned(size.local[2]), 0, stream_,
                              args.data(), nullptr),
          cat("cuLaunchKernel of ", k.name).c_str());
  }

 public:
  void synchronize() override {
    ctx_->bind(name());
    check(api()->StreamSynchronize(stream_), "cuStreamSynchronize");
  }

  // The kernel's own time: events recorded on the stream before and after it.
  double time_launch(const DeviceKernel& dk, std::span<const DevicePtr> bufs, std::span<const int64_t> vars,
                     const LaunchSize& size) override {
    std::lock_guard<std::mutex> lk(stream_mu_);
    ctx_->bind(name());
    if (!start_) check(api()->EventCreate(&start_, 0), "cuEventCreate");
    if (!stop_) check(api()->EventCreate(&stop_, 0), "cuEventCreate");
    check(api()->EventRecord(start_, stream_), "cuEventRecord");
    launch_locked(dk, bufs, vars, size);
    check(api()->EventRecord(stop_, stream_), "cuEventRecord");
    check(api()->EventSynchronize(stop_), "cuEventSynchronize");
    float ms = 0;
    check(api()->EventElapsedTime(&ms, start_, stop_), "cuEventElapsedTime");
    return double(ms);
  }

  Stats stats() const override { return cache_.stats(); }

 private:
  const cu::Api* api() const { return ctx_->api(); }
  void check(cu::CUresult r, const char* call) const { ctx_->check(r, call, name()); }
  static cu::CUdeviceptr address(const void* base, size_t offset) {
    return cu::CUdeviceptr(reinterpret_cast<uintptr_t>(base)) + offset;
  }

  // PTX for the kernel, loaded into the context (the driver's JIT log in the error when it fails).
  std::shared_ptr<const CudaKernel> load(const LoweredKernel& k) {
    auto t0 = std::chrono::steady_clock::now();
    auto kernel = std::make_shared<CudaKernel>();
    kernel->describe(k);
    kernel->ctx = ctx_;
    std::string symbol = gpu_symbol(k);
    GpuCode code = compile_gpu_ir(render_llvm_ir(k, symbol, LlvmDialect::Nvptx), target(), false);
    kernel->optimized_ir = std::move(code.ir);
    kernel->source = code.assembly;
    kernel->binary = code.assembly;
    char log[4096] = {0};
    cu::CUjit_option opts[] = {cu::CU_JIT_ERROR_LOG_BUFFER, cu::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* values[] = {log, reinterpret_cast<void*>(uintptr_t(sizeof log - 1))};
    ctx_->bind(name());
    if (cu::CUresult r = api()->ModuleLoadDataEx(&kernel->module, code.assembly.c_str(), 2, opts, values);
        r != cu::CUDA_SUCCESS) {
      kernel->module = nullptr;
      fail(Code::Compile, name(), ": the driver rejected the PTX of ", k.name, ": ", cu::error_name(api(), r),
           log[0] ? cat("\n", log) : std::string());
    }
    check(api()->ModuleGetFunction(&kernel->function, kernel->module, symbol.c_str()), "cuModuleGetFunction");
    int max_threads = 0;
    check(api()->FuncGetAttribute(&max_threads, cu::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, kernel->function),
          "cuFuncGetAttribute");
    if (k.dims.local_items() > max_threads)
      fail(Code::Compile, name(), ": kernel ", k.name, " needs ", k.dims.local_items(),
           " threads per block, the driver allows ", max_threads, " for it");
    kernel->compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return kernel;
  }

  static constexpr int32_t kDlpackCuda = 2;  // DLPack's kDLCUDA
  std::shared_ptr<const Context> ctx_;
  BlockPool pool_;
  int ordinal_;
  cu::CUstream stream_ = nullptr;
  cu::CUevent start_ = nullptr, stop_ = nullptr;             // time_launch's
  std::mutex stream_mu_;                                     // launches, runs and captures on stream_
  std::map<std::vector<uint64_t>, cu::CUgraphExec> graphs_;  // runs by their launches (null: seen once)
  uint64_t graphs_unloads_ = 0;                              // Context::unloads() when graphs_ was valid
  KernelCache cache_;
};

// The newest architecture LLVM knows that a GPU of compute capability major.minor runs (the
// driver JIT-compiles older PTX for newer GPUs).
std::string arch_for(int major, int minor) {
  int cc = major * 10 + minor;
  std::string best;
  for (const SmArch& a : kArchs) {
    std::string n = a.name;
    if (n.back() == 'a') continue;  // arch-specific features only run on exactly that GPU
    if (std::stoi(n.substr(3)) <= cc) best = n;
  }
  return best;
}

// How many GPUs the driver has; 0 with the reason (no driver, cuInit or cuDeviceGetCount failed,
// no device) in *why.
int cuda_device_count(std::string* why) {
  const cu::Api* api = cu::load(why);
  if (!api) return 0;
  int count = 0;
  if (cu::CUresult r = api->DeviceGetCount(&count); r != cu::CUDA_SUCCESS) {
    if (why) *why = cat("cuDeviceGetCount failed: ", cu::error_name(api, r));
    return 0;
  }
  if (count == 0 && why) *why = "the CUDA driver found no device";
  return count;
}

std::shared_ptr<ComputeDevice> open_cuda(const std::string& name, int index) {
  std::string why;
  const int count = cuda_device_count(&why);
  if (count == 0) fail(Code::Device, "device '", name, "' is not available: ", why);
  if (index >= count)
    fail(Code::Device, "device '", name, "' is not available: there are ", count, " CUDA devices (CUDA",
         count > 1 ? cat(" .. CUDA:", count - 1) : "", ")");
  const cu::Api* api = cu::load(nullptr);
  auto ctx = std::make_shared<const Context>(api, index, name);
  int major = ctx->attribute(cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, name);
  int minor = ctx->attribute(cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, name);
  std::string arch = arch_for(major, minor);
  if (arch.empty())
    fail(Code::Device, "device '", name, "' has compute capability ", major, ".", minor, "; Sinter needs ",
         kArchs[0].name, " or newer");
  Target t = cuda_target(arch);
  t.local_memory_bytes = std::min<int64_t>(t.local_memory_bytes,
                                           ctx->attribute(cu::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, name));
  t.max_local_total = ctx->attribute(cu::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, name);
  t.compute_units = ctx->attribute(cu::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, name);
  t.max_local_size = {ctx->attribute(cu::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, name),
                      ctx->attribute(cu::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, name),
                      ctx->attribute(cu::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, name)};
  t.max_global_size = {ctx->attribute(cu::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, name),
                       ctx->attribute(cu::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, name),
                       ctx->attribute(cu::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, name)};
  return std::make_shared<CudaDevice>(name, std::move(t), std::move(ctx), index);
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

[[maybe_unused]] const bool registered = register_backend(
    Backend{"CUDA", 5, cuda_device_count,
            [](const std::string& name, int index, const DeviceOptions&) { return open_cuda(name, index); }});
[[maybe_unused]] const bool registered_target = register_target_opener(
    "CUDA", [](const std::string& arch, const DeviceOptions&) { return open_cuda_target(arch); });

}  // namespace

}  // namespace sn
