// CpuCompiler: ORC LLJIT for the host CPU. The only translation unit that includes LLVM headers
// (they are slow to compile). Each kernel: fresh LLVMContext, parse the rendered IR, run the O3
// pipeline (loop + SLP vectorization, host TargetTransformInfo), add to the one JITDylib, look
// up the entry point. libm/libc symbols (exp2f, sinf, powf, memset, ...) resolve from the process.
#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "backends/cpu/cpu_backend.h"
#include "core/pipeline.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>
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

}  // namespace

Target host_cpu_target() {
  init_llvm();
  Target t;
  t.renderer = "CPU";
  t.triple = llvm::sys::getProcessTriple();
  t.arch = llvm::sys::getHostCPUName().str();
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
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

struct CpuCompiler::Impl {
  Target target;
  ThreadPool pool;
  mutable std::mutex mu;  // guards everything below; compiles are serialized
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::unique_ptr<llvm::TargetMachine> tm;
  std::unordered_map<uint64_t, std::shared_ptr<const CpuKernel>> by_key;
  std::unordered_map<std::string, std::shared_ptr<const CpuKernel>> by_source;
  CpuCompilerStats stats;
  uint64_t counter = 0;

  explicit Impl(int threads) : pool(threads) {
    init_llvm();
    target = host_cpu_target();
    target.cores = pool.size();
    auto jtmb = unwrap(llvm::orc::JITTargetMachineBuilder::detectHost(), "detect host");
    // detectHost() already carries the host CPU name and its features (AVX-512 on Zen 4/5).
    jtmb.setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
    tm = unwrap(jtmb.createTargetMachine(), "create target machine");
    jit = unwrap(llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(jtmb).create(), "create LLJIT");
    char prefix = jit->getDataLayout().getGlobalPrefix();
    // Process symbols: libc/libm (exp2f, sinf, powf, memset) and libgcc helpers.
    jit->getMainJITDylib().addGenerator(
        unwrap(llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(prefix), "process symbols"));
    for (const char* lib : {"libm.so.6", "libmvec.so.1"})
      if (auto g = llvm::orc::DynamicLibrarySearchGenerator::Load(lib, prefix))
        jit->getMainJITDylib().addGenerator(std::move(*g));
      else
        llvm::consumeError(g.takeError());
  }

  void optimize(llvm::Module& m) {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PipelineTuningOptions pto;
    pto.LoopVectorization = true;
    pto.SLPVectorization = true;
    // Codegen unrolls what pays (UPCAST/UNROLL: register tiles, vector lanes); LLVM's unroller
    // on top costs ~20% of the compile time (softmax: 14 -> 11 ms) for no measurable speed.
    pto.LoopUnrolling = false;
    llvm::PassBuilder pb(tm.get(), pto);
    llvm::TargetLibraryInfoImpl tlii(llvm::Triple(m.getTargetTriple()));
    fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
    mpm.run(m, mam);
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

CpuCompiler::CpuCompiler(int threads) : impl_(std::make_unique<Impl>(threads)) {}
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
  return it == impl_->by_key.end() ? nullptr : it->second;
}

std::shared_ptr<const CpuKernel> CpuCompiler::compile(const LoweredKernel& k) {
  Impl& I = *impl_;
  std::lock_guard<std::mutex> lk(I.mu);
  if (auto it = I.by_key.find(k.key); it != I.by_key.end()) {
    I.stats.cache_hits++;
    return it->second;
  }
  // The symbol is not part of the text used as the source cache key.
  const std::string placeholder = "__sn_kernel__";
  std::string text = render_llvm_ir(k, placeholder);
  if (auto it = I.by_source.find(text); it != I.by_source.end()) {
    // The same machine code, but this kernel's own description: the IR names no variable (they are slots of
    // `vars`), so kernels over different variables can share code, never the names the launch binds.
    auto alias = std::make_shared<CpuKernel>(*it->second);
    alias->describe(k);
    alias->compile_ms = 0;
    alias->opt_ms = 0;
    I.stats.cache_hits++;
    I.by_key[k.key] = alias;
    return alias;
  }
  auto ck = std::make_shared<CpuKernel>();
  ck->describe(k);
  ck->symbol = cat(sanitize(k.name), "_", I.counter++);
  ck->source = text;
  for (size_t pos = 0; (pos = ck->source.find(placeholder, pos)) != std::string::npos; pos += ck->symbol.size())
    ck->source.replace(pos, placeholder.size(), ck->symbol);

  auto t0 = std::chrono::steady_clock::now();
  auto ctx = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> m = I.parse(ck->source, *ctx, ck->symbol);
  auto t1 = std::chrono::steady_clock::now();
  I.optimize(*m);
  ck->opt_ms = ms_since(t1);
  if (auto err = I.jit->addIRModule(llvm::orc::ThreadSafeModule(std::move(m), std::move(ctx))))
    fail(Code::Compile, "llvm: cannot add kernel ", ck->symbol, ": ", llvm_message(std::move(err)));
  auto addr = unwrap(I.jit->lookup(ck->symbol), "look up the kernel");
  ck->fn = addr.toPtr<CpuKernel::Fn>();
  ck->compile_ms = ms_since(t0);
  I.stats.compiled++;
  I.stats.compile_ms += ck->compile_ms;
  I.by_key[k.key] = ck;
  I.by_source.emplace(std::move(text), ck);
  return ck;
}

std::shared_ptr<const CpuKernel> CpuCompiler::compile_ast(Graph& g, const UOp* ast, const LowerOptions& opts) {
  if (auto hit = find(kernel_key(ast, impl_->target, opts))) {
    std::lock_guard<std::mutex> lk(impl_->mu);
    impl_->stats.cache_hits++;
    return hit;
  }
  return compile(lower_kernel(g, ast, impl_->target, opts));
}

std::string CpuCompiler::optimized_ir(const CpuKernel& k) {
  Impl& I = *impl_;
  std::lock_guard<std::mutex> lk(I.mu);
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> m = I.parse(k.source, ctx, k.symbol);
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

}  // namespace sn
