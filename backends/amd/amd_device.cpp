// The AMD backend, device "AMD": kernels are AMDGPU objects from LLVM's AMDGPU target
// (backends/llvm), linked by lld (liblld, in process) into a code object (a shared ELF with the kernel descriptors,
// `<kernel>.kd`, and the amdhsa.kernels metadata note).
//
// sn_device_open_target(ctx, "AMD", "gfx942") opens a compile-only device for an architecture: it
// needs no driver and no GPU; a kernel's source is its AMDGPU assembly, its binary the code object.
// sn_device_open(ctx, "AMD") runs kernels through the HSA runtime (libhsa-runtime64.so.1, dlopen'ed,
// hand-written declarations in hsa_api.h): one device per GPU agent, or a clean Device error naming
// what is missing (no runtime, hsa_init failing, no GPU agent).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <vector>

#include "backends/amd/hsa_api.h"
#include "backends/llvm/llvm_gpu.h"
#include "core/util/dynlib.h"
#include "core/util/error.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <lld/Common/Driver.h>
#include <llvm/Support/raw_ostream.h>
#pragma GCC diagnostic pop

LLD_HAS_DRIVER(elf)

namespace sn {

namespace {

struct GfxArch {
  const char* name;
  int wave;  // wavefront size
};
constexpr GfxArch kArchs[] = {{"gfx908", 64},  {"gfx90a", 64},  {"gfx940", 64},  {"gfx941", 64}, {"gfx942", 64},
                              {"gfx1030", 32}, {"gfx1100", 32}, {"gfx1101", 32}, {"gfx1102", 32}};

// What the optimizer and the renderer may assume about an AMD GPU `arch`.
Target amd_target(const std::string& arch) {
  const GfxArch* found = nullptr;
  for (const GfxArch& a : kArchs)
    if (arch == a.name) found = &a;
  if (!found) {
    std::string known;
    for (const GfxArch& a : kArchs) known += cat(known.empty() ? "" : ", ", a.name);
    fail(Code::InvalidArg, "unknown AMD architecture '", arch, "' (known: ", known, ")");
  }
  Target t;
  t.renderer = "AMD";
  t.arch = arch;
  t.triple = "amdgcn-amd-amdhsa";
  t.has_local = true;
  t.has_shared = true;
  t.local_memory_bytes = 64 * 1024;  // LDS per work-group
  t.max_local_size = {1024, 1024, 1024};
  t.max_local_total = 1024;
  t.max_global_size = {int64_t(INT32_MAX), int64_t(INT32_MAX), int64_t(INT32_MAX)};
  t.warp_size = found->wave;
  t.vector_bits = 0;                        // scalar code per work-item
  t.tensor_cores = amd_tensor_cores(arch);  // MFMA (gfx9), WMMA (gfx11)
  // The AMDGPU target lowers sqrt for every float type; exp2/log2 only for f32, sin approximately: isel
  // decomposes those.
  t.native_math = {Op::Sqrt};
  return t;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// Links a relocatable AMDGPU object into a code object: lld's ELF linker in process (liblld), as
// `ld.lld -shared`. lld keeps global state, so links are serialized. Throws Error(Compile) with
// lld's message.
std::string link_code_object(const std::string& object, const std::string& kernel) {
  namespace fs = std::filesystem;
  std::string dir_template = (fs::temp_directory_path() / "sn_amd_XXXXXX").string();
  if (!mkdtemp(dir_template.data())) fail(Code::Compile, "AMD: cannot make a temporary directory in ", dir_template);
  fs::path dir(dir_template);
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{dir};
  fs::path in = dir / "kernel.o", out = dir / "kernel.hsaco";
  std::ofstream(in, std::ios::binary).write(object.data(), std::streamsize(object.size()));
  std::string a_in = in.string(), a_out = out.string(), log;
  const char* args[] = {"ld.lld", "-shared", "-o", a_out.c_str(), a_in.c_str()};
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  llvm::raw_string_ostream errors(log);
  lld::Result r = lld::lldMain(args, llvm::nulls(), errors, {{lld::Gnu, &lld::elf::link}});
  if (r.retCode != 0 || !r.canRunAgain)
    fail(Code::Compile, "AMD: lld failed to link kernel ", kernel, " into a code object: ", errors.str());
  return read_file(out);
}

std::shared_ptr<ComputeDevice> open_amd_target(const std::string& arch) {
  return std::make_shared<GpuTargetDevice>(
      "AMD", amd_target(arch), LlvmDialect::Amdgpu, true,
      cat("AMD ", arch, " (compile-only: code objects from LLVM's AMDGPU target, linked by lld)"),
      [](DeviceKernel& k, GpuCode code) {
        k.binary = link_code_object(code.object, k.name);
        k.source = std::move(code.assembly);
      });
}

// ---- the runtime ------------------------------------------------------------------------------

// The runtime's agents: its GPUs, and the CPU whose memory pools hold kernel arguments and staging
// buffers.
struct Agents {
  std::vector<hsa::Agent> gpus;
  hsa::Agent cpu{0};
  bool has_cpu = false;
};

Agents find_agents(const hsa::Api* api, hsa::Status* status) {
  struct Walk {
    const hsa::Api* api;
    Agents found;
  } walk{api, {}};
  *status = api->iterate_agents(
      [](hsa::Agent agent, void* data) -> hsa::Status {
        auto* w = static_cast<Walk*>(data);
        int type = -1;
        if (w->api->agent_get_info(agent, hsa::kAgentInfoDevice, &type) != hsa::kSuccess) return hsa::kSuccess;
        if (type == hsa::kDeviceTypeGpu) w->found.gpus.push_back(agent);
        if (type == hsa::kDeviceTypeCpu && !w->found.has_cpu) w->found.cpu = agent, w->found.has_cpu = true;
        return hsa::kSuccess;
      },
      &walk);
  return walk.found;
}

// How many GPU agents the runtime has; 0 with the reason in *why.
int amd_device_count(std::string* why) {
  std::string reason;
  const hsa::Api* api = hsa::load(&reason);
  if (!api) {
    if (why) *why = reason;
    return 0;
  }
  hsa::Status s = hsa::kSuccess;
  Agents a = find_agents(api, &s);
  if (s != hsa::kSuccess) {
    if (why) *why = cat("HSA runtime found no GPU agent: hsa_iterate_agents failed: ", hsa::status_name(api, s));
    return 0;
  }
  if (a.gpus.empty() && why) *why = "HSA runtime found no GPU agent";
  return int(a.gpus.size());
}

// A memory pool of an agent with the wanted flags in the global segment that the runtime allocates
// from; {0} when it has none.
hsa::MemoryPool find_pool(const hsa::Api* api, hsa::Agent agent, uint32_t flag) {
  struct Want {
    const hsa::Api* api;
    uint32_t flag;
    hsa::MemoryPool found{0};
  } want{api, flag};
  api->agent_iterate_memory_pools(
      agent,
      [](hsa::MemoryPool pool, void* data) -> hsa::Status {
        auto* w = static_cast<Want*>(data);
        int segment = -1;
        uint32_t flags = 0;
        bool alloc = false;
        if (w->api->memory_pool_get_info(pool, hsa::kPoolInfoSegment, &segment) != hsa::kSuccess ||
            segment != hsa::kSegmentGlobal)
          return hsa::kSuccess;
        w->api->memory_pool_get_info(pool, hsa::kPoolInfoGlobalFlags, &flags);
        w->api->memory_pool_get_info(pool, hsa::kPoolInfoRuntimeAllocAllowed, &alloc);
        if (!(flags & w->flag) || !alloc) return hsa::kSuccess;
        w->found = pool;
        return hsa::kInfoBreak;
      },
      &want);
  return want.found;
}

// A kernel's code object loaded onto the GPU agent: its executable and what a dispatch needs.
struct AmdKernel final : DeviceKernel {
  const hsa::Api* api = nullptr;
  hsa::Executable executable{0};
  uint64_t object = 0;  // the kernel descriptor's address
  uint32_t kernarg_bytes = 0, group_bytes = 0, private_bytes = 0;
  std::string optimized_ir;
  ~AmdKernel() override {
    if (executable.handle) api->executable_destroy(executable);
  }
};

// An AMD GPU through the HSA runtime: kernels are code objects (LLVM's AMDGPU target, linked by
// lld) loaded into executables; launches are AQL kernel dispatch packets on one queue, each with
// its kernel arguments in the CPU's kernarg pool and the barrier bit set, so they run in order and
// one counting completion signal says when all are done. Device memory comes from the GPU's
// coarse-grained pool; host copies go through a staging buffer in the CPU's fine-grained pool.
class AmdDevice final : public ComputeDevice {
 public:
  AmdDevice(std::string name, Target target, const hsa::Api* api, hsa::Agent gpu, hsa::Agent cpu)
      : ComputeDevice(std::move(name), std::move(target)), api_(api), gpu_(gpu), cpu_(cpu) {
    device_pool_ = find_pool(api_, gpu_, hsa::kPoolFlagCoarseGrained);
    kernarg_pool_ = find_pool(api_, cpu_, hsa::kPoolFlagKernargInit);
    staging_pool_ = find_pool(api_, cpu_, hsa::kPoolFlagFineGrained);
    if (!device_pool_.handle || !kernarg_pool_.handle || !staging_pool_.handle)
      fail(Code::Device, this->name(), ": the HSA runtime has no ",
           !device_pool_.handle ? "coarse-grained GPU memory pool"
                                : (!kernarg_pool_.handle ? "kernarg memory pool" : "fine-grained host memory pool"));
    uint32_t queue_max = 0;
    check(api_->agent_get_info(gpu_, hsa::kAgentInfoQueueMaxSize, &queue_max), "hsa_agent_get_info");
    uint32_t size = std::min<uint32_t>(std::max<uint32_t>(queue_max, 64), 4096);
    check(api_->queue_create(gpu_, size, hsa::kQueueTypeMulti, nullptr, nullptr, UINT32_MAX, UINT32_MAX, &queue_),
          "hsa_queue_create");
    if (hsa::Status s = api_->signal_create(0, 0, nullptr, &done_); s != hsa::kSuccess) {
      api_->queue_destroy(queue_);
      check(s, "hsa_signal_create");
    }
  }
  ~AmdDevice() override {
    try {
      synchronize();
    } catch (const Error&) {  // a device error at exit: nothing left to tell it to
    }
    if (staging_) api_->memory_pool_free(staging_);
    api_->signal_destroy(done_);
    api_->queue_destroy(queue_);
  }

  std::string description() const override {
    char product[64] = {0};
    uint32_t cus = 0;
    api_->agent_get_info(gpu_, hsa::kAmdAgentInfoProductName, product);
    api_->agent_get_info(gpu_, hsa::kAmdAgentInfoComputeUnitCount, &cus);
    product[sizeof product - 1] = 0;
    return cat(product[0] ? product : "AMD GPU", " (HSA ", target().arch, ", ", cus, " CUs)");
  }

  // ---- memory ---------------------------------------------------------------------------------
  std::shared_ptr<Storage> allocate(size_t bytes) override {
    void* p = nullptr;
    hsa::Status s = api_->memory_pool_allocate(device_pool_, std::max<size_t>(bytes, 1), 0, &p);
    if (s != hsa::kSuccess || !p)
      fail(s == hsa::kOutOfResources ? Code::OutOfMemory : Code::Device, name(), ": cannot allocate ", bytes,
           " bytes: hsa_amd_memory_pool_allocate failed: ", hsa::status_name(api_, s));
    const hsa::Api* api = api_;
    return std::make_shared<Storage>(shared_from_this(), p, bytes, [api](void* q) { api->memory_pool_free(q); });
  }
  void copy_in(Storage& dst, size_t offset, const void* src, size_t bytes) override {
    std::lock_guard<std::mutex> lk(copy_mu_);
    synchronize();  // launches before the copy may still read the old contents
    for (size_t at = 0; at < bytes; at += kStagingBytes) {
      size_t n = std::min(kStagingBytes, bytes - at);
      std::memcpy(staging(), static_cast<const char*>(src) + at, n);
      transfer(static_cast<char*>(dst.ptr()) + offset + at, gpu_, staging(), cpu_, n);
    }
  }
  void copy_out(const Storage& src, size_t offset, void* dst, size_t bytes) override {
    std::lock_guard<std::mutex> lk(copy_mu_);
    synchronize();
    for (size_t at = 0; at < bytes; at += kStagingBytes) {
      size_t n = std::min(kStagingBytes, bytes - at);
      transfer(staging(), cpu_, static_cast<const char*>(src.ptr()) + offset + at, gpu_, n);
      std::memcpy(static_cast<char*>(dst) + at, staging(), n);
    }
  }
  void copy(Storage& dst, size_t dst_offset, const Storage& src, size_t src_offset, size_t bytes) override {
    if (&src.device() != this) return ComputeDevice::copy(dst, dst_offset, src, src_offset, bytes);
    synchronize();
    transfer(static_cast<char*>(dst.ptr()) + dst_offset, gpu_, static_cast<const char*>(src.ptr()) + src_offset, gpu_,
             bytes);
  }

  // ---- compiler -------------------------------------------------------------------------------
  std::shared_ptr<const DeviceKernel> find(uint64_t key) const override { return cache_.find(key); }
  std::shared_ptr<const DeviceKernel> compile(const LoweredKernel& lk) override {
    return cache_.get(lk, [this](const LoweredKernel& k) { return load(k); });
  }
  std::string optimized_source(const DeviceKernel& k) override {
    if (auto* a = dynamic_cast<const AmdKernel*>(&k)) return a->optimized_ir;
    return k.source;
  }

  // ---- queue ----------------------------------------------------------------------------------
  void launch(const DeviceKernel& dk, std::span<const DevicePtr> bufs, std::span<const int64_t> vars,
              const LaunchSize& size) override {
    const auto& k = static_cast<const AmdKernel&>(dk);
    if (!launch_fits(k, size)) return;
    uint32_t grid[3], group[3];
    for (size_t d = 0; d < 3; d++) {
      int64_t items = size.global[d] * size.local[d];  // an AQL grid counts work-items, in 32 bits
      if (items > int64_t(UINT32_MAX))
        fail(Code::InvalidArg, name(), ": ", k.name, " launches ", items, " work-items along dimension ", d,
             ", over the 2^32 of an AQL packet");
      grid[d] = uint32_t(items);
      group[d] = uint32_t(size.local[d]);
    }
    // The kernel's arguments: the buffers' addresses in Param slot order, then the variables, 8
    // bytes each (render_llvm_ir's AMDGPU signature); the rest of the segment is zero.
    size_t explicit_bytes = 8 * (k.params.size() + vars.size());
    size_t bytes = std::max<size_t>(k.kernarg_bytes, explicit_bytes);
    void* args = nullptr;
    check(api_->memory_pool_allocate(kernarg_pool_, std::max<size_t>(bytes, 16), 0, &args),
          "hsa_amd_memory_pool_allocate (kernel arguments)");
    api_->agents_allow_access(1, &gpu_, nullptr, args);
    std::memset(args, 0, bytes);
    auto* words = static_cast<uint64_t*>(args);
    size_t i = 0;
    for (const KernelParam& p : k.params) {
      if (size_t(p.slot) >= bufs.size()) {
        api_->memory_pool_free(args);
        fail(Code::Internal, name(), ": ", k.name, " has no buffer for slot ", p.slot);
      }
      const DevicePtr& b = bufs[size_t(p.slot)];
      words[i++] = uint64_t(reinterpret_cast<uintptr_t>(b.base)) + b.offset;
    }
    for (int64_t v : vars) words[i++] = uint64_t(v);

    std::lock_guard<std::mutex> lk(queue_mu_);
    pending_args_.push_back(args);
    const uint64_t index = api_->queue_add_write_index_screlease(queue_, 1);
    while (index - api_->queue_load_read_index_scacquire(queue_) >= queue_->size) {
      // the ring is full: wait for the packet processor to take packets
    }
    auto* packet = static_cast<hsa::KernelDispatchPacket*>(queue_->base_address) + (index % queue_->size);
    packet->workgroup_size_x = uint16_t(group[0]);
    packet->workgroup_size_y = uint16_t(group[1]);
    packet->workgroup_size_z = uint16_t(group[2]);
    packet->reserved0 = 0;
    packet->grid_size_x = grid[0];
    packet->grid_size_y = grid[1];
    packet->grid_size_z = grid[2];
    packet->private_segment_size = k.private_bytes;
    packet->group_segment_size = k.group_bytes;
    packet->kernel_object = k.object;
    packet->kernarg_address = args;
    packet->reserved2 = 0;
    api_->signal_add_relaxed(done_, 1);
    packet->completion_signal = done_;
    const uint16_t header = uint16_t(hsa::kPacketTypeKernelDispatch << hsa::kHeaderType | 1 << hsa::kHeaderBarrier |
                                     hsa::kFenceScopeSystem << hsa::kHeaderAcquireScope |
                                     hsa::kFenceScopeSystem << hsa::kHeaderReleaseScope);
    const uint16_t setup = uint16_t(3 << hsa::kSetupDimensions);
    __atomic_store_n(reinterpret_cast<uint32_t*>(packet), uint32_t(header) | uint32_t(setup) << 16, __ATOMIC_RELEASE);
    api_->signal_store_screlease(queue_->doorbell_signal, int64_t(index));
  }

  void synchronize() override {
    std::lock_guard<std::mutex> lk(queue_mu_);
    while (api_->signal_wait_scacquire(done_, hsa::kSignalConditionEq, 0, UINT64_MAX, hsa::kWaitStateBlocked) != 0) {
    }
    for (void* a : pending_args_) api_->memory_pool_free(a);
    pending_args_.clear();
  }

  Stats stats() const override { return cache_.stats(); }

 private:
  static constexpr size_t kStagingBytes = size_t(16) << 20;

  void check(hsa::Status s, const char* call) const {
    if (s == hsa::kSuccess) return;
    fail(s == hsa::kOutOfResources ? Code::OutOfMemory : Code::Device, name(), ": ", call,
         " failed: ", hsa::status_name(api_, s));
  }

  // The host buffer copies go through (allocated on first use; the GPU may read and write it).
  void* staging() {
    if (!staging_) {
      check(api_->memory_pool_allocate(staging_pool_, kStagingBytes, 0, &staging_), "hsa_amd_memory_pool_allocate");
      check(api_->agents_allow_access(1, &gpu_, nullptr, staging_), "hsa_amd_agents_allow_access");
    }
    return staging_;
  }

  // One copy by the GPU's DMA engines, waited for.
  void transfer(void* dst, hsa::Agent dst_agent, const void* src, hsa::Agent src_agent, size_t bytes) {
    if (bytes == 0) return;
    hsa::Signal sig{0};
    check(api_->signal_create(1, 0, nullptr, &sig), "hsa_signal_create");
    hsa::Status s = api_->memory_async_copy(dst, dst_agent, src, src_agent, bytes, 0, nullptr, sig);
    if (s == hsa::kSuccess)
      while (api_->signal_wait_scacquire(sig, hsa::kSignalConditionLt, 1, UINT64_MAX, hsa::kWaitStateBlocked) >= 1) {
      }
    api_->signal_destroy(sig);
    check(s, "hsa_amd_memory_async_copy");
  }

  // The kernel's code object, loaded onto the GPU (the runtime's reason in the error when it
  // refuses it).
  std::shared_ptr<const AmdKernel> load(const LoweredKernel& k) {
    auto t0 = std::chrono::steady_clock::now();
    auto kernel = std::make_shared<AmdKernel>();
    kernel->describe(k);
    kernel->api = api_;
    std::string symbol = gpu_symbol(k);
    GpuCode code = compile_gpu_ir(render_llvm_ir(k, symbol, LlvmDialect::Amdgpu), target(), true);
    kernel->optimized_ir = std::move(code.ir);
    kernel->binary = link_code_object(code.object, k.name);
    kernel->source = std::move(code.assembly);
    hsa::CodeObjectReader reader{0};
    check(api_->code_object_reader_create_from_memory(kernel->binary.data(), kernel->binary.size(), &reader),
          "hsa_code_object_reader_create_from_memory");
    struct ReaderGuard {
      const hsa::Api* api;
      hsa::CodeObjectReader r;
      ~ReaderGuard() { api->code_object_reader_destroy(r); }
    } guard{api_, reader};
    check(api_->executable_create_alt(hsa::kProfileFull, hsa::kRoundingDefault, "", &kernel->executable),
          "hsa_executable_create_alt");
    if (hsa::Status s = api_->executable_load_agent_code_object(kernel->executable, gpu_, reader, "", nullptr);
        s != hsa::kSuccess)
      fail(Code::Compile, name(), ": the HSA runtime rejected the code object of ", k.name, ": ",
           hsa::status_name(api_, s));
    check(api_->executable_freeze(kernel->executable, ""), "hsa_executable_freeze");
    hsa::ExecutableSymbol sym{0};
    check(api_->executable_get_symbol_by_name(kernel->executable, (symbol + ".kd").c_str(), &gpu_, &sym),
          "hsa_executable_get_symbol_by_name");
    check(api_->executable_symbol_get_info(sym, hsa::kSymbolKernelObject, &kernel->object),
          "hsa_executable_symbol_get_info");
    check(api_->executable_symbol_get_info(sym, hsa::kSymbolKernelKernargSegmentSize, &kernel->kernarg_bytes),
          "hsa_executable_symbol_get_info");
    check(api_->executable_symbol_get_info(sym, hsa::kSymbolKernelGroupSegmentSize, &kernel->group_bytes),
          "hsa_executable_symbol_get_info");
    check(api_->executable_symbol_get_info(sym, hsa::kSymbolKernelPrivateSegmentSize, &kernel->private_bytes),
          "hsa_executable_symbol_get_info");
    kernel->compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return kernel;
  }

  const hsa::Api* api_;
  hsa::Agent gpu_, cpu_;
  hsa::MemoryPool device_pool_{0}, kernarg_pool_{0}, staging_pool_{0};
  hsa::Queue* queue_ = nullptr;
  hsa::Signal done_{0};              // launches not finished yet (each dispatch adds 1, its completion takes 1)
  std::mutex queue_mu_;              // the queue's write side, done_ and pending_args_
  std::vector<void*> pending_args_;  // kernel arguments of launches not known to be finished
  std::mutex copy_mu_;               // the staging buffer
  void* staging_ = nullptr;
  KernelCache cache_;
};

std::shared_ptr<ComputeDevice> open_amd(const std::string& name, int index) {
  std::string why;
  const int count = amd_device_count(&why);
  if (count == 0) fail(Code::Device, "device '", name, "' is not available: ", why);
  if (index >= count)
    fail(Code::Device, "device '", name, "' is not available: there are ", count, " AMD devices (AMD",
         count > 1 ? cat(" .. AMD:", count - 1) : "", ")");
  const hsa::Api* api = hsa::load(nullptr);
  hsa::Status s = hsa::kSuccess;
  Agents agents = find_agents(api, &s);
  if (!agents.has_cpu) fail(Code::Device, "device '", name, "': the HSA runtime has no CPU agent");
  hsa::Agent gpu = agents.gpus.at(size_t(index));
  char arch[64] = {0};
  if (api->agent_get_info(gpu, hsa::kAgentInfoName, arch) != hsa::kSuccess)
    fail(Code::Device, "device '", name, "': hsa_agent_get_info failed");
  arch[sizeof arch - 1] = 0;
  bool known = false;
  for (const GfxArch& a : kArchs) known = known || std::string(arch) == a.name;
  if (!known) fail(Code::Device, "device '", name, "' is a ", arch, " GPU, which Sinter cannot compile for yet");
  Target t = amd_target(arch);
  uint32_t wave = 0, group_max = 0;
  uint16_t group_dims[3] = {0, 0, 0};
  if (api->agent_get_info(gpu, hsa::kAgentInfoWavefrontSize, &wave) == hsa::kSuccess && wave > 0)
    t.warp_size = int(wave);
  if (api->agent_get_info(gpu, hsa::kAgentInfoWorkgroupMaxSize, &group_max) == hsa::kSuccess && group_max > 0)
    t.max_local_total = group_max;
  if (api->agent_get_info(gpu, hsa::kAgentInfoWorkgroupMaxDim, group_dims) == hsa::kSuccess && group_dims[0] > 0)
    t.max_local_size = {group_dims[0], group_dims[1], group_dims[2]};
  uint32_t cus = 0;
  if (api->agent_get_info(gpu, hsa::kAmdAgentInfoComputeUnitCount, &cus) == hsa::kSuccess) t.compute_units = int(cus);
  return std::make_shared<AmdDevice>(name, std::move(t), api, gpu, agents.cpu);
}

[[maybe_unused]] const bool registered =
    register_backend(Backend{"AMD", 6, amd_device_count, [](const std::string& name, int index, const DeviceOptions&) {
                               return open_amd(name, index);
                             }});
[[maybe_unused]] const bool registered_target =
    register_target_opener("AMD", [](const std::string& arch, const DeviceOptions&) { return open_amd_target(arch); });

}  // namespace

}  // namespace sn
