// Transcendental decompositions (core/codegen/transcendental.cpp): kernels lowered for a CPU
// target with native_math = false, JIT-compiled and run, compared with long double libm on
// dense sweeps and special values, float32 and float64, scalar and UPCAST (vector) kernels.
// Prints a table of the measured max ULP errors.
#include <gtest/gtest.h>

#if SN_BACKEND_CPU
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/pipeline.h"
#include "test_codegen_kernels.h"

namespace sn {
namespace {

using testk::KernelBuilder;

CpuCompiler& jit() {
  static CpuCompiler c;
  return c;
}

template <class T>
DType dtype_of() {
  return sizeof(T) == 4 ? dtypes::float32 : dtypes::float64;
}

// out[i] = op(a[i]) or op(a[i], b[i]), lowered with (soft) or without (native) decomposition.
template <class T>
std::vector<T> run_op(Op op, std::vector<T> a, std::vector<T> b, bool soft, int64_t upcast,
                      std::vector<std::pair<Op, int>>* linear = nullptr) {
  size_t n0 = a.size();
  while (a.size() % 8) a.push_back(T(1));
  if (!b.empty())
    while (b.size() < a.size()) b.push_back(T(1));
  Graph g;
  KernelBuilder kb{g};
  DType dt = dtype_of<T>();
  int64_t n = int64_t(a.size());
  bool bin = !b.empty();
  const UOp* A = kb.param(0, dt, n);
  const UOp* B = bin ? kb.param(1, dt, n) : nullptr;
  const UOp* O = kb.param(bin ? 2 : 1, dt, n);
  const UOp* i = kb.range(n, 0);
  const UOp* x = kb.load(A, i);
  const UOp* v = bin ? g.alu(op, x, kb.load(B, i)) : g.alu(op, x);
  const UOp* sink = kb.sink({kb.store(O, i, v)});
  LowerOptions lo;
  lo.opts = upcast > 1 ? std::vector<Opt>{Opt::upcast(0, upcast)} : std::vector<Opt>{};
  Target t = jit().target();
  t.native_math.clear();  // soft: all five decomposed; native: libm/LLVM for all five
  if (!soft) t.native_math.assign(std::begin(kTranscendentals), std::end(kTranscendentals));
  LoweredKernel k = lower_kernel(g, sink, t, lo);
  auto ck = jit().compile(k);
  std::vector<T> out(a.size());
  std::vector<void*> bufs{a.data()};
  if (bin) bufs.push_back(b.data());
  bufs.push_back(out.data());
  jit().run(*ck, bufs.data());
  if (linear)  // (op, lanes) of each instruction: the nodes die with the graph
    for (const UOp* u : k.linear->src()) linear->emplace_back(u->op, int(u->dtype.lanes));
  out.resize(n0);
  return out;
}

template <class T>
constexpr int kMant = std::numeric_limits<T>::digits - 1;
template <class T>
constexpr int kEmin = std::numeric_limits<T>::min_exponent - 1;  // exponent of min normal

// |got - ref| in ULPs of T at ref; exact specials (inf, nan, zero sign) or an error of 1e9.
template <class T>
double ulp_err(T got, long double ref) {
  T r = T(ref);
  if (std::isnan(ref)) return std::isnan(got) ? 0 : 1e9;
  if (std::isnan(got)) return 1e9;
  if (std::isinf(r) || std::isinf(got)) return r == got ? 0 : 1e9;
  if (ref == 0) return got == 0 && std::signbit(got) == std::signbit(ref) ? 0 : 1e9;
  int e = std::max(std::ilogb(ref), kEmin<T>);
  long double ulp = std::ldexp(1.0L, e - kMant<T>);
  return double(std::fabs((long double)got - ref) / ulp);
}

template <class T, class Ref>
double check(const char* fn, const char* range, Op op, const std::vector<T>& a, const std::vector<T>& b, Ref ref,
             double bound) {
  double worst = 0;
  long double wx = 0, wy = 0;
  int fails = 0;
  size_t ninst = 0;
  for (int64_t up : {int64_t(1), int64_t(4)}) {
    std::vector<std::pair<Op, int>> lin;
    std::vector<T> got = run_op<T>(op, a, b, true, up, up == 1 ? &lin : nullptr);
    for (auto [o, l] : lin) ninst += o != Op::Const;
    for (size_t i = 0; i < a.size(); i++) {
      long double r = b.empty() ? ref((long double)a[i], 0.0L) : ref((long double)a[i], (long double)b[i]);
      double e = ulp_err<T>(got[i], r);
      if (e > worst) {
        worst = e;
        wx = a[i];
        wy = b.empty() ? 0 : b[i];
      }
      if (e > bound && ++fails <= 10)
        ADD_FAILURE() << fn << " " << (sizeof(T) == 4 ? "f32" : "f64") << " upcast " << up << " x=" << double(a[i])
                      << (b.empty() ? "" : " y=" + std::to_string(double(b[i]))) << " got " << double(got[i])
                      << " want " << double(r) << " (" << e << " ulp)";
    }
  }
  // The measured accuracy, one line per sweep (fn, dtype, range, max ulp, instructions, worst input).
  std::printf("accuracy %-5s %-4s %-34s %8.3f ulp %6zu insts  x=%.9Lg y=%.9Lg\n", fn, sizeof(T) == 4 ? "f32" : "f64",
              range, worst, ninst, wx, wy);
  return worst;
}

// Positive finite values with uniformly random bit patterns (every binade, denormals included).
template <class T>
std::vector<T> random_positive(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v;
  while (v.size() < n) {
    T x;
    if constexpr (sizeof(T) == 4)
      x = std::bit_cast<float>(uint32_t(rng()) & 0x7fffffffu);
    else
      x = std::bit_cast<double>(rng() & 0x7fffffffffffffffull);
    if (std::isfinite(x) && x > 0) v.push_back(x);
  }
  return v;
}

template <class T>
std::vector<T> linspace(T lo, T hi, size_t n) {
  std::vector<T> v(n);
  for (size_t i = 0; i < n; i++) v[i] = T(lo + (hi - lo) * (long double)i / (long double)(n - 1));
  return v;
}

template <class T>
std::vector<T> specials() {
  using L = std::numeric_limits<T>;
  return {T(0),
          -T(0),
          T(1),
          T(-1),
          L::infinity(),
          -L::infinity(),
          L::quiet_NaN(),
          L::denorm_min(),
          L::min(),
          L::max(),
          -L::max(),
          -L::denorm_min(),
          T(0.5),
          T(2),
          T(3),
          T(-2.5),
          std::nextafter(T(1), T(2)),
          std::nextafter(T(1), T(0))};
}

long double ref_exp2(long double x, long double) { return std::exp2(x); }
long double ref_log2(long double x, long double) { return std::log2(x); }
long double ref_sin(long double x, long double) { return std::sin(x); }
long double ref_sqrt(long double x, long double) { return std::sqrt(x); }
long double ref_pow(long double x, long double y) { return std::pow(x, y); }

template <class T>
void exp2_tests(double bound) {
  bool f32 = sizeof(T) == 4;
  double lo = f32 ? -160 : -1100, hi = f32 ? 130 : 1030;
  check<T>("exp2", f32 ? "[-160,130]" : "[-1100,1030]", Op::Exp2, linspace<T>(T(lo), T(hi), 100000), {}, ref_exp2,
           bound);
  check<T>("exp2", "[-1,1]", Op::Exp2, linspace<T>(T(-1), T(1), 20000), {}, ref_exp2, bound);
  std::vector<T> sp = specials<T>();
  for (double v :
       f32 ? std::vector<double>{-149, -149.5, -150, -150.0001, -151, -126, -126.5, 127.99999, 128, 128.5, 1e-8}
           : std::vector<double>{-1074, -1074.5, -1075, -1075.0001, -1076, -1022, -1022.5, 1023.9999999, 1024, 1024.5,
                                 1e-17})
    sp.push_back(T(v));
  check<T>("exp2", "specials", Op::Exp2, sp, {}, ref_exp2, bound);
}

template <class T>
void log2_tests(double bound) {
  check<T>("log2", "all positive", Op::Log2, random_positive<T>(100000, 1), {}, ref_log2, bound);
  check<T>("log2", "[0.5,2]", Op::Log2, linspace<T>(T(0.5), T(2), 50000), {}, ref_log2, bound);
  check<T>("log2", "specials", Op::Log2, specials<T>(), {}, ref_log2, bound);
}

template <class T>
void sqrt_tests(double bound) {
  check<T>("sqrt", "all positive", Op::Sqrt, random_positive<T>(100000, 2), {}, ref_sqrt, bound);
  std::vector<T> sq;  // exact squares and their neighbors
  for (int i = 1; i < 3000; i++) {
    T s = T(i) * T(i);
    sq.insert(sq.end(), {s, std::nextafter(s, T(0)), std::nextafter(s, T(1e30))});
  }
  check<T>("sqrt", "squares", Op::Sqrt, sq, {}, ref_sqrt, bound);
  check<T>("sqrt", "specials", Op::Sqrt, specials<T>(), {}, ref_sqrt, bound);
}

template <class T>
void sin_tests(double bound) {
  bool f32 = sizeof(T) == 4;
  check<T>("sin", "[-10,10]", Op::Sin, linspace<T>(T(-10), T(10), 100000), {}, ref_sin, bound);
  check<T>("sin", "[-1e6,1e6]", Op::Sin, linspace<T>(T(-1e6), T(1e6), 50000), {}, ref_sin, bound);
  std::vector<T> all = random_positive<T>(50000, 3);
  for (size_t i = 0; i < all.size(); i += 2) all[i] = -all[i];
  check<T>("sin", "all finite", Op::Sin, all, {}, ref_sin, bound);
  std::vector<T> sp = specials<T>();
  for (double v : {1e22, 1e30, 3e38, 1.5707963267948966, 3.141592653589793, 6.283185307179586, 1e6, 1e9, 1e15})
    sp.push_back(T(v));
  if (!f32)
    for (double v : {1e300, 1.7976931348623157e308, 8.98846567431158e307, 6381956970095103.0 * 0x1p797})
      sp.push_back(T(v));
  else
    for (float v : {102940.4f, 0x1.8p+124f, 16367173.0f * 0x1p72f}) sp.push_back(T(v));
  check<T>("sin", "specials", Op::Sin, sp, {}, ref_sin, bound);
}

template <class T>
void pow_tests(double bound) {
  bool f32 = sizeof(T) == 4;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> lx(-30, 30), ly(-4, 4);
  std::vector<T> x, y;
  for (int i = 0; i < 100000; i++) {
    x.push_back(T(std::pow(10.0, lx(rng))));
    y.push_back(T(ly(rng)));
  }
  check<T>("pow", "x in [1e-30,1e30], y in [-4,4]", Op::Pow, x, y, ref_pow, bound);
  x.clear();
  y.clear();
  std::uniform_real_distribution<double> ux(0.5, 2), uy(f32 ? -100 : -900, f32 ? 100 : 900);
  for (int i = 0; i < 50000; i++) {  // large exponents: results over the whole range
    x.push_back(T(ux(rng)));
    y.push_back(T(uy(rng)));
  }
  check<T>("pow", "x in [0.5,2], |y| large", Op::Pow, x, y, ref_pow, bound);
  x.clear();
  y.clear();
  std::uniform_int_distribution<int> iy(-20, 20);
  for (int i = 0; i < 20000; i++) {  // negative bases, integer exponents
    x.push_back(T(-std::pow(10.0, lx(rng) / 4)));
    y.push_back(T(iy(rng)));
  }
  check<T>("pow", "x < 0, integer y", Op::Pow, x, y, ref_pow, bound);
  // C99 Annex F special cases: every pair of special values.
  using L = std::numeric_limits<T>;
  std::vector<T> sv{T(0),          -T(0),          T(1),           T(-1),           T(2),     T(-2),
                    T(0.5),        T(-0.5),        T(3),           T(-3),           T(2.5),   T(-2.5),
                    L::infinity(), -L::infinity(), L::quiet_NaN(), L::denorm_min(), L::max(), T(1e10),
                    T(-1e10),      T(1e30),        T(-1e30)};
  x.clear();
  y.clear();
  for (T a : sv)
    for (T b : sv) {
      x.push_back(a);
      y.push_back(b);
    }
  check<T>("pow", "special pairs", Op::Pow, x, y, ref_pow, bound);
}

TEST(Transcendental, Exp2F32) { exp2_tests<float>(1.0); }
TEST(Transcendental, Exp2F64) { exp2_tests<double>(1.0); }
TEST(Transcendental, Log2F32) { log2_tests<float>(1.0); }
TEST(Transcendental, Log2F64) { log2_tests<double>(1.0); }
TEST(Transcendental, SqrtF32) { sqrt_tests<float>(0.5); }
TEST(Transcendental, SqrtF64) { sqrt_tests<double>(0.5); }
TEST(Transcendental, SinF32) { sin_tests<float>(1.0); }
TEST(Transcendental, SinF64) { sin_tests<double>(1.0); }
TEST(Transcendental, PowF32) { pow_tests<float>(1.0); }
TEST(Transcendental, PowF64) { pow_tests<double>(3.0); }

TEST(Transcendental, LinearHasNoMathOps) {
  for (Op op : {Op::Exp2, Op::Log2, Op::Sin, Op::Sqrt, Op::Pow})
    for (bool soft : {false, true})
      for (int64_t up : {int64_t(1), int64_t(4)}) {
        std::vector<std::pair<Op, int>> ops;
        std::vector<float> a{1, 2, 3, 4, 5, 6, 7, 8};
        run_op<float>(op, a, op == Op::Pow ? a : std::vector<float>{}, soft, up, &ops);
        size_t n = 0;
        int lanes = 1;
        for (auto [o, l] : ops) {
          n += o == op;
          lanes = std::max(lanes, l);
        }
        EXPECT_EQ(lanes, up) << op_name(op);  // UPCAST 4: vector math
        if (soft)
          EXPECT_EQ(n, 0u) << op_name(op);
        else
          EXPECT_GT(n, 0u) << op_name(op);
      }
}

// float16 math is lifted to float32 in isel; the decomposition must see those ops too.
TEST(Transcendental, HalfIsDecomposed) {
  Graph g;
  KernelBuilder kb{g};
  const UOp *A = kb.param(0, dtypes::float16, 8), *O = kb.param(1, dtypes::float16, 8);
  const UOp* i = kb.range(8, 0);
  const UOp* sink = kb.sink({kb.store(O, i, g.alu(Op::Exp2, g.alu(Op::Sin, kb.load(A, i))))});
  Target t = jit().target();
  t.native_math.clear();
  LoweredKernel k = lower_kernel(g, sink, t);
  for (const UOp* u : k.linear->src()) EXPECT_TRUE(u->op != Op::Exp2 && u->op != Op::Sin) << op_name(u->op);
  std::vector<_Float16> a(8), o(8);
  for (int j = 0; j < 8; j++) a[size_t(j)] = _Float16(float(j) - 3.5f);
  auto ck = jit().compile(k);
  std::vector<void*> bufs{a.data(), o.data()};
  jit().run(*ck, bufs.data());
  for (int j = 0; j < 8; j++) EXPECT_NEAR(float(o[size_t(j)]), std::exp2(std::sin(float(a[size_t(j)]))), 2e-3) << j;
}

// The host default: Exp2 inline (faster than a call), the other four native.
TEST(Transcendental, HostInlinesExp2Only) {
  Graph g;
  KernelBuilder kb{g};
  const UOp *A = kb.param(0, dtypes::float32, 64), *O = kb.param(1, dtypes::float32, 64);
  const UOp* i = kb.range(64, 0);
  const UOp* x = kb.load(A, i);
  const UOp* v = g.alu(Op::Add, g.alu(Op::Exp2, x), g.alu(Op::Log2, g.alu(Op::Sqrt, x)));
  const char* env = std::getenv("SN_CPU_NATIVE_MATH");
  if (env && std::string(env) == "0") GTEST_SKIP() << "SN_CPU_NATIVE_MATH=0: nothing is native";
  Target t = jit().target();
  ASSERT_EQ(t.native_math, (std::vector<Op>{Op::Log2, Op::Sin, Op::Sqrt, Op::Pow}));
  LoweredKernel k = lower_kernel(g, kb.sink({kb.store(O, i, v)}), t);
  int exp2 = 0, log2 = 0, sqrt = 0;
  for (const UOp* u : k.linear->src()) {
    exp2 += u->op == Op::Exp2;
    log2 += u->op == Op::Log2;
    sqrt += u->op == Op::Sqrt;
  }
  EXPECT_EQ(exp2, 0);
  EXPECT_GT(log2, 0);
  EXPECT_GT(sqrt, 0);
  std::vector<float> a(64), o(64);
  for (int j = 0; j < 64; j++) a[size_t(j)] = 0.25f * float(j) + 0.5f;
  auto ck = jit().compile(k);
  std::vector<void*> bufs{a.data(), o.data()};
  jit().run(*ck, bufs.data());
  for (int j = 0; j < 64; j++) {
    float want = std::exp2(a[size_t(j)]) + std::log2(std::sqrt(a[size_t(j)]));
    EXPECT_NEAR(o[size_t(j)], want, 2e-6f * std::fabs(want) + 1e-6f) << j;
  }
}

TEST(Transcendental, CacheKeyDiffers) {
  Target a, b;
  b.native_math.clear();
  EXPECT_NE(a.key(), b.key());
  Target c;
  c.native_math = {Op::Log2, Op::Sin, Op::Sqrt, Op::Pow};
  EXPECT_NE(a.key(), c.key());
  // The host target follows SN_CPU_NATIVE_MATH (read once).
  const char* env = std::getenv("SN_CPU_NATIVE_MATH");
  EXPECT_EQ(jit().target().native_math.empty(), env && std::string(env) == "0");
}

}  // namespace
}  // namespace sn
#endif
