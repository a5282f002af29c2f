// NVIDIA GPU execution against baselines measured in the same run, on the "CUDA" device:
//   name  ours_ms  base_ms  speed  (and GB/s or TFLOP/s)
// where speed is ours as a fraction of the baseline's speed (higher is better; 1 = as fast).
// Each time is the minimum of 20 runs after 3 warm-up runs, every run waited for (a program run then
// the device's synchronize; a baseline call then cuStreamSynchronize of its stream).
//
//   add_2^28        c = a + b of 2^28 floats    cuMemcpyDtoD of 1 GiB on the same GPU: speed is ours'
//                                               bandwidth (3 GiB moved) over the copy's (2 GiB moved),
//                                               so >= 0.9 is "90% of copy bandwidth"
//   gemm_f32_4096   (4096x4096) @ (4096x4096)   cublasSgemm (row-major through swapped operands)
//   gemm_bf16_4096  the same in bfloat16        cublasGemmEx, bf16 in and out, float32 compute (tensor
//                   (f32 accumulation)          cores): speed is cuBLAS' time over ours, >= 0.7 is
//                                               "70% of cuBLAS"
//   conv_*          3x3 convolutions, pad 1,    none (TFLOP/s only); checked on sampled outputs
//                   of ResNet-18's shapes       against a direct sum on the host
// Results are checked against the baseline's (the add exactly; GEMMs within the dtype's tolerance).
// cuBLAS is dlopen'ed (libcublas.so.13, .12, or libcublas.so from the toolkit); without it the GEMM
// rows print n/a. Without a CUDA device the program says so and exits 0. Each GEMM row ends with
// the opts its kernel got (as sn_program_kernel_opts prints them).
//   bench_gpu [filter]    runs only the rows whose name contains `filter`
//   SN_BENCH_OPTS="<opts>;<opts>..."   also times each GEMM and convolution with these opts forced
//                         on its kernel, a row each ("gemm_f32_4096#1", ...): for trying tiles by
//                         hand (an opts list that does not apply prints why and is skipped)
#include <cstdio>

#if SN_BACKEND_CUDA
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "backends/cuda/cuda_api.h"
#include "core/ir/opt_op.h"
#include "core/pipeline.h"
#include "core/runtime/buffer.h"
#include "core/runtime/runtime.h"
#include "core/tensor/compose.h"
#include "core/tensor/tensor.h"

namespace {

using namespace sn;
using Clock = std::chrono::steady_clock;

// The few cuBLAS calls, hand-declared (cublas_api.h's values).
struct Cublas {
  using Handle = void*;
  int (*create)(Handle*) = nullptr;
  int (*destroy)(Handle) = nullptr;
  int (*sgemm)(Handle, int, int, int, int, int, const float*, const float*, int, const float*, int, const float*,
               float*, int) = nullptr;
  int (*gemm_ex)(Handle, int, int, int, int, int, const void*, const void*, int, int, const void*, int, int,
                 const void*, void*, int, int, int, int) = nullptr;
  static constexpr int kOpN = 0, kR32F = 0, kR16BF = 14, kCompute32F = 68, kGemmDefault = -1;
  Handle handle = nullptr;

  bool open(std::string* why) {
    void* lib = nullptr;
    for (const char* name :
         {"libcublas.so.13", "libcublas.so.12", "libcublas.so", "/usr/local/cuda/lib64/libcublas.so"})
      if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
    if (!lib) return *why = "libcublas.so not found", false;
    create = reinterpret_cast<decltype(create)>(dlsym(lib, "cublasCreate_v2"));
    destroy = reinterpret_cast<decltype(destroy)>(dlsym(lib, "cublasDestroy_v2"));
    sgemm = reinterpret_cast<decltype(sgemm)>(dlsym(lib, "cublasSgemm_v2"));
    gemm_ex = reinterpret_cast<decltype(gemm_ex)>(dlsym(lib, "cublasGemmEx"));
    if (!create || !destroy || !sgemm || !gemm_ex) return *why = "libcublas lacks a symbol", false;
    if (int s = create(&handle); s != 0) return *why = cat("cublasCreate failed: status ", s), false;
    return true;
  }
};

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// The minimum over 20 timed runs (after 3 warm-up runs) of fn() followed by wait().
double time_min(const std::function<void()>& fn, const std::function<void()>& wait) {
  for (int i = 0; i < 3; i++) fn(), wait();
  double best = 1e30;
  for (int i = 0; i < 20; i++) {
    auto t0 = Clock::now();
    fn();
    wait();
    best = std::min(best, ms_since(t0));
  }
  return best;
}

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// bfloat16 bits of a float (round to nearest even) and back.
uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return uint16_t(u >> 16);
}
float from_bf16(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

cu::CUdeviceptr address(const Buffer& b) {
  return cu::CUdeviceptr(reinterpret_cast<uintptr_t>(b.storage()->ptr())) + b.byte_offset();
}

void row(const char* name, double ours, double base, double ratio, const std::string& extra, bool ok) {
  if (base > 0)
    std::printf("%-16s %10.3f %10.3f %7.2f  %s%s\n", name, ours, base, ratio, extra.c_str(), ok ? "" : "  WRONG");
  else
    std::printf("%-16s %10.3f %10s %7s  %s%s\n", name, ours, "n/a", "n/a", extra.c_str(), ok ? "" : "  WRONG");
}

int run_rows(int argc, char** argv) {
  const std::string filter = argc > 1 ? argv[1] : "";
  auto wanted = [&](const char* name) { return filter.empty() || std::string(name).find(filter) != std::string::npos; };
  Runtime rt(RuntimeOptions{.debug = -1});
  std::string why;
  if (rt.devices().count("CUDA", &why) == 0) {
    std::printf("bench_gpu: no CUDA device (%s): nothing measured\n", why.c_str());
    return 0;
  }
  std::shared_ptr<ComputeDevice> dev = rt.device("CUDA");
  const cu::Api* api = cu::load(nullptr);
  auto wait_dev = [&] { dev->synchronize(); };
  auto wait_null = [&] { api->StreamSynchronize(nullptr); };
  std::printf("bench_gpu on %s\n", dev->description().c_str());
  Cublas blas;
  std::string no_blas;
  bool have_blas = blas.open(&no_blas);
  if (!have_blas) std::printf("cuBLAS: %s (GEMM rows without a baseline)\n", no_blas.c_str());
  std::printf("%-16s %10s %10s %7s\n", "name", "ours_ms", "base_ms", "speed");

  if (wanted("add_2^28")) {
    const int64_t n = int64_t(1) << 28;
    Graph g;
    const UOp* a = input(g, dtypes::float32, {n}, "CUDA");
    const UOp* b = input(g, dtypes::float32, {n}, "CUDA");
    const UOp* c = binary(g, Op::Add, a, b);
    auto p = compile_program(rt, g, std::vector<const UOp*>{c}, dev);
    std::vector<float> ha = random_floats(size_t(n), 1), hb = random_floats(size_t(n), 2);
    auto ba = Buffer::allocate(dev, dtypes::float32, {n}), bb = Buffer::allocate(dev, dtypes::float32, {n});
    ba->copy_in(ha.data(), ha.size() * 4);
    bb->copy_in(hb.data(), hb.size() * 4);
    std::vector<std::shared_ptr<Buffer>> ins{ba, bb}, outs{p->allocate_output(0)};
    double ours = time_min([&] { p->run(ins, outs); }, wait_dev);
    auto copy_dst = Buffer::allocate(dev, dtypes::float32, {n});
    double copy =
        time_min([&] { api->MemcpyDtoDAsync(address(*copy_dst), address(*ba), size_t(n) * 4, nullptr); }, wait_null);
    std::vector<float> got(static_cast<size_t>(n));
    outs[0]->copy_out(got.data(), got.size() * 4);
    bool ok = true;
    for (size_t i = 0; i < got.size() && ok; i += 4099) ok = got[i] == ha[i] + hb[i];
    double ours_gbs = 3.0 * double(n) * 4 / (ours * 1e6), copy_gbs = 2.0 * double(n) * 4 / (copy * 1e6);
    row("add_2^28", ours, copy, ours_gbs / copy_gbs, cat(int(ours_gbs), " GB/s vs copy ", int(copy_gbs), " GB/s"), ok);
  }

  // "" (the heuristic's opts) and then each forced list of $SN_BENCH_OPTS.
  std::vector<std::string> variants{""};
  if (const char* e = std::getenv("SN_BENCH_OPTS"))
    for (std::string_view rest = e; !rest.empty();) {
      size_t semi = std::min(rest.find(';'), rest.size());
      if (semi > 0) variants.emplace_back(rest.substr(0, semi));
      rest.remove_prefix(std::min(semi + 1, rest.size()));
    }
  // Compiles `out`; with a forced opts list, compiles it again with the list on its last kernel (the
  // GEMM's or the convolution's). nullptr, having said why, where the list does not apply.
  auto compile_variant = [&](Graph& g, const UOp* out, const std::string& opts,
                             const char* name) -> std::shared_ptr<const Program> {
    try {
      auto p = compile_program(rt, g, std::vector<const UOp*>{out}, dev);
      if (opts.empty()) return p;
      CompileOptions forced;
      std::string bad;
      if (!parse_opts(opts, &forced.kernel_opts[p->launches.back().ast_hash], &bad))
        throw Error(Code::InvalidArg, cat("'", bad, "' is not an opt"));
      return compile_program(rt, g, std::vector<const UOp*>{out}, dev, forced);
    } catch (const Error& e) {
      std::printf("%-16s skipped: %s: %s\n", name, opts.c_str(), e.what());
      return nullptr;
    }
  };

  for (DType dt : {dtypes::float32, dtypes::bfloat16})
    for (size_t v = 0; v < variants.size(); v++) {
      const std::string base_name = dt == dtypes::float32 ? "gemm_f32_4096" : "gemm_bf16_4096";
      if (!wanted(base_name.c_str())) continue;
      const std::string row_name = v == 0 ? base_name : cat(base_name, "#", v);
      const char* name = row_name.c_str();
      const int64_t n = 4096;
      Graph g;
      const UOp* a = input(g, dt, {n, n}, "CUDA");
      const UOp* b = input(g, dt, {n, n}, "CUDA");
      const UOp* product = matmul(g, a, b);
      std::shared_ptr<const Program> p = compile_variant(g, product, variants[v], name);
      if (!p) continue;
      std::vector<float> fa = random_floats(size_t(n * n), 3), fb = random_floats(size_t(n * n), 4);
      auto ba = Buffer::allocate(dev, dt, {n, n}), bb = Buffer::allocate(dev, dt, {n, n});
      if (dt == dtypes::float32) {
        ba->copy_in(fa.data(), fa.size() * 4);
        bb->copy_in(fb.data(), fb.size() * 4);
      } else {
        std::vector<uint16_t> ha(fa.size()), hb(fb.size());
        std::transform(fa.begin(), fa.end(), ha.begin(), to_bf16);
        std::transform(fb.begin(), fb.end(), hb.begin(), to_bf16);
        ba->copy_in(ha.data(), ha.size() * 2);
        bb->copy_in(hb.data(), hb.size() * 2);
      }
      std::vector<std::shared_ptr<Buffer>> ins{ba, bb}, outs{p->allocate_output(0)};
      double ours = time_min([&] { p->run(ins, outs); }, wait_dev);
      double tflops = 2.0 * double(n) * n * n / (ours * 1e9);
      bool tc = false;
      for (const Launch& l : p->launches) tc = tc || l.kernel->source.find("mma.sync") != std::string::npos;
      std::string extra = cat(int(tflops * 10) / 10.0, " TFLOP/s", tc ? " (mma.sync)" : "", "  ",
                              opts_str(p->launches.back().kernel->opts));
      if (!have_blas) {
        row(name, ours, 0, 0, extra, true);
        continue;
      }
      // Row-major C = A @ B is column-major C^T = B^T A^T: cuBLAS gets B first.
      auto bc = Buffer::allocate(dev, dt, {n, n});
      const float one = 1, zero = 0;
      const int m = int(n);
      auto* A = reinterpret_cast<const void*>(uintptr_t(address(*ba)));
      auto* B = reinterpret_cast<const void*>(uintptr_t(address(*bb)));
      auto* C = reinterpret_cast<void*>(uintptr_t(address(*bc)));
      std::function<void()> call;
      if (dt == dtypes::float32)
        call = [&] {
          blas.sgemm(blas.handle, Cublas::kOpN, Cublas::kOpN, m, m, m, &one, static_cast<const float*>(B), m,
                     static_cast<const float*>(A), m, &zero, static_cast<float*>(C), m);
        };
      else
        call = [&] {
          blas.gemm_ex(blas.handle, Cublas::kOpN, Cublas::kOpN, m, m, m, &one, B, Cublas::kR16BF, m, A, Cublas::kR16BF,
                       m, &zero, C, Cublas::kR16BF, m, Cublas::kCompute32F, Cublas::kGemmDefault);
        };
      double base = time_min(call, wait_null);
      // ours against cuBLAS' result, on a sample of elements
      size_t bytes = size_t(n * n) * size_t(dt.itemsize());
      std::vector<uint8_t> got(bytes), want(bytes);
      outs[0]->copy_out(got.data(), bytes);
      bc->copy_out(want.data(), bytes);
      bool ok = true;
      double tol = dt == dtypes::float32 ? 1e-3 : 3e-2;
      for (size_t i = 0; i < size_t(n * n) && ok; i += 9973) {
        float x, y;
        if (dt == dtypes::float32) {
          std::memcpy(&x, &got[i * 4], 4);
          std::memcpy(&y, &want[i * 4], 4);
        } else {
          uint16_t hx, hy;
          std::memcpy(&hx, &got[i * 2], 2);
          std::memcpy(&hy, &want[i * 2], 2);
          x = from_bf16(hx), y = from_bf16(hy);
        }
        ok = std::fabs(x - y) <= tol * (1 + std::fabs(y)) * std::sqrt(double(n)) / 8;
      }
      row(name, ours, base, base / ours, extra, ok);
    }

  // Convolutions of ResNet-18's shapes (3x3, pad 1, f32), checked on sampled outputs against a
  // direct sum on the host; no baseline (cuDNN is not dlopen'ed here).
  struct ConvShape {
    const char* name;
    int64_t n, c, hw;
  };
  for (const ConvShape& cs : {ConvShape{"conv_64x56x56", 1, 64, 56}, ConvShape{"conv_256x14x14", 1, 256, 14},
                              ConvShape{"conv_b32_64x56x56", 32, 64, 56}})
    for (size_t v = 0; v < variants.size(); v++) {
      if (!wanted(cs.name)) continue;
      const std::string row_name = v == 0 ? cs.name : cat(cs.name, "#", v);
      const char* name = row_name.c_str();
      const int64_t n = cs.n, c = cs.c, hw = cs.hw;
      Graph g;
      const UOp* x = input(g, dtypes::float32, {n, c, hw, hw}, "CUDA");
      const UOp* w = input(g, dtypes::float32, {c, c, 3, 3}, "CUDA");
      std::shared_ptr<const Program> p =
          compile_variant(g, conv2d(g, x, w, nullptr, {1, 1}, {1, 1}), variants[v], name);
      if (!p) continue;
      std::vector<float> hx = random_floats(size_t(n * c * hw * hw), 5), hw9 = random_floats(size_t(c * c * 9), 6);
      auto bx = Buffer::allocate(dev, dtypes::float32, {n, c, hw, hw});
      auto bw = Buffer::allocate(dev, dtypes::float32, {c, c, 3, 3});
      bx->copy_in(hx.data(), hx.size() * 4);
      bw->copy_in(hw9.data(), hw9.size() * 4);
      std::vector<std::shared_ptr<Buffer>> ins{bx, bw}, outs{p->allocate_output(0)};
      double ours = time_min([&] { p->run(ins, outs); }, wait_dev);
      std::vector<float> got(size_t(n * c * hw * hw));
      outs[0]->copy_out(got.data(), got.size() * 4);
      bool ok = true;
      for (size_t i = 0; i < got.size() && ok; i += 7919) {
        int64_t ox = int64_t(i) % hw, oy = int64_t(i) / hw % hw, co = int64_t(i) / (hw * hw) % c,
                b = int64_t(i) / (hw * hw * c);
        double want = 0;
        for (int64_t ci = 0; ci < c; ci++)
          for (int64_t ky = 0; ky < 3; ky++)
            for (int64_t kx = 0; kx < 3; kx++) {
              int64_t iy = oy + ky - 1, ix = ox + kx - 1;
              if (iy < 0 || iy >= hw || ix < 0 || ix >= hw) continue;
              want += double(hx[size_t(((b * c + ci) * hw + iy) * hw + ix)]) *
                      double(hw9[size_t(((co * c + ci) * 3 + ky) * 3 + kx)]);
            }
        ok = std::fabs(got[i] - want) <= 1e-4 * (1 + std::fabs(want)) * std::sqrt(double(c * 9));
      }
      double tflops = 2.0 * double(n * c * c * 9 * hw * hw) / (ours * 1e9);
      row(name, ours, 0, 0, cat(int(tflops * 100) / 100.0, " TFLOP/s  ", opts_str(p->launches.back().kernel->opts)),
          ok);
    }
  if (have_blas) blas.destroy(blas.handle);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run_rows(argc, argv);
  } catch (const std::exception& e) {  // a failed allocation or launch ends the run with its reason
    std::printf("bench_gpu: %s\n", e.what());
    return 1;
  }
}
#else
int main() {
  std::printf("bench_gpu: this build has no CUDA backend: nothing measured\n");
  return 0;
}
#endif
