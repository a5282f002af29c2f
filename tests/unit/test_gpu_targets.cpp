// GPU targets without a GPU: every kernel of the conformance programs and of random fuzz graphs
// compiles for CUDA (sm_80, sm_90: PTX from LLVM's NVPTX target, then assembled by ptxas when the
// CUDA toolkit is here) and for AMD (gfx90a, gfx942, gfx1100: code objects linked by ld.lld-19 whose
// kernel descriptors llvm-readobj-19 reads). And opening "CUDA" or "AMD" on a machine without their
// driver or GPU is a clean Device error that names what is missing.
#include <gtest/gtest.h>

#if SN_BACKEND_CUDA && SN_BACKEND_AMD
#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/tensor/compose.h"
#include "tests/unit/fuzz_graphs.h"
#include "tests/util/ops_case.h"

namespace sn {
namespace {

using namespace testrt;
namespace fs = std::filesystem;

// Random graphs per architecture: fewer under AddressSanitizer (every LLVM pass runs instrumented).
#if defined(__SANITIZE_ADDRESS__)
constexpr int kFuzzGraphs = 25;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr int kFuzzGraphs = 25;
#else
constexpr int kFuzzGraphs = 300;
#endif
#else
constexpr int kFuzzGraphs = 300;
#endif

double secs_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// An executable on $PATH, else in one of `extra` directories; "" when none.
std::string find_tool(const std::string& name, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    for (std::string d; std::getline(ss, d, ':');) dirs.push_back(d.empty() ? "." : d);
  }
  dirs.insert(dirs.end(), extra.begin(), extra.end());
  for (const std::string& d : dirs)
    if (fs::path p = fs::path(d) / name; access(p.c_str(), X_OK) == 0) return p.string();
  return "";
}

// Runs a shell command; its exit status and its output (stdout and stderr).
std::pair<int, std::string> run_command(const std::string& cmd) {
  std::string out;
  FILE* f = popen((cmd + " 2>&1").c_str(), "r");
  if (!f) return {-1, "popen failed"};
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  int status = pclose(f);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

fs::path scratch_dir(const std::string& tag) {
  fs::path d = fs::temp_directory_path() / cat("sn_gpu_", tag, "_", ::getpid());
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// The entry point of a kernel's source: after ".entry " (PTX) or ".amdhsa_kernel " (AMDGPU).
std::string entry_symbol(const std::string& source) {
  for (const char* marker : {".entry ", ".amdhsa_kernel "}) {
    size_t at = source.find(marker);
    if (at == std::string::npos) continue;
    at += std::strlen(marker);
    size_t end = source.find_first_of("( \n\t", at);
    return source.substr(at, end - at);
  }
  return "";
}

// Every distinct kernel (entry symbol -> source, binary) of the conformance programs and of
// kFuzzGraphs random graphs, compiled for one architecture.
struct Compiled {
  std::map<std::string, std::pair<std::string, std::string>> kernels;
  int programs = 0, barriers = 0;
  int tensor_core_kernels = 0;  // kernels with a tensor-core instruction (of the matmul programs)
  double secs = 0;
};

// Whether a kernel's assembly uses a tensor-core instruction: mma.sync (PTX), v_mfma / v_wmma (AMDGPU).
bool uses_tensor_cores(const std::string& source) {
  return source.find("mma.sync.aligned") != std::string::npos || source.find("v_mfma_") != std::string::npos ||
         source.find("v_wmma_") != std::string::npos;
}

// Matmuls of float16 and bfloat16 that the heuristic puts on tensor cores where the target has them:
// plain, with a float32 output, with a bias and relu, batched, one large enough for upcast tiles and
// several warps per group, and two padded to the tile (odd sizes; a convolution).
std::vector<const UOp*> tensor_core_programs(Graph& g, const std::string& backend) {
  std::vector<const UOp*> outs;
  for (DType in : {dtypes::float16, dtypes::bfloat16}) {
    const UOp* a = input(g, in, {64, 32}, backend);
    const UOp* b = input(g, in, {32, 48}, backend);
    outs.push_back(matmul(g, a, b));
    outs.push_back(matmul(g, cast(g, a, dtypes::float32), cast(g, b, dtypes::float32)));
    outs.push_back(relu(g, binary(g, Op::Add, matmul(g, a, b), input(g, in, {48}, backend))));
    outs.push_back(matmul(g, input(g, in, {3, 32, 64}, backend), input(g, in, {3, 64, 16}, backend)));
    outs.push_back(matmul(g, input(g, in, {512, 256}, backend), input(g, in, {256, 512}, backend)));
    // padded to the tile: a matmul of odd sizes and a convolution (K = its input channels)
    outs.push_back(matmul(g, input(g, in, {40, 24}, backend), input(g, in, {24, 20}, backend)));
    outs.push_back(conv2d(g, input(g, in, {2, 16, 14, 14}, backend), input(g, in, {24, 16, 3, 3}, backend), nullptr,
                          {1, 1}, {1, 1}));
  }
  return outs;
}

void collect(const Program& p, Compiled& out) {
  for (const Launch& l : p.launches) {
    const DeviceKernel& k = *l.kernel;
    std::string sym = entry_symbol(k.source);
    ASSERT_FALSE(sym.empty()) << "kernel " << k.name << " has no entry point in:\n" << k.source;
    out.barriers += k.features.barriers > 0;
    out.kernels.emplace(sym, std::make_pair(k.source, k.binary));
  }
}

Compiled compile_all(const std::string& backend, const std::string& arch) {
  auto t0 = std::chrono::steady_clock::now();
  Compiled out;
  auto dev = runtime().devices().open_target(backend, arch);
  for (const auto& [line, c] : testutil::read_jsonl(SN_SHARED_DIR "/conformance/ops.jsonl")) {
    std::string name = c["name"].as_string();
    std::map<std::string, oracle::InputSpec> specs;
    for (const auto& [input_name, t] : c["inputs"].as_object()) {
      oracle::Array a = testutil::json_tensor(t);
      specs[input_name] = oracle::InputSpec{a.dtype, a.shape};
    }
    try {
      Graph g;
      oracle::Program prog = oracle::build_program(g, c["program"].as_string(), specs, backend);
      collect(*compile_program(runtime(), g, std::vector<const UOp*>{prog.root}, dev), out);
      out.programs++;
    } catch (const std::exception& e) {
      ADD_FAILURE() << backend << " " << arch << ": conformance case " << name << ": " << e.what();
    }
  }
  for (size_t i = 0;; i++) {  // the tensor-core matmuls, one program each
    Graph g;
    std::vector<const UOp*> outs = tensor_core_programs(g, backend);
    if (i >= outs.size()) break;
    try {
      auto p = compile_program(runtime(), g, std::vector<const UOp*>{outs[i]}, dev);
      collect(*p, out);
      for (const Launch& l : p->launches) out.tensor_core_kernels += uses_tensor_cores(l.kernel->source);
      out.programs++;
    } catch (const std::exception& e) {
      ADD_FAILURE() << backend << " " << arch << ": tensor-core matmul " << i << ": " << e.what();
    }
  }
  try {  // a convolution with finite constant weights: its padded filter rows skipped in If blocks
    Graph g;
    std::vector<float> wv(16 * 8 * 3 * 3);
    for (size_t i = 0; i < wv.size(); i++) wv[i] = float(i % 17) * 0.125f - 1;
    std::string bytes(reinterpret_cast<const char*>(wv.data()), wv.size() * sizeof(float));
    const UOp* w =
        reshape(g, slice(g, binary_data(g, std::move(bytes)), 0, int64_t(wv.size()), dtypes::float32), {16, 8, 3, 3});
    const UOp* conv = conv2d(g, input(g, dtypes::float32, {1, 8, 7, 7}, backend), w, nullptr, {1, 1}, {1, 1});
    auto p = compile_program(runtime(), g, std::vector<const UOp*>{conv}, dev);
    EXPECT_GT(p->launches.back().kernel->features.gated_blocks, 0) << backend << " " << arch;
    collect(*p, out);
    out.programs++;
  } catch (const std::exception& e) {
    ADD_FAILURE() << backend << " " << arch << ": convolution with constant weights: " << e.what();
  }
  // SN_FUZZ_CASES=N compiles N graphs instead (long local runs, as in test_fuzz_diff.cpp).
  const char* env = std::getenv("SN_FUZZ_CASES");
  const int cases = env && std::atoi(env) > 0 ? std::atoi(env) : kFuzzGraphs;
  int graphs = 0;
  for (uint64_t seed = 1; graphs < cases && seed <= uint64_t(cases) * 2; seed++) {
    Graph g;
    Rng rng(seed * 0x9E3779B97F4A7C15ull);
    oracle::BufferData data;
    std::vector<const UOp*> outs;
    try {
      outs = GraphGen(g, rng, data, backend, true).build();
    } catch (const Error&) {
      continue;  // the generator made nothing to compile
    }
    try {
      collect(*compile_program(runtime(), g, outs, dev), out);
      out.programs++;
      graphs++;
    } catch (const std::exception& e) {
      ADD_FAILURE() << backend << " " << arch << ": fuzz seed " << seed << ": " << e.what();
      graphs++;
    }
  }
  EXPECT_EQ(graphs, cases);
  out.secs = secs_since(t0);
  return out;
}

// All kernels of one architecture as one PTX module (one header, the kernels' bodies), assembled by
// ptxas once.
void check_ptx(const std::string& arch) {
  Compiled c = compile_all("CUDA", arch);
  ASSERT_GT(c.kernels.size(), 100u);
  std::string module;
  bool first = true;
  for (const auto& [sym, code] : c.kernels) {
    const auto& [source, binary] = code;
    EXPECT_EQ(source, binary) << sym << ": the binary of a CUDA kernel is its PTX";
    EXPECT_NE(source.find(".target " + arch), std::string::npos) << sym;
    std::istringstream lines(source);
    for (std::string l; std::getline(lines, l);) {
      bool header = l.rfind(".version", 0) == 0 || l.rfind(".target", 0) == 0 || l.rfind(".address_size", 0) == 0;
      if (!header || first) module += l + "\n";
    }
    first = false;
  }
  std::printf("CUDA %s: %zu kernels of %d programs compiled to PTX (%d with barriers, %d with mma.sync) in %.1f s\n",
              arch.c_str(), c.kernels.size(), c.programs, c.barriers, c.tensor_core_kernels, c.secs);
  EXPECT_EQ(c.tensor_core_kernels, 14) << "each tensor-core matmul runs on mma.sync";
  std::string ptxas = find_tool("ptxas", {"/usr/local/cuda/bin"});
  if (ptxas.empty())
    GTEST_SKIP() << "ptxas not found (no CUDA toolkit on $PATH or in /usr/local/cuda/bin): PTX not assembled";
  fs::path dir = scratch_dir("ptx_" + arch);
  fs::path file = dir / (arch + ".ptx");
  std::ofstream(file) << module;
  auto t0 = std::chrono::steady_clock::now();
  auto [rc, log] = run_command(cat(ptxas, " -arch=", arch, " ", file.string(), " -o ", (dir / "out.cubin").string()));
  EXPECT_EQ(rc, 0) << "ptxas rejected the " << arch << " module " << file.string() << ":\n" << log.substr(0, 4000);
  EXPECT_TRUE(fs::exists(dir / "out.cubin") && fs::file_size(dir / "out.cubin") > 0);
  std::printf("ptxas -arch=%s assembled %zu kernels in one module in %.1f s\n", arch.c_str(), c.kernels.size(),
              secs_since(t0));
  if (rc == 0) fs::remove_all(dir);
}

// Every kernel's code object is an ELF with its kernel descriptor `<kernel>.kd`; llvm-readobj-19
// (when here) lists it among the symbols of every file.
void check_code_objects(const std::string& arch) {
  Compiled c = compile_all("AMD", arch);
  ASSERT_GT(c.kernels.size(), 100u);
  fs::path dir = scratch_dir("amd_" + arch);
  std::map<std::string, std::string> file_symbol;
  for (const auto& [sym, code] : c.kernels) {
    const auto& [source, binary] = code;
    ASSERT_GE(binary.size(), 4u) << sym;
    EXPECT_EQ(binary.substr(0, 4),
              "\x7f"
              "ELF")
        << sym;
    EXPECT_NE(binary.find(sym + ".kd"), std::string::npos) << sym << ": no kernel descriptor symbol";
    EXPECT_NE(source.find(".amdgcn_target \"amdgcn-amd-amdhsa--" + arch), std::string::npos) << sym;
    fs::path f = dir / cat("k", file_symbol.size(), ".hsaco");
    std::ofstream(f, std::ios::binary).write(binary.data(), std::streamsize(binary.size()));
    file_symbol[f.string()] = sym;
  }
  std::printf(
      "AMD %s: %zu kernels of %d programs linked into code objects (%d with barriers, %d with MFMA/WMMA) in %.1f s\n",
      arch.c_str(), c.kernels.size(), c.programs, c.barriers, c.tensor_core_kernels, c.secs);
  EXPECT_EQ(c.tensor_core_kernels, 14) << "each tensor-core matmul runs on MFMA or WMMA";
  std::string readobj = find_tool("llvm-readobj-19", {"/usr/lib/llvm-19/bin"});
  if (readobj.empty()) GTEST_SKIP() << "llvm-readobj-19 not found: kernel descriptors not read back";
  // One llvm-readobj per batch of files: "File: <path>" starts each file's listing.
  std::map<std::string, std::set<std::string>> symbols;
  std::vector<std::string> files;
  for (const auto& [f, sym] : file_symbol) files.push_back(f);
  for (size_t at = 0; at < files.size(); at += 200) {
    std::string cmd = readobj + " --symbols";
    for (size_t i = at; i < std::min(files.size(), at + 200); i++) cmd += " " + files[i];
    auto [rc, log] = run_command(cmd);
    ASSERT_EQ(rc, 0) << log.substr(0, 4000);
    std::istringstream lines(log);
    std::string file;
    for (std::string l; std::getline(lines, l);) {
      if (l.rfind("File: ", 0) == 0) file = l.substr(6);
      if (size_t n = l.find("Name: "); n != std::string::npos) {
        std::string name = l.substr(n + 6);
        symbols[file].insert(name.substr(0, name.find(' ')));
      }
    }
  }
  int found = 0;
  for (const auto& [f, sym] : file_symbol) {
    bool has = symbols[f].count(sym + ".kd") > 0;
    found += has;
    EXPECT_TRUE(has) << f << ": llvm-readobj lists no " << sym << ".kd";
  }
  std::printf("llvm-readobj-19 read %d kernel descriptors of %s\n", found, arch.c_str());
  EXPECT_EQ(size_t(found), file_symbol.size());
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

TEST(GpuTargets, CudaSm80KernelsAssembleWithPtxas) { check_ptx("sm_80"); }
TEST(GpuTargets, CudaSm90KernelsAssembleWithPtxas) { check_ptx("sm_90"); }
TEST(GpuTargets, AmdGfx90aCodeObjectsHaveKernelDescriptors) { check_code_objects("gfx90a"); }
TEST(GpuTargets, AmdGfx942CodeObjectsHaveKernelDescriptors) { check_code_objects("gfx942"); }
TEST(GpuTargets, AmdGfx1100CodeObjectsHaveKernelDescriptors) { check_code_objects("gfx1100"); }

// A sum over a long axis splits across work-items (GROUP_REDUCE): shared memory and barriers.
std::shared_ptr<const Program> compile_long_sum(const std::string& backend, const std::string& arch) {
  Graph g;
  const UOp* x = input(g, dtypes::float32, {4, 8192}, backend);
  const UOp* s = reduce(g, x, Op::Add, {1});
  return compile_program(runtime(), g, std::vector<const UOp*>{s}, runtime().devices().open_target(backend, arch));
}

TEST(GpuTargets, GroupReduceUsesSharedMemoryAndBarriers) {
  auto p = compile_long_sum("CUDA", "sm_90");
  std::string ptx;
  for (const Launch& l : p->launches) ptx += l.kernel->source;
  EXPECT_NE(ptx.find(".shared"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find("bar.sync"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find("%ctaid.x"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find("%tid.x"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find(".param .u64"), std::string::npos) << ptx;
  auto a = compile_long_sum("AMD", "gfx942");
  std::string s;
  for (const Launch& l : a->launches) s += l.kernel->source;
  EXPECT_NE(s.find("s_barrier"), std::string::npos) << s;
  EXPECT_NE(s.find("ds_write"), std::string::npos) << s;
  EXPECT_EQ(s.find(".amdhsa_group_segment_fixed_size 0\n"), std::string::npos) << "no LDS in:\n" << s;
  EXPECT_NE(s.find(".wavefront_size: 64"), std::string::npos);
  auto w = compile_long_sum("AMD", "gfx1100");
  EXPECT_NE(w->launches.at(0).kernel->source.find(".wavefront_size: 32"), std::string::npos);
}

// A symbolic batch size: the variable is an i64 kernel parameter after the buffers.
TEST(GpuTargets, SymbolicShapesBecomeKernelParameters) {
  for (auto [backend, arch] : {std::pair{"CUDA", "sm_80"}, std::pair{"AMD", "gfx1100"}}) {
    Graph g;
    const UOp* b = g.var("batch", 1, 4096);
    const UOp* x = input_sym(g, dtypes::float32, Shape{Dim{0, b}, Dim::of(64)}, backend);
    const UOp* y = reduce(g, x, Op::Max, {1});
    auto p = compile_program(runtime(), g, std::vector<const UOp*>{y}, runtime().devices().open_target(backend, arch));
    ASSERT_EQ(p->vars.size(), 1u);
    std::string src;
    for (const Launch& l : p->launches) {
      EXPECT_EQ(l.kernel->vars.size(), 1u) << l.kernel->name;
      src += l.kernel->source;
    }
    if (std::string(backend) == "CUDA") {
      // two buffers, then the variable: three .u64 parameters
      EXPECT_NE(src.find("_param_2"), std::string::npos) << src;
      std::string ptxas = find_tool("ptxas", {"/usr/local/cuda/bin"});
      if (ptxas.empty()) continue;
      fs::path dir = scratch_dir("sym");
      std::ofstream(dir / "k.ptx") << src;
      auto [rc, log] =
          run_command(cat(ptxas, " -arch=sm_80 ", (dir / "k.ptx").string(), " -o ", (dir / "k.cubin").string()));
      EXPECT_EQ(rc, 0) << log;
      fs::remove_all(dir);
    } else {
      EXPECT_NE(src.find(".kernarg_segment_size: 24"), std::string::npos) << src;
    }
  }
}

TEST(GpuTargets, DevicesAreCompileOnlyAndNameUnknownTargets) {
  auto dev = runtime().devices().open_target("cuda", "sm_80");
  EXPECT_EQ(dev->name(), "CUDA");
  EXPECT_EQ(dev->target().arch, "sm_80");
  EXPECT_EQ(dev, runtime().devices().open_target("CUDA", "sm_80"));
  EXPECT_NE(dev->cannot_run().find("compile-only"), std::string::npos) << dev->cannot_run();
  try {
    runtime().devices().open_target("CUDA", "sm_12");
    ADD_FAILURE() << "sm_12 opened";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::InvalidArg);
    EXPECT_NE(std::string(e.what()).find("sm_12"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("sm_90"), std::string::npos) << e.what();
  }
  try {
    runtime().devices().open_target("AMD", "gfx9000");
    ADD_FAILURE() << "gfx9000 opened";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::InvalidArg);
    EXPECT_NE(std::string(e.what()).find("gfx9000"), std::string::npos) << e.what();
  }
  for (const char* backend : {"CPU", "VULKAN"}) {
    try {
      runtime().devices().open_target(backend, "x");
      ADD_FAILURE() << backend << " opened a target";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Code::Device);
      EXPECT_NE(std::string(e.what()).find(backend), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("AMD, CUDA"), std::string::npos) << e.what();
    }
  }
}

// ---- drivers --------------------------------------------------------------------------------

bool loadable(const char* lib) {
  void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (h) dlclose(h);
  return h != nullptr;
}

// Opening a backend whose driver or GPU is missing: Device, with the reason count() gives.
std::string open_error(const std::string& backend) {
  try {
    runtime().device(backend);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::Device);
    return e.what();
  }
  ADD_FAILURE() << backend << " opened";
  return "";
}

TEST(GpuDrivers, CudaWithoutDriverIsACleanDeviceError) {
  std::string why;
  if (runtime().devices().count("CUDA", &why) > 0) GTEST_SKIP() << "this machine has a CUDA device";
  std::string msg = open_error("CUDA");
  EXPECT_NE(msg.find(why), std::string::npos) << msg;
  if (!loadable("libcuda.so.1"))
    EXPECT_NE(msg.find("libcuda.so.1 not found"), std::string::npos) << msg;
  else
    EXPECT_TRUE(msg.find("cuInit") != std::string::npos || msg.find("no device") != std::string::npos) << msg;
}

TEST(GpuDrivers, AmdWithoutGpuIsACleanDeviceError) {
  std::string why;
  if (runtime().devices().count("AMD", &why) > 0) GTEST_SKIP() << "this machine has an AMD GPU";
  std::string msg = open_error("AMD");
  EXPECT_NE(msg.find(why), std::string::npos) << msg;
  if (loadable("libhsa-runtime64.so.1"))  // Debian's libhsa-runtime64-1: hsa_init runs and finds no GPU agent
    EXPECT_NE(msg.find("HSA runtime found no GPU agent"), std::string::npos) << msg;
  else
    EXPECT_NE(msg.find("libhsa-runtime64.so.1 not found"), std::string::npos) << msg;
}

}  // namespace
}  // namespace sn
#endif
