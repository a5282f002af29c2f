// The AMD backend, device "AMD": kernels are AMDGPU objects from LLVM's AMDGPU target
// (backends/llvm), linked by lld (liblld, in process) into a code object (a shared ELF with the kernel descriptors,
// `<kernel>.kd`, and the amdhsa.kernels metadata note).
//
// sn_device_open_target(ctx, "AMD", "gfx942") opens a compile-only device for an architecture: it
// needs no driver and no GPU; a kernel's source is its AMDGPU assembly, its binary the code object.
// The runtime itself (libhsa-runtime64.so.1, dlopen'ed, hand-written declarations) is only asked
// for its GPU agents: running kernels is not implemented yet, so sn_device_open(ctx, "AMD") fails
// with the reason (no runtime, no GPU agent, or not implemented).
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

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

// The HSA runtime, asked for its GPU agents (hand-written declarations of the few calls).
const GpuProbe& probe_runtime() {
  static GpuProbe probe;
  static std::once_flag once;
  std::call_once(once, [] {
    using Status = int;
    struct Agent {
      uint64_t handle;
    };
    constexpr int kAgentInfoDevice = 17;  // HSA_AGENT_INFO_DEVICE
    constexpr int kDeviceTypeGpu = 1;     // HSA_DEVICE_TYPE_GPU
    Status (*hsa_init)() = nullptr;
    Status (*hsa_shut_down)() = nullptr;
    Status (*hsa_iterate_agents)(Status(*)(Agent, void*), void*) = nullptr;
    static Status (*hsa_agent_get_info)(Agent, int, void*) = nullptr;  // read by the callback
    Status (*hsa_status_string)(Status, const char**) = nullptr;
    DynLib lib("libhsa-runtime64.so.1");
    lib.sym(hsa_init, "hsa_init");
    lib.sym(hsa_shut_down, "hsa_shut_down");
    lib.sym(hsa_iterate_agents, "hsa_iterate_agents");
    lib.sym(hsa_agent_get_info, "hsa_agent_get_info");
    lib.sym(hsa_status_string, "hsa_status_string");
    if (!lib.ok()) {
      probe.why = cat(lib.error(), " (the ROCm runtime is not installed, e.g. Debian's libhsa-runtime64-1)");
      return;
    }
    auto message = [&](Status s) {
      const char* m = nullptr;
      return hsa_status_string(s, &m) == 0 && m ? std::string(m) : cat("status ", s);
    };
    if (Status s = hsa_init(); s != 0) {
      probe.why = cat("HSA runtime found no GPU agent: hsa_init failed: ", message(s));
      return;
    }
    Status s = hsa_iterate_agents(
        [](Agent agent, void* data) -> Status {
          int type = -1;
          if (hsa_agent_get_info(agent, kAgentInfoDevice, &type) == 0 && type == kDeviceTypeGpu)
            ++*static_cast<int*>(data);
          return 0;
        },
        &probe.count);
    if (s != 0) {
      probe.count = 0;
      probe.why = cat("HSA runtime found no GPU agent: hsa_iterate_agents failed: ", message(s));
    } else if (probe.count == 0) {
      probe.why = "HSA runtime found no GPU agent";
    }
    hsa_shut_down();
  });
  return probe;
}

[[maybe_unused]] const bool registered = register_backend(probed_gpu_backend("AMD", 6, probe_runtime, "gfx942"));
[[maybe_unused]] const bool registered_target =
    register_target_opener("AMD", [](const std::string& arch, const DeviceOptions&) { return open_amd_target(arch); });

}  // namespace

}  // namespace sn
