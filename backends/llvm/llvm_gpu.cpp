// GPU code generation through LLVM's NVPTX and AMDGPU targets (see llvm_gpu.h). Each compile gets
// its own LLVMContext and TargetMachine; the device's kernel cache serializes compiles. Objects are
// assembled from the assembly text (code generation runs once).
#include "backends/llvm/llvm_gpu.h"

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>

#include "backends/llvm/llvm_errors.h"
#include "core/util/error.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <llvm/ADT/SmallVector.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/AsmParser/Parser.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/MCAsmBackend.h>
#include <llvm/MC/MCAsmInfo.h>
#include <llvm/MC/MCCodeEmitter.h>
#include <llvm/MC/MCContext.h>
#include <llvm/MC/MCInstrInfo.h>
#include <llvm/MC/MCObjectFileInfo.h>
#include <llvm/MC/MCObjectWriter.h>
#include <llvm/MC/MCParser/MCAsmParser.h>
#include <llvm/MC/MCParser/MCTargetAsmParser.h>
#include <llvm/MC/MCRegisterInfo.h>
#include <llvm/MC/MCStreamer.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/MCTargetOptions.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#pragma GCC diagnostic pop

namespace sn {

namespace {

void init_gpu_targets() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
    LLVMInitializeAMDGPUTargetInfo();
    LLVMInitializeAMDGPUTarget();
    LLVMInitializeAMDGPUTargetMC();
    LLVMInitializeAMDGPUAsmPrinter();
    LLVMInitializeAMDGPUAsmParser();
  });
}

std::unique_ptr<llvm::TargetMachine> make_machine(const Target& t) {
  init_gpu_targets();
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(t.triple, err);
  if (!target) fail(Code::Compile, "llvm: no target for ", t.triple, ": ", err);
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      t.triple, t.arch, t.features, options, llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!tm) fail(Code::Compile, "llvm: cannot make a target machine for ", t.triple, " ", t.arch);
  return tm;
}

void optimize(llvm::Module& m, llvm::TargetMachine& tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopUnrolling = false;  // codegen unrolls what pays (UPCAST/UNROLL), as on the CPU
  llvm::PassBuilder pb(&tm, pto);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(m, mam);
}

std::string emit(llvm::Module& m, llvm::TargetMachine& tm, llvm::CodeGenFileType type) {
  llvm::SmallVector<char, 0> buf;
  llvm::raw_svector_ostream os(buf);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, type))
    fail(Code::Compile, "llvm: the ", tm.getTargetTriple().str(), " target machine cannot emit this file type");
  llvmir::LlvmErrors errors(m.getContext());
  pm.run(m);
  errors.check("code generation for " + tm.getTargetTriple().str());
  return std::string(buf.data(), buf.size());
}

// A relocatable object of assembly `text` for the target machine's target (LLVM's MC layer, as
// llvm-mc -filetype=obj). Throws Error(Compile) with the assembler's diagnostics.
std::string assemble(const std::string& text, const llvm::TargetMachine& tm) {
  const llvm::Target& target = tm.getTarget();
  const llvm::Triple& triple = tm.getTargetTriple();
  llvm::MCTargetOptions options;
  std::unique_ptr<llvm::MCRegisterInfo> mri(target.createMCRegInfo(triple.str()));
  std::unique_ptr<llvm::MCAsmInfo> mai(target.createMCAsmInfo(*mri, triple.str(), options));
  std::unique_ptr<llvm::MCSubtargetInfo> sti(
      target.createMCSubtargetInfo(triple.str(), tm.getTargetCPU(), tm.getTargetFeatureString()));
  std::unique_ptr<llvm::MCInstrInfo> mii(target.createMCInstrInfo());
  if (!mri || !mai || !sti || !mii) fail(Code::Compile, "llvm: no assembler for ", triple.str());
  llvm::SourceMgr sources;
  std::string diagnostics;
  sources.setDiagHandler(
      [](const llvm::SMDiagnostic& d, void* out) {
        llvm::raw_string_ostream os(*static_cast<std::string*>(out));
        d.print("kernel.s", os, false);
      },
      &diagnostics);
  sources.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBuffer(text, "kernel.s", false), llvm::SMLoc());
  llvm::MCContext ctx(triple, mai.get(), mri.get(), sti.get(), &sources, &options);
  std::unique_ptr<llvm::MCObjectFileInfo> files(target.createMCObjectFileInfo(ctx, /*PIC=*/true));
  ctx.setObjectFileInfo(files.get());
  llvm::SmallVector<char, 0> buf;
  llvm::raw_svector_ostream os(buf);
  std::unique_ptr<llvm::MCAsmBackend> backend(target.createMCAsmBackend(*sti, *mri, options));
  if (!backend) fail(Code::Compile, "llvm: no assembler backend for ", triple.str());
  std::unique_ptr<llvm::MCObjectWriter> writer = backend->createObjectWriter(os);
  std::unique_ptr<llvm::MCStreamer> streamer(
      target.createMCObjectStreamer(triple, ctx, std::move(backend), std::move(writer),
                                    std::unique_ptr<llvm::MCCodeEmitter>(target.createMCCodeEmitter(*mii, ctx)), *sti));
  std::unique_ptr<llvm::MCAsmParser> parser(llvm::createMCAsmParser(sources, ctx, *streamer, *mai));
  std::unique_ptr<llvm::MCTargetAsmParser> target_parser(target.createMCAsmParser(*sti, *parser, *mii, options));
  if (!target_parser) fail(Code::Compile, "llvm: no assembly parser for ", triple.str());
  parser->setTargetParser(*target_parser);
  if (parser->Run(false) || !diagnostics.empty())
    fail(Code::Compile, "llvm: the ", tm.getTargetCPU().str(),
         " assembly of a kernel does not assemble: ", diagnostics);
  return std::string(buf.data(), buf.size());
}

std::unique_ptr<llvm::Module> parse(const std::string& ir, llvm::LLVMContext& ctx, llvm::TargetMachine& tm) {
  llvm::SMDiagnostic diag;
  std::string layout = tm.createDataLayout().getStringRepresentation();
  auto m = llvm::parseAssembly(llvm::MemoryBufferRef(ir, "kernel"), diag, ctx, nullptr,
                               [&](llvm::StringRef, llvm::StringRef) -> std::optional<std::string> { return layout; });
  if (!m) {
    std::string msg;
    llvm::raw_string_ostream os(msg);
    diag.print("kernel", os);
    fail(Code::Compile, "llvm: the rendered kernel does not parse: ", os.str(), "\n", ir);
  }
  m->setTargetTriple(tm.getTargetTriple().str());
  std::string bad;
  llvm::raw_string_ostream vs(bad);
  if (llvm::verifyModule(*m, &vs)) fail(Code::Compile, "llvm: the rendered kernel is invalid: ", vs.str(), "\n", ir);
  return m;
}

struct GpuKernel final : DeviceKernel {
  std::string optimized_ir;
};

}  // namespace

GpuCode compile_gpu_ir(const std::string& ir, const Target& target, bool want_object) {
  std::unique_ptr<llvm::TargetMachine> tm = make_machine(target);
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> m = parse(ir, ctx, *tm);
  optimize(*m, *tm);
  GpuCode code;
  llvm::raw_string_ostream os(code.ir);
  m->print(os, nullptr);
  if (llvm::verifyModule(*m, &os))
    fail(Code::Compile, "llvm: the optimized kernel is invalid for ", target.arch, ":\n", os.str());
  code.assembly = emit(*m, *tm, llvm::CodeGenFileType::AssemblyFile);
  // The object from the assembly text: assembling costs a fraction of a second code generation.
  if (want_object) code.object = assemble(code.assembly, *tm);
  return code;
}

std::string gpu_symbol(const LoweredKernel& k) {
  std::string s;
  for (char c : k.name) s += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "k" + s;
  char key[24];
  std::snprintf(key, sizeof key, "_%016llx", static_cast<unsigned long long>(k.key));
  return s + key;
}

GpuTargetDevice::GpuTargetDevice(std::string name, Target target, LlvmDialect dialect, bool want_object,
                                 std::string description, Finish finish)
    : ComputeDevice(std::move(name), std::move(target)),
      dialect_(dialect),
      want_object_(want_object),
      description_(std::move(description)),
      finish_(std::move(finish)) {}

std::string GpuTargetDevice::cannot_run() const {
  return cat("device ", name(), " (", target().arch,
             ") was opened with sn_device_open_target: it is compile-only (it compiles kernels for ", target().arch,
             " and runs nothing)");
}

std::shared_ptr<Storage> GpuTargetDevice::allocate(size_t bytes) {
  return std::make_shared<Storage>(shared_from_this(), host_allocate(name(), bytes), bytes, &std::free);
}
void GpuTargetDevice::copy_in(Storage& dst, size_t offset, const void* src, size_t bytes) {
  std::memcpy(static_cast<char*>(dst.ptr()) + offset, src, bytes);
}
void GpuTargetDevice::copy_out(const Storage& src, size_t offset, void* dst, size_t bytes) {
  std::memcpy(dst, static_cast<const char*>(src.ptr()) + offset, bytes);
}

std::shared_ptr<const DeviceKernel> GpuTargetDevice::compile(const LoweredKernel& lk) {
  return cache_.get(lk, [this](const LoweredKernel& k) {
    auto t0 = std::chrono::steady_clock::now();
    auto kernel = std::make_shared<GpuKernel>();
    kernel->describe(k);
    std::string ir = render_llvm_ir(k, gpu_symbol(k), dialect_);
    GpuCode code = compile_gpu_ir(ir, target(), want_object_);
    kernel->optimized_ir = code.ir;
    finish_(*kernel, std::move(code));
    kernel->compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return kernel;
  });
}

std::string GpuTargetDevice::optimized_source(const DeviceKernel& k) {
  if (auto* g = dynamic_cast<const GpuKernel*>(&k)) return g->optimized_ir;
  return k.source;
}

void GpuTargetDevice::launch(const DeviceKernel&, std::span<const DevicePtr>, std::span<const int64_t>,
                             const LaunchSize&) {
  fail(Code::Device, cannot_run());
}

}  // namespace sn
