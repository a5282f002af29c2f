// The C-source backend, device "C": kernels rendered as C99 (backends/cstyle) for ahead-of-time
// export. It compiles (renders) but runs nothing: a program compiled for it is exported with
// sn_program_export_c as one standalone C file that needs only libc and libm (tinygrad's
// export_model): every kernel, the memory plan, and one entry point
//   int NAME(void *const *inputs, void *const *outputs)
// with the buffers in the program's input and output order.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>

#include "backends/cstyle/cstyle.h"
#include "core/runtime/device.h"
#include "core/runtime/program.h"
#include "core/util/error.h"

namespace sn {

namespace {

struct CKernelSource final : DeviceKernel {
  std::string function;  // the kernel alone, named `symbol`
  std::string symbol;
  std::set<std::string> helpers;
  bool uses_double = false;
};

// What C99 on any host can do: no threads, no work-groups, no vector types; libm's math.
Target c_target() {
  Target t;
  t.renderer = "C";
  t.arch = "c99";
  t.vector_bits = 0;
  return t;
}

class CDevice final : public ComputeDevice {
 public:
  CDevice() : ComputeDevice("C", c_target()) {}

  std::string cannot_run() const override {
    return "device C renders C source for ahead-of-time export (sn_program_export_c) and runs nothing";
  }

  // Host memory, so that buffers for a program's shapes can still be made and filled.
  std::shared_ptr<Storage> allocate(size_t bytes) override {
    return std::make_shared<Storage>(shared_from_this(), host_allocate(name(), bytes), bytes, &std::free);
  }
  void copy_in(Storage& dst, size_t offset, const void* src, size_t bytes) override {
    std::memcpy(static_cast<char*>(dst.ptr()) + offset, src, bytes);
  }
  void copy_out(const Storage& src, size_t offset, void* dst, size_t bytes) override {
    std::memcpy(dst, static_cast<const char*>(src.ptr()) + offset, bytes);
  }
  bool host_memory() const override { return true; }

  std::shared_ptr<const DeviceKernel> find(uint64_t key) const override { return cache_.find(key); }
  std::shared_ptr<const DeviceKernel> compile(const LoweredKernel& lk) override {
    return cache_.get(lk, [](const LoweredKernel& k) {
      auto t0 = std::chrono::steady_clock::now();
      auto kernel = std::make_shared<CKernelSource>();
      kernel->describe(k);
      // Unique within any export: the name plus the kernel's key.
      char key[24];
      std::snprintf(key, sizeof key, "%016llx", static_cast<unsigned long long>(k.key));
      kernel->symbol = cat(c_identifier(k.name), "_", key);
      CKernel ck = render_c(k, kC99, kernel->symbol);
      kernel->function = ck.function;
      kernel->helpers = ck.helpers;
      kernel->uses_double = ck.uses_double;
      kernel->source = c_prelude(kC99, ck.helpers, ck.uses_double) + ck.function;
      kernel->compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      return kernel;
    });
  }

  void launch(const DeviceKernel&, std::span<const DevicePtr>, std::span<const int64_t>, const LaunchSize&) override {
    fail(Code::Device, cannot_run());
  }
  void synchronize() override {}

  std::string export_c(const Program& p, const std::string& name) const override;

  Stats stats() const override { return cache_.stats(); }

 private:
  KernelCache cache_;
};

std::string spec_list(const std::vector<TensorSpec>& specs) {
  std::string s;
  for (size_t i = 0; i < specs.size(); i++) s += cat(i ? ", " : "", "[", i, "] ", specs[i].str());
  return s.empty() ? "none" : s;
}

std::string CDevice::export_c(const Program& p, const std::string& name) const {
  if (name.empty() || c_identifier(name) != name)
    fail(Code::InvalidArg, "export_c: '", name, "' is not a C identifier");
  // (a program over several devices runs the programs of its devices, compiled for them, not for C)
  if (p.multi)
    fail(Code::Unsupported, "export_c: the program spans several devices; exporting such programs is not supported ",
         "(compile a graph whose values all live on one device)");
  if (!p.vars.empty())
    fail(Code::Unsupported, "export_c: the program has ", p.vars.size(), " launch-time variable(s) (", p.vars[0].name,
         "...); exporting programs with variables is not supported yet");
  // Every kernel once, with the union of their helpers.
  std::set<std::string> helpers;
  bool uses_double = false;
  std::vector<const CKernelSource*> kernels;
  std::map<std::string, const CKernelSource*> unique;
  for (const Launch& l : p.launches) {
    auto* k = dynamic_cast<const CKernelSource*>(l.kernel.get());
    if (!k) fail(Code::Internal, "export_c: kernel ", l.kernel->name, " was not rendered by the C backend");
    kernels.push_back(k);
    unique.emplace(k->symbol, k);
    helpers.insert(k->helpers.begin(), k->helpers.end());
    uses_double = uses_double || k->uses_double;
  }
  std::string out = cat("/* ", name, ": a tensor program exported by Sinter as standalone C99 (libc and libm only).\n",
                        " *   int ", name, "(void *const *inputs, void *const *outputs);\n",
                        " * inputs:  ", spec_list(p.inputs), "\n", " * outputs: ", spec_list(p.outputs), "\n",
                        " * Buffers are contiguous, row-major, of the dtypes above (float16 and bfloat16 as their 16\n",
                        " * bits, fp8 as its byte, bool as one byte). Returns 0, or -1 when the ", p.arena_bytes,
                        " bytes for\n * intermediates cannot be allocated. Reentrant. */\n");
  out += "#include <stdlib.h>\n";
  out += c_prelude(kC99, helpers, uses_double);
  for (const auto& [sym, k] : unique) out += "\n" + k->function;

  // Constant bytes (the spec's Binary) as static arrays.
  for (size_t b = 0; b < p.buffers.size(); b++) {
    const ProgramBuffer& pb = p.buffers[b];
    if (pb.role != ProgramBuffer::Role::Constant) continue;
    std::string bytes(pb.storage ? pb.storage->bytes() : 0, '\0');
    if (!bytes.empty()) pb.storage->device().copy_out(*pb.storage, 0, bytes.data(), bytes.size());
    out += cat("\nstatic const unsigned char ", name, "_const", b, "[", std::max<size_t>(1, bytes.size()), "] = {");
    for (size_t i = 0; i < bytes.size(); i++)
      out += cat(i % 16 ? " " : "\n  ", unsigned(static_cast<unsigned char>(bytes[i])), ",");
    out += bytes.empty() ? "0};\n" : "\n};\n";
  }

  // The entry point: bind the program's buffers, then the launches in order.
  out += cat("\nint ", name, "(void *const *inputs, void *const *outputs) {\n");
  out += cat("  unsigned char *arena = 0;\n  void *buf[", std::max<size_t>(1, p.buffers.size()), "];\n");
  if (p.arena_bytes > 0)
    out += cat("  arena = (unsigned char *)malloc(", p.arena_bytes, ");\n  if (!arena) return -1;\n");
  for (size_t b = 0; b < p.buffers.size(); b++) {
    const ProgramBuffer& pb = p.buffers[b];
    std::string at;
    switch (pb.role) {
      case ProgramBuffer::Role::Input: {
        for (size_t i = 0; i < p.input_slots.size(); i++)
          if (p.input_slots[i] == pb.index) at = cat("inputs[", i, "]");
        if (at.empty()) fail(Code::Internal, "export_c: schedule input ", pb.index, " has no program input");
        break;
      }
      case ProgramBuffer::Role::Output:
        at = cat("outputs[", pb.index, "]");
        break;
      case ProgramBuffer::Role::Intermediate:
        at = pb.first_use < 0 ? "0" : cat("arena + ", pb.arena_offset);
        break;
      case ProgramBuffer::Role::Constant:
        at = cat("(void *)", name, "_const", b);
        break;
    }
    out += cat("  buf[", b, "] = ", at, ";\n");
  }
  for (size_t l = 0; l < p.launches.size(); l++) {
    const CKernelSource& k = *kernels[l];
    std::string args;
    for (const KernelParam& prm : k.params) {
      std::string t = kC99.types[size_t(prm.dtype.scalar == Scalar::Bool ? Scalar::UInt8 : prm.dtype.scalar)];
      args += cat(args.empty() ? "" : ", ", "(", prm.written ? "" : "const ", t, " *)buf[",
                  p.launches[l].buffers.at(size_t(prm.slot)), "]");
    }
    out += cat("  ", k.symbol, "(", args, ");\n");
  }
  out += "  free(arena);\n  return 0;\n}\n";
  return out;
}

[[maybe_unused]] const bool registered = register_backend(
    Backend{"C", 100, [](std::string*) { return 1; },
            [](const std::string& name, int index, const DeviceOptions&) -> std::shared_ptr<ComputeDevice> {
              if (index != 0)
                fail(Code::Device, "device '", name, "' is not available: the C backend has one device, C");
              return std::make_shared<CDevice>();
            }});

}  // namespace

}  // namespace sn
