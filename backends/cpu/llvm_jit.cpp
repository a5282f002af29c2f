// CpuCompiler: ORC LLJIT for the host CPU. The only translation unit that includes LLVM headers
// (they are slow to compile). Each kernel: fresh LLVMContext, parse the rendered IR, run the O3
// pipeline (loop + SLP vectorization, host TargetTransformInfo), emit an object file with the
// TargetMachine, add it to the one JITDylib, look up the entry point. libm/libc symbols (exp2f,
// sinf, powf, memset, ...) resolve from the process.
//
// The disk cache (core/runtime/disk_cache.h) keeps each object file with the kernel's description,
// so another process links it instead of compiling: see "disk payload" below.
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "backends/cpu/cpu_backend.h"
#include "backends/llvm/llvm_errors.h"
#include "backends/llvm/llvm_ir.h"
#include "core/codegen/kernel_util.h"
#include "core/pipeline.h"
#include "core/runtime/disk_cache.h"
#include "core/runtime/runtime.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <llvm/ADT/SmallVector.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Support/xxhash.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/Transforms/Vectorize/SLPVectorizer.h>
#pragma GCC diagnostic pop

namespace sn {

namespace {

// A call into JIT'ed code. clang's -fsanitize=function (part of -fsanitize=undefined) checks an indirect call by
// reading a type signature from the 8 bytes before the callee's entry; a JIT'ed kernel has none there, and faults
// the check when it starts a page. Our kernels' type is fixed by construction (CpuKernel::Fn), so the calls are
// exempt.
#if defined(__clang__)
__attribute__((no_sanitize("function")))
#endif
void call_kernel(CpuKernel::Fn fn, void* const* bufs, const int64_t* vars, int64_t core, int64_t ncores) {
  fn(bufs, vars, core, ncores);
}

std::string llvm_message(llvm::Error e) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << e;
  return os.str();
}

template <class T>
T unwrap(llvm::Expected<T> v, const char* what) {
  if (!v) fail(Code::Compile, "llvm: ", what, ": ", llvm_message(v.takeError()));
  return std::move(*v);
}

void init_llvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

std::string sanitize(const std::string& s) {
  std::string o;
  for (char c : s) o += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (o.empty() || std::isdigit(static_cast<unsigned char>(o[0]))) o = "k" + o;
  return o;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// ---- disk payload -------------------------------------------------------------------------------
// One cached kernel, stored under disk_key() (kernel key, target key, Sinter + LLVM version, format):
//   "SNKC" | u32 format | str full key | str name | str symbol | str source
//   | u32 n x param {i64 slot, u8 scalar, u16 lanes, u8 ptr, u8 addrspace, i64 size, u8 read, u8 written}
//   | u32 n x var {str name, i64 min, i64 max} | i64 threads | 3 x i64 global | 3 x i64 local
//   | features {u8 local_axes, u8 group_reduce, i64 local_bytes, i32 barriers, i32 gated_blocks} | u8 slp
//   | u32 n x opt {u8 op, i64 axis, i64 amount, u8 type, u8 top} | str object file | u64 XXH3 of all before
// Integers little-endian (the host's: a payload never leaves its target), str = u32 length + bytes.
// The full key inside guards against a collision of the hashed key. Any payload that does not parse
// exactly is a miss: the kernel is compiled and the entry replaced.
// 2: CpuKernel::slp. 3: the checksum is XXH3, not FNV-1a, whose multiply per byte took a third of
// reading a kernel from disk (a convolution's payload, IR and object file, is some 100 KB).
constexpr uint32_t kPayloadFormat = 3;
constexpr char kPayloadMagic[4] = {'S', 'N', 'K', 'C'};
uint64_t payload_sum(std::string_view bytes) { return llvm::xxh3_64bits(llvm::StringRef(bytes.data(), bytes.size())); }

// The full identity of a cached kernel, and the short key it is stored under.
std::string disk_identity(uint64_t key, const std::string& target_key) {
  return cat("cpu-kernel|format ", kPayloadFormat, "|sinter ", disk_cache_version(), "|llvm ", LLVM_VERSION_STRING, "|",
             target_key, "|", hex64(key));
}
std::string disk_key(const std::string& identity, uint64_t key) {
  return cat("cpu/", kPayloadFormat, "/", disk_cache_version(), "/", hex64(fnv1a(identity)), "/", hex64(key));
}

// Why a disk entry was not used (SN_DEBUG >= 2).
void disk_note(const std::string& what) {
  static const int level = debug_level_from_env();
  if (level >= 2) std::fprintf(stderr, "sinter: disk cache: %s\n", what.c_str());
}

struct Writer {
  std::string out;
  template <class T>
  void pod(T v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void str(std::string_view s) {
    pod(uint32_t(s.size()));
    out.append(s);
  }
};

struct Reader {
  std::string_view in;
  bool ok = true;
  template <class T>
  T pod() {
    T v{};
    if (!ok || in.size() < sizeof v) {
      ok = false;
      return v;
    }
    std::memcpy(&v, in.data(), sizeof v);
    in.remove_prefix(sizeof v);
    return v;
  }
  std::string str() {
    auto n = pod<uint32_t>();
    if (!ok || in.size() < n) {
      ok = false;
      return {};
    }
    std::string s(in.substr(0, n));
    in.remove_prefix(n);
    return s;
  }
  // A count of items of at least `min_bytes` each that the rest can hold.
  uint32_t count(size_t min_bytes) {
    auto n = pod<uint32_t>();
    if (ok && size_t(n) * min_bytes > in.size()) ok = false;
    return ok ? n : 0;
  }
};

std::optional<std::string> encode_payload(const CpuKernel& k, const std::string& identity, std::string_view object) {
  for (const LaunchExpr& e : k.dims.global)
    if (!e.is_const()) return std::nullopt;  // a grid that follows a variable (none on the CPU today)
  Writer w;
  w.out.append(kPayloadMagic, 4);
  w.pod(kPayloadFormat);
  w.str(identity);
  w.str(k.name);
  w.str(k.symbol);
  w.str(k.source);
  w.pod(uint32_t(k.params.size()));
  for (const KernelParam& p : k.params) {
    w.pod(p.slot);
    w.pod(uint8_t(p.dtype.scalar));
    w.pod(uint16_t(p.dtype.lanes));
    w.pod(uint8_t(p.dtype.ptr));
    w.pod(uint8_t(p.dtype.addrspace));
    w.pod(p.size);
    w.pod(uint8_t(p.read));
    w.pod(uint8_t(p.written));
  }
  w.pod(uint32_t(k.vars.size()));
  for (const KernelVar& v : k.vars) {
    w.str(v.name);
    w.pod(v.min);
    w.pod(v.max);
  }
  w.pod(k.threads);
  for (const LaunchExpr& e : k.dims.global) w.pod(e.eval(nullptr));
  for (int64_t l : k.dims.local) w.pod(l);
  w.pod(uint8_t(k.features.local_axes));
  w.pod(uint8_t(k.features.group_reduce));
  w.pod(k.features.local_bytes);
  w.pod(int32_t(k.features.barriers));
  w.pod(int32_t(k.features.gated_blocks));
  w.pod(uint8_t(k.slp));
  w.pod(uint32_t(k.opts.size()));
  for (const Opt& o : k.opts) {
    w.pod(uint8_t(o.op));
    w.pod(o.axis);
    w.pod(o.amount);
    w.pod(uint8_t(o.type));
    w.pod(uint8_t(o.top));
  }
  w.str(object);
  w.pod(payload_sum(w.out));
  return std::move(w.out);
}

// The kernel (without fn) and its object file, or nullopt when `bytes` is not a payload for `identity`.
std::optional<std::pair<CpuKernel, std::string>> decode_payload(std::string_view bytes, const std::string& identity) {
  if (bytes.size() < 4 + 4 + 8 || std::memcmp(bytes.data(), kPayloadMagic, 4) != 0) return std::nullopt;
  std::string_view body = bytes.substr(0, bytes.size() - 8);
  uint64_t sum;
  std::memcpy(&sum, bytes.data() + body.size(), 8);
  if (sum != payload_sum(body)) return std::nullopt;
  Reader r{body.substr(4)};
  std::pair<CpuKernel, std::string> out;
  CpuKernel& k = out.first;
  if (r.pod<uint32_t>() != kPayloadFormat || r.str() != identity || !r.ok) return std::nullopt;
  k.name = r.str();
  k.symbol = r.str();
  k.source = r.str();
  for (uint32_t i = 0, n = r.count(8 + 5 + 8 + 2); i < n && r.ok; i++) {
    KernelParam p;
    p.slot = r.pod<int64_t>();
    auto scalar = r.pod<uint8_t>();
    auto lanes = r.pod<uint16_t>();
    auto ptr = r.pod<uint8_t>();
    auto space = r.pod<uint8_t>();
    if (scalar >= uint8_t(Scalar::Count_) || space > uint8_t(AddrSpace::Reg) || ptr > 1) return std::nullopt;
    p.dtype = DType(Scalar(scalar), lanes, ptr != 0, AddrSpace(space));
    p.size = r.pod<int64_t>();
    p.read = r.pod<uint8_t>() != 0;
    p.written = r.pod<uint8_t>() != 0;
    k.params.push_back(p);
  }
  for (uint32_t i = 0, n = r.count(4 + 16); i < n && r.ok; i++) {
    KernelVar v;
    v.name = r.str();
    v.min = r.pod<int64_t>();
    v.max = r.pod<int64_t>();
    k.vars.push_back(std::move(v));
  }
  k.threads = r.pod<int64_t>();
  for (LaunchExpr& e : k.dims.global) e = LaunchExpr(r.pod<int64_t>());
  for (int64_t& l : k.dims.local) l = r.pod<int64_t>();
  k.features.local_axes = r.pod<uint8_t>() != 0;
  k.features.group_reduce = r.pod<uint8_t>() != 0;
  k.features.local_bytes = r.pod<int64_t>();
  k.features.barriers = r.pod<int32_t>();
  k.features.gated_blocks = r.pod<int32_t>();
  k.slp = r.pod<uint8_t>() != 0;
  for (uint32_t i = 0, n = r.count(1 + 16 + 2); i < n && r.ok; i++) {
    Opt o;
    auto op = r.pod<uint8_t>();
    o.axis = r.pod<int64_t>();
    o.amount = r.pod<int64_t>();
    auto type = r.pod<uint8_t>();
    o.top = r.pod<uint8_t>() != 0;
    if (op > uint8_t(OptOp::TC) || type > uint8_t(AxisType::Unroll)) return std::nullopt;
    o.op = OptOp(op);
    o.type = AxisType(type);
    k.opts.push_back(o);
  }
  out.second = r.str();
  if (!r.ok || !r.in.empty() || k.symbol.empty() || out.second.empty() || k.threads < 1) return std::nullopt;
  return out;
}

// The CPU count of a sysfs cpu list ("0-1", "0,2,4-7").
int cpu_list_count(const std::string& list) {
  int n = 0;
  for (size_t at = 0; at < list.size();) {
    size_t end = list.find(',', at);
    if (end == std::string::npos) end = list.size();
    std::string part = list.substr(at, end - at);
    size_t dash = part.find('-');
    int lo = std::atoi(part.c_str()), hi = dash == std::string::npos ? lo : std::atoi(part.c_str() + dash + 1);
    n += std::max(0, hi - lo + 1);
    at = end + 1;
  }
  return n;
}

// Bytes of cache one core can count on: its L2 and its share of the L3 (the L3 over the CPUs
// that share it). From Linux's sysfs, which reports the cache a VM's CPUs actually share; glibc's
// sysconf reads cpuid, which in a guest can report every L3 of the host (a 2-vCPU Zen 3 guest:
// 256 MB). 0 where neither says.
int64_t core_cache_bytes() {
  int64_t total = 0;
  for (int i = 0; i < 8; i++) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    auto read = [&](const char* name) {
      std::ifstream f(dir + name);
      std::string v;
      std::getline(f, v);
      return v;
    };
    const std::string level = read("level"), type = read("type"), size = read("size");
    if (level.empty()) break;
    if ((level != "2" && level != "3") || type == "Instruction" || size.empty()) continue;
    int64_t bytes = std::atoll(size.c_str());
    if (size.back() == 'K') bytes <<= 10;
    if (size.back() == 'M') bytes <<= 20;
    total += bytes / std::max(1, cpu_list_count(read("shared_cpu_list")));
  }
  if (total > 0) return total;
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  return std::max<int64_t>(0, l2);
}

}  // namespace

CpuModel cpu_model(const std::string& name) {
  init_llvm();
  CpuModel host{llvm::sys::getHostCPUName().str(), {}};
  const llvm::StringMap<bool> host_features = llvm::sys::getHostCPUFeatures();
  for (const auto& f : host_features) host.features.emplace_back(f.first().str(), f.second);
  if (name.empty() || name == "native" || name == host.name) return host;
  const std::string triple = llvm::sys::getProcessTriple();
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, err);
  if (target == nullptr) fail(Code::Device, "cpu: LLVM has no target for ", triple, ": ", err);
  // (asked of a generic subtarget first: one made for an unknown name complains on stderr)
  std::unique_ptr<llvm::MCSubtargetInfo> generic(target->createMCSubtargetInfo(triple, "", ""));
  if (!generic || !generic->isCPUStringValid(name))
    fail(Code::InvalidArg, "cpu: LLVM knows no CPU named '", name, "' for ", triple,
         " (an LLVM CPU name such as x86-64-v3, znver3 or haswell)");
  std::unique_ptr<llvm::MCSubtargetInfo> sti(target->createMCSubtargetInfo(triple, name, ""));
  // Its instruction sets that the host has too: the host reports those (the rest of the model's
  // features are tuning), and a guest may hide a few system ones (a Zen 5 guest: mwaitx, pku,
  // rdpru, wbnoinvd, which znver3 has) that kernels never use. Code for the model then runs here.
  CpuModel m{name, {}};
  for (const llvm::SubtargetFeatureKV& kv : sti->getAllProcessorFeatures()) {
    auto h = host_features.find(kv.Key);
    if (h != host_features.end()) m.features.emplace_back(kv.Key, h->second && sti->getFeatureBits().test(kv.Value));
  }
  return m;
}

namespace {

// The model the CPU backend compiles for: SN_CPU's, else the host's. Read once; a bad SN_CPU throws
// at every device open.
const CpuModel& chosen_cpu_model() {
  static const CpuModel m = [] {
    const char* e = std::getenv("SN_CPU");
    try {
      return cpu_model(e != nullptr ? e : "");
    } catch (const Error& err) {
      if (e == nullptr) throw;
      // a setting, not a missing device: the registry does not fall back to another backend
      fail(Code::InvalidArg, "SN_CPU=", e, ": ", err.message());
    }
  }();
  return m;
}

}  // namespace

Target host_cpu_target() { return cpu_target(chosen_cpu_model()); }

Target cpu_target(const CpuModel& model) {
  init_llvm();
  Target t;
  t.renderer = "CPU";
  t.triple = llvm::sys::getProcessTriple();
  t.arch = model.name;
  llvm::StringMap<bool> features;
  for (const auto& [f, on] : model.features) features[f] = on;
  std::vector<std::string> names;
  for (const auto& f : features) names.push_back((f.second ? "+" : "-") + f.first().str());
  std::sort(names.begin(), names.end());  // the map's order is not stable; cache keys must be
  for (const std::string& n : names) t.features += (t.features.empty() ? "" : ",") + n;
  auto has = [&](const char* f) { return features.lookup(f); };
  t.has_threads = true;
  t.cores = int(std::max(1u, std::thread::hardware_concurrency()));
  t.vector_bits = has("avx512f") ? 512 : has("avx") ? 256 : 128;
  const bool x86 = llvm::Triple(t.triple).isX86();
  t.vector_registers = x86 && !has("avx512f") ? 16 : 32;
  // Packed panels (a matmul's B, a convolution's weight) as wide as the narrowest register tile the
  // CPU heuristic makes: one register of floats with 16 registers (AVX2, whose 14- and 7-wide
  // convolutions take 8 channel lanes), two with 32 (AVX-512). A wider tile reads each panel's part
  // as one vector load (expand's contiguous runs); a narrower one would read a part of every panel
  // row. On a Zen 3, 2 threads, alternated in one process, medians of the program:
  //  - 32 -> 16 wide: matmul 4096 1144 -> 959 ms (oneDNN 932); 1024, 1020 and 2048 within 3%;
  //  - 16 -> 8 wide: conv 256x14x14 (8 lanes) 1.68-1.72 -> 1.60 ms, 512x7x7 min 1.98 -> 1.88 ms;
  //    64x56x56 and 128x28x28 (16 lanes, two panels per tile) and matmul 1024 unchanged.
  if (t.vector_bits >= 256) t.packed_panel = (t.vector_registers < 32 ? 1 : 2) * t.vector_bits / 32;
  // Outputs of 32 MiB and more (beyond a core's share of the caches) are written with
  // non-temporal stores: an add of 4096^2 floats ran at the speed of a regular-store copy, 1.4-1.9x
  // the time of STREAM's non-temporal add.
  if (x86 && has("avx")) t.streaming_store_bytes = int64_t(32) << 20;
  t.has_gather_scatter = x86 && has("avx512f");
  t.cache_bytes = core_cache_bytes();
  // glibc's vector math library: the JIT resolves its symbols once it is loaded.
  static const bool libmvec = dlopen("libmvec.so.1", RTLD_NOW | RTLD_GLOBAL) != nullptr;
  if (libmvec && has("avx512f"))
    t.vector_math = "libmvec-avx512";
  else if (libmvec && has("avx2"))
    t.vector_math = "libmvec-avx2";
  // Exp2 by its polynomial even with native math: inline it beats a libm/libmvec call (16M f32:
  // 5.1 vs 6.1 ms; softmax 4096^2, two exp2 per element: ~9.2 vs ~11.5 ms) at the same accuracy
  // (0.81 ulp f32, 0.85 ulp f64; inf/nan/denormals exact). Log2, Sin, Sqrt and Pow: LLVM
  // intrinsics and libm/libmvec.
  // SN_CPU_NATIVE_MATH=0: none native; all five are decomposed in isel (the code path of targets
  // without native transcendentals). Read once.
  static const bool native_math = [] {
    const char* e = std::getenv("SN_CPU_NATIVE_MATH");
    return !(e && std::string_view(e) == "0");
  }();
  t.native_math.clear();
  if (native_math) t.native_math = {Op::Log2, Op::Sin, Op::Sqrt, Op::Pow};
  return t;
}

namespace {

// The host CPU at the aggressive codegen level. detectHost() already carries the host CPU name and
// its features (AVX-512 on Zen 4/5).
llvm::orc::JITTargetMachineBuilder host_machine_builder() {
  auto jtmb = unwrap(llvm::orc::JITTargetMachineBuilder::detectHost(), "detect host");
  jtmb.setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  const CpuModel& m = chosen_cpu_model();
  if (m.name != jtmb.getCPU()) {  // SN_CPU: that CPU and exactly its instruction sets
    jtmb.setCPU(m.name);
    jtmb.getFeatures() = llvm::SubtargetFeatures();
    for (const auto& [f, on] : m.features) jtmb.getFeatures().AddFeature(f, on);
  }
  return jtmb;
}

// The CPU dialect's region of zeros that gated loads read where their gate is off
// (kCpuZeroRegionSymbol): address space mapped read-only once per process, whose pages all read
// as the kernel's zero page. Throws Error(OutOfMemory) when the address space cannot be had.
const void* cpu_zero_region() {
  static void* const region = [] {
    void* r = mmap(nullptr, size_t(kCpuZeroRegionBytes), PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return r == MAP_FAILED ? nullptr : r;
  }();
  if (region == nullptr)
    fail(Code::OutOfMemory, "cpu: cannot map the ", kCpuZeroRegionBytes >> 20,
         " MiB of read-only zeros that gated loads read (mmap failed)");
  return region;
}

// An LLJIT that resolves the process's symbols: libc/libm (exp2f, sinf, powf, memset), libmvec and
// libgcc helpers; and the region of zeros.
std::unique_ptr<llvm::orc::LLJIT> make_host_jit(const llvm::orc::JITTargetMachineBuilder& jtmb) {
  auto jit = unwrap(llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(jtmb).create(), "create LLJIT");
  llvm::orc::SymbolMap zeros;
  zeros[jit->mangleAndIntern(kCpuZeroRegionSymbol)] =
      llvm::orc::ExecutorSymbolDef(llvm::orc::ExecutorAddr::fromPtr(cpu_zero_region()), llvm::JITSymbolFlags::Exported);
  if (auto err = jit->getMainJITDylib().define(llvm::orc::absoluteSymbols(std::move(zeros))))
    fail(Code::Compile, "llvm: cannot define the region of zeros: ", llvm_message(std::move(err)));
  char prefix = jit->getDataLayout().getGlobalPrefix();
  jit->getMainJITDylib().addGenerator(
      unwrap(llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(prefix), "process symbols"));
  for (const char* lib : {"libm.so.6", "libmvec.so.1"})
    if (auto g = llvm::orc::DynamicLibrarySearchGenerator::Load(lib, prefix))
      jit->getMainJITDylib().addGenerator(std::move(*g));
    else
      llvm::consumeError(g.takeError());
  return jit;
}

// The codegen pipeline without loop strength reduction. Our renderer gives each address the form
// LSR would find ([base hoisted out of the loop + range * scale + constant], llvm_ir.cpp), and LSR
// with the induction variable users it needs was a fifth of the instructions compiling ResNet-18
// or the small CNN spent. Refused here, per pass manager: its switch (-disable-lsr) is a global of
// the process's libLLVM, which other users of LLVM in the process (pocl) share.
struct CodegenPasses : llvm::legacy::PassManager {
  void add(llvm::Pass* p) override {
    if (p->getPassName() == "Loop Strength Reduction") {
      delete p;
      return;
    }
    llvm::legacy::PassManager::add(p);
  }
};

// A target machine with its codegen pipeline, for one compile at a time (Impl pools them). Building
// the pipeline (about a hundred passes, their analyses scheduled) took as many instructions as
// running it on an elementwise kernel (2.2M each); the legacy pass manager starts its passes afresh
// on each module it runs (the asm printer's streamer and the machine module info are reset at the
// end of a module), so one pipeline serves every module its machine compiles: the object files
// were the same bytes as with a pipeline per module (21 modules in a row, each in its own context).
struct Codegen {
  std::unique_ptr<llvm::TargetMachine> tm;
  llvm::SmallVector<char, 0> buf;  // the object file being written
  llvm::raw_svector_ostream os{buf};
  CodegenPasses pm;

  explicit Codegen(std::unique_ptr<llvm::TargetMachine> machine) : tm(std::move(machine)) {
    if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile))
      fail(Code::Compile, "llvm: the target machine cannot emit object files");
  }
  Codegen(const Codegen&) = delete;
  Codegen& operator=(const Codegen&) = delete;

  // The object file of an optimized module.
  std::string emit_object(llvm::Module& m) {
    llvmir::LlvmErrors errors(m.getContext());
    buf.clear();
    pm.run(m);
    errors.check(std::string("code generation of ") + m.getModuleIdentifier());
    return std::string(buf.data(), buf.size());
  }
};

// The attribute of the functions of kernels that do not want SLP (wants_slp).
constexpr const char* kNoSlp = "sn-no-slp";

// The SLP vectorizer, on the functions without kNoSlp ("sn-slp" in the pass pipeline).
struct SlpWhereWanted : llvm::PassInfoMixin<SlpWhereWanted> {
  llvm::PreservedAnalyses run(llvm::Function& f, llvm::FunctionAnalysisManager& am) {
    if (f.hasFnAttribute(kNoSlp)) return llvm::PreservedAnalyses::all();
    return llvm::SLPVectorizerPass().run(f, am);
  }
};

// Whether SLP could pack the lanes of vector v, built lane by lane from different scalars: lanes
// it computes, or loads of which two read neighbouring elements of one buffer (a scan's 8
// neighbouring loads become one vector load and a shuffle). Loads of strided elements it cannot
// pack (a convolution's residual, 16 channels of an NCHW tensor per vector), and trying costs it a
// SCEV difference per pair of lanes: 610M of the 3.47G instructions compiling ResNet-18 took,
// 48 ms of its first residual convolution's compile, for no vector load.
bool slp_may_pack(const UOp* v) {
  std::vector<std::tuple<const UOp*, const UOp*, i128>> lanes;  // buffer, index less its constant, the constant
  for (const UOp* x : v->src()) {
    if (x->op == Op::Const) continue;
    const UOp* idx = x->op == Op::Load && x->dtype.lanes == 1 ? address_index(x->src(0)) : nullptr;
    if (!idx) return true;
    const bool offset = idx->op == Op::Add && idx->src(1)->op == Op::Const;
    lanes.emplace_back(address_buffer(x->src(0)), offset ? idx->src(0) : idx, offset ? idx->src(1)->const_int() : 0);
  }
  std::sort(lanes.begin(), lanes.end());
  for (size_t i = 1; i < lanes.size(); i++) {
    auto [buffer, base, at] = lanes[i - 1];
    if (lanes[i] == std::tuple(buffer, base, at + 1)) return true;
  }
  return false;
}

// Whether the SLP vectorizer may find work in k: two or more float ALU instructions that codegen
// left scalar (loops the loop vectorizer takes), or a vector built lane by lane from different
// scalars that it may pack (expand's per-lane fallback). Register tiles, whose vectors are loads,
// splats, vector math and whole vectors put together (loads of contiguous runs), have neither: a
// 64-channel convolution's tile over 8-wide weight panels cost SLP 30M instructions for nothing.
//   Never where a bool or an integer narrower than 32 bits is widened to a wider integer: LLVM 19's
// SLP narrows such values to their source's width and loses their signedness. It made the signed
// max of four int64 bools (zext i1) an i1 smax reduction, where true is -1 (fuzz seed 1129927, a
// max-reduce of comparisons: an argmax's shape), and a uint8 negation of a bool converted to float
// (sext i1 to i8, then uitofp) a conversion of the i1 (255 became 1: seed 1127766).
bool wants_slp(const LoweredKernel& k) {
  bool wants = false;
  int scalar_float_ops = 0;
  for (const UOp* u : k.linear->src()) {
    const DType from = u->op == Op::Cast ? u->src(0)->dtype : u->dtype;
    if (u->op == Op::Cast && !u->dtype.is_float() && !u->dtype.is_bool() && !from.is_float() &&
        (from.is_bool() || (from.bits() < 32 && u->dtype.bits() > from.bits())))
      return false;
    wants = wants || (is_elementwise(u->op) && u->dtype.lanes == 1 && u->dtype.is_float() && ++scalar_float_ops >= 2) ||
            (u->op == Op::Vectorize && u->src(0)->op != Op::Const && concatenated_vectors(u).empty() &&
             std::any_of(u->src().begin(), u->src().end(),
                         [&](const UOp* x) { return x != u->src(0) && x->op != Op::Const; }) &&
             slp_may_pack(u));
  }
  return wants;
}

}  // namespace

struct CpuCompiler::Impl {
  Target target;
  ThreadPool pool;
  mutable std::mutex mu;  // guards everything below; compiles are serialized
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::unique_ptr<llvm::TargetMachine> tm;
  std::optional<llvm::orc::JITTargetMachineBuilder> jtmb;  // makes the target machines of concurrent compiles
  std::vector<std::unique_ptr<Codegen>> machines;          // idle ones
  std::unordered_set<std::string> compiling;               // symbols of compiles in flight
  std::unordered_map<uint64_t, std::shared_ptr<const CpuKernel>> by_key;
  std::unordered_map<std::string, std::shared_ptr<const CpuKernel>> by_source;
  CpuCompilerStats stats;
  uint64_t counter = 0;
  std::shared_ptr<DiskCache> disk;              // the process's cache, as the environment said when made
  std::string target_key;                       // target.key()
  std::unordered_set<std::string> symbols;      // entry points added to the JIT (or tried)
  std::unordered_set<uint64_t> linked_objects;  // hashes of the object files added to the JIT
  std::unordered_set<uint64_t> disk_missed;     // keys not usable on disk: find() then compile() ask once

  // A disk cache that exists opens beside the JIT's setup, on a second core where there is one. A
  // process that finds its kernels on disk paid the open (about 0.6 ms, SQLite's first calls into
  // code not yet paged in and its reading of the schema) in its first kernel, after the setup
  // (about 2 ms). (A cache not there yet is created by the first kernel stored, not here: a device
  // whose cache is turned off before it compiles anything writes nothing.)
  Impl(int threads, bool use_disk) : pool(threads), disk(use_disk ? disk_cache() : nullptr) {
    pool.parallel_for(2, [&](int64_t task) {
      if (task == 1) {
        if (disk) disk->open_existing();
        return;
      }
      init_llvm();
      target = host_cpu_target();
      target.cores = pool.size();
      target_key = target.key();
      jtmb = host_machine_builder();
      tm = unwrap(jtmb->createTargetMachine(), "create target machine");
      jit = make_host_jit(*jtmb);
    });
  }

  void optimize(llvm::Module& m) { optimize(m, *tm); }
  // Our kernels arrive vectorized, unrolled and with their loops in the order the optimizer chose.
  // Of O3's module pipeline they need: the accumulators promoted to registers (SROA), CSE,
  // instcombine and CFG cleanup, loop invariants hoisted (LICM), GVN, the loop vectorizer for the loops codegen leaves
  // scalar (it marks the ones it vectorized: a packing copy's 32-element rows ran 1.5-2.5x slower without it), and SLP
  // for what stays scalar (a scan's carried sums). O3's inliner, unswitching, loop distribution and the rest took half
  // of LLVM's optimize time and left the inner loops of the bench_cpu kernels as they were. SLP runs on the functions
  // of kernels where codegen left float math scalar (wants_slp; the others carry kNoSlp): in the kernels codegen
  // vectorized it changed no instruction (every ResNet-18 and bench_cpu kernel but cumsum's) and it was the most
  // expensive pass (on an AVX2 target, 0.40G of the 2.26G instructions compiling ResNet-18 took).
  // GVN runs without memory dependences: after SROA and early CSE its load elimination found no
  // load to remove (the machine code of the 86 bench_cpu and 500 sampled test kernels was the same
  // with and without it), and its numbering of the rest is what still changes six of them. The
  // instcombine and CFG cleanup that followed it changed nothing either; together 4% of the
  // instructions compiling ResNet-18 or the small CNN.
  static constexpr const char* kPasses =
      "function(sroa<modify-cfg>,early-cse<memssa>,instcombine<no-verify-fixpoint>,simplifycfg,loop-mssa(licm),"
      "gvn<no-memdep>,loop-vectorize,sn-slp,instcombine<no-verify-fixpoint>,simplifycfg),"
      "globaldce";
  void optimize(llvm::Module& m, llvm::TargetMachine& machine) {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassBuilder pb(&machine);
    llvm::TargetLibraryInfoImpl tlii(llvm::Triple(m.getTargetTriple()));
    fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    pb.registerPipelineParsingCallback(
        [](llvm::StringRef name, llvm::FunctionPassManager& fpm, llvm::ArrayRef<llvm::PassBuilder::PipelineElement>) {
          if (name != "sn-slp") return false;
          fpm.addPass(SlpWhereWanted());
          return true;
        });
    llvm::ModulePassManager mpm;
    if (auto err = pb.parsePassPipeline(mpm, kPasses))
      fail(Code::Internal, "llvm: bad pass pipeline: ", llvm_message(std::move(err)));
    mpm.run(m, mam);
  }

  // Adds an object file to the JIT, once (kernels compiled together share one, and a kernel loaded
  // from disk brings the others of its object along), and returns its entry point `symbol`. An
  // object that would define a symbol the JIT has from elsewhere is refused. Throws Error(Compile).
  CpuKernel::Fn link(std::string_view object, const std::string& symbol) {
    const uint64_t id = llvm::xxh3_64bits(llvm::StringRef(object.data(), object.size()));
    if (!linked_objects.count(id)) {
      std::vector<std::string> defined = defined_symbols(object, symbol);
      for (const std::string& d : defined)
        if (symbols.count(d)) fail(Code::Compile, "llvm: cannot add kernel ", symbol, ": ", d, " is defined already");
      symbols.insert(defined.begin(), defined.end());  // tried: a compile after a failure takes new names
      auto mb = llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(object.data(), object.size()), symbol);
      if (auto err = jit->addObjectFile(std::move(mb)))
        fail(Code::Compile, "llvm: cannot add kernel ", symbol, ": ", llvm_message(std::move(err)));
      linked_objects.insert(id);
    }
    return unwrap(jit->lookup(symbol), "look up the kernel").toPtr<CpuKernel::Fn>();
  }

  // The global symbols an object file defines (its kernels' entry points).
  static std::vector<std::string> defined_symbols(std::string_view object, const std::string& what) {
    auto file = llvm::object::ObjectFile::createObjectFile(
        llvm::MemoryBufferRef(llvm::StringRef(object.data(), object.size()), what));
    if (!file) fail(Code::Compile, "llvm: kernel ", what, ": not an object file: ", llvm_message(file.takeError()));
    std::vector<std::string> out;
    for (const llvm::object::SymbolRef& sym : (*file)->symbols()) {
      llvm::Expected<uint32_t> flags = sym.getFlags();
      if (!flags) fail(Code::Compile, "llvm: kernel ", what, ": ", llvm_message(flags.takeError()));
      if (!(*flags & llvm::object::SymbolRef::SF_Global) || (*flags & llvm::object::SymbolRef::SF_Undefined)) continue;
      llvm::Expected<llvm::StringRef> name = sym.getName();
      if (!name) fail(Code::Compile, "llvm: kernel ", what, ": ", llvm_message(name.takeError()));
      out.push_back(name->str());
    }
    return out;
  }

  // The kernel stored on disk under lowered-kernel key `key`, linked and cached in memory, or
  // nullptr (not there, unreadable, or it does not link). Holds mu.
  // A kernel compiled before from the same IR text, under this kernel's own description (the IR
  // names no variable: they are slots of `vars`, so kernels over different variables share code,
  // never the names the launch binds). Holds mu.
  std::shared_ptr<const CpuKernel> alias_locked(const LoweredKernel& k, const std::string& text) {
    auto it = by_source.find(text);
    if (it == by_source.end()) return nullptr;
    auto alias = std::make_shared<CpuKernel>(*it->second);
    alias->describe(k);
    alias->compile_ms = 0;
    alias->opt_ms = 0;
    stats.cache_hits++;
    by_key[k.key] = alias;
    return alias;
  }

  // Target machines and their codegen pipelines for compiles outside the lock (one per concurrent
  // compile, reused).
  std::unique_ptr<Codegen> acquire_machine() {
    {
      std::lock_guard<std::mutex> lk(mu);
      if (!machines.empty()) {
        auto m = std::move(machines.back());
        machines.pop_back();
        return m;
      }
    }
    llvm::orc::JITTargetMachineBuilder b = [&] {
      std::lock_guard<std::mutex> lk(mu);
      return *jtmb;
    }();
    return std::make_unique<Codegen>(unwrap(b.createTargetMachine(), "create target machine"));
  }
  void release_machine(std::unique_ptr<Codegen> m) {
    std::lock_guard<std::mutex> lk(mu);
    machines.push_back(std::move(m));
  }

  std::shared_ptr<const CpuKernel> load(uint64_t key) {
    if (!disk || disk_missed.count(key)) return nullptr;
    disk_missed.insert(key);
    std::string identity = disk_identity(key, target_key);
    std::optional<std::string> bytes = disk->get(disk_key(identity, key));
    if (!bytes) return nullptr;
    auto decoded = decode_payload(*bytes, identity);
    if (!decoded) {
      disk_note(cat("entry ", hex64(key), " does not parse (", bytes->size(), " bytes): compiling again"));
      return nullptr;
    }
    auto ck = std::make_shared<CpuKernel>(std::move(decoded->first));
    try {
      ck->fn = link(decoded->second, ck->symbol);
    } catch (const Error& e) {
      disk_note(cat("entry ", hex64(key), " does not link: ", e.message()));
      return nullptr;
    }
    disk_missed.erase(key);
    stats.disk_hits++;
    by_key[key] = ck;
    return ck;
  }

  // Stores a freshly compiled kernel and its object file under its key (when the cache is on).
  void store(uint64_t key, const CpuKernel& ck, std::string_view object) {
    if (!disk) return;
    std::string identity = disk_identity(key, target_key);
    if (auto payload = encode_payload(ck, identity, object)) disk->put(disk_key(identity, key), *payload);
  }

  // A kernel's module; its functions carry kNoSlp unless the kernel wants SLP.
  std::unique_ptr<llvm::Module> parse(const CpuKernel& k, llvm::LLVMContext& ctx) {
    std::unique_ptr<llvm::Module> m = parse(k.source, ctx, k.symbol);
    if (!k.slp)
      for (llvm::Function& fn : *m)
        if (!fn.isDeclaration()) fn.addFnAttr(kNoSlp);
    return m;
  }
  std::unique_ptr<llvm::Module> parse(const std::string& src, llvm::LLVMContext& ctx, const std::string& name) {
    llvm::SMDiagnostic diag;
    auto buf = llvm::MemoryBuffer::getMemBuffer(src, name, false);
    std::unique_ptr<llvm::Module> m = llvm::parseIR(buf->getMemBufferRef(), diag, ctx);
    if (!m) {
      std::string msg;
      llvm::raw_string_ostream os(msg);
      diag.print(name.c_str(), os);
      fail(Code::Compile, "llvm: cannot parse the IR of kernel ", name, ": ", os.str(), "\n", src);
    }
    m->setDataLayout(jit->getDataLayout());
    m->setTargetTriple(jit->getTargetTriple().str());
    std::string err;
    llvm::raw_string_ostream es(err);
    if (llvm::verifyModule(*m, &es))
      fail(Code::Compile, "llvm: invalid IR for kernel ", name, ": ", es.str(), "\n", src);
    for (llvm::Function& fn : *m)
      if (!fn.isDeclaration()) {
        fn.addFnAttr("target-cpu", target.arch);
        fn.addFnAttr("target-features", tm->getTargetFeatureString());
        fn.addFnAttr("prefer-vector-width", std::to_string(target.vector_bits));
      }
    return m;
  }
};

CpuCompiler::CpuCompiler(int threads, bool disk_cache) : impl_(std::make_unique<Impl>(threads, disk_cache)) {}
CpuCompiler::~CpuCompiler() = default;

const Target& CpuCompiler::target() const { return impl_->target; }
ThreadPool& CpuCompiler::pool() { return impl_->pool; }

CpuCompilerStats CpuCompiler::stats() const {
  std::lock_guard<std::mutex> lk(impl_->mu);
  return impl_->stats;
}

std::shared_ptr<const CpuKernel> CpuCompiler::find(uint64_t key) const {
  std::lock_guard<std::mutex> lk(impl_->mu);
  auto it = impl_->by_key.find(key);
  return it == impl_->by_key.end() ? impl_->load(key) : it->second;
}

std::shared_ptr<const CpuKernel> CpuCompiler::compile(const LoweredKernel& k) {
  const LoweredKernel* one[] = {&k};
  return compile_together(one)[0];
}

std::vector<std::shared_ptr<const CpuKernel>> CpuCompiler::compile_together(std::span<const LoweredKernel* const> ks) {
  Impl& I = *impl_;
  std::vector<std::shared_ptr<const CpuKernel>> out(ks.size());
  struct Fresh {
    size_t index;
    std::shared_ptr<CpuKernel> ck;
    std::string text;  // the IR with a placeholder symbol: the source cache key
  };
  std::vector<Fresh> fresh;
  const std::string placeholder = "__sn_kernel__";
  for (size_t i = 0; i < ks.size(); i++) {
    const LoweredKernel& k = *ks[i];
    {
      std::lock_guard<std::mutex> lk(I.mu);
      if (auto it = I.by_key.find(k.key); it != I.by_key.end()) {
        I.stats.cache_hits++;
        out[i] = it->second;
        continue;
      }
      if ((out[i] = I.load(k.key))) continue;
    }
    std::string text = render_llvm_ir(k, placeholder);
    auto ck = std::make_shared<CpuKernel>();
    ck->describe(k);
    {
      std::lock_guard<std::mutex> lk(I.mu);
      if ((out[i] = I.alias_locked(k, text))) continue;
      // Deterministic, so that the object file links in another process; unique per content.
      ck->symbol = cat(sanitize(k.name), "_", hex64(k.key));
      if (I.symbols.count(ck->symbol) || I.compiling.count(ck->symbol)) ck->symbol += cat("_", I.counter++);
      I.compiling.insert(ck->symbol);
    }
    ck->source = text;
    for (size_t pos = 0; (pos = ck->source.find(placeholder, pos)) != std::string::npos; pos += ck->symbol.size())
      ck->source.replace(pos, placeholder.size(), ck->symbol);
    fresh.push_back(Fresh{i, std::move(ck), std::move(text)});
  }
  if (fresh.empty()) return out;
  auto unreserve = [&] {
    std::lock_guard<std::mutex> lk(I.mu);
    for (const Fresh& f : fresh) I.compiling.erase(f.ck->symbol);
  };

  for (Fresh& f : fresh) f.ck->slp = wants_slp(*ks[f.index]);
  // One module for all of them: LLVM's fixed cost per module (pass managers, a codegen run; an
  // elementwise kernel's 5 ms of codegen are mostly that) is paid once. Parsed, optimized and
  // emitted outside the lock (each call its own LLVM context and target machine), so that
  // groups compile on all cores at once; only linking into the JIT is serialized.
  auto t0 = std::chrono::steady_clock::now();
  std::string object;
  double opt_ms = 0;
  {
    struct Release {
      Impl& I;
      std::unique_ptr<Codegen> cg;
      ~Release() { I.release_machine(std::move(cg)); }
    } machine{I, I.acquire_machine()};
    auto ctx = std::make_unique<llvm::LLVMContext>();
    try {
      std::unique_ptr<llvm::Module> m = I.parse(*fresh[0].ck, *ctx);
      for (size_t j = 1; j < fresh.size(); j++)
        if (llvm::Linker::linkModules(*m, I.parse(*fresh[j].ck, *ctx)))
          fail(Code::Internal, "llvm: cannot join kernel ", fresh[j].ck->symbol, " to ", fresh[0].ck->symbol);
      auto t1 = std::chrono::steady_clock::now();
      I.optimize(*m, *machine.cg->tm);
      opt_ms = ms_since(t1);
      object = machine.cg->emit_object(*m);
    } catch (...) {
      unreserve();
      throw;
    }
  }
  unreserve();
  std::lock_guard<std::mutex> lk(I.mu);
  // Kernels compiled together share the time equally.
  const double share = ms_since(t0) / double(fresh.size());
  for (Fresh& f : fresh) {
    const LoweredKernel& k = *ks[f.index];
    // Another thread may have finished the same kernel meanwhile: keep the first.
    if (auto it = I.by_key.find(k.key); it != I.by_key.end()) {
      out[f.index] = it->second;
      continue;
    }
    if ((out[f.index] = I.alias_locked(k, f.text))) continue;
    f.ck->fn = I.link(object, f.ck->symbol);
    f.ck->compile_ms = share;
    f.ck->opt_ms = opt_ms / double(fresh.size());
    I.stats.compiled++;
    I.stats.compile_ms += f.ck->compile_ms;
    I.by_key[k.key] = f.ck;
    I.by_source.emplace(std::move(f.text), f.ck);
    I.store(k.key, *f.ck, object);
    out[f.index] = f.ck;
  }
  return out;
}

std::shared_ptr<const CpuKernel> CpuCompiler::compile_scratch(const LoweredKernel& k) {
  Impl& I = *impl_;
  auto ck = std::make_shared<CpuKernel>();
  ck->describe(k);
  {
    std::lock_guard<std::mutex> lk(I.mu);
    ck->symbol = cat("sn_scratch_", I.counter++);
  }
  ck->source = render_llvm_ir(k, ck->symbol);
  ck->slp = wants_slp(k);
  auto t0 = std::chrono::steady_clock::now();
  std::string object;
  {
    std::unique_ptr<Codegen> machine = I.acquire_machine();
    llvm::LLVMContext ctx;
    std::unique_ptr<llvm::Module> m = I.parse(*ck, ctx);
    I.optimize(*m, *machine->tm);
    object = machine->emit_object(*m);
    I.release_machine(std::move(machine));
  }
  std::lock_guard<std::mutex> lk(I.mu);
  llvm::orc::ResourceTrackerSP tracker = I.jit->getMainJITDylib().createResourceTracker();
  auto mb = llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(object.data(), object.size()), ck->symbol);
  if (auto err = I.jit->addObjectFile(tracker, std::move(mb)))
    fail(Code::Compile, "llvm: cannot add kernel ", ck->symbol, ": ", llvm_message(std::move(err)));
  ck->fn = unwrap(I.jit->lookup(ck->symbol), "look up the kernel").toPtr<CpuKernel::Fn>();
  ck->code_owner = std::shared_ptr<void>(nullptr, [tracker](void*) { llvm::consumeError(tracker->remove()); });
  ck->compile_ms = ms_since(t0);
  return ck;
}

void CpuCompiler::set_disk_cache(bool on) {
  std::lock_guard<std::mutex> lk(impl_->mu);
  impl_->disk = on ? disk_cache() : nullptr;
  impl_->disk_missed.clear();
}

std::shared_ptr<const CpuKernel> CpuCompiler::compile_ast(Graph& g, const UOp* ast, const LowerOptions& opts) {
  uint64_t key = kernel_key(ast, impl_->target, opts);
  {
    std::lock_guard<std::mutex> lk(impl_->mu);
    if (auto it = impl_->by_key.find(key); it != impl_->by_key.end()) {
      impl_->stats.cache_hits++;
      return it->second;
    }
    if (auto disk_hit = impl_->load(key)) return disk_hit;
  }
  return compile(lower_kernel(g, ast, impl_->target, opts));
}

std::string CpuCompiler::optimized_ir(const CpuKernel& k) {
  Impl& I = *impl_;
  std::lock_guard<std::mutex> lk(I.mu);
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> m = I.parse(k, ctx);
  I.optimize(*m);
  std::string out;
  llvm::raw_string_ostream os(out);
  m->print(os, nullptr);
  return os.str();
}

void CpuCompiler::run(const CpuKernel& k, void* const* bufs, const int64_t* vars) {
  for (size_t i = 0; i < k.vars.size(); i++) {
    if (!vars) fail(Code::InvalidArg, "run ", k.name, ": variable ", k.vars[i].name, " is not bound");
    if (vars[i] < k.vars[i].min || vars[i] > k.vars[i].max)
      fail(Code::InvalidArg, "run ", k.name, ": ", k.vars[i].name, " = ", vars[i], " is outside [", k.vars[i].min, ", ",
           k.vars[i].max, "]");
  }
  // noalias: a written buffer must not overlap another slot's buffer.
  for (size_t i = 0; i < k.params.size(); i++) {
    const KernelParam& p = k.params[i];
    if (!bufs[p.slot] && p.size != 0) fail(Code::InvalidArg, "run ", k.name, ": buffer slot ", p.slot, " is null");
    if (p.size < 0) continue;
    auto lo = reinterpret_cast<uintptr_t>(bufs[p.slot]);
    uintptr_t hi = lo + uintptr_t(p.size) * uintptr_t(p.dtype.itemsize());
    for (size_t j = i + 1; j < k.params.size(); j++) {
      const KernelParam& q = k.params[j];
      if (!(p.written || q.written) || q.size < 0) continue;
      auto lo2 = reinterpret_cast<uintptr_t>(bufs[q.slot]);
      uintptr_t hi2 = lo2 + uintptr_t(q.size) * uintptr_t(q.dtype.itemsize());
      if (lo < hi2 && lo2 < hi)
        fail(Code::InvalidArg, "run ", k.name, ": buffer slots ", p.slot, " and ", q.slot,
             " overlap and one is written");
    }
  }
  static const int64_t kNoVars = 0;
  const int64_t* vp = vars ? vars : &kNoVars;
  if (k.threads <= 1) {
    call_kernel(k.fn, bufs, vp, 0, 1);
    return;
  }
  CpuKernel::Fn fn = k.fn;
  int64_t n = k.threads;
  impl_->pool.parallel_for(n, [&](int64_t i) { call_kernel(fn, bufs, vp, i, n); });
}

double llvm_floor_ms(const std::string& ir, const std::string& symbol) {
  init_llvm();
  llvm::orc::JITTargetMachineBuilder jtmb = host_machine_builder();
  std::unique_ptr<llvm::TargetMachine> tm = unwrap(jtmb.createTargetMachine(), "create target machine");
  std::unique_ptr<llvm::orc::LLJIT> jit = make_host_jit(jtmb);

  auto t0 = std::chrono::steady_clock::now();
  auto ctx = std::make_unique<llvm::LLVMContext>();
  llvm::SMDiagnostic diag;
  std::unique_ptr<llvm::Module> m =
      llvm::parseIR(llvm::MemoryBuffer::getMemBuffer(ir, symbol, false)->getMemBufferRef(), diag, *ctx);
  if (!m) fail(Code::Compile, "llvm floor: cannot parse the IR of ", symbol);
  m->setDataLayout(jit->getDataLayout());
  m->setTargetTriple(jit->getTargetTriple().str());
  {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassBuilder pb(tm.get());
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(*m, mam);
  }
  if (auto err = jit->addIRModule(llvm::orc::ThreadSafeModule(std::move(m), std::move(ctx))))
    fail(Code::Compile, "llvm floor: ", llvm_message(std::move(err)));
  (void)unwrap(jit->lookup(symbol), "look up the kernel");
  return ms_since(t0);
}

}  // namespace sn
