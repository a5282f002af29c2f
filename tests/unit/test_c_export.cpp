// Ahead-of-time export: every ops.jsonl program compiled for device "C", exported as one standalone
// C file each, built by the system C compiler (cc -O2) into one shared library, run on the case's
// inputs and compared with the JIT (the CPU device) and with numpy.
#include <gtest/gtest.h>

#if SN_BACKEND_CPU && SN_BACKEND_C
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/tensor/compose.h"
#include "tests/unit/test_pipeline_util.h"
#include "tests/util/ops_case.h"

namespace sn {
namespace {

using testrt::runtime;

// The C compiler CI and users have: $CC, else cc.
std::string c_compiler() {
  const char* cc = std::getenv("CC");
  return cc && *cc ? cc : "cc";
}

// Program p exported as `symbol`, built into a shared library in dir by the C compiler and loaded:
// its entry point, or nullptr (with the reason in *why).
using Entry = int (*)(void* const*, void* const*);
Entry build_exported(const Program& p, const std::filesystem::path& dir, const std::string& symbol, void** handle,
                     std::string* why) {
  std::string src = (dir / (symbol + ".c")).string(), lib = (dir / (symbol + ".so")).string();
  std::ofstream(src) << runtime().device("C")->export_c(p, symbol);
  std::string cmd = c_compiler() + " -std=c99 -O2 -Wall -Werror -shared -fPIC -o " + lib + " " + src + " -lm 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    *why = "the exported C did not compile with: " + cmd;
    return nullptr;
  }
  *handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!*handle) {
    *why = dlerror();
    return nullptr;
  }
  auto fn = reinterpret_cast<Entry>(dlsym(*handle, symbol.c_str()));
  if (!fn) *why = "no symbol " + symbol;
  return fn;
}

struct ExportedCase {
  std::string name, symbol;
  std::vector<oracle::Array> inputs;  // in the program's input order, with its shapes
  oracle::Array jit, numpy;
  TensorSpec output;
  double rtol, atol;
};

TEST(CExport, ConformanceProgramsBuiltByCcMatchTheJit) {
  auto t0 = std::chrono::steady_clock::now();
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("sn_c_export_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto c_dev = runtime().device("C");
  auto cpu = runtime().device("CPU");
  std::vector<ExportedCase> cases;
  std::vector<std::string> files;
  for (const auto& [line, c] : testutil::read_jsonl(SN_SHARED_DIR "/conformance/ops.jsonl")) {
    ExportedCase ec;
    ec.name = c["name"].as_string();
    ec.symbol = "sn_case_" + std::to_string(cases.size());
    std::map<std::string, oracle::InputSpec> specs;
    std::map<std::string, oracle::Array> data;
    for (const auto& [input_name, t] : c["inputs"].as_object()) {
      oracle::Array a = testutil::json_tensor(t);
      specs[input_name] = oracle::InputSpec{a.dtype, a.shape};
      data.emplace(input_name, std::move(a));
    }
    std::string text = c["program"].as_string();
    // The JIT's answer, from a graph whose inputs live on the CPU.
    Graph gj;
    oracle::Program pj = oracle::build_program(gj, text, specs, "CPU");
    oracle::BufferData jd;
    for (const auto& [input_name, buf] : pj.buffers) jd[buf] = data.at(input_name);
    ec.jit = testrt::compile_and_run(gj, {pj.root}, jd).at(0);
    ec.numpy = testutil::json_tensor(c["output"]);
    ec.rtol = c["rtol"].as_double();
    ec.atol = c["atol"].as_double();
    // The same program for C, inputs in name order (as the JIT run above takes them).
    Graph gc;
    oracle::Program pc = oracle::build_program(gc, text, specs, "C");
    CompileOptions opts;
    for (const auto& [input_name, buf] : pc.buffers) {
      opts.inputs.push_back(buf);
      ec.inputs.push_back(data.at(input_name));
    }
    auto p = compile_program(runtime(), gc, std::vector<const UOp*>{pc.root}, c_dev, opts);
    for (size_t i = 0; i < ec.inputs.size(); i++) ec.inputs[i].shape = p->inputs[i].shape;
    ec.output = p->outputs.at(0);
    std::string path = (dir / (ec.symbol + ".c")).string();
    std::ofstream(path) << c_dev->export_c(*p, ec.symbol);
    files.push_back(path);
    cases.push_back(std::move(ec));
  }
  ASSERT_EQ(int(cases.size()), testutil::kOpsCases);

  // One compiler run for every file (only libc and libm), as a user's build would do it.
  std::string lib = (dir / "libcases.so").string();
  std::string cmd = c_compiler() + " -std=c99 -O2 -Wall -Werror -shared -fPIC -o " + lib;
  for (const std::string& f : files) cmd += " " + f;
  cmd += " -lm 2>&1";
  int rc = std::system(cmd.c_str());
  ASSERT_EQ(rc, 0) << "the exported C did not compile with: " << cmd;
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  int matched = 0;
  for (const ExportedCase& ec : cases) {
    auto fn = reinterpret_cast<Entry>(dlsym(h, ec.symbol.c_str()));
    ASSERT_NE(fn, nullptr) << ec.name;
    std::vector<std::vector<uint8_t>> in_bytes;
    std::vector<void*> ins;
    for (const oracle::Array& a : ec.inputs) in_bytes.push_back(a.to_bytes());
    for (auto& b : in_bytes) ins.push_back(b.data());
    int64_t n = 1;
    for (int64_t d : ec.output.shape) n *= d;
    std::vector<uint8_t> out(size_t(n) * size_t(ec.output.dtype.itemsize()) + 1);
    void* outs[1] = {out.data()};
    ASSERT_EQ(fn(ins.data(), outs), 0) << ec.name;
    oracle::Array got = oracle::Array::from_bytes(ec.output.dtype, ec.output.shape, out.data(), out.size() - 1);
    // Long sums may add in another order than the JIT's vector lanes: the case's tolerance for both.
    std::string vs_jit = testutil::mismatch(got, ec.jit, ec.rtol, ec.atol);
    std::string vs_numpy = testutil::mismatch(got, ec.numpy, ec.rtol, ec.atol);
    EXPECT_EQ(vs_jit, "") << ec.name << ": exported C vs the JIT";
    EXPECT_EQ(vs_numpy, "") << ec.name << ": exported C vs numpy";
    matched += vs_jit.empty() && vs_numpy.empty();
  }
  dlclose(h);
  fs::remove_all(dir);
  std::printf("C export: %d/%zu conformance programs built by %s -O2 match the JIT and numpy (%.1f s)\n", matched,
              cases.size(), c_compiler().c_str(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

// The spec's Binary (constant bytes) becomes a static array of the exported file.
TEST(CExport, ConstantBytesBecomeStaticArrays) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("sn_c_export_const_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  Graph g;
  std::string bytes;
  for (float v : {1.5f, -2.0f, 0.25f}) bytes.append(reinterpret_cast<const char*>(&v), sizeof v);
  const UOp* x = input(g, dtypes::float32, {2, 3}, "C");
  const UOp* y = mul(g, x, bitcast(g, binary_data(g, bytes), dtypes::float32));
  CompileOptions opts;
  opts.inputs = {x};
  auto p = compile_program(runtime(), g, std::vector<const UOp*>{y}, runtime().device("C"), opts);
  void* h = nullptr;
  std::string why;
  Entry fn = build_exported(*p, dir, "scaled", &h, &why);
  ASSERT_NE(fn, nullptr) << why;
  float in[6] = {1, 2, 3, 4, 5, 6}, out[6] = {0};
  void* ins[1] = {in};
  void* outs[1] = {out};
  ASSERT_EQ(fn(ins, outs), 0);
  const float scale[3] = {1.5f, -2.0f, 0.25f};
  for (int k = 0; k < 6; k++) EXPECT_EQ(out[k], in[k] * scale[k % 3]);
  dlclose(h);
  fs::remove_all(dir);
}

// A kernel whose reduce runs in blocks that accumulate in its output (x @ W for x of 2 rows, W's
// rows a page apart: SPLIT(k, blocks, LOOP, top), the first block's load of the output gated off)
// exports, builds and matches hand-computed sums.
TEST(CExport, ReduceBlocksAccumulatingInTheOutputExport) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("sn_c_export_blocks_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  constexpr int64_t kRows = 2, kN = 1024;
  Graph g;
  const UOp* x = input(g, dtypes::float32, {kRows, kN}, "C");
  const UOp* w = input(g, dtypes::float32, {kN, kN}, "C");
  CompileOptions opts;
  opts.inputs = {x, w};
  opts.keep_stages = true;
  auto p = compile_program(runtime(), g, std::vector<const UOp*>{matmul(g, x, w)}, runtime().device("C"), opts);
  bool blocked = false;
  for (const Launch& l : p->launches)
    for (const Opt& o : l.kernel->opts)
      blocked = blocked || (o.op == OptOp::Split && o.type == AxisType::Loop && o.top);
  EXPECT_TRUE(blocked) << "the matmul's reduce did not run in blocks";
  void* h = nullptr;
  std::string why;
  Entry fn = build_exported(*p, dir, "linear", &h, &why);
  ASSERT_NE(fn, nullptr) << why;
  // small integers: every sum is exact in float32, whatever the order
  std::vector<float> xs(size_t(kRows * kN)), ws(size_t(kN * kN)), out(size_t(kRows * kN), -1.0f);
  for (size_t i = 0; i < xs.size(); i++) xs[i] = float(int(i % 7) - 3);
  for (size_t i = 0; i < ws.size(); i++) ws[i] = float(int(i % 5) - 2);
  void* ins[2] = {xs.data(), ws.data()};
  void* outs[1] = {out.data()};
  ASSERT_EQ(fn(ins, outs), 0);
  int wrong = 0;
  for (int64_t r = 0; r < kRows; r++)
    for (int64_t j = 0; j < kN; j++) {
      double want = 0;
      for (int64_t k = 0; k < kN; k++) want += double(xs[size_t(r * kN + k)]) * double(ws[size_t(k * kN + j)]);
      wrong += out[size_t(r * kN + j)] != float(want);
    }
  EXPECT_EQ(wrong, 0);
  dlclose(h);
  fs::remove_all(dir);
}

TEST(CExport, OnlyCSourceProgramsExport) {
  Graph g;
  const UOp* x = input(g, dtypes::float32, {4}, "CPU");
  auto p = compile_program(runtime(), g, std::vector<const UOp*>{add(g, x, x)}, runtime().device("CPU"));
  std::string msg = testutil::error_of([&] { p->device->export_c(*p, "f"); });
  EXPECT_NE(msg.find("device \"C\""), std::string::npos) << msg;

  Graph gc;
  const UOp* y = input(gc, dtypes::float32, {4}, "C");
  auto pc = compile_program(runtime(), gc, std::vector<const UOp*>{add(gc, y, y)}, runtime().device("C"));
  EXPECT_NE(testutil::error_of([&] { pc->device->export_c(*pc, "not an identifier"); }).find("C identifier"),
            std::string::npos);
  std::string src = pc->device->export_c(*pc, "twice");
  EXPECT_NE(src.find("int twice(void *const *inputs, void *const *outputs)"), std::string::npos) << src;
  // The C device renders but never runs.
  std::vector<std::shared_ptr<Buffer>> in{Buffer::allocate(pc->device, dtypes::float32, {4})},
      out{pc->allocate_output(0)};
  Code code = Code::Ok;
  std::string why = testutil::error_of([&] { pc->run(in, out); }, &code);
  EXPECT_EQ(code, Code::Device);
  EXPECT_NE(why.find("runs nothing"), std::string::npos) << why;
}

}  // namespace
}  // namespace sn
#endif
