// The CPU backend: LLVM IR rendered from a Linear, compiled in process by ORC LLJIT for the host
// CPU, run on a thread pool (one task per THREAD index).
//
// Kernel ABI: void name(void** bufs, const int64_t* vars, int64_t core_id, int64_t ncores)
//   bufs[slot]  the buffer of Param slot `slot`
//   vars[i]     the value of LoweredKernel::vars[i] (sorted by name)
//   core_id     THREAD index in [0, ncores); ncores = LoweredKernel::threads
// Buffers are declared noalias: two slots of one launch must not overlap when either is written
// (CpuCompiler::run checks this). Kernels may read the JIT's `sn_cpu_zero_region` (read-only zeros,
// kCpuZeroRegionBytes: where a load's gate is off) and the process's libc/libm.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backends/llvm/llvm_ir.h"
#include "core/codegen/codegen.h"
#include "core/runtime/device.h"
#include "core/runtime/thread_pool.h"

namespace sn {

// How many CPU devices the backend has: "CPU" (= "CPU:0") .. "CPU:7", each with its own memory, JIT
// and thread pool (they share the host's cores), so a program can be spread over several of them
// even on a machine with one core.
inline constexpr int kCpuDevices = 8;

// The LLVM floor of compiling a kernel, for benchmarks: its IR text (CpuKernel::source, entry point
// `symbol`) through a bare LLJIT for the host (parse, LLVM's stock O3 pipeline, codegen at the same
// level, lookup), in milliseconds; making the LLJIT is not counted. Throws Error(Compile).
double llvm_floor_ms(const std::string& ir, const std::string& symbol);

// A CPU model code is generated for: an LLVM CPU name and its instruction-set features.
struct CpuModel {
  std::string name;
  std::vector<std::pair<std::string, bool>> features;
};

// The model named `name` (an LLVM CPU name: "x86-64-v3", "znver3", "haswell"), "" or "native" for
// the host's: tuned for that CPU, with the instruction sets it and this host both have (its code
// always runs here). Throws Error(InvalidArg) for a name LLVM does not know.
CpuModel cpu_model(const std::string& name);

// The target of a CPU model (name, features, vector width), THREAD axes over all cores, the math
// it renders natively (SN_CPU_NATIVE_MATH=0: none).
Target cpu_target(const CpuModel& model);

// The target the CPU backend compiles for: the host CPU, or the model SN_CPU names (read once),
// e.g. SN_CPU=x86-64-v3 for AVX2 code on an AVX-512 host: kernels that run on every machine of that
// level (their disk-cache entries shared), and the AVX2 code paths tested where AVX-512 is.
Target host_cpu_target();

// A kernel in the JIT. DeviceKernel::source is the LLVM IR as rendered (before optimization),
// compile_ms LLVM's parse + optimize + codegen time.
struct CpuKernel final : DeviceKernel {
  using Fn = void (*)(void* const* bufs, const int64_t* vars, int64_t core_id, int64_t ncores);
  std::string symbol;  // entry point in the JIT: sanitized name + key in hex (the same in every process)
  Fn fn = nullptr;
  double opt_ms = 0;  // of compile_ms, the optimization pipeline
  bool slp = true;    // the optimization pipeline runs the SLP vectorizer on it (wants_slp: scalar float math)
  // Scratch kernels (compile_scratch): removes the code from the JIT when the last copy goes.
  std::shared_ptr<void> code_owner;
};

struct CpuCompilerStats {
  uint64_t compiled = 0;    // kernels given to LLVM
  uint64_t cache_hits = 0;  // compile()/compile_ast() answered from the cache
  double compile_ms = 0;    // total LLVM time
  uint64_t disk_hits = 0;   // kernels linked from the disk cache instead (not counted in `compiled`)
};

// One LLJIT; compile() is thread-safe (compiles are serialized) and caches kernels by their
// AST key and by their IR text, and on disk (core/runtime/disk_cache.h: object files by AST key;
// find() and compile() link a kernel found there instead of compiling it).
class CpuCompiler {
 public:
  // threads: width of the thread pool and of THREAD splits (0 = all cores); disk_cache: whether
  // to use the process's disk cache (opened here, beside the JIT's setup; set_disk_cache changes it).
  explicit CpuCompiler(int threads = 0, bool disk_cache = true);
  ~CpuCompiler();
  CpuCompiler(const CpuCompiler&) = delete;
  CpuCompiler& operator=(const CpuCompiler&) = delete;

  const Target& target() const;

  std::shared_ptr<const CpuKernel> compile(const LoweredKernel& k);
  // Compiles kernels as one LLVM module (what is cached already comes from the cache); result i is
  // ks[i]'s. Thread-safe like compile. Each kernel is stored on disk with the whole object file.
  std::vector<std::shared_ptr<const CpuKernel>> compile_together(std::span<const LoweredKernel* const> ks);
  // Compiles a kernel to time and throw away (a BEAM candidate): not cached anywhere, its code
  // removed from the JIT when the kernel is freed. Thread-safe and parallel: each call has its own
  // LLVM context and target machine; only adding the object to the JIT is serialized.
  std::shared_ptr<const CpuKernel> compile_scratch(const LoweredKernel& k);
  // Turns the disk cache on (the process's, as the environment says) or off for this compiler.
  void set_disk_cache(bool on);
  // Lowers (unless cached) and compiles a kernel AST for this compiler's target.
  std::shared_ptr<const CpuKernel> compile_ast(Graph& g, const UOp* ast, const LowerOptions& opts = {});
  // A kernel compiled before under lowered-kernel key `key`, or nullptr.
  std::shared_ptr<const CpuKernel> find(uint64_t key) const;

  // Runs the kernel: one call per THREAD index, spread over the pool. `vars` may be null when
  // the kernel has no variables. Throws Error(InvalidArg) when a variable is out of its range
  // or written buffers overlap.
  void run(const CpuKernel& k, void* const* bufs, const int64_t* vars = nullptr);

  // Optimized LLVM IR of a kernel (for SN_DEBUG dumps); compiles nothing.
  std::string optimized_ir(const CpuKernel& k);

  CpuCompilerStats stats() const;
  ThreadPool& pool();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sn
