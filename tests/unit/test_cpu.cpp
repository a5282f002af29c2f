// The CPU backend end to end: hand-built kernel ASTs lowered, rendered to LLVM IR, JIT-compiled
// and run on real buffers, compared with values computed here.
#include <gtest/gtest.h>

#if SN_BACKEND_CPU
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/llvm/llvm_ir.h"
#include "core/pipeline.h"
#include "test_codegen_kernels.h"

namespace sn {
namespace {

using testk::KernelBuilder;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

CpuCompiler& jit() {
  static CpuCompiler c;
  return c;
}

std::shared_ptr<const CpuKernel> run_kernel(Graph& g, const UOp* sink, std::vector<void*> bufs,
                                            std::vector<int64_t> vars = {}, LowerOptions opts = {}) {
  LoweredKernel k = lower_kernel(g, sink, jit().target(), opts);
  auto ck = jit().compile(k);
  jit().run(*ck, bufs.data(), vars.empty() ? nullptr : vars.data());
  return ck;
}

// ---- typed buffers: values kept as double / i128 and encoded in the dtype's bytes -----------

uint16_t f16_encode(double v) { return std::bit_cast<uint16_t>(static_cast<_Float16>(static_cast<float>(v))); }
double f16_decode(uint16_t b) { return double(static_cast<float>(std::bit_cast<_Float16>(b))); }
uint16_t bf16_encode(double v) {  // exact for values that are bfloat16 numbers
  return uint16_t(std::bit_cast<uint32_t>(float(v)) >> 16);
}
double bf16_decode(uint16_t b) { return double(std::bit_cast<float>(uint32_t(b) << 16)); }

struct Buf {
  DType dt;
  std::vector<uint8_t> bytes;
  Buf(DType d, size_t n) : dt(d), bytes(n * size_t(d.itemsize()) + 1, 0xAB) {}
  void* data() { return bytes.data(); }
  size_t size() const { return (bytes.size() - 1) / size_t(dt.itemsize()); }
  void set(size_t i, double v) {  // floats
    uint8_t* p = bytes.data() + i * size_t(dt.itemsize());
    switch (dt.scalar) {
      case Scalar::Float32: {
        float f = float(v);
        std::memcpy(p, &f, 4);
        break;
      }
      case Scalar::Float64:
        std::memcpy(p, &v, 8);
        break;
      case Scalar::Float16: {
        uint16_t h = f16_encode(v);
        std::memcpy(p, &h, 2);
        break;
      }
      case Scalar::BFloat16: {
        uint16_t h = bf16_encode(v);
        std::memcpy(p, &h, 2);
        break;
      }
      default:
        set_int(i, i128(v));
    }
  }
  void set_int(size_t i, i128 v) {
    if (dt.is_float()) return set(i, double(v));
    uint64_t u = uint64_t(wrap_int(dt, v));
    std::memcpy(bytes.data() + i * size_t(dt.itemsize()), &u, size_t(dt.itemsize()));  // little endian
  }
  double getf(size_t i) const {
    const uint8_t* p = bytes.data() + i * size_t(dt.itemsize());
    switch (dt.scalar) {
      case Scalar::Float32: {
        float f;
        std::memcpy(&f, p, 4);
        return f;
      }
      case Scalar::Float64: {
        double d;
        std::memcpy(&d, p, 8);
        return d;
      }
      case Scalar::Float16: {
        uint16_t h;
        std::memcpy(&h, p, 2);
        return f16_decode(h);
      }
      case Scalar::BFloat16: {
        uint16_t h;
        std::memcpy(&h, p, 2);
        return bf16_decode(h);
      }
      default:
        return double(geti(i));
    }
  }
  i128 geti(size_t i) const {
    uint64_t u = 0;
    std::memcpy(&u, bytes.data() + i * size_t(dt.itemsize()), size_t(dt.itemsize()));
    return wrap_int(dt, i128(u));  // sign-extends signed types
  }
};

bool same_float(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b));
}

// ---- elementwise ------------------------------------------------------------------------------

TEST(CpuBackend, ElementwiseAddMulF32) {
  Graph g;
  KernelBuilder b{g};
  const int64_t n = 1000;
  auto *A = b.param(0, dtypes::float32, n), *B = b.param(1, dtypes::float32, n), *C = b.param(2, dtypes::float32, n);
  auto* D = b.param(3, dtypes::float32, n);
  auto* i = b.range(n, 0);
  auto *x = b.load(A, i), *y = b.load(B, i);
  auto* sink = b.sink({b.store(C, i, b.add(x, y)), b.store(D, i, b.mul(x, y))});
  std::vector<float> a(n), bb(n), c(n, -1), d(n, -1);
  for (int64_t k = 0; k < n; k++) a[k] = float(k) * 0.37f - 11, bb[k] = 3.0f - float(k) * 1.1f;
  run_kernel(g, sink, {a.data(), bb.data(), c.data(), d.data()});
  for (int64_t k = 0; k < n; k++) {
    ASSERT_EQ(c[k], a[k] + bb[k]) << k;
    ASSERT_EQ(d[k], a[k] * bb[k]) << k;
  }
}

// A store gated by a condition of its outer loop alone: its If block takes the work only the store
// uses (the load and the product), and the inner loop runs inside the If, not the If inside every
// step of the loop (linearize: hoist_ifs). Outputs the gate leaves out keep their values.
TEST(CpuBackend, AStoreGatedByItsOuterLoopSkipsTheInnerLoop) {
  Graph g;
  KernelBuilder b{g};
  const int64_t R = 6, C = 40;
  auto *A = b.param(0, dtypes::float32, R * C), *O = b.param(1, dtypes::float32, R * C);
  auto *i = b.range(R, 0), *j = b.range(C, 1);
  const UOp* at = b.flat({i, j}, {R, C});
  const UOp* x = b.load(A, at);
  auto* sink = b.sink({b.store(O, at, b.mul(x, x), g.alu(Op::CmpLt, i, b.c(4)))});
  LowerOptions o;
  o.optimize = false;
  std::vector<float> a(size_t(R * C)), out(size_t(R * C), -1);
  for (size_t k = 0; k < a.size(); k++) a[k] = float(k) * 0.5f - 7;
  auto ck = run_kernel(g, sink, {a.data(), out.data()}, {}, o);
  for (int64_t r = 0; r < R; r++)
    for (int64_t c = 0; c < C; c++) {
      const float v = a[size_t(r * C + c)];
      ASSERT_EQ(out[size_t(r * C + c)], r < 4 ? v * v : -1.0f) << r << ", " << c;
    }
  const UOp* lin = lower_kernel(g, sink, jit().target(), o).linear;
  std::map<Op, size_t> pos;  // the first of each op in the Linear
  const UOp* inner = nullptr;
  size_t inner_end = 0;
  for (size_t p = 0; p < lin->nsrc(); p++) {
    const UOp* u = lin->src(p);
    pos.emplace(u->op, p);
    if (u->op == Op::Range && u->as<RangeArg>().id == 1) inner = u, pos[Op::Range] = p;
    if (u->op == Op::End && u->src(1) == inner) inner_end = p;
  }
  ASSERT_TRUE(inner && pos.count(Op::If) && pos.count(Op::Endif));
  EXPECT_LT(pos[Op::If], pos[Op::Range]);  // If(i < 4), Range j, ..., End j, Endif
  EXPECT_GT(pos[Op::Load], pos[Op::Range]);
  EXPECT_GT(pos[Op::Endif], inner_end);
}

// An output at least Target::streaming_store_bytes large is written with non-temporal stores when
// its buffer is aligned, and with ordinary stores when it is not (a view at an odd offset): both
// give the sums. A small output keeps ordinary stores.
TEST(CpuBackend, LargeOutputsStreamPastTheCaches) {
  const Target& t = jit().target();
  if (t.streaming_store_bytes <= 0) GTEST_SKIP() << "this CPU target writes no streaming stores";
  const int64_t n = t.streaming_store_bytes / 4;
  auto add_kernel = [](Graph& g, int64_t len) {
    KernelBuilder b{g};
    auto *A = b.param(0, dtypes::float32, len), *B = b.param(1, dtypes::float32, len);
    auto* C = b.param(2, dtypes::float32, len);
    auto* i = b.range(len, 0);
    return b.sink({b.store(C, i, b.add(b.load(A, i), b.load(B, i)))});
  };
  // room for n floats at a 64-byte boundary and one float past it
  auto buffer = [&] {
    return std::unique_ptr<float[], decltype(&std::free)>(
        static_cast<float*>(std::aligned_alloc(64, size_t(n + 16) * 4)), &std::free);
  };
  auto a = buffer(), bb = buffer(), c = buffer();
  for (int64_t k = 0; k < n; k++) a[k] = float(k % 1000) * 0.5f, bb[k] = 3.0f - float(k % 77);
  Graph g;
  LoweredKernel k = lower_kernel(g, add_kernel(g, n), t, {});
  auto ck = jit().compile(k);
  EXPECT_NE(ck->source.find("!nontemporal"), std::string::npos) << ck->source;
  for (int64_t offset : {0, 1}) {  // aligned: streaming stores; one float on: ordinary ones
    float* out = c.get() + offset;
    std::fill(out, out + n, -1.0f);
    void* bufs[] = {a.get(), bb.get(), out};
    jit().run(*ck, bufs, nullptr);
    for (int64_t q = 0; q < n; q++) ASSERT_EQ(out[q], a[q] + bb[q]) << "offset " << offset << ", element " << q;
  }
  Graph small;
  LoweredKernel ks = lower_kernel(small, add_kernel(small, 4096), t, {});
  EXPECT_EQ(jit().compile(ks)->source.find("!nontemporal"), std::string::npos);
}

// out[co, x] = sum_k w[k, co] * in[k, x] (+ res[co, x]): a convolution's shape, with the weight
// contiguous along the output channels co and the output strided along them. Params w, in, (res,)
// out; ranges co (0), x (1), k (2).
const UOp* channels_as_lanes_kernel(Graph& g, int64_t CO, int64_t X, int64_t K, bool residual) {
  KernelBuilder b{g};
  auto *W = b.param(0, dtypes::float32, K * CO), *I = b.param(1, dtypes::float32, K * X);
  auto* O = b.param(residual ? 3 : 2, dtypes::float32, CO * X);
  auto *co = b.range(CO, 0), *x = b.range(X, 1), *k = b.range(K, 2, AxisType::Reduce);
  auto* v = b.mul(b.load(W, b.flat({k, co}, {K, CO})), b.load(I, b.flat({k, x}, {K, X})));
  const UOp* out = b.reduce(Op::Add, v, {k});
  if (residual) out = b.add(out, b.load(b.param(2, dtypes::float32, CO * X), b.flat({co, x}, {CO, X})));
  return b.sink({b.store(O, b.flat({co, x}, {CO, X}), out)});
}

// Inputs of channels_as_lanes_kernel and its reference outputs.
struct ChannelsData {
  int64_t CO, X, K;
  std::vector<float> w, in, res;
  ChannelsData(int64_t co, int64_t x, int64_t k) : CO(co), X(x), K(k), w(k * co), in(k * x), res(co * x) {
    for (int64_t q = 0; q < K * CO; q++) w[q] = float((q * 37) % 19) / 8.0f - 1;
    for (int64_t q = 0; q < K * X; q++) in[q] = float((q * 53) % 23) / 11.0f - 1;
    for (int64_t q = 0; q < CO * X; q++) res[q] = float((q * 29) % 31) / 4.0f - 3;
  }
  double ref(int64_t c, int64_t y, bool residual) const {
    double r = residual ? res[c * X + y] : 0.0;
    for (int64_t z = 0; z < K; z++) r += double(w[z * CO + c]) * double(in[z * X + y]);
    return r;
  }
};

// channels_as_lanes_kernel lowered with `opts` for the JIT's CPU, with or without gathers and scatters.
LoweredKernel lower_channels_kernel(Graph& g, const ChannelsData& d, bool residual, bool scatter,
                                    std::vector<Opt> opts) {
  Target t = jit().target();
  t.has_gather_scatter = scatter;
  LowerOptions o;
  o.opts = std::move(opts);
  return lower_kernel(g, channels_as_lanes_kernel(g, d.CO, d.X, d.K, residual), t, o);
}

TEST(CpuBackend, StridedLanesBecomeOneGatherAndOneScatterOrTiles) {
  // out[co, x] = sum_k w[k, co] * in[k, x] + res[co, x] with co as 16 vector lanes (the weight
  // loads walk it contiguously) and x as 4 copies: each copy's lanes are stored, and its residual
  // loaded, X elements apart: lane by lane or, with has_gather_scatter, as one scatter and one gather.
  // X = 10 pads x to 12: the last copies' accesses are gated. Every form gives the reference
  // values. (LLVM scalarizes gathers and scatters where the CPU has none: this runs on any host.)
  const int64_t CO = 16, K = 8;
  for (int64_t X : {12, 10})
    for (bool scatter : {false, true}) {
      ChannelsData d(CO, X, K);
      Graph g;
      std::vector<Opt> opts{Opt::upcast(0, 16), Opt::upcast(1, 4)};
      if (X % 4) opts.insert(opts.begin() + 1, Opt::padto(1, 4));
      LoweredKernel lk = lower_channels_kernel(g, d, true, scatter, opts);
      size_t stores = 0, scatters = 0, gathers = 0;  // of the output and the residual (not accumulators)
      for (const UOp* u : lk.linear->src())
        if ((u->op == Op::Store || u->op == Op::Load) && u->src(0)->op == Op::Index &&
            u->src(0)->src(0)->op == Op::Param) {
          bool lanes = u->src(0)->src(1)->dtype.lanes == 16;
          if (u->op == Op::Store) stores++, scatters += lanes;
          if (u->op == Op::Load && u->src(0)->src(0)->as<ParamArg>().slot == 2) gathers += lanes;
          // in[k, x] is the same for every lane: one load broadcast, never a gather of one address
          if (u->op == Op::Load && u->src(0)->src(0)->as<ParamArg>().slot == 1) {
            EXPECT_FALSE(lanes);
          }
        }
      SCOPED_TRACE(cat("X ", X, ", has_gather_scatter ", scatter));
      // Ungated (X = 12), the four copies' lanes, as scatters or lane by lane, are stored as four
      // 4 x 4 tiles transposed in registers: 16 stores of 4 contiguous elements
      // (transpose_scatters). Gated (X = 10), they stay scatters or scalar stores.
      const bool tiles = X % 4 == 0;
      EXPECT_EQ(stores, tiles ? 16u : scatter ? 4u : 64u) << linear_str(lk.linear);
      EXPECT_EQ(scatters, scatter && !tiles ? 4u : 0u);
      EXPECT_EQ(gathers, scatter ? 4u : 0u) << linear_str(lk.linear);
      auto ck = jit().compile(lk);
      EXPECT_EQ(ck->source.find("llvm.masked.scatter") != std::string::npos, scatter && !tiles) << ck->source;
      EXPECT_EQ(ck->source.find("llvm.masked.gather") != std::string::npos, scatter) << ck->source;
      std::vector<float> got(CO * X + 1, -1);  // one past the end: a padded copy must not write it
      void* bufs[] = {d.w.data(), d.in.data(), d.res.data(), got.data()};
      jit().run(*ck, bufs, nullptr);
      for (int64_t c = 0; c < CO; c++)
        for (int64_t y = 0; y < X; y++) ASSERT_NEAR(got[c * X + y], d.ref(c, y, true), 1e-5) << "at " << c << "," << y;
      EXPECT_EQ(got[CO * X], -1);
    }
}

// Copies along a contiguous output axis in runs of 7 (a 28-, 14- or 7-wide output row) are stored
// as 8 x 8 tiles whose eighth row is padding: 8 stores of 8 elements masked to 7 per tile, never the
// eighth element (the next copy's, or past the end: the sentinel). With and without scatters, for
// 16 and 32 lanes (two and four tiles per run).
TEST(CpuBackend, RunsOfSevenCopiesAreStoredAsMaskedTiles) {
  const int64_t X = 14, K = 8;
  for (int64_t CO : {16, 32})
    for (bool scatter : {false, true}) {
      ChannelsData d(CO, X, K);
      Graph g;
      LoweredKernel lk = lower_channels_kernel(g, d, false, scatter, {Opt::upcast(0, CO), Opt::upcast(1, 7)});
      size_t masked = 0, other = 0;
      for (const UOp* u : lk.linear->src())
        if (u->op == Op::Store && u->src(0)->op == Op::Index && u->src(0)->src(0)->op == Op::Param)
          (u->nsrc() == 3 && u->src(0)->dtype.lanes == 8 && u->src(2)->dtype.lanes == 8 ? masked : other)++;
      SCOPED_TRACE(cat("CO ", CO, ", has_gather_scatter ", scatter));
      EXPECT_EQ(masked, size_t(CO)) << linear_str(lk.linear);  // CO / 8 tiles of 8 columns
      EXPECT_EQ(other, 0u) << linear_str(lk.linear);
      auto ck = jit().compile(lk);
      std::vector<float> got(CO * X + 1, -1);
      void* bufs[] = {d.w.data(), d.in.data(), got.data()};
      jit().run(*ck, bufs, nullptr);
      for (int64_t c = 0; c < CO; c++)
        for (int64_t y = 0; y < X; y++) ASSERT_NEAR(got[c * X + y], d.ref(c, y, false), 1e-5) << "at " << c << "," << y;
      EXPECT_EQ(got[CO * X], -1);
    }
}

// A 16-lane tile over 8-wide (and, under a gate, 4-wide) panels (testk::panels_kernel): the runs'
// vector loads are put together by shuffles of whole vectors, not lane by lane, and the kernel
// computes the reference values, with and without the host's gathers.
TEST(CpuBackend, RunsOfLanesLoadAsVectors) {
  const int64_t I = 3, J = 32, K = 5;
  std::vector<float> a(I * K), b(J * K), c(J * K), d(J);
  for (size_t q = 0; q < a.size(); q++) a[q] = float(q % 5) + 1;
  for (size_t q = 0; q < b.size(); q++) b[q] = float((q * 37) % 19) / 8.0f - 1;
  for (size_t q = 0; q < c.size(); q++) c[q] = float((q * 53) % 23) / 11.0f - 1;
  for (size_t q = 0; q < d.size(); q++) d[q] = float(q) * 10;
  for (bool gathers : {false, true}) {
    Graph g;
    Target t = jit().target();
    t.has_gather_scatter = gathers;
    LowerOptions o;
    o.opts = std::vector<Opt>{Opt::upcast(1, 16)};
    LoweredKernel lk = lower_kernel(g, testk::panels_kernel(g, I, J, K), t, o);
    auto ck = jit().compile(lk);
    EXPECT_NE(ck->source.find("<16 x i32> <i32 0, i32 1, i32 2,"), std::string::npos) << ck->source;
    std::vector<float> got(I * J + 1, -1);
    void* bufs[] = {a.data(), b.data(), got.data(), c.data(), d.data()};
    jit().run(*ck, bufs, nullptr);
    for (int64_t y = 0; y < I; y++)
      for (int64_t x = 0; x < J; x++)
        ASSERT_NEAR(got[y * J + x], testk::panels_reference(a, b, c, d, K, y, x), 1e-4)
            << gathers << " " << y << "," << x;
    EXPECT_EQ(got[I * J], -1);
  }
}

TEST(CpuBackend, LoweringDoesNotDependOnWhatTheGraphHolds) {
  // One AST and one opt list lower to the same code in a fresh graph and in one where an earlier
  // kernel already made the Range node of the second upcast (hash-consing returns that older
  // node). Ordering ranges by node creation once made expand take the 4-copy axis as the lanes
  // there: ResNet-18's convolutions ran 3-4x slower in the model than alone.
  const int64_t CO = 16, X = 12, K = 8;
  auto lower = [&](Graph& g) {
    const UOp* sink = channels_as_lanes_kernel(g, CO, X, K, false);
    LowerOptions o;
    o.opts = std::vector<Opt>{Opt::upcast(0, 16), Opt::upcast(1, 4)};  // new ranges 3 (16) and 4 (4)
    return linear_str(lower_kernel(g, sink, jit().target(), o).linear);
  };
  Graph fresh, used;
  KernelBuilder{used}.range(4, 4, AxisType::Upcast);  // what the second upcast will make, made first
  EXPECT_EQ(lower(used), lower(fresh));
}

TEST(CpuBackend, Int32WrapsAround) {
  Graph g;
  KernelBuilder b{g};
  const int64_t n = 8;
  auto *A = b.param(0, dtypes::int32, n), *B = b.param(1, dtypes::int32, n);
  auto *S = b.param(2, dtypes::int32, n), *P = b.param(3, dtypes::int32, n), *N = b.param(4, dtypes::int32, n);
  auto* i = b.range(n, 0);
  auto *x = b.load(A, i), *y = b.load(B, i);
  auto* sink = b.sink({b.store(S, i, b.add(x, y)), b.store(P, i, b.mul(x, y)), b.store(N, i, g.alu(Op::Neg, x))});
  std::vector<int32_t> a = {INT32_MAX, INT32_MIN, 65536, -7, 123456789, 0, -1, 46341};
  std::vector<int32_t> bb = {1, -1, 65536, 3, 1000, 0, INT32_MIN, 46341};
  std::vector<int32_t> s(n), p(n), ng(n);
  run_kernel(g, sink, {a.data(), bb.data(), s.data(), p.data(), ng.data()});
  for (int64_t k = 0; k < n; k++) {
    EXPECT_EQ(s[k], int32_t(uint32_t(a[k]) + uint32_t(bb[k]))) << k;
    EXPECT_EQ(p[k], int32_t(uint32_t(a[k]) * uint32_t(bb[k]))) << k;
    EXPECT_EQ(ng[k], int32_t(0u - uint32_t(a[k]))) << k;
  }
}

TEST(CpuBackend, BroadcastThroughIndexMath) {
  Graph g;
  KernelBuilder b{g};
  const int64_t R = 7, C = 13;
  auto *A = b.param(0, dtypes::float32, R * C), *Row = b.param(1, dtypes::float32, C);
  auto *Col = b.param(2, dtypes::float32, R), *O = b.param(3, dtypes::float32, R * C);
  auto *i = b.range(R, 0), *j = b.range(C, 1);
  auto* v = b.add(b.add(b.load(A, b.flat({i, j}, {R, C})), b.load(Row, j)), b.load(Col, i));
  auto* sink = b.sink({b.store(O, b.flat({i, j}, {R, C}), v)});
  std::vector<float> a(R * C), row(C), col(R), o(R * C);
  for (int64_t k = 0; k < R * C; k++) a[k] = float(k);
  for (int64_t k = 0; k < C; k++) row[k] = 1000.0f * float(k);
  for (int64_t k = 0; k < R; k++) col[k] = 0.5f * float(k);
  run_kernel(g, sink, {a.data(), row.data(), col.data(), o.data()});
  for (int64_t x = 0; x < R; x++)
    for (int64_t y = 0; y < C; y++) ASSERT_EQ(o[x * C + y], a[x * C + y] + row[y] + col[x]) << x << "," << y;
}

TEST(CpuBackend, TransposedStoreKeepsResults) {
  // out[j, i] = a[i, j]: the optimizer makes the store-contiguous axis the inner loop.
  Graph g;
  KernelBuilder b{g};
  const int64_t R = 33, C = 17;
  auto *A = b.param(0, dtypes::int32, R * C), *O = b.param(1, dtypes::int32, R * C);
  auto *i = b.range(R, 0), *j = b.range(C, 1);
  auto* sink = b.sink({b.store(O, b.flat({j, i}, {C, R}), b.load(A, b.flat({i, j}, {R, C})))});
  std::vector<int32_t> a(R * C), o(R * C, -1);
  for (int64_t k = 0; k < R * C; k++) a[k] = int32_t(k * 3 + 1);
  run_kernel(g, sink, {a.data(), o.data()});
  for (int64_t x = 0; x < R; x++)
    for (int64_t y = 0; y < C; y++) ASSERT_EQ(o[y * R + x], a[x * C + y]);
}

TEST(CpuBackend, GatedLoadsPad) {
  // out[i] = a[i-2] for 2 <= i < n+2, else -5 (pad); also a gated store that skips odd i.
  Graph g;
  KernelBuilder b{g};
  const int64_t n = 10, m = n + 4;
  auto *A = b.param(0, dtypes::float32, n), *O = b.param(1, dtypes::float32, m), *E = b.param(2, dtypes::float32, m);
  auto* i = b.range(m, 0);
  auto* valid = g.alu(Op::And, g.alu(Op::CmpLt, b.c(1), i), g.alu(Op::CmpLt, i, b.c(n + 2)));
  auto* v = b.load(A, b.add(i, b.c(-2)), g.cfloat(-5.0), valid);
  auto* even = g.alu(Op::CmpEq, g.alu(Op::Mod, i, b.c(2)), b.c(0));
  auto* sink = b.sink({b.store(O, i, v), b.store(E, i, v, even)});
  std::vector<float> a(n), o(m, 99), e(m, 99);
  for (int64_t k = 0; k < n; k++) a[k] = float(k + 1);
  run_kernel(g, sink, {a.data(), o.data(), e.data()});
  for (int64_t k = 0; k < m; k++) {
    float want = (k >= 2 && k < n + 2) ? a[k - 2] : -5.0f;
    EXPECT_EQ(o[k], want) << k;
    EXPECT_EQ(e[k], k % 2 == 0 ? want : 99.0f) << k;
  }
}

// ---- reductions -------------------------------------------------------------------------------

TEST(CpuBackend, ReduceSumMaxMulOverRows) {
  Graph g;
  KernelBuilder b{g};
  const int64_t R = 9, C = 37;
  auto *A = b.param(0, dtypes::float32, R * C), *S = b.param(1, dtypes::float32, R);
  auto *M = b.param(2, dtypes::float32, R), *P = b.param(3, dtypes::float32, R);
  auto *i = b.range(R, 0), *k = b.range(C, 1, AxisType::Reduce), *k2 = b.range(C, 2, AxisType::Reduce);
  auto* k3 = b.range(C, 3, AxisType::Reduce);
  auto x = [&](const UOp* r) { return b.load(A, b.flat({i, r}, {R, C})); };
  auto* sink = b.sink({b.store(S, i, b.reduce(Op::Add, x(k), {k})), b.store(M, i, b.reduce(Op::Max, x(k2), {k2})),
                       b.store(P, i, b.reduce(Op::Mul, x(k3), {k3}))});
  std::vector<float> a(R * C), s(R), mx(R), p(R);
  for (int64_t r = 0; r < R; r++)
    for (int64_t c = 0; c < C; c++) a[r * C + c] = float((r * 7 + c * 13) % 17) / 16.0f + 0.5f - float(r);
  a[3 * C + 5] = -kInf;                                         // row 3: max unaffected
  a[4 * C + 6] = float(kNaN);                                   // row 4: NaN propagates through all three
  for (int64_t c = 0; c < C; c++) a[5 * C + c] = -float(kInf);  // row 5: max of all -inf
  run_kernel(g, sink, {a.data(), s.data(), mx.data(), p.data()});
  for (int64_t r = 0; r < R; r++) {
    double ws = 0, wp = 1, wm = -kInf;
    bool nan = false;
    for (int64_t c = 0; c < C; c++) {
      double v = a[r * C + c];
      ws += v, wp *= v, wm = std::max(wm, v), nan = nan || std::isnan(v);
    }
    if (nan) {
      EXPECT_TRUE(std::isnan(s[r]) && std::isnan(mx[r]) && std::isnan(p[r])) << r;
      continue;
    }
    if (std::isinf(ws)) {
      EXPECT_EQ(s[r], ws) << r;
    } else {
      EXPECT_NEAR(s[r], ws, 1e-4 * (1 + std::fabs(ws))) << r;
    }
    EXPECT_EQ(mx[r], float(wm)) << r;
    if (std::isfinite(wp)) {
      EXPECT_NEAR(p[r], wp, 1e-4 * (1 + std::fabs(wp))) << r;
    }
  }
}

TEST(CpuBackend, ReduceTwoAxesAndIntSum) {
  // Full reduction of a (6, 50) int32 tensor, and a float sum over axes 0 and 2 of (4, 5, 6).
  Graph g;
  KernelBuilder b{g};
  auto *A = b.param(0, dtypes::int32, 300), *S = b.param(1, dtypes::int32, 1);
  auto *r0 = b.range(6, 0, AxisType::Reduce), *r1 = b.range(50, 1, AxisType::Reduce);
  auto* full = b.reduce(Op::Add, b.load(A, b.flat({r0, r1}, {6, 50})), {r0, r1});
  auto *F = b.param(2, dtypes::float32, 120), *O = b.param(3, dtypes::float32, 5);
  auto *j = b.range(5, 2), *q0 = b.range(4, 3, AxisType::Reduce), *q2 = b.range(6, 4, AxisType::Reduce);
  auto* part = b.reduce(Op::Add, b.load(F, b.flat({q0, j, q2}, {4, 5, 6})), {q0, q2});
  auto* sink = b.sink({b.store(S, b.c(0), full), b.store(O, j, part)});
  std::vector<int32_t> a(300), s(1);
  std::vector<float> f(120), o(5);
  int64_t want = 0;
  for (int k = 0; k < 300; k++) a[k] = (k * 7919) % 1000 - 500, want += a[k];
  for (int k = 0; k < 120; k++) f[k] = float(k % 11) - 3;
  run_kernel(g, sink, {a.data(), s.data(), f.data(), o.data()});
  EXPECT_EQ(s[0], want);
  for (int y = 0; y < 5; y++) {
    float w = 0;
    for (int x = 0; x < 4; x++)
      for (int z = 0; z < 6; z++) w += f[(x * 5 + y) * 6 + z];
    EXPECT_EQ(o[y], w) << y;
  }
}

TEST(CpuBackend, ReduceInsideReduce) {
  // out[i] = sum_j (a[i,j] * max_k b[j,k]): the inner reduce runs in the outer one's loop.
  Graph g;
  KernelBuilder b{g};
  const int64_t I = 5, J = 6, K = 7;
  auto *A = b.param(0, dtypes::float32, I * J), *B = b.param(1, dtypes::float32, J * K),
       *O = b.param(2, dtypes::float32, I);
  auto *i = b.range(I, 0), *j = b.range(J, 1, AxisType::Reduce), *k = b.range(K, 2, AxisType::Reduce);
  auto* inner = b.reduce(Op::Max, b.load(B, b.flat({j, k}, {J, K})), {k});
  auto* outer = b.reduce(Op::Add, b.mul(b.load(A, b.flat({i, j}, {I, J})), inner), {j});
  auto* sink = b.sink({b.store(O, i, outer)});
  std::vector<float> a(I * J), bb(J * K), o(I);
  for (int64_t x = 0; x < I * J; x++) a[x] = float(x % 5) - 1;
  for (int64_t x = 0; x < J * K; x++) bb[x] = float((x * 37) % 23) - 10;
  run_kernel(g, sink, {a.data(), bb.data(), o.data()});
  for (int64_t x = 0; x < I; x++) {
    float w = 0;
    for (int64_t y = 0; y < J; y++) {
      float m = -std::numeric_limits<float>::infinity();
      for (int64_t z = 0; z < K; z++) m = std::max(m, bb[y * K + z]);
      w += a[x * J + y] * m;
    }
    EXPECT_EQ(o[x], w) << x;
  }
}

std::shared_ptr<const CpuKernel> check_matmul(int64_t M, int64_t N, int64_t K) {
  Graph g;
  KernelBuilder b{g};
  auto *A = b.param(0, dtypes::float32, M * K), *B = b.param(1, dtypes::float32, K * N);
  auto* C = b.param(2, dtypes::float32, M * N);
  auto *i = b.range(M, 0), *j = b.range(N, 1), *k = b.range(K, 2, AxisType::Reduce);
  auto* v = b.mul(b.load(A, b.flat({i, k}, {M, K})), b.load(B, b.flat({k, j}, {K, N})));
  auto* sink = b.sink({b.store(C, b.flat({i, j}, {M, N}), b.reduce(Op::Add, v, {k}))});
  std::vector<float> a(M * K), bb(K * N), c(M * N, -1);
  for (int64_t x = 0; x < M * K; x++) a[x] = float((x * 131) % 97) / 48.0f - 1;
  for (int64_t x = 0; x < K * N; x++) bb[x] = float((x * 71) % 89) / 44.0f - 1;
  auto ck = run_kernel(g, sink, {a.data(), bb.data(), c.data()});
  int64_t bad = -1;  // the first element off the reference, reported once
  double want = 0;
  for (int64_t x = 0; x < M && bad < 0; x++)
    for (int64_t y = 0; y < N && bad < 0; y++) {
      double w = 0;
      for (int64_t z = 0; z < K; z++) w += double(a[x * K + z]) * double(bb[z * N + y]);
      if (std::abs(double(c[x * N + y]) - w) > 1e-5 * double(K)) bad = x * N + y, want = w;
    }
  EXPECT_LT(bad, 0) << ck->name << " at " << bad / N << "," << bad % N << ": " << c[size_t(std::max<int64_t>(bad, 0))]
                    << " vs " << want;
  return ck;
}

// LLVM's SLP vectorizer runs on the kernels where codegen left float math scalar (it found nothing
// in register tiles and was the most expensive pass there): a register-tiled matmul goes without
// it, a scalar elementwise kernel with two float ops (left to LLVM's vectorizers) and a vector
// built from neighbouring loads (expand's per-lane fallback) get it, a vector built from strided
// loads (which SLP cannot pack) goes without it; every result is right.
TEST(CpuBackend, SlpRunsWhereCodegenLeftScalarMath) {
  auto tiled = check_matmul(64, 64, 48);
  EXPECT_FALSE(tiled->slp) << tiled->name;

  Graph g;
  KernelBuilder b{g};
  // an unoptimized elementwise kernel: scalar adds and multiplies
  const int64_t n = 100;
  auto *P = b.param(3, dtypes::float32, n), *Q = b.param(4, dtypes::float32, n), *R = b.param(5, dtypes::float32, n);
  auto* e = b.range(n, 0);
  auto* ew = b.sink({b.store(R, e, b.add(b.mul(b.load(P, e), b.load(Q, e)), b.load(P, e)))});
  LowerOptions plain;
  plain.optimize = false;
  std::vector<float> ps(n), qs(n), rs(n, -1);
  for (int64_t x = 0; x < n; x++) ps[size_t(x)] = float(x) * 0.25f - 7, qs[size_t(x)] = 2.5f - float(x);
  std::vector<void*> ew_bufs{nullptr, nullptr, nullptr, ps.data(), qs.data(), rs.data()};
  auto scalar = run_kernel(g, ew, ew_bufs, {}, plain);
  EXPECT_TRUE(scalar->slp) << scalar->name;
  for (size_t x = 0; x < size_t(n); x++) ASSERT_EQ(rs[x], ps[x] * qs[x] + ps[x]) << x;

  // lanes that walk a stride of 8 on a target without gathers: loaded one by one into a vector
  Target no_gathers = jit().target();
  no_gathers.has_gather_scatter = false;
  auto *X = b.param(6, dtypes::float32, 64 * 8), *Y = b.param(7, dtypes::float32, 64 * 8);
  auto *r = b.range(64, 0), *q = b.range(8, 1);
  auto* tr = b.sink({b.store(Y, b.add(b.mul(q, b.c(64)), r), b.load(X, b.add(b.mul(r, b.c(8)), q)))});
  LowerOptions upcast;
  upcast.opts = std::vector<Opt>{Opt::upcast(0, 16)};
  LoweredKernel lk = lower_kernel(g, tr, no_gathers, upcast);
  bool per_lane = false;
  for (const UOp* u : lk.linear->src())
    per_lane = per_lane || (u->op == Op::Vectorize && u->dtype.is_float() && u->src(0) != u->src(1));
  ASSERT_TRUE(per_lane) << linear_str(lk.linear);
  auto ck = jit().compile(lk);
  EXPECT_FALSE(ck->slp);
  std::vector<float> xs(64 * 8), ys(64 * 8, -1);
  for (size_t x = 0; x < xs.size(); x++) xs[x] = float(x) * 0.5f - 3;
  std::vector<void*> bufs{nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, xs.data(), ys.data()};
  jit().run(*ck, bufs.data(), nullptr);
  for (size_t rr = 0; rr < 64; rr++)
    for (size_t qq = 0; qq < 8; qq++) ASSERT_EQ(ys[qq * 64 + rr], xs[rr * 8 + qq]) << rr << "," << qq;

  // lanes that walk backwards one element at a time: loaded one by one, packed by SLP
  auto *U = b.param(8, dtypes::float32, 64), *W = b.param(9, dtypes::float32, 64);
  auto* t = b.range(64, 0);
  auto* rev = b.sink({b.store(W, t, b.load(U, b.add(b.c(63), b.mul(t, b.c(-1)))))});
  LoweredKernel lr = lower_kernel(g, rev, no_gathers, upcast);
  per_lane = false;
  for (const UOp* u : lr.linear->src())
    per_lane = per_lane || (u->op == Op::Vectorize && u->dtype.is_float() && u->src(0) != u->src(1));
  ASSERT_TRUE(per_lane) << linear_str(lr.linear);
  auto cr = jit().compile(lr);
  EXPECT_TRUE(cr->slp);
  std::vector<float> us(64), ws(64, -1);
  for (size_t x = 0; x < us.size(); x++) us[x] = float(x) * 1.5f - 40;
  std::vector<void*> rbufs(10, nullptr);
  rbufs[8] = us.data(), rbufs[9] = ws.data();
  jit().run(*cr, rbufs.data(), nullptr);
  for (size_t x = 0; x < 64; x++) ASSERT_EQ(ws[x], us[63 - x]) << x;
}

TEST(CpuBackend, MatmulOddSizes) { check_matmul(13, 19, 17); }
TEST(CpuBackend, MatmulVectorTile) { check_matmul(32, 64, 40); }
TEST(CpuBackend, MatmulRegisterTiled) { check_matmul(64, 64, 48); }
TEST(CpuBackend, MatmulThreaded) { check_matmul(128, 96, 64); }

TEST(CpuBackend, VectorLanesAcrossDtypes) {
  // out[i, j] = reduce_k f(a[i, k], b[k, j]) with j forced into 16 vector lanes, for dtypes whose
  // vector code differs (bool bytes, half and bfloat16 conversions, integer division and shifts),
  // plus a padded (masked) load and a libm call on the vector.
  const int64_t I = 3, J = 32, K = 5;
  for (DType dt : {dtypes::float32, dtypes::float16, dtypes::bfloat16, dtypes::int32, dtypes::bool_, dtypes::float64}) {
    Graph g;
    KernelBuilder b{g};
    auto *A = b.param(0, dt, I * K), *B = b.param(1, dt, K * J), *O = b.param(2, dt, I * J);
    auto *i = b.range(I, 0), *j = b.range(J, 1), *k = b.range(K, 2, AxisType::Reduce);
    auto* x = b.load(A, b.flat({i, k}, {I, K}));
    auto* col = b.add(j, b.add(k, b.c(-2)));  // B[k, j + k - 2], zero outside the row
    auto* valid = g.alu(Op::And, g.alu(Op::CmpLt, b.c(-1), col), g.alu(Op::CmpLt, col, b.c(J)));
    auto* y = b.load(B, b.add(b.mul(k, b.c(J)), col), g.const_like(g.cint(0, dt), 0), valid);
    const UOp* v;
    Op red = Op::Add;
    if (dt.is_bool()) {
      v = g.alu(Op::And, x, y), red = Op::Max;
    } else if (dt.is_int()) {
      v = b.add(g.alu(Op::Mul, x, y), g.alu(Op::Idiv, y, g.cint(-3, dt)));
    } else {
      v = b.mul(x, g.cast(g.alu(Op::Exp2, g.cast(y, dtypes::float32)), dt));
    }
    auto* sink = b.sink({b.store(O, b.flat({i, j}, {I, J}), b.reduce(red, v, {k}))});
    LowerOptions o;
    o.opts = std::vector<Opt>{Opt::upcast(1, 16)};
    Buf a(dt, I * K), bb(dt, K * J), out(dt, I * J);
    for (int64_t q = 0; q < I * K; q++)
      dt.is_float() ? a.set(size_t(q), round_float(dt, 0.25 * double(q % 9) - 1)) : a.set_int(size_t(q), q % 5 - 2);
    for (int64_t q = 0; q < K * J; q++)
      dt.is_float() ? bb.set(size_t(q), round_float(dt, 0.125 * double(q % 13) - 0.5))
                    : bb.set_int(size_t(q), q % 7 - 3);
    auto ck = run_kernel(g, sink, {a.data(), bb.data(), out.data()}, {}, o);
    EXPECT_NE(ck->source.find("<16 x"), std::string::npos) << dt.name();
    for (int64_t r = 0; r < I; r++)
      for (int64_t c = 0; c < J; c++) {
        double accf = 0;
        i128 acci = 0;
        for (int64_t z = 0; z < K; z++) {
          int64_t cc = c + z - 2;
          bool in = cc >= 0 && cc < J;
          if (dt.is_bool()) {
            acci = acci | (a.geti(size_t(r * K + z)) & (in ? bb.geti(size_t(z * J + cc)) : 0));
          } else if (dt.is_int()) {
            i128 yv = in ? bb.geti(size_t(z * J + cc)) : 0;
            i128 q = yv / -3;  // floor division by -3
            if (yv % -3 != 0 && yv > 0) q -= 1;
            acci += a.geti(size_t(r * K + z)) * yv + q;
          } else {
            double yv = in ? bb.getf(size_t(z * J + cc)) : 0;
            accf += a.getf(size_t(r * K + z)) * round_float(dt, double(std::exp2(float(yv))));
          }
        }
        SCOPED_TRACE(cat(dt.name(), " at ", r, ",", c));
        if (dt.is_bool() || dt.is_int()) {
          EXPECT_EQ(out.geti(size_t(r * J + c)), wrap_int(dt, acci));
        } else {
          double tol = dt.scalar == Scalar::Float16 ? 2e-2 : dt.scalar == Scalar::BFloat16 ? 6e-2 : 1e-5;
          EXPECT_NEAR(out.getf(size_t(r * J + c)), accf, tol * (1 + std::fabs(accf)));
        }
      }
  }
}

TEST(CpuBackend, MaskedVectorStore) {
  // out[i, j] = sum_k a[i, k] * b[k, j], written only where j % 3 != 1, with j as 16 lanes.
  const int64_t I = 4, J = 48, K = 6;
  Graph g;
  KernelBuilder b{g};
  auto *A = b.param(0, dtypes::float32, I * K), *B = b.param(1, dtypes::float32, K * J),
       *O = b.param(2, dtypes::float32, I * J);
  auto *i = b.range(I, 0), *j = b.range(J, 1), *k = b.range(K, 2, AxisType::Reduce);
  auto* v = b.mul(b.load(A, b.flat({i, k}, {I, K})), b.load(B, b.flat({k, j}, {K, J})));
  auto* gate = g.alu(Op::CmpNe, g.alu(Op::Mod, j, b.c(3)), b.c(1));
  auto* sink = b.sink({b.store(O, b.flat({i, j}, {I, J}), b.reduce(Op::Add, v, {k}), gate)});
  LowerOptions o;
  o.opts = std::vector<Opt>{Opt::upcast(1, 16)};
  std::vector<float> a(I * K), bb(K * J), out(I * J, -7);
  for (int64_t q = 0; q < I * K; q++) a[q] = float(q % 5);
  for (int64_t q = 0; q < K * J; q++) bb[q] = float(q % 11) - 5;
  auto ck = run_kernel(g, sink, {a.data(), bb.data(), out.data()}, {}, o);
  EXPECT_NE(ck->source.find("llvm.masked.store"), std::string::npos);
  for (int64_t r = 0; r < I; r++)
    for (int64_t c = 0; c < J; c++) {
      float w = 0;
      for (int64_t z = 0; z < K; z++) w += a[r * K + z] * bb[z * J + c];
      EXPECT_EQ(out[r * J + c], c % 3 == 1 ? -7.0f : w) << r << "," << c;
    }
}

// ---- casts ------------------------------------------------------------------------------------

std::vector<DType> all_dtypes() {
  return {dtypes::bool_,    dtypes::int8,    dtypes::int16,  dtypes::int32,  dtypes::int64,
          dtypes::uint8,    dtypes::uint16,  dtypes::uint32, dtypes::uint64, dtypes::float16,
          dtypes::bfloat16, dtypes::float32, dtypes::float64};
}

// Source values that the dtype holds exactly (float specials included).
std::vector<double> cast_sources(DType d) {
  if (d.is_bool()) return {0, 1};
  if (d.is_float()) {
    std::vector<double> v = {0.0,      -0.0,   1.0,     -1.0,  1.5,   -1.5,   2.5,    -2.5,
                             0.75,     100.25, -100.75, 255.0, 256.0, -129.0, 1000.5, 65504.0,
                             -65504.0, 3e-5,   70000.0, 1e10,  -3e9,  kInf,   -kInf,  kNaN};
    for (double& x : v) x = round_float(d, x);
    if (d.scalar == Scalar::Float64) v.push_back(1.0 / 3.0), v.push_back(1e300);
    if (d.scalar == Scalar::Float32) v.push_back(double(1.0f / 3.0f)), v.push_back(double(3.4e38f));
    return v;
  }
  std::vector<double> v = {0,    1,     2,     7,     100,   127, 128,          255,          256,
                           1000, 32767, 32768, 65535, 65536, 1e6, 2147483647.0, 4294967295.0, 1e15};
  if (!d.is_unsigned()) {
    std::vector<double> neg;
    for (double x : v) neg.push_back(-x);
    v.insert(v.end(), neg.begin(), neg.end());
    v.push_back(-2147483648.0);
  }
  for (double& x : v) x = double(wrap_int(d, i128(x)));
  return v;
}

TEST(CpuBackend, CastsBetweenAllDtypes) {
  auto dts = all_dtypes();
  for (DType from : dts) {
    Graph g;
    KernelBuilder b{g};
    std::vector<double> src = cast_sources(from);
    if (from.scalar == Scalar::Int64) src.push_back(double(INT64_MIN)), src.push_back(9007199254740993.0);
    int64_t n = int64_t(src.size());
    Buf in(from, size_t(n));
    for (size_t k = 0; k < src.size(); k++) {
      if (from.is_float())
        in.set(k, src[k]);
      else
        in.set_int(k, i128(src[k]));
    }
    auto* I = b.param(0, from, n);
    auto* i = b.range(n, 0);
    auto* x = b.load(I, i);
    std::vector<const UOp*> stores;
    std::vector<Buf> outs;
    std::vector<void*> bufs{in.data()};
    outs.reserve(dts.size());
    for (size_t t = 0; t < dts.size(); t++) {
      auto* O = b.param(int64_t(t + 1), dts[t], n);
      stores.push_back(b.store(O, i, g.cast(x, dts[t])));
      outs.emplace_back(dts[t], size_t(n));
    }
    for (auto& o : outs) bufs.push_back(o.data());
    run_kernel(g, b.sink(stores), bufs);
    for (size_t t = 0; t < dts.size(); t++) {
      DType to = dts[t];
      for (int64_t k = 0; k < n; k++) {
        double v = in.getf(size_t(k));
        SCOPED_TRACE(cat(from.name(), " ", v, " -> ", to.name()));
        if (to.is_bool()) {
          EXPECT_EQ(outs[t].geti(size_t(k)), (std::isnan(v) || v != 0) ? 1 : 0);
        } else if (to.is_float()) {
          double want;
          if (!from.is_float() && to.scalar == Scalar::Float32) {
            i128 iv = in.geti(size_t(k));  // one rounding straight from the integer
            want =
                from.is_unsigned() ? double(static_cast<float>(uint64_t(iv))) : double(static_cast<float>(int64_t(iv)));
          } else {
            want = round_float(to, from.is_float() ? v : double(in.geti(size_t(k))));
          }
          EXPECT_TRUE(same_float(outs[t].getf(size_t(k)), want)) << outs[t].getf(size_t(k)) << " want " << want;
        } else if (from.is_float()) {
          if (!std::isfinite(v) || std::fabs(v) >= 9.2e18) continue;  // undefined (out of int64 range)
          EXPECT_EQ(outs[t].geti(size_t(k)), wrap_int(to, i128(std::trunc(v))));
        } else {
          EXPECT_EQ(outs[t].geti(size_t(k)), wrap_int(to, in.geti(size_t(k))));
        }
      }
    }
  }
}

TEST(CpuBackend, HalfMathRoundsEveryOp) {
  // float16 and bfloat16 results are the exactly rounded float results (per op).
  for (DType dt : {dtypes::float16, dtypes::bfloat16}) {
    Graph g;
    KernelBuilder b{g};
    const int64_t n = 6;
    auto *A = b.param(0, dt, n), *B = b.param(1, dt, n), *S = b.param(2, dt, n), *P = b.param(3, dt, n);
    auto* D = b.param(4, dt, n);
    auto* i = b.range(n, 0);
    auto *x = b.load(A, i), *y = b.load(B, i);
    auto* sink = b.sink({b.store(S, i, b.add(x, y)), b.store(P, i, b.mul(x, y)), b.store(D, i, g.alu(Op::Div, x, y))});
    std::vector<double> av = {1.0, 1000.0, 3.0, -0.1, 65000.0, 0.001}, bv = {0.0009765625, 0.3, 7.0, 3.0, 1000.0, -0.5};
    Buf a(dt, n), bb(dt, n), s(dt, n), p(dt, n), d(dt, n);
    for (int64_t k = 0; k < n; k++) a.set(size_t(k), round_float(dt, av[k])), bb.set(size_t(k), round_float(dt, bv[k]));
    run_kernel(g, sink, {a.data(), bb.data(), s.data(), p.data(), d.data()});
    for (int64_t k = 0; k < n; k++) {
      double xa = a.getf(size_t(k)), xb = bb.getf(size_t(k));
      EXPECT_TRUE(same_float(s.getf(size_t(k)), round_float(dt, xa + xb))) << dt.name() << " " << xa << "+" << xb;
      EXPECT_TRUE(same_float(p.getf(size_t(k)), round_float(dt, xa * xb))) << dt.name() << " " << xa << "*" << xb;
      EXPECT_TRUE(same_float(d.getf(size_t(k)), round_float(dt, xa / xb))) << dt.name() << " " << xa << "/" << xb;
    }
  }
}

// ---- bools, comparisons, bit ops ----------------------------------------------------------------

TEST(CpuBackend, BoolResultsAndComparisons) {
  Graph g;
  KernelBuilder b{g};
  const int64_t n = 8;
  auto *A = b.param(0, dtypes::float32, n), *B = b.param(1, dtypes::float32, n);
  std::vector<Op> ops = {Op::CmpLt, Op::CmpNe, Op::CmpEq, Op::CmpGt, Op::CmpGe, Op::CmpLe};
  auto* i = b.range(n, 0);
  auto *x = b.load(A, i), *y = b.load(B, i);
  std::vector<const UOp*> stores;
  for (size_t k = 0; k < ops.size(); k++)
    stores.push_back(b.store(b.param(int64_t(k + 2), dtypes::bool_, n), i, g.alu(ops[k], x, y)));
  // not(x < y) & (x != 2) | (y == 0), and where(x < y, x, y)
  auto* lt = g.alu(Op::CmpLt, x, y);
  auto* logic = g.alu(Op::Or, g.alu(Op::And, g.alu(Op::Not, lt), g.alu(Op::CmpNe, x, g.cfloat(2.0))),
                      g.alu(Op::CmpEq, y, g.cfloat(0.0)));
  stores.push_back(b.store(b.param(8, dtypes::bool_, n), i, logic));
  stores.push_back(b.store(b.param(9, dtypes::float32, n), i, g.alu(Op::Where, lt, x, y)));
  std::vector<float> a = {1, 2, 3, float(kNaN), -0.0f, 5, float(kInf), 2}, bb = {2, 2, 1, 1, 0.0f, float(kNaN), 1, 0};
  std::vector<std::vector<uint8_t>> outs(7, std::vector<uint8_t>(n, 7));
  std::vector<float> sel(n);
  std::vector<void*> bufs{a.data(), bb.data()};
  for (auto& o : outs) bufs.push_back(o.data());
  bufs.push_back(sel.data());
  run_kernel(g, b.sink(stores), bufs);
  for (int64_t k = 0; k < n; k++) {
    float p = a[k], q = bb[k];
    bool want[6] = {p < q, p != q, !(p != q), q < p, !(p < q), !(q < p)};  // the spec's definitions
    for (size_t o = 0; o < 6; o++) EXPECT_EQ(outs[o][k], want[o] ? 1 : 0) << op_name(ops[o]) << " " << p << " " << q;
    EXPECT_EQ(outs[6][k], ((!(p < q) && p != 2) || q == 0) ? 1 : 0) << k;
    EXPECT_TRUE(same_float(sel[k], p < q ? p : q)) << k;
  }
}

TEST(CpuBackend, IntBitOpsAndShifts) {
  Graph g;
  KernelBuilder b{g};
  const int64_t n = 6;
  auto *A = b.param(0, dtypes::int32, n), *S = b.param(1, dtypes::int32, n), *U = b.param(2, dtypes::uint32, n);
  auto *Shl = b.param(3, dtypes::int32, n), *Shr = b.param(4, dtypes::int32, n), *Ushr = b.param(5, dtypes::uint32, n);
  auto* X = b.param(6, dtypes::int32, n);
  auto* i = b.range(n, 0);
  auto *a = b.load(A, i), *s = b.load(S, i), *u = b.load(U, i);
  auto* bits =
      g.alu(Op::Xor, g.alu(Op::Or, g.alu(Op::And, a, g.cint(0x1337, dtypes::int32)), g.cint(8, dtypes::int32)), s);
  auto* sink = b.sink({b.store(Shl, i, g.alu(Op::Shl, a, s)), b.store(Shr, i, g.alu(Op::Shr, a, s)),
                       b.store(Ushr, i, g.alu(Op::Shr, u, g.cast(s, dtypes::uint32))), b.store(X, i, bits)});
  std::vector<int32_t> av = {1, -8, 0x7fffffff, -1, 12345, -12345}, sv = {0, 2, 31, 40, 32, 5}, shl(n), shr(n), x(n);
  std::vector<uint32_t> uv = {1, 0x80000000u, 0xffffffffu, 7, 9, 0xdeadbeef}, ushr(n);
  run_kernel(g, sink, {av.data(), sv.data(), uv.data(), shl.data(), shr.data(), ushr.data(), x.data()});
  for (int64_t k = 0; k < n; k++) {
    int sh = sv[k];
    EXPECT_EQ(shl[k], sh >= 32 ? 0 : int32_t(uint32_t(av[k]) << sh)) << k;
    EXPECT_EQ(shr[k], sh >= 32 ? (av[k] < 0 ? -1 : 0) : av[k] >> sh) << k;
    EXPECT_EQ(ushr[k], sh >= 32 ? 0u : uv[k] >> sh) << k;
    EXPECT_EQ(x[k], ((av[k] & 0x1337) | 8) ^ sv[k]) << k;
  }
}

// ---- transcendentals ----------------------------------------------------------------------------

TEST(CpuBackend, TranscendentalsMatchLibm) {
  std::vector<double> xs = {0.0,        -0.0, 1.0, -1.0, 0.5,  2.0,   10.5,   -10.5, 100.0, -100.0, 1e-3,
                            3.14159265, 1e4,  1e6, -1e6, 1e30, 130.0, -160.0, kInf,  -kInf, kNaN,   7e-40};
  std::vector<double> ys = {2.0, 3.0, -1.0, 0.0, 0.5, -0.5, 2.5, 1e3, kInf, -kInf, kNaN, 3.0};
  for (DType dt : {dtypes::float32, dtypes::float64}) {
    Graph g;
    KernelBuilder b{g};
    const int64_t n = int64_t(xs.size());
    auto *X = b.param(0, dt, n), *Y = b.param(1, dt, n);
    auto* i = b.range(n, 0);
    auto *x = b.load(X, i), *y = b.load(Y, i);
    std::vector<Op> ops = {Op::Exp2, Op::Log2, Op::Sin, Op::Sqrt, Op::Recip, Op::Trunc};
    std::vector<const UOp*> stores;
    for (size_t k = 0; k < ops.size(); k++)
      stores.push_back(b.store(b.param(int64_t(k + 2), dt, n), i, g.alu(ops[k], x)));
    stores.push_back(b.store(b.param(8, dt, n), i, g.alu(Op::Pow, x, y)));
    stores.push_back(b.store(b.param(9, dt, n), i, g.alu(Op::Max, x, y)));
    Buf xb(dt, size_t(n)), yb(dt, size_t(n));
    for (int64_t k = 0; k < n; k++) xb.set(size_t(k), xs[k]), yb.set(size_t(k), ys[size_t(k) % ys.size()]);
    std::vector<Buf> outs(8, Buf(dt, size_t(n)));
    std::vector<void*> bufs{xb.data(), yb.data()};
    for (auto& o : outs) bufs.push_back(o.data());
    run_kernel(g, b.sink(stores), bufs);
    bool f32 = dt.scalar == Scalar::Float32;
    for (int64_t k = 0; k < n; k++) {
      double x = xb.getf(size_t(k)), y = yb.getf(size_t(k));
      double want[8] = {f32 ? double(std::exp2(float(x))) : std::exp2(x),
                        f32 ? double(std::log2(float(x))) : std::log2(x),
                        f32 ? double(std::sin(float(x))) : std::sin(x),
                        f32 ? double(std::sqrt(float(x))) : std::sqrt(x),
                        f32 ? double(1.0f / float(x)) : 1.0 / x,
                        std::trunc(x),
                        f32 ? double(std::pow(float(x), float(y))) : std::pow(x, y),
                        std::isnan(x) || std::isnan(y) ? kNaN : std::max(x, y)};
      for (int o = 0; o < 8; o++) {
        double got = outs[size_t(o)].getf(size_t(k));
        SCOPED_TRACE(cat(dt.name(), " op ", o, " x=", x, " y=", y, " got ", got, " want ", want[o]));
        if (std::isnan(want[o]) || std::isinf(want[o]) || want[o] == 0) {
          EXPECT_TRUE(same_float(got, want[o]) || (o == 7 && got == want[o]));
        } else {
          // libm and vector libm variants agree to a few ulp
          EXPECT_NEAR(got, want[o], std::fabs(want[o]) * (f32 ? 4e-7 : 1e-15) * 4);
        }
      }
    }
  }
}

// ---- division -----------------------------------------------------------------------------------

TEST(CpuBackend, FloorDivModWithNegativeOperands) {
  Graph g;
  KernelBuilder b{g};
  std::vector<int32_t> av, bv;
  for (int x = -10; x <= 10; x++)
    for (int y : {-4, -3, -1, 1, 2, 3, 7}) av.push_back(x), bv.push_back(y);
  av.push_back(INT32_MIN), bv.push_back(-1);  // wraps to INT_MIN, no trap
  av.push_back(5), bv.push_back(0);           // undefined value, but no trap
  const int64_t n = int64_t(av.size());
  auto *A = b.param(0, dtypes::int32, n), *B = b.param(1, dtypes::int32, n);
  auto *D = b.param(2, dtypes::int32, n), *M = b.param(3, dtypes::int32, n);
  auto *D3 = b.param(4, dtypes::int32, n), *Mn3 = b.param(5, dtypes::int32, n);
  auto* i = b.range(n, 0);
  auto *a = b.load(A, i), *bb = b.load(B, i);
  auto* sink = b.sink({b.store(D, i, g.alu(Op::Idiv, a, bb)), b.store(M, i, g.alu(Op::Mod, a, bb)),
                       b.store(D3, i, g.alu(Op::Idiv, a, g.cint(3, dtypes::int32))),
                       b.store(Mn3, i, g.alu(Op::Mod, a, g.cint(-3, dtypes::int32)))});
  std::vector<int32_t> d(n), m(n), d3(n), mn3(n);
  run_kernel(g, sink, {av.data(), bv.data(), d.data(), m.data(), d3.data(), mn3.data()});
  auto fdiv = [](int64_t x, int64_t y) { return (x - (((x % y) + y) % y)) / y; };
  auto fmod = [](int64_t x, int64_t y) { return ((x % y) + y) % y; };
  for (int64_t k = 0; k < n; k++) {
    int64_t x = av[k], y = bv[k];
    EXPECT_EQ(d3[k], fdiv(x, 3)) << x;
    EXPECT_EQ(mn3[k], int32_t(fmod(x, -3))) << x;
    if (y == 0) continue;
    EXPECT_EQ(d[k], int32_t(wrap_int(dtypes::int32, fdiv(x, y)))) << x << " // " << y;
    EXPECT_EQ(m[k], int32_t(fmod(x, y))) << x << " % " << y;
  }
}

TEST(CpuBackend, FloorDivModOfIndexMath) {
  // out[i] = ((i - 7) // 3) * 100 + (i - 7) % 3 over index values that go negative.
  Graph g;
  KernelBuilder b{g};
  const int64_t n = 20;
  auto* O = b.param(0, dtypes::int64, n);
  auto* i = b.range(n, 0);
  auto* x = b.add(i, b.c(-7));
  auto* v = b.add(b.mul(g.alu(Op::Idiv, x, b.c(3)), b.c(100)), g.alu(Op::Mod, x, b.c(3)));
  auto* sink = b.sink({b.store(O, i, g.cast(v, dtypes::int64))});
  std::vector<int64_t> o(n);
  run_kernel(g, sink, {o.data()});
  for (int64_t k = 0; k < n; k++) {
    int64_t xx = k - 7, q = xx >= 0 ? xx / 3 : -((-xx + 2) / 3);
    EXPECT_EQ(o[k], q * 100 + (xx - q * 3)) << k;
  }
}

// ---- threads and variables -------------------------------------------------------------------

TEST(CpuBackend, ThreadSplitMatchesUnsplit) {
  const int64_t R = 64, C = 4096;
  std::vector<float> a(R * C), split(R), whole(R), e1(R * C), e2(R * C);
  for (int64_t k = 0; k < R * C; k++) a[k] = float((k * 2654435761u) % 1000) / 100.0f;
  int64_t threads[2] = {0, 0};
  for (int pass = 0; pass < 2; pass++) {
    Graph g;
    KernelBuilder b{g};
    auto *A = b.param(0, dtypes::float32, R * C), *S = b.param(1, dtypes::float32, R),
         *E = b.param(2, dtypes::float32, R * C);
    auto *i = b.range(R, 0), *k = b.range(C, 1, AxisType::Reduce), *i2 = b.range(R * C, 2);
    auto* sum = b.reduce(Op::Add, b.load(A, b.flat({i, k}, {R, C})), {k});
    auto* ew = g.alu(Op::Sqrt, b.add(b.load(A, i2), g.cfloat(1.0)));
    LowerOptions opts;
    opts.allow_threads = pass == 0;
    // one store per kernel so each kernel can split its own loop
    auto ck1 =
        run_kernel(g, b.sink({b.store(S, i, sum)}), {a.data(), pass == 0 ? split.data() : whole.data()}, {}, opts);
    auto ck2 =
        run_kernel(g, b.sink({b.store(E, i2, ew)}), {a.data(), nullptr, pass == 0 ? e1.data() : e2.data()}, {}, opts);
    threads[pass] = ck1->threads * 100 + ck2->threads;
  }
  if (jit().target().cores > 1) {
    EXPECT_EQ(threads[0], 202) << "both kernels should split across 2 cores";
  }
  EXPECT_EQ(threads[1], 101);
  for (int64_t k = 0; k < R; k++) EXPECT_EQ(split[k], whole[k]) << k;
  for (int64_t k = 0; k < R * C; k++) ASSERT_EQ(e1[k], e2[k]) << k;
}

TEST(CpuBackend, DefineVarBoundAtLaunch) {
  // out[i] = a[i] * n for i < n (a loop with a symbolic bound); the tail is untouched.
  Graph g;
  KernelBuilder b{g};
  const int64_t cap = 50;
  auto* n = g.var("n", 0, cap);
  auto *A = b.param(0, dtypes::int32, cap), *O = b.param(1, dtypes::int32, cap);
  auto* i = b.range(n, 0);
  auto* sink = b.sink({b.store(O, i, b.mul(b.load(A, i), g.cast(n, dtypes::int32)))});
  LoweredKernel k = lower_kernel(g, sink, jit().target());
  ASSERT_EQ(k.vars.size(), 1u);
  EXPECT_EQ(k.vars[0].name, "n");
  auto ck = jit().compile(k);
  std::vector<int32_t> a(cap);
  for (int64_t x = 0; x < cap; x++) a[x] = int32_t(x + 1);
  for (int64_t nv : {0, 1, 17, 50}) {
    std::vector<int32_t> o(cap, -1);
    void* bufs[2] = {a.data(), o.data()};
    jit().run(*ck, bufs, &nv);
    for (int64_t x = 0; x < cap; x++) ASSERT_EQ(o[x], x < nv ? a[x] * int32_t(nv) : -1) << "n=" << nv << " i=" << x;
  }
  int64_t bad = 51;
  void* bufs[2] = {a.data(), a.data()};
  EXPECT_THROW(jit().run(*ck, bufs, &bad), Error);
}

TEST(CpuBackend, OverlappingWrittenBuffersAreRejected) {
  Graph g;
  KernelBuilder b{g};
  auto *A = b.param(0, dtypes::float32, 16), *O = b.param(1, dtypes::float32, 16);
  auto* i = b.range(16, 0);
  LoweredKernel k = lower_kernel(g, b.sink({b.store(O, i, b.load(A, i))}), jit().target());
  auto ck = jit().compile(k);
  std::vector<float> x(32, 1);
  void* bufs[2] = {x.data(), x.data() + 8};
  EXPECT_THROW(jit().run(*ck, bufs), Error);
}

TEST(CpuBackend, ThreadSplitOfAnOddSize) {
  // 100003 elements do not split evenly: thread 0 runs 50002, thread 1 runs 50001.
  const int64_t n = 100003;
  Graph g;
  KernelBuilder b{g};
  auto *A = b.param(0, dtypes::float32, n), *O = b.param(1, dtypes::float32, n);
  auto* i = b.range(n, 0);
  auto* sink = b.sink({b.store(O, i, b.add(b.mul(b.load(A, i), g.cfloat(2.0)), g.cast(i, dtypes::float32)))});
  std::vector<float> a(n), o(n + 1, -1);
  for (int64_t k = 0; k < n; k++) a[k] = float(k % 97);
  auto ck = run_kernel(g, sink, {a.data(), o.data()});
  if (jit().target().cores > 1) {
    EXPECT_EQ(ck->threads, jit().target().cores);
  }
  for (int64_t k = 0; k < n; k++) ASSERT_EQ(o[k], a[k] * 2 + float(k)) << k;
  EXPECT_EQ(o[n], -1);  // nothing past the end
}

TEST(CpuBackend, ThreefryKnownAnswers) {
  // Random123's threefry2x32_20 known-answer vectors; the spec's uint64 form packs word 1 high.
  Graph g;
  KernelBuilder b{g};
  const int64_t n = 3;
  auto *X = b.param(0, dtypes::uint64, n), *K = b.param(1, dtypes::uint64, n), *O = b.param(2, dtypes::uint64, n);
  auto* i = b.range(n, 0);
  auto* sink = b.sink({b.store(O, i, g.alu(Op::Threefry, b.load(X, i), b.load(K, i)))});
  std::vector<uint64_t> x = {0, ~0ull, 0x85a308d3243f6a88ull}, k = {0, ~0ull, 0x0370734413198a2eull}, o(n);
  run_kernel(g, sink, {x.data(), k.data(), o.data()});
  EXPECT_EQ(o[0], 0x99ba4efe6b200159ull);
  EXPECT_EQ(o[1], 0xbb002be71cb996fcull);
  EXPECT_EQ(o[2], 0x483df7a0c4923a9cull);
}

// ---- caching, IR text ------------------------------------------------------------------------

TEST(CpuBackend, CompiledKernelsAreCached) {
  Graph g;
  KernelBuilder b{g};
  auto *A = b.param(0, dtypes::float32, 100), *O = b.param(1, dtypes::float32, 100);
  auto* i = b.range(100, 0);
  auto* sink = b.sink({b.store(O, i, b.mul(b.load(A, i), g.cfloat(3.0)))});
  auto first = jit().compile_ast(g, sink);
  auto hits = jit().stats().cache_hits;
  auto second = jit().compile_ast(g, sink);
  EXPECT_EQ(first.get(), second.get());
  EXPECT_EQ(jit().stats().cache_hits, hits + 1);
  // The same kernel built in another graph hits the cache too (content hash).
  Graph g2;
  KernelBuilder b2{g2};
  auto *A2 = b2.param(0, dtypes::float32, 100), *O2 = b2.param(1, dtypes::float32, 100);
  auto* i2 = b2.range(100, 0);
  auto third = jit().compile_ast(g2, b2.sink({b2.store(O2, i2, b2.mul(b2.load(A2, i2), g2.cfloat(3.0)))}));
  EXPECT_EQ(first.get(), third.get());
}

TEST(CpuBackend, PrintsLlvmIrOfAKernel) {
  Graph g;
  KernelBuilder b{g};
  const int64_t R = 4, C = 8;
  auto *A = b.param(0, dtypes::float32, R * C), *O = b.param(1, dtypes::float32, R);
  auto *i = b.range(R, 0), *k = b.range(C, 1, AxisType::Reduce);
  auto* sink = b.sink({b.store(O, i, b.reduce(Op::Max, b.load(A, b.flat({i, k}, {R, C})), {k}))}, "row_max");
  LoweredKernel lk = lower_kernel(g, sink, jit().target());
  auto ck = jit().compile(lk);
  std::printf("---- linear of %s ----\n%s", lk.name.c_str(), linear_str(lk.linear).c_str());
  std::printf("---- LLVM IR of %s (compiled in %.2f ms) ----\n%s", ck->symbol.c_str(), ck->compile_ms,
              ck->source.c_str());
  EXPECT_NE(ck->source.find("define void @" + ck->symbol + "(ptr %bufs, ptr %vars, i64 %core_id, i64 %ncores)"),
            std::string::npos);
  EXPECT_NE(ck->source.find("llvm.maximum."), std::string::npos);
  EXPECT_NE(ck->source.find("noalias"), std::string::npos);
  std::vector<float> a(R * C), o(R);
  for (int64_t x = 0; x < R * C; x++) a[x] = float((x * 5) % 7);
  void* bufs[2] = {a.data(), o.data()};
  jit().run(*ck, bufs);
  for (int64_t r = 0; r < R; r++) EXPECT_EQ(o[r], *std::max_element(a.begin() + r * C, a.begin() + (r + 1) * C));
}

// A load with a scalar gate reads zeros where its gate is off (a select of the address, no
// branch) and takes its alt value there: out[i] = pad(a, zeros)[i - 2] + pad(a, -7)[i + 3].
TEST(CpuBackend, ScalarGatedLoadsSelectTheirAddress) {
  Graph g;
  KernelBuilder b{g};
  const int64_t N = 20;
  auto *A = b.param(0, dtypes::float32, N), *O = b.param(1, dtypes::float32, N);
  auto* i = b.range(N, 0);
  auto in = [&](const UOp* x) { return g.alu(Op::And, g.alu(Op::CmpLt, b.c(-1), x), g.alu(Op::CmpLt, x, b.c(N))); };
  const UOp *lo = b.add(i, b.c(-2)), *hi = b.add(i, b.c(3));
  auto* v = b.add(b.load(A, lo, g.cfloat(0.0), in(lo)), b.load(A, hi, g.cfloat(-7.0), in(hi)));
  auto* sink = b.sink({b.store(O, i, v)}, "gated");
  LowerOptions no_opts;
  no_opts.optimize = false;  // scalar loads, one per gate
  LoweredKernel lk = lower_kernel(g, sink, jit().target(), no_opts);
  auto ck = jit().compile(lk);
  EXPECT_EQ(ck->source.find("label %ld"), std::string::npos) << ck->source;  // no branch around a load
  EXPECT_NE(ck->source.find(kCpuZeroRegionSymbol), std::string::npos) << ck->source;
  std::vector<float> a(N), o(N);
  for (int64_t x = 0; x < N; x++) a[size_t(x)] = float(x + 1);
  void* bufs[2] = {a.data(), o.data()};
  jit().run(*ck, bufs);
  for (int64_t x = 0; x < N; x++) {
    float want = (x - 2 >= 0 ? a[size_t(x - 2)] : 0.0f) + (x + 3 < N ? a[size_t(x + 3)] : -7.0f);
    EXPECT_EQ(o[size_t(x)], want) << x;
  }
}

// The pure instructions of IR text (arithmetic, compares, selects, addresses, casts, lane moves),
// by their right-hand side: how often each appears.
std::map<std::string, int> pure_instructions(const std::string& ir) {
  static const char* const kPure[] = {
      "add ",           "sub ",          "mul ",   "shl ",     "and ",           "or ",
      "xor ",           "icmp ",         "fcmp ",  "select ",  "fadd ",          "fmul ",
      "sext ",          "zext ",         "trunc ", "bitcast ", "getelementptr ", "extractelement ",
      "insertelement ", "shufflevector "};
  std::map<std::string, int> count;
  std::istringstream in(ir);
  for (std::string line; std::getline(in, line);) {
    size_t eq = line.find(" = ");
    if (line.rfind("  %", 0) != 0 || eq == std::string::npos) continue;
    std::string rhs = line.substr(eq + 3);
    for (const char* p : kPure)
      if (rhs.rfind(p, 0) == 0) count[rhs]++;
  }
  return count;
}

// Address math that several accesses share is emitted once where it dominates them: three loads
// of a row at c, c + 1 and c + 2 and the store share the row's hoisted base, which the renderer
// used to emit once per access (LLVM parsed and removed the copies). One loop nest: no
// instruction text may appear twice.
TEST(CpuBackend, SharedAddressMathIsEmittedOnce) {
  Graph g;
  KernelBuilder b{g};
  const int64_t R = 6, C = 10;
  auto *A = b.param(0, dtypes::float32, R * C + 2), *O = b.param(1, dtypes::float32, R * C);
  auto *r = b.range(R, 0), *c = b.range(C, 1);
  const UOp* at = b.flat({r, c}, {R, C});
  auto* v = b.add(b.add(b.load(A, at), b.load(A, b.add(at, b.c(1)))), b.load(A, b.add(at, b.c(2))));
  auto* sink = b.sink({b.store(O, at, v)}, "window");
  LowerOptions no_opts;
  no_opts.optimize = false;  // scalar loops, the accesses as written
  auto ck = jit().compile(lower_kernel(g, sink, jit().target(), no_opts));
  for (const auto& [rhs, n] : pure_instructions(ck->source)) EXPECT_EQ(n, 1) << rhs << "\n" << ck->source;
  std::vector<float> a(R * C + 2), o(R * C);
  for (size_t q = 0; q < a.size(); q++) a[q] = float(q % 7) - 2.5f;
  void* bufs[2] = {a.data(), o.data()};
  jit().run(*ck, bufs);
  for (size_t q = 0; q < o.size(); q++) EXPECT_EQ(o[q], a[q] + a[q + 1] + a[q + 2]) << q;
}

// What a loop body emits is not reused after the loop: two reductions of a row, one loop after the
// other, each address the row from a base built inside its loop (the same text twice). Reusing the
// first loop's value in the second would not dominate it (LLVM's verifier refuses such IR).
TEST(CpuBackend, ValuesOfALoopBodyAreNotReusedAfterIt) {
  Graph g;
  KernelBuilder b{g};
  const int64_t R = 5, C = 12;
  auto *A = b.param(0, dtypes::float32, R * C), *S = b.param(1, dtypes::float32, R),
       *M = b.param(2, dtypes::float32, R);
  auto *r = b.range(R, 0), *k1 = b.range(C, 1, AxisType::Reduce), *k2 = b.range(C, 2, AxisType::Reduce);
  auto* sum = b.reduce(Op::Add, b.load(A, b.flat({r, k1}, {R, C})), {k1});
  auto* max = b.reduce(Op::Max, b.load(A, b.flat({r, k2}, {R, C})), {k2});
  auto* sink = b.sink({b.store(S, r, sum), b.store(M, r, max)}, "sum_and_max");
  LowerOptions no_opts;
  no_opts.optimize = false;
  auto ck = jit().compile(lower_kernel(g, sink, jit().target(), no_opts));
  int repeated = 0;  // texts both loops emit, each in its own body
  for (const auto& [rhs, n] : pure_instructions(ck->source)) repeated += n > 1;
  EXPECT_GT(repeated, 0) << ck->source;
  std::vector<float> a(R * C), s(R), m(R);
  for (size_t q = 0; q < a.size(); q++) a[q] = float((q * 5) % 11) - 4.0f;
  void* bufs[3] = {a.data(), s.data(), m.data()};
  jit().run(*ck, bufs);
  for (int64_t y = 0; y < R; y++) {
    float want_s = 0, want_m = -1e30f;
    for (int64_t x = 0; x < C; x++) want_s += a[size_t(y * C + x)], want_m = std::max(want_m, a[size_t(y * C + x)]);
    EXPECT_EQ(s[size_t(y)], want_s) << y;
    EXPECT_EQ(m[size_t(y)], want_m) << y;
  }
}

// A vector load whose gate is a row's validity (one bit splat across the lanes) and the columns'
// (per lane): the row's bit selects the address, only the columns mask the load. out[r, c] =
// pad(a)[r - 1, c + 1] with c as 8 vector lanes.
TEST(CpuBackend, AVectorLoadsUniformGatePartSelectsItsAddress) {
  Graph g;
  KernelBuilder b{g};
  const int64_t R = 5, C = 16;
  auto *A = b.param(0, dtypes::float32, R * C), *O = b.param(1, dtypes::float32, R * C);
  auto *r = b.range(R, 0), *c = b.range(C, 1);
  const UOp *y = b.add(r, b.c(-1)), *x = b.add(c, b.c(1));
  auto in = [&](const UOp* v, int64_t n) {
    return g.alu(Op::And, g.alu(Op::CmpLt, b.c(-1), v), g.alu(Op::CmpLt, v, b.c(n)));
  };
  auto* v = b.load(A, b.add(b.mul(y, b.c(C)), x), g.cfloat(0.0), g.alu(Op::And, in(y, R), in(x, C)));
  auto* sink = b.sink({b.store(O, b.flat({r, c}, {R, C}), v)}, "shifted");
  LowerOptions o;
  o.opts = std::vector<Opt>{Opt::upcast(1, 8)};
  LoweredKernel lk = lower_kernel(g, sink, jit().target(), o);
  auto ck = jit().compile(lk);
  EXPECT_NE(ck->source.find(std::string(kCpuZeroRegionSymbol) + ", i64 "), std::string::npos)
      << ck->source;  // a base select
  EXPECT_NE(ck->source.find("llvm.masked.load"), std::string::npos) << ck->source;
  std::vector<float> a(R * C), out(R * C, -1.0f);
  for (int64_t q = 0; q < R * C; q++) a[size_t(q)] = float(q + 1);
  void* bufs[2] = {a.data(), out.data()};
  jit().run(*ck, bufs);
  for (int64_t yy = 0; yy < R; yy++)
    for (int64_t xx = 0; xx < C; xx++) {
      bool inside = yy >= 1 && xx + 1 < C;
      EXPECT_EQ(out[size_t(yy * C + xx)], inside ? a[size_t((yy - 1) * C + xx + 1)] : 0.0f) << yy << "," << xx;
    }
}

// A gated load whose gate is off reads the region of zeros at its own index from the region's
// middle: the gate selects only the base, so the select does not change with the index. An index
// that can reach further than half the region either side selects the whole address instead (the
// kernel's block of zeros). out[r, c] = c < 5 ? a[r * stride + c] : 0 for r in {0, 1}.
TEST(CpuBackend, GatedLoadsReadTheRegionOfZerosWhereTheirIndexFits) {
  const int64_t C = 16;
  for (int64_t stride : {C, kCpuZeroRegionBytes / 4}) {
    Graph g;
    KernelBuilder b{g};
    auto *A = b.param(0, dtypes::float32, stride + C), *O = b.param(1, dtypes::float32, 2 * C);
    auto *r = b.range(2, 0), *c = b.range(C, 1);
    auto* v = b.load(A, b.add(b.mul(r, b.c(stride)), c), g.cfloat(0.0), g.alu(Op::CmpLt, c, b.c(5)));
    auto* sink = b.sink({b.store(O, b.flat({r, c}, {2, C}), v)}, "gated_rows");
    LowerOptions no_opts;
    no_opts.optimize = false;
    LoweredKernel lk = lower_kernel(g, sink, jit().target(), no_opts);
    auto ck = jit().compile(lk);
    const bool fits = stride == C;
    EXPECT_EQ(ck->source.find(kCpuZeroRegionSymbol) != std::string::npos, fits) << stride << "\n" << ck->source;
    EXPECT_EQ(ck->source.find(".zeros = internal constant") != std::string::npos, !fits) << stride;
    // 64 MiB of address space for the far row; only the elements read are written
    std::unique_ptr<float[]> a(new float[size_t(stride + C)]);
    for (int64_t q = 0; q < C; q++) a[size_t(q)] = float(q + 1), a[size_t(stride + q)] = float(-q - 1);
    std::vector<float> out(2 * C, -100.0f);
    void* bufs[2] = {a.get(), out.data()};
    jit().run(*ck, bufs);
    for (int64_t row = 0; row < 2; row++)
      for (int64_t q = 0; q < C; q++)
        EXPECT_EQ(out[size_t(row * C + q)], q < 5 ? a[size_t(row * stride + q)] : 0.0f) << stride << " " << q;
  }
}

// Codegen runs without loop strength reduction; the renderer splits an address at its innermost
// loop instead: the terms fixed there address a base hoisted out of the loop, a term range * c is
// an induction variable of its own. Here the hoisted base (X - i) lies before the buffer for every
// i > 0 and the inner term j * 8 steps by 8: every element still lands where it should.
TEST(CpuBackend, AddressesSplitAtTheInnerLoopComputeEveryElement) {
  Graph g;
  KernelBuilder b{g};
  auto *X = b.param(0, dtypes::float32, 64), *Y = b.param(1, dtypes::float32, 64);
  auto *i = b.range(8, 0), *j = b.range(8, 1);
  auto* from = b.add(b.add(b.mul(j, b.c(8)), b.mul(i, b.c(-1))), b.c(7));
  auto* sink = b.sink({b.store(Y, b.add(b.mul(j, b.c(8)), i), b.load(X, from))}, "reversed_rows");
  LowerOptions no_opts;
  no_opts.optimize = false;
  LoweredKernel lk = lower_kernel(g, sink, jit().target(), no_opts);
  auto ck = jit().compile(lk);
  EXPECT_NE(ck->source.find(".s0 = phi i64"), std::string::npos) << ck->source;  // j * 8 stepped by 8
  std::vector<float> x(64), y(64, -1);
  for (size_t q = 0; q < 64; q++) x[q] = float(q) * 0.5f + 1;
  void* bufs[2] = {x.data(), y.data()};
  jit().run(*ck, bufs);
  for (size_t jj = 0; jj < 8; jj++)
    for (size_t ii = 0; ii < 8; ii++) ASSERT_EQ(y[jj * 8 + ii], x[jj * 8 + 7 - ii]) << jj << "," << ii;
}

// A kernel is one function: the entry point loads its buffers' pointers and runs the body, with no
// body to inline (LLVM's inliner took 5% of a small CNN's compile adding what it now reads here).
// Every load and store of a buffer is in that buffer's alias scope, and a store is apart from the
// other buffers' scopes (LLVM asks either side of a pair, so the loads need no list of their own);
// the kernel computes its values.
TEST(CpuBackend, EachBufferIsItsOwnAliasScope) {
  Graph g;
  KernelBuilder b{g};
  auto *A = b.param(0, dtypes::float32, 8), *B = b.param(1, dtypes::float32, 8), *O = b.param(2, dtypes::float32, 8);
  auto* i = b.range(8, 0);
  auto* sink = b.sink({b.store(O, i, g.alu(Op::Add, b.load(A, i), b.load(B, i)))}, "scoped");
  LowerOptions no_opts;
  no_opts.optimize = false;
  auto ck = jit().compile(lower_kernel(g, sink, jit().target(), no_opts));
  const std::string& src = ck->source;
  EXPECT_EQ(src.find(".body"), std::string::npos) << src;
  size_t defines = 0;
  for (size_t at = src.find("define "); at != std::string::npos; at = src.find("define ", at + 1)) defines++;
  EXPECT_EQ(defines, 1u) << src;
  // The scope (the single entry of its list !N = !{!S}) named after "!<key> !" on a line.
  auto listed = [&](const std::string& line, const std::string& key) -> std::string {
    const size_t at = line.find("!" + key + " !");
    if (at == std::string::npos) return "";
    const std::string id =
        line.substr(at + key.size() + 2, line.find_first_of(", \n", at + key.size() + 2) - at - key.size() - 2);
    const size_t def = src.find("\n" + id + " = !{");
    return def == std::string::npos ? "?" : src.substr(def + id.size() + 6, src.find('}', def) - def - id.size() - 6);
  };
  std::set<std::string> load_scopes;
  std::string store_scope, store_apart;
  std::istringstream lines(src);
  for (std::string line; std::getline(lines, line);) {
    if (line.find(" load float") != std::string::npos) {
      load_scopes.insert(listed(line, "alias.scope"));
      EXPECT_EQ(line.find("!noalias"), std::string::npos) << line;
    }
    if (line.find("store float") != std::string::npos) {
      store_scope = listed(line, "alias.scope");
      store_apart = listed(line, "noalias");
    }
  }
  ASSERT_EQ(load_scopes.size(), 2u) << src;  // A's and B's
  EXPECT_EQ(load_scopes.count(""), 0u) << src;
  ASSERT_FALSE(store_scope.empty()) << src;
  EXPECT_EQ(load_scopes.count(store_scope), 0u) << src;
  for (const std::string& l : load_scopes)
    EXPECT_NE(store_apart.find(l), std::string::npos) << l << " in " << store_apart;
  EXPECT_EQ(store_apart.find(store_scope), std::string::npos) << store_apart;
  std::vector<float> a(8), bb(8), out(8, -1.0f);
  for (int q = 0; q < 8; q++) a[size_t(q)] = float(q), bb[size_t(q)] = float(10 * q);
  void* bufs[3] = {a.data(), bb.data(), out.data()};
  jit().run(*ck, bufs);
  for (int q = 0; q < 8; q++) EXPECT_EQ(out[size_t(q)], float(11 * q)) << q;
}

// A CPU model by name (SN_CPU): tuned for that CPU with the instruction sets it and the host both
// have, so its code runs here. On an x86 host with AVX2, x86-64-v3 is AVX2 code: 256-bit vectors,
// 16 registers, 8-wide panels, no gathers, every instruction set on in it on in the host too, and
// cache keys of its own. "" is the host. An unknown name is refused by name.
TEST(CpuModel, NamedModelsKeepToTheHostsInstructionSets) {
  const CpuModel host = cpu_model("");
  const Target here = cpu_target(host);
  EXPECT_EQ(cpu_target(cpu_model("native")).key(), here.key());
  std::map<std::string, bool> on_host(host.features.begin(), host.features.end());
  try {
    cpu_model("no-such-cpu");
    ADD_FAILURE() << "an unknown CPU name was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::InvalidArg);
    EXPECT_NE(e.message().find("no-such-cpu"), std::string::npos) << e.message();
  }
  if (here.triple.rfind("x86_64", 0) != 0 || !on_host["avx2"]) GTEST_SKIP() << "not an x86 host with AVX2";
  const CpuModel v3 = cpu_model("x86-64-v3");
  const Target t = cpu_target(v3);
  EXPECT_EQ(t.arch, "x86-64-v3");
  EXPECT_EQ(t.vector_bits, 256);
  EXPECT_EQ(t.vector_registers, 16);
  EXPECT_EQ(t.packed_panel, 8);
  EXPECT_FALSE(t.has_gather_scatter);
  for (const auto& [f, on] : v3.features) EXPECT_TRUE(!on || on_host[f]) << f;
  std::map<std::string, bool> in_v3(v3.features.begin(), v3.features.end());
  EXPECT_TRUE(in_v3["avx2"] && in_v3["fma"] && !in_v3["avx512f"]);
  if (on_host["avx512f"]) {
    EXPECT_NE(t.key(), here.key());
  }
}

// Under SN_CPU (ctest's unit.avx2_model runs this binary's CPU tests with SN_CPU=x86-64-v3), the
// CPU device compiles for that model; without it, for the host.
TEST(CpuModel, TheEnvironmentPicksTheModel) {
  const char* e = std::getenv("SN_CPU");
  const Target want = cpu_target(cpu_model(e != nullptr ? e : ""));
  EXPECT_EQ(jit().target().arch, want.arch);
  EXPECT_EQ(jit().target().features, want.features);
  EXPECT_EQ(jit().target().vector_bits, want.vector_bits);
}

}  // namespace
}  // namespace sn
#endif
