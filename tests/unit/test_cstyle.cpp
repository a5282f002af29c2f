// The C-style renderer on its own: its conversion helpers (f16, bf16, fp8) compiled by the system C
// compiler and checked against the oracle's rounding on every code and a million floats, and the
// CUDA C dialect checked by nvcc on every conformance kernel (when the CUDA toolkit is here).
#include <gtest/gtest.h>

#if SN_BACKEND_CPU && SN_BACKEND_C
#include <dlfcn.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "backends/cstyle/cstyle.h"
#include "core/pipeline.h"
#include "core/schedule/schedule.h"
#include "tests/unit/test_pipeline_util.h"
#include "tests/util/ops_case.h"

namespace sn {
namespace {

namespace fs = std::filesystem;

std::string c_compiler() {
  const char* cc = std::getenv("CC");
  return cc && *cc ? cc : "cc";
}

fs::path scratch(const std::string& what) {
  fs::path dir = fs::temp_directory_path() / cat("sn_", what, "_", ::getpid());
  fs::create_directories(dir);
  return dir;
}

// The value of fp8 / bf16 / f16 bits, decoded independently of the helpers.
double decode(Scalar s, uint32_t bits) {
  int mbits = s == Scalar::Float16 ? 10 : s == Scalar::BFloat16 ? 7 : s == Scalar::Fp8E4M3 ? 3 : 2;
  int ebits = s == Scalar::Float16 ? 5 : s == Scalar::BFloat16 ? 8 : s == Scalar::Fp8E4M3 ? 4 : 5;
  int bias = (1 << (ebits - 1)) - 1;
  uint32_t sign = bits >> (mbits + ebits) & 1, e = bits >> mbits & ((1u << ebits) - 1), m = bits & ((1u << mbits) - 1);
  double v;
  if (s == Scalar::Fp8E4M3 && e == 15 && m == 7) return NAN;  // e4m3fn: only S.1111.111 is special
  if (s != Scalar::Fp8E4M3 && e == (1u << ebits) - 1) return m ? NAN : sign ? -INFINITY : INFINITY;
  v = e == 0 ? std::ldexp(double(m), 1 - bias - mbits) : std::ldexp(double(m | (1u << mbits)), int(e) - bias - mbits);
  return sign ? -v : v;
}

TEST(CStyle, ConversionHelpersRoundLikeTheOracle) {
  fs::path dir = scratch("cstyle_helpers");
  std::set<std::string> helpers{"f16_to_f32",  "f32_to_f16",  "bf16_to_f32", "f32_to_bf16",   "e4m3_to_f32",
                                "f32_to_e4m3", "e5m2_to_f32", "f32_to_e5m2", "f64_to_f32_odd"};
  std::string src = c_prelude(kC99, helpers, true);
  src += R"(
void to_bits(const float *x, uint16_t *f16, uint16_t *bf16, uint8_t *e4, uint8_t *e5, long n) {
  for (long i = 0; i < n; i++) {
    f16[i] = sn_f32_to_f16(x[i]); bf16[i] = sn_f32_to_bf16(x[i]);
    e4[i] = sn_f32_to_e4m3(x[i]); e5[i] = sn_f32_to_e5m2(x[i]);
  }
}
void from_bits(const uint16_t *f16, const uint16_t *bf16, const uint8_t *e4, const uint8_t *e5, float *out) {
  for (long i = 0; i < 65536; i++) { out[i] = sn_f16_to_f32(f16[i]); out[65536 + i] = sn_bf16_to_f32(bf16[i]); }
  for (long i = 0; i < 256; i++) { out[131072 + i] = sn_e4m3_to_f32(e4[i]); out[131328 + i] = sn_e5m2_to_f32(e5[i]); }
}
float odd(double x) { return sn_f64_to_f32_odd(x); }
)";
  std::ofstream(dir / "helpers.c") << src;
  std::string lib = (dir / "helpers.so").string();
  std::string cmd = c_compiler() + " -std=c99 -O2 -Wall -Werror -shared -fPIC -o " + lib + " " +
                    (dir / "helpers.c").string() + " -lm 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd << "\n" << src;
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  auto to_bits =
      reinterpret_cast<void (*)(const float*, uint16_t*, uint16_t*, uint8_t*, uint8_t*, long)>(dlsym(h, "to_bits"));
  auto from_bits = reinterpret_cast<void (*)(const uint16_t*, const uint16_t*, const uint8_t*, const uint8_t*, float*)>(
      dlsym(h, "from_bits"));
  auto odd = reinterpret_cast<float (*)(double)>(dlsym(h, "odd"));
  ASSERT_TRUE(to_bits && from_bits && odd);

  // Every code decodes exactly.
  std::vector<uint16_t> c16(65536);
  std::vector<uint8_t> c8(256);
  for (uint32_t i = 0; i < 65536; i++) c16[i] = uint16_t(i);
  for (uint32_t i = 0; i < 256; i++) c8[i] = uint8_t(i);
  std::vector<float> dec(131072 + 512);
  from_bits(c16.data(), c16.data(), c8.data(), c8.data(), dec.data());
  int bad = 0;
  auto same = [](double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; };
  for (uint32_t i = 0; i < 65536; i++) {
    bad += !same(dec[i], decode(Scalar::Float16, i));
    bad += !same(dec[65536 + i], decode(Scalar::BFloat16, i));
  }
  for (uint32_t i = 0; i < 256; i++) {
    bad += !same(dec[131072 + i], decode(Scalar::Fp8E4M3, i));
    bad += !same(dec[131328 + i], decode(Scalar::Fp8E5M2, i));
  }
  EXPECT_EQ(bad, 0) << "decodings differ";

  // A million floats (every exponent, halfway cases, specials) encode as the oracle rounds.
  testutil::Rng rng(5);
  std::vector<float> x;
  for (float v : {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 65504.0f, 65520.0f, 65519.99f, 448.0f, 464.0f, 57344.0f,
                  61440.0f, 1e-8f, 5.96e-8f, 2.98e-8f, 3e-38f, 1e-45f})
    x.push_back(v), x.push_back(-v);
  for (uint32_t i = 0; i < 65536; i++) {  // halfway between neighbouring f16 codes, and next to it
    float a = float(decode(Scalar::Float16, i)), b = float(decode(Scalar::Float16, (i + 1) & 0xffff));
    if (std::isfinite(a) && std::isfinite(b)) {
      float mid = float((double(a) + double(b)) / 2);
      x.push_back(mid), x.push_back(std::nextafter(mid, INFINITY)), x.push_back(std::nextafter(mid, -INFINITY));
    }
  }
  while (x.size() < 1000000) x.push_back(std::bit_cast<float>(uint32_t(rng.integer(0, 0xffffffffll))));
  long n = long(x.size());
  std::vector<uint16_t> f16(x.size()), bf16(x.size());
  std::vector<uint8_t> e4(x.size()), e5(x.size());
  to_bits(x.data(), f16.data(), bf16.data(), e4.data(), e5.data(), n);
  int wrong[4] = {0, 0, 0, 0};
  std::string first;
  for (long i = 0; i < n; i++) {
    const std::pair<Scalar, uint32_t> got[4] = {{Scalar::Float16, f16[size_t(i)]},
                                                {Scalar::BFloat16, bf16[size_t(i)]},
                                                {Scalar::Fp8E4M3, e4[size_t(i)]},
                                                {Scalar::Fp8E5M2, e5[size_t(i)]}};
    for (int k = 0; k < 4; k++) {
      double want = round_float(DType(got[k].first), double(x[size_t(i)]));
      if (!same(decode(got[k].first, got[k].second), want) ||
          (want == 0 && std::signbit(want) != (got[k].second >> (k < 2 ? 15 : 7) != 0))) {
        if (wrong[k]++ < 3)
          first += cat(" ", scalar_name(got[k].first), "(", x[size_t(i)], ")=", decode(got[k].first, got[k].second),
                       " want ", want, ";");
      }
    }
  }
  EXPECT_EQ(wrong[0] + wrong[1] + wrong[2] + wrong[3], 0) << first;
  // double -> float rounded to odd: exact values stay, inexact ones land on the odd neighbour.
  EXPECT_EQ(odd(1.5), 1.5f);
  EXPECT_EQ(std::bit_cast<uint32_t>(odd(1.0 + 1e-12)) & 1u, 1u);
  EXPECT_TRUE(std::isnan(odd(NAN)));
  dlclose(h);
  fs::remove_all(dir);
}

// Every conformance kernel lowered for a CUDA-like target and rendered as CUDA C, all in one file,
// compiled by nvcc to PTX: the dialect's table is checked by the compiler it is written for.
TEST(CStyle, CudaDialectCompilesWithNvcc) {
  const char* env = std::getenv("CUDA_HOME");
  std::string nvcc = cat(env && *env ? env : "/usr/local/cuda", "/bin/nvcc");
  if (::access(nvcc.c_str(), X_OK) != 0) GTEST_SKIP() << "no nvcc at " << nvcc << ": the CUDA dialect was not compiled";
  Target t;
  t.renderer = "CUDA-C";
  t.has_local = t.has_shared = true;
  t.local_memory_bytes = 48 * 1024;
  t.max_local_size = {1024, 1024, 64};
  t.max_local_total = 1024;
  t.max_global_size = {2147483647, 65535, 65535};
  std::set<std::string> helpers;
  bool uses_double = false;
  std::string kernels;
  int n = 0;
  int cases = testutil::run_ops_cases([&](Graph& g, const testutil::OpsCase& c) {
    Schedule s = schedule_graph(g, std::vector<const UOp*>{c.program.root});
    for (const ScheduledKernel& k : s.kernels) {
      CKernel ck = render_c(lower_kernel(g, k.ast, t), kCudaC, cat("k", n++));
      helpers.insert(ck.helpers.begin(), ck.helpers.end());
      uses_double = uses_double || ck.uses_double;
      kernels += ck.function;
    }
    oracle::BufferData buffers;
    for (const auto& [name, buf] : c.program.buffers) buffers[buf] = c.data.at(name);
    return oracle::evaluate(c.program.root, buffers);
  });
  EXPECT_EQ(cases, testutil::kOpsCases);
  fs::path dir = scratch("cuda_dialect");
  std::ofstream(dir / "kernels.cu") << c_prelude(kCudaC, helpers, uses_double) << kernels;
  std::string cmd =
      nvcc + " -arch=sm_80 -ptx -o " + (dir / "kernels.ptx").string() + " " + (dir / "kernels.cu").string() + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::printf("CUDA C: %d kernels of the conformance programs compiled by nvcc -arch=sm_80\n", n);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sn
#endif
