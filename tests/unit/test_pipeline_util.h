// Helpers for the end-to-end tests: compile tensor graphs with the pipeline, run them on the CPU
// device with data the oracle also sees, and compare the two.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/pipeline.h"
#include "core/runtime/runtime.h"
#include "core/tensor/tensor.h"
#include "tests/oracle/interp.h"
#include "tests/util/test_helpers.h"

namespace sn::testrt {

using testutil::Rng;

using oracle::Array;

// One runtime for every end-to-end test: its device, kernel cache and program cache are shared,
// as they would be in an application.
inline Runtime& runtime() {
  static Runtime rt(RuntimeOptions{.debug = -1, .threads = 0, .program_cache_size = 4096});
  return rt;
}

// Whether the OpenCL tests must run (CI sets SN_REQUIRE_CL=1: pocl is installed there), or may skip
// when no OpenCL device exists.
inline bool cl_required() {
  const char* e = std::getenv("SN_REQUIRE_CL");
  return e && std::string(e) == "1";
}

// Whether the CUDA tests must run (SN_REQUIRE_CUDA=1, for a machine with an NVIDIA GPU), or may skip
// when the driver or the GPU is missing (this project's CI machine has neither).
inline bool cuda_required() {
  const char* e = std::getenv("SN_REQUIRE_CUDA");
  return e && std::string(e) == "1";
}

// The same for AMD GPUs (SN_REQUIRE_AMD=1).
inline bool amd_required() {
  const char* e = std::getenv("SN_REQUIRE_AMD");
  return e && std::string(e) == "1";
}

// In a test body: skips the test, saying why, when `backend` ("CL", "CUDA") has no device here; a
// failure instead when `required` (SN_REQUIRE_CL / SN_REQUIRE_CUDA) says the machine must have one.
#define SN_SKIP_WITHOUT_DEVICE(backend, required)                                                          \
  do {                                                                                                     \
    std::string sn_why_;                                                                                   \
    if (::sn::testrt::runtime().devices().count(backend, &sn_why_) == 0) {                                 \
      if (required) FAIL() << "no " << (backend) << " device, but the machine must have one: " << sn_why_; \
      GTEST_SKIP() << "no " << (backend) << " device: " << sn_why_;                                        \
    }                                                                                                      \
  } while (0)

// Random data of `dtype`: floats uniform in [lo, hi]; integers uniform in [lo, hi] clamped to the
// dtype; bools 0/1.
inline Array random_array(Rng& rng, DType dt, const std::vector<int64_t>& shape, double lo = -3, double hi = 3) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (dt.is_float()) {
    std::vector<double> v;
    for (int64_t k = 0; k < n; k++) v.push_back(rng.uniform(lo, hi));
    return Array::from_doubles(dt, shape, v);
  }
  double dlo = std::max(lo, double(dt.int_min())), dhi = std::min(hi, double(dt.int_max()));
  if (dt.is_bool()) dlo = 0, dhi = 1;
  std::vector<int64_t> v;
  for (int64_t k = 0; k < n; k++) v.push_back(rng.integer(int64_t(dlo), int64_t(dhi)));
  return Array::from_ints(dt, shape, v);
}

// Tolerances for comparing compiled float results with the oracle (which computes in double and
// rounds after every op): a few ulps of the dtype, more for the short floats.
inline double default_rtol(DType dt) {
  switch (dt.scalar) {
    case Scalar::Float16:
      return 4e-3;
    case Scalar::BFloat16:
      return 3e-2;
    case Scalar::Float32:
      return 2e-5;
    case Scalar::Float64:
      return 1e-11;
    case Scalar::Fp8E4M3:  // one ulp (float32 libm results may round to the neighbour)
      return 0.125;
    case Scalar::Fp8E5M2:
      return 0.25;
    default:
      return 0;
  }
}

// "" when `got` matches `want`: same dtype and shape, |got - want| <= atol + rtol * |want| for
// floats (NaN matches NaN, equal infinities match), exact for integers and bools.
inline std::string mismatch(const Array& got, const Array& want, double rtol, double atol) {
  if (got.dtype != want.dtype) return "dtype " + got.dtype.name() + ", expected " + want.dtype.name();
  if (got.shape != want.shape) return "shape " + got.str(0) + ", expected " + want.str(0);
  size_t bad = 0;
  std::string first;
  for (size_t k = 0; k < want.numel(); k++) {
    bool ok;
    if (!want.dtype.is_float()) {
      ok = got.int_at(k) == want.int_at(k);
    } else {
      double g = got.f[k], w = want.f[k];
      ok = (std::isnan(g) && std::isnan(w)) || g == w || std::fabs(g - w) <= atol + rtol * std::fabs(w);
    }
    if (ok) continue;
    if (bad++ < 5) first += cat(" [", k, "] got ", got.value_at(k), " want ", want.value_at(k), ";");
  }
  if (bad == 0) return "";
  return cat(bad, " of ", want.numel(), " elements differ:", first);
}

// A device buffer holding `a` (its shape).
inline std::shared_ptr<Buffer> to_buffer(const std::shared_ptr<ComputeDevice>& dev, const Array& a) {
  auto b = Buffer::allocate(dev, a.dtype, a.shape);
  std::vector<uint8_t> bytes = a.to_bytes();
  b->copy_in(bytes.data(), bytes.size());
  return b;
}

inline Array from_buffer(const Buffer& b) {
  std::vector<uint8_t> bytes(b.nbytes());
  b.copy_out(bytes.data(), bytes.size());
  return Array::from_bytes(b.dtype(), b.shape(), bytes.data(), bytes.size());
}

// Compiles `outs` for `device`, runs the program on the data of each input Buffer, returns the
// outputs.
inline std::vector<Array> compile_and_run(Graph& g, const std::vector<const UOp*>& outs, const oracle::BufferData& data,
                                          const CompileOptions& opts = {},
                                          std::shared_ptr<const Program>* program_out = nullptr,
                                          const std::string& device = "CPU") {
  auto dev = runtime().device(device);
  // The caller's order: every input Buffer with data, in creation order (the pipeline's default
  // when opts.inputs is empty is the same order restricted to the Buffers the outputs read).
  CompileOptions o = opts;
  std::vector<const UOp*> bufs;
  for (const auto& [buf, arr] : data) bufs.push_back(buf);
  std::sort(bufs.begin(), bufs.end(),
            [](const UOp* a, const UOp* b) { return a->as<BufferArg>().id < b->as<BufferArg>().id; });
  if (o.inputs.empty()) o.inputs = bufs;
  auto p = compile_program(runtime(), g, outs, dev, o);
  std::vector<std::shared_ptr<Buffer>> ins, outbufs;
  for (size_t i = 0; i < p->inputs.size(); i++) {
    const Array& a = data.at(o.inputs[i]->op == Op::Buffer ? o.inputs[i] : o.inputs[i]->src(0));
    Array shaped = a;
    shaped.shape = p->inputs[i].shape;
    ins.push_back(to_buffer(dev, shaped));
  }
  for (size_t i = 0; i < p->outputs.size(); i++) outbufs.push_back(p->allocate_output(i));
  p->run(ins, outbufs);
  std::vector<Array> res;
  for (auto& b : outbufs) res.push_back(from_buffer(*b));
  if (program_out) *program_out = p;
  return res;
}

// Compiles and runs `outs`, evaluates them with the oracle, and reports every mismatch.
inline void expect_matches_oracle(Graph& g, const std::vector<const UOp*>& outs, const oracle::BufferData& data,
                                  const std::string& what, double rtol = -1, double atol = -1,
                                  const CompileOptions& opts = {}, const std::string& device = "CPU") {
  std::vector<Array> want = oracle::evaluate(outs, data);
  std::vector<Array> got = compile_and_run(g, outs, data, opts, nullptr, device);
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); i++) {
    double rt = rtol >= 0 ? rtol : default_rtol(want[i].dtype);
    double at = atol >= 0 ? atol : rt;
    std::string why = mismatch(got[i], want[i], rt, at);
    EXPECT_EQ(why, "") << what << ": output " << i << "\n  got  " << got[i].str() << "\n  want " << want[i].str();
  }
}

// The multiply-adds in a program's "linear" stage text (Program::stage_text), and how many of them
// run inside an If block.
struct MulaccCount {
  size_t all = 0, gated = 0;
};
inline MulaccCount count_mulaccs(const std::string& linear) {
  std::istringstream lines(linear);
  MulaccCount c;
  bool in_if = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("= If ") != std::string::npos) in_if = true;
    if (line.find("= Endif ") != std::string::npos) in_if = false;
    if (line.find("= Mulacc ") == std::string::npos) continue;
    c.all++;
    c.gated += in_if;
  }
  return c;
}

// A test fixture: a graph, and the data of each input it makes (random from Seed, or given). check()
// compiles outputs and compares them with the oracle.
template <uint64_t Seed>
class OracleFixture : public ::testing::Test {
 protected:
  Graph g;
  Rng rng{Seed};
  oracle::BufferData data;

  const UOp* in(DType dt, std::vector<int64_t> shape, double lo = -3, double hi = 3) {
    const UOp* t = input(g, dt, shape);
    data[buffer_of(t)] = random_array(rng, dt, {numel(shape)}, lo, hi);
    return t;
  }
  // An input with exactly these values.
  const UOp* in_values(DType dt, std::vector<int64_t> shape, const std::vector<double>& v) {
    const UOp* t = input(g, dt, shape);
    data[buffer_of(t)] = dt.is_float() ? Array::from_doubles(dt, {numel(shape)}, v)
                                       : Array::from_ints(dt, {numel(shape)}, std::vector<int64_t>(v.begin(), v.end()));
    return t;
  }
};

}  // namespace sn::testrt
