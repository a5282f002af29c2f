// CPU execution against baselines measured in the same run. One row per case:
//   name  ours_ms  baseline_ms  ratio        (medians of repeated runs; ratio = ours / baseline)
// then, per case, the cold compile: kernel count, total pipeline time, and per kernel the time of our lowering
// stages (optimize .. linearize) and of LLVM.
//
// Cases and their baselines:
//   add_4096x4096     c = a + b (f32)             memcpy moving the same bytes: the add reads 128 MiB and
//                                                 writes 64 MiB, so memcpy of 96 MiB (96 read + 96 written),
//                                                 split over the same thread count (bandwidth ceiling)
//   sum_4096x4096     sum of all 16M f32          the same for 64 MiB read: memcpy of 32 MiB, same threads
//   matmul_1024       (1024x1024) @ (1024x1024)   OpenBLAS cblas_sgemm on the same thread count
//   matmul_2048       (2048x2048) @ (2048x2048)   same
//   softmax_4096x4096 softmax over each row       a plain C++ loop (max, exp, sum, scale) split over rows on
//                                                 the same thread count, compiled -O2
//   conv2d_64x56x56   1x64x56x56 * 64x64x3x3,     im2col + cblas_sgemm (OpenBLAS), the classic CPU lowering
//                     pad 1
//   conv2d_cnn1_b8    8x3x32x32 * 16x3x3x3        the same per image (a small CNN's first convolution)
//   conv2d_cnn2_b8    8x16x16x16 * 32x16x3x3      the same (its second)
//   cumsum_1M         inclusive prefix sum of     a sequential C++ loop (one thread: a scan does not split
//                     1,000,000 f32               without extra passes); ours is the scan in blocks (of 4, then 16)
// Each result is checked against its baseline's (a wrong fast kernel is not a result).
//   bench_cpu [filter]    runs only the cases whose name contains `filter`
#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/pipeline.h"
#include "core/tensor/compose.h"
#include "core/tensor/tensor.h"

namespace {

using namespace sn;
using Clock = std::chrono::steady_clock;

const char* g_filter = "";
int g_threads = 1;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// Median of repeated runs: at least 3, more while the total stays under ~1.5 s (at most 25).
double median_ms(const std::function<void()>& fn) {
  fn();  // warm up: first touch of pages, thread pool start
  std::vector<double> t;
  double total = 0;
  while (t.size() < 3 || (total < 1500 && t.size() < 25)) {
    auto t0 = Clock::now();
    fn();
    t.push_back(ms_since(t0));
    total += t.back();
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1, float hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Runs fn(begin, end) over [0, n) split into g_threads contiguous parts.
void parallel_rows(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  std::vector<std::thread> ts;
  int64_t per = (n + g_threads - 1) / g_threads;
  for (int t = 0; t < g_threads; t++) {
    int64_t b = t * per, e = std::min(n, b + per);
    if (b < e) ts.emplace_back(fn, b, e);
  }
  for (auto& th : ts) th.join();
}

// memcpy of `bytes` split over g_threads threads (the bandwidth baseline of add and sum).
double memcpy_ms(size_t bytes);

struct Case {
  std::string name;
  double ours_ms = 0, base_ms = 0;
  size_t kernels = 0;
  double compile_ms = 0, llvm_ms = 0, stages_ms = 0;  // stages: our lowering (optimize .. linearize)
  double gflop = 0;                                   // work of one run, when the case knows it
  double max_err = 0;
  bool ok = true;
};

// A compiled program with its buffers: inputs filled from host data, outputs allocated.
struct Compiled {
  std::shared_ptr<const Program> program;
  std::vector<std::shared_ptr<Buffer>> in, out;
  void run() const { program->run(in, out); }
  std::vector<float> output(size_t i = 0) const {
    std::vector<float> v(size_t(out[i]->numel()));
    out[i]->copy_out(v.data(), v.size() * sizeof(float));
    return v;
  }
};

// Compiles `outs` with a fresh runtime (nothing cached: the compile is cold) and fills the inputs.
Compiled compile_cold(Graph& g, const std::vector<const UOp*>& outs, const std::vector<std::vector<float>>& inputs,
                      Case& c) {
  static std::vector<std::unique_ptr<Runtime>> runtimes;  // kept alive: their devices own the JIT code
  runtimes.push_back(std::make_unique<Runtime>(RuntimeOptions{.debug = -1, .threads = g_threads}));
  Runtime& rt = *runtimes.back();
  auto t0 = Clock::now();
  Compiled out;
  out.program = compile_program(rt, g, outs);
  c.compile_ms = ms_since(t0);
  c.kernels = out.program->launches.size();
  for (const Launch& l : out.program->launches) {
    c.llvm_ms += l.kernel->compile_ms;
    for (const auto& [stage, ms] : l.kernel->stage_ms) c.stages_ms += ms;
  }
  for (size_t i = 0; i < inputs.size(); i++) {
    const TensorSpec& s = out.program->inputs[i];
    auto b = Buffer::allocate(out.program->device, s.dtype, s.shape);
    b->copy_in(inputs[i].data(), inputs[i].size() * sizeof(float));
    out.in.push_back(b);
  }
  for (size_t i = 0; i < out.program->outputs.size(); i++) out.out.push_back(out.program->allocate_output(i));
  return out;
}

void compare(Case& c, const std::vector<float>& got, const std::vector<float>& want, double rtol) {
  if (got.size() != want.size()) {
    c.ok = false;
    return;
  }
  for (size_t i = 0; i < got.size(); i++) {
    double err = std::fabs(double(got[i]) - double(want[i])) / (1.0 + std::fabs(double(want[i])));
    c.max_err = std::max(c.max_err, err);
    if (!(err <= rtol)) c.ok = false;
  }
}

// "  (ours 12.3 GFLOP/s, baseline 45.6)"
std::string cat_gflops(const Case& c) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "   (ours %.1f GFLOP/s, baseline %.1f)", c.gflop / c.ours_ms * 1e3,
                c.gflop / c.base_ms * 1e3);
  return buf;
}

bool selected(const std::string& name) { return std::strstr(name.c_str(), g_filter) != nullptr; }

double memcpy_ms(size_t bytes) {
  std::vector<char> src(bytes, 1), dst(bytes, 0);  // both touched once: no page faults timed
  return median_ms([&] {
    parallel_rows(int64_t(bytes),
                  [&](int64_t b, int64_t e) { std::memcpy(dst.data() + b, src.data() + b, size_t(e - b)); });
  });
}

Case bench_add() {
  Case c{"add_4096x4096"};
  const int64_t n = 4096;
  Graph g;
  const UOp* a = input(g, dtypes::float32, {n, n});
  const UOp* b = input(g, dtypes::float32, {n, n});
  auto da = random_floats(size_t(n * n), 1), db = random_floats(size_t(n * n), 2);
  Compiled p = compile_cold(g, {add(g, a, b)}, {da, db}, c);
  c.ours_ms = median_ms([&] { p.run(); });
  c.base_ms = memcpy_ms(size_t(n * n) * sizeof(float) * 3 / 2);
  std::vector<float> want(size_t(n * n));
  for (size_t i = 0; i < want.size(); i++) want[i] = da[i] + db[i];
  compare(c, p.output(), want, 0);
  return c;
}

Case bench_sum() {
  Case c{"sum_4096x4096"};
  const int64_t n = 4096;
  Graph g;
  const UOp* a = input(g, dtypes::float32, {n, n});
  auto da = random_floats(size_t(n * n), 3);
  Compiled p = compile_cold(g, {reduce(g, a, Op::Add, {0, 1})}, {da}, c);
  c.ours_ms = median_ms([&] { p.run(); });
  c.base_ms = memcpy_ms(size_t(n * n) * sizeof(float) / 2);
  double want = 0;
  for (float x : da) want += x;
  // A float32 sum of 16M values in any order is within ~1e-4 relative of the exact one here.
  std::vector<float> got = p.output();
  c.max_err = std::fabs(got[0] - want) / (1 + std::fabs(want));
  c.ok = c.max_err < 1e-3;
  return c;
}

Case bench_matmul(int64_t n) {
  Case c{"matmul_" + std::to_string(n)};
  Graph g;
  const UOp* a = input(g, dtypes::float32, {n, n});
  const UOp* b = input(g, dtypes::float32, {n, n});
  auto da = random_floats(size_t(n * n), 4), db = random_floats(size_t(n * n), 5);
  Compiled p = compile_cold(g, {gemm(g, a, b)}, {da, db}, c);
  c.ours_ms = median_ms([&] { p.run(); });
  std::vector<float> want(size_t(n * n));
  auto blas = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(n), int(n), int(n), 1.0f, da.data(), int(n), db.data(),
                int(n), 0.0f, want.data(), int(n));
  };
  c.base_ms = median_ms(blas);
  compare(c, p.output(), want, 1e-4);
  return c;
}

Case bench_softmax() {
  Case c{"softmax_4096x4096"};
  const int64_t n = 4096;
  Graph g;
  const UOp* x = input(g, dtypes::float32, {n, n});
  auto dx = random_floats(size_t(n * n), 6, -4, 4);
  Compiled p = compile_cold(g, {softmax(g, x, 1)}, {dx}, c);
  c.ours_ms = median_ms([&] { p.run(); });
  std::vector<float> want(size_t(n * n));
  auto reference = [&] {
    parallel_rows(n, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; r++) {
        const float* in = dx.data() + r * n;
        float* out = want.data() + r * n;
        float m = in[0];
        for (int64_t j = 1; j < n; j++) m = std::max(m, in[j]);
        float s = 0;
        for (int64_t j = 0; j < n; j++) s += (out[j] = std::exp(in[j] - m));
        float inv = 1.0f / s;
        for (int64_t j = 0; j < n; j++) out[j] *= inv;
      }
    });
  };
  c.base_ms = median_ms(reference);
  compare(c, p.output(), want, 1e-5);
  return c;
}

Case bench_cumsum() {
  Case c{"cumsum_1M"};
  const int64_t n = 1000000;
  Graph g;
  const UOp* x = input(g, dtypes::float32, {n});
  auto dx = random_floats(size_t(n), 7, -1, 1);
  Compiled p = compile_cold(g, {cumsum(g, x, 0)}, {dx}, c);
  c.ours_ms = median_ms([&] { p.run(); });
  std::vector<float> want(static_cast<size_t>(n));
  auto reference = [&] {
    float acc = 0;
    for (int64_t i = 0; i < n; i++) want[size_t(i)] = acc += dx[size_t(i)];
  };
  c.base_ms = median_ms(reference);
  // Sums of up to a million values of either sign: compare against the running magnitude, not the value.
  std::vector<float> got = p.output();
  double scale = 0;
  for (size_t i = 0; i < got.size(); i++) {
    scale += std::fabs(double(dx[i]));
    double err = std::fabs(double(got[i]) - double(want[i])) / (1.0 + scale);
    c.max_err = std::max(c.max_err, err);
    if (!(err <= 1e-5)) c.ok = false;
  }
  return c;
}

// conv2d of (n, ci, h, w) with co 3x3 filters, stride 1, pad 1. Baseline: per image, im2col + cblas_sgemm.
Case bench_conv(const std::string& name, int64_t N, int64_t CI, int64_t CO, int64_t H, int64_t W) {
  Case c{name};
  const int64_t K = 3;
  Graph g;
  const UOp* x = input(g, dtypes::float32, {N, CI, H, W});
  const UOp* w = input(g, dtypes::float32, {CO, CI, K, K});
  auto dx = random_floats(size_t(N * CI * H * W), 7), dw = random_floats(size_t(CO * CI * K * K), 8, -0.1f, 0.1f);
  Compiled p = compile_cold(g, {conv2d(g, x, w, nullptr, {1, 1}, {1, 1})}, {dx, dw}, c);
  c.ours_ms = median_ms([&] { p.run(); });
  // im2col: cols[(ci*K + ky)*K + kx][y*W + x] = padded input; then out (CO, H*W) = w (CO, CI*K*K) @ cols.
  std::vector<float> cols(size_t(CI * K * K * H * W)), want(size_t(N * CO * H * W));
  auto baseline = [&] {
    for (int64_t n = 0; n < N; n++) {
      const float* img = dx.data() + n * CI * H * W;
      for (int64_t ci = 0; ci < CI; ci++)
        for (int64_t ky = 0; ky < K; ky++)
          for (int64_t kx = 0; kx < K; kx++) {
            float* row = cols.data() + ((ci * K + ky) * K + kx) * H * W;
            for (int64_t y = 0; y < H; y++)
              for (int64_t xx = 0; xx < W; xx++) {
                int64_t iy = y + ky - 1, ix = xx + kx - 1;
                row[y * W + xx] = (iy >= 0 && iy < H && ix >= 0 && ix < W) ? img[(ci * H + iy) * W + ix] : 0.0f;
              }
          }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(CO), int(H * W), int(CI * K * K), 1.0f, dw.data(),
                  int(CI * K * K), cols.data(), int(H * W), 0.0f, want.data() + n * CO * H * W, int(H * W));
    }
  };
  c.base_ms = median_ms(baseline);
  c.gflop = 2.0 * double(N * CO * H * W) * double(CI * K * K) / 1e9;
  compare(c, p.output(), want, 1e-4);
  return c;
}

}  // namespace

// OpenBLAS 0.3.21 (Debian 12) does not know newer CPUs (Sapphire/Emerald Rapids report as
// "Prescott") and then runs its SSE3 kernels, 5-7x below what it does with the AVX-512 ones: a
// baseline that weak flatters us. It picks its kernels when the library loads, from
// OPENBLAS_CORETYPE, so the benchmark re-executes itself with the core named after the CPU's
// vector extensions.
void use_fast_openblas_kernels(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;
  std::string core = openblas_get_corename();
  std::string lower;
  for (char ch : core) lower += char(std::tolower(static_cast<unsigned char>(ch)));
  bool generic = lower == "prescott" || lower == "core2" || lower == "nehalem" || lower == "generic" ||
                 lower == "atom" || lower == "katmai" || lower == "unknown";
  if (!generic) return;
  __builtin_cpu_init();
  const char* want = __builtin_cpu_supports("avx512f") ? "SkylakeX"
                     : __builtin_cpu_supports("avx2")  ? "Haswell"
                                                       : nullptr;
  if (want == nullptr) return;
  std::printf("# OpenBLAS detected this CPU as %s; re-running with OPENBLAS_CORETYPE=%s\n", core.c_str(), want);
  std::fflush(stdout);
  setenv("OPENBLAS_CORETYPE", want, 1);
  execv("/proc/self/exe", argv);
  std::printf("# re-exec failed: the OpenBLAS baselines use its generic kernels\n");
}

int main(int argc, char** argv) {
  // The cold compile below measures LLVM, not the disk cache (bench_compile_cache measures that).
  setenv("SN_CACHE", "0", 1);
  use_fast_openblas_kernels(argv);
  if (argc > 1) g_filter = argv[1];
  g_threads = int(std::max(1u, std::thread::hardware_concurrency()));
  openblas_set_num_threads(g_threads);
  std::printf("# CPU, %d threads (ours and baselines alike); times are medians in ms; ratio = ours / baseline\n",
              g_threads);
  std::printf("# OpenBLAS kernels: %s\n", openblas_get_corename());
  std::printf("%-20s %12s %12s %8s\n", "name", "ours", "baseline", "ratio");
  std::vector<Case> cases;
  auto run = [&](const std::string& name, const std::function<Case()>& fn) {
    if (!selected(name)) return;
    try {
      Case c = fn();
      std::printf("%-20s %12.3f %12.3f %8.2f%s%s\n", c.name.c_str(), c.ours_ms, c.base_ms, c.ours_ms / c.base_ms,
                  c.gflop > 0 ? cat_gflops(c).c_str() : "", c.ok ? "" : "   RESULT MISMATCH");
      std::fflush(stdout);
      cases.push_back(c);
    } catch (const std::exception& e) {
      std::printf("%-20s failed: %s\n", name.c_str(), e.what());
      Case c{name};
      c.ok = false;
      cases.push_back(c);
    }
  };
  run("add_4096x4096", bench_add);
  run("sum_4096x4096", bench_sum);
  run("matmul_1024", [] { return bench_matmul(1024); });
  run("matmul_2048", [] { return bench_matmul(2048); });
  run("softmax_4096x4096", bench_softmax);
  run("conv2d_64x56x56", [] { return bench_conv("conv2d_64x56x56", 1, 64, 64, 56, 56); });
  // the convolutions of a small CNN (batch 8): 3->16 at 32x32, 16->32 at 16x16
  run("conv2d_cnn1_b8", [] { return bench_conv("conv2d_cnn1_b8", 8, 3, 16, 32, 32); });
  run("conv2d_cnn2_b8", [] { return bench_conv("conv2d_cnn2_b8", 8, 16, 32, 16, 16); });
  run("cumsum_1M", bench_cumsum);

  std::printf("\n# cold compile (fresh runtime: nothing cached)\n");
  std::printf("%-20s %8s %12s %16s %16s %10s\n", "name", "kernels", "total_ms", "stages_ms/kernel", "llvm_ms/kernel",
              "max_err");
  bool all_ok = true;
  for (const Case& c : cases) {
    all_ok = all_ok && c.ok;
    std::printf("%-20s %8zu %12.1f %16.2f %16.2f %10.2g\n", c.name.c_str(), c.kernels, c.compile_ms,
                c.kernels ? c.stages_ms / double(c.kernels) : 0.0, c.kernels ? c.llvm_ms / double(c.kernels) : 0.0,
                c.max_err);
  }
  return all_ok ? 0 : 1;
}
