// fp8 (e4m3fn and e5m2) on the CPU: the conversions the renderer emits, checked exhaustively
// against the oracle's encoding (round_float, then the storage bits), and fp8 elementwise math,
// reductions, matmul and casts compiled and run against the oracle interpreter.
//
// Semantics (core/ir/dtype.cpp round_float): round to nearest even; e4m3 has no inf, so overflow
// (anything that rounds beyond 448, and +-inf) is NaN; e5m2 overflows to +-inf. A NaN result is the
// format's canonical NaN (e4m3 0x7f, e5m2 0x7e), as the oracle encodes it.
#include <gtest/gtest.h>

#if SN_BACKEND_CPU
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "core/tensor/compose.h"
#include "tests/unit/test_pipeline_util.h"

namespace sn {
namespace {

using namespace testrt;

const DType kFp8[] = {dtypes::fp8e4m3, dtypes::fp8e5m2};
constexpr double kInf = std::numeric_limits<double>::infinity();

uint8_t oracle_bits(DType dt, double v) {
  uint8_t b = 0;
  oracle::encode_float(dt, v, &b);
  return b;
}
double oracle_value(DType dt, uint8_t b) { return oracle::decode_float(dt, &b); }

// Compiles f(x) for one input of `in_dt` and `shape`, runs it on the raw bytes `in`, and returns
// the output's raw bytes.
std::vector<uint8_t> run_raw(DType in_dt, const std::vector<int64_t>& shape, const void* in, size_t nbytes,
                             const std::function<const UOp*(Graph&, const UOp*)>& f, bool optimize = true) {
  Graph g;
  const UOp* x = input(g, in_dt, shape);
  const UOp* out = f(g, x);
  auto dev = runtime().device("CPU");
  CompileOptions opts;
  opts.optimize = optimize;
  auto p = compile_program(runtime(), g, std::vector<const UOp*>{out}, dev, opts);
  auto ib = Buffer::allocate(dev, in_dt, shape);
  ib->copy_in(in, nbytes);
  auto ob = p->allocate_output(0);
  std::vector<std::shared_ptr<Buffer>> ins{ib}, outs{ob};
  p->run(ins, outs);
  std::vector<uint8_t> r(ob->nbytes());
  ob->copy_out(r.data(), r.size());
  return r;
}

template <class T>
std::vector<uint8_t> run_raw(DType in_dt, const std::vector<T>& in,
                             const std::function<const UOp*(Graph&, const UOp*)>& f, bool optimize = true) {
  return run_raw(in_dt, {int64_t(in.size())}, in.data(), in.size() * sizeof(T), f, optimize);
}

template <class T>
T load(const std::vector<uint8_t>& bytes, size_t k) {
  T v;
  std::memcpy(&v, bytes.data() + k * sizeof(T), sizeof(T));
  return v;
}

// The finite non-negative values of an fp8 format, ascending.
std::vector<double> finite_values(DType dt) {
  std::vector<double> v;
  for (int b = 0; b < 0x80; b++) {
    double x = oracle_value(dt, uint8_t(b));
    if (std::isfinite(x)) v.push_back(x);
  }
  return v;
}

// Values around every rounding decision of f32/f64 -> fp8: each fp8 value, each midpoint between
// neighbours (ties), one float32 ulp either side of those, the overflow boundary (max + half an ulp)
// and beyond, halves of the smallest subnormal, zeros, infinities, NaN; both signs.
std::vector<float> edge_floats() {
  std::vector<float> v;
  auto around = [&](float x) {
    v.push_back(x);
    v.push_back(std::nextafter(x, 0.0f));
    v.push_back(std::nextafter(x, std::numeric_limits<float>::infinity()));
  };
  for (DType dt : kFp8) {
    std::vector<double> vals = finite_values(dt);
    for (size_t k = 0; k < vals.size(); k++) {
      around(float(vals[k]));
      double next = k + 1 < vals.size() ? vals[k + 1] : 2 * vals[k] - vals[k - 1];  // past max: one more ulp
      around(float((vals[k] + next) / 2));
      around(float(vals[k] + (next - vals[k]) / 4));
      around(float(vals[k] + 3 * (next - vals[k]) / 4));
    }
    double top = vals.back(), ulp = top - vals[vals.size() - 2];
    for (double m : {1.5, 2.0, 2.5, 4.0, 1e3, 1e10}) around(float(top + m * ulp));
    around(float(vals[1] / 2));  // half the smallest subnormal: a tie to zero
  }
  for (float x : {0.0f, std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min(),
                  std::numeric_limits<float>::max(), std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN(), 1e-30f, 1e30f})
    v.push_back(x);
  size_t n = v.size();
  for (size_t k = 0; k < n; k++) v.push_back(-v[k]);
  return v;
}

TEST(Fp8, EveryBitPatternDecodesLikeTheOracle) {
  std::vector<uint8_t> bytes(256);
  for (int b = 0; b < 256; b++) bytes[size_t(b)] = uint8_t(b);
  for (DType dt : kFp8)
    for (bool opt : {true, false}) {  // vectorized and scalar code
      std::vector<uint8_t> f32 = run_raw(
          dt, bytes, [](Graph& g, const UOp* x) { return cast(g, x, dtypes::float32); }, opt);
      std::vector<uint8_t> f64 = run_raw(
          dt, bytes, [](Graph& g, const UOp* x) { return cast(g, x, dtypes::float64); }, opt);
      std::vector<uint8_t> f16 = run_raw(
          dt, bytes, [](Graph& g, const UOp* x) { return cast(g, x, dtypes::float16); }, opt);
      std::vector<uint8_t> bf = run_raw(
          dt, bytes, [](Graph& g, const UOp* x) { return cast(g, x, dtypes::bfloat16); }, opt);
      int bad = 0, nans = 0;
      for (int b = 0; b < 256; b++) {
        double want = oracle_value(dt, uint8_t(b));
        float got = load<float>(f32, size_t(b));
        double got64 = load<double>(f64, size_t(b));
        double got16 = oracle::decode_float(dtypes::float16, f16.data() + 2 * b);
        double gotbf = oracle::decode_float(dtypes::bfloat16, bf.data() + 2 * b);
        bool ok;
        if (std::isnan(want)) {
          nans++;
          ok = std::isnan(got) && std::isnan(got64) && std::isnan(got16) && std::isnan(gotbf);
        } else {  // bit-exact, so -0 keeps its sign
          ok = std::bit_cast<uint32_t>(got) == std::bit_cast<uint32_t>(float(want)) &&
               std::bit_cast<uint64_t>(got64) == std::bit_cast<uint64_t>(want) &&
               std::signbit(got16) == std::signbit(want) && got16 == want && gotbf == want &&
               std::signbit(gotbf) == std::signbit(want);
        }
        if (!ok && bad++ < 8)
          ADD_FAILURE() << dt.name() << " bits 0x" << std::hex << b << std::dec << ": want " << want << ", got f32 "
                        << got << " f64 " << got64 << " f16 " << got16 << " bf16 " << gotbf;
      }
      EXPECT_EQ(bad, 0) << dt.name();
      EXPECT_EQ(nans, dt == dtypes::fp8e4m3 ? 2 : 6) << dt.name();
    }
}

// f32 -> fp8 compared bit for bit with the oracle's encoding, for `values`.
void expect_encodes_like_oracle(const std::vector<float>& values, bool optimize, const std::string& what) {
  for (DType dt : kFp8) {
    std::vector<uint8_t> got = run_raw(
        dtypes::float32, values, [dt](Graph& g, const UOp* x) { return cast(g, x, dt); }, optimize);
    ASSERT_EQ(got.size(), values.size());
    int bad = 0;
    for (size_t k = 0; k < values.size(); k++) {
      uint8_t want = oracle_bits(dt, double(values[k]));
      if (got[k] != want && bad++ < 8)
        ADD_FAILURE() << what << ": " << dt.name() << " of " << values[k] << " (bits 0x" << std::hex
                      << std::bit_cast<uint32_t>(values[k]) << "): got 0x" << int(got[k]) << ", want 0x" << int(want)
                      << std::dec;
    }
    EXPECT_EQ(bad, 0) << what << " " << dt.name();
  }
}

TEST(Fp8, Float32EncodesLikeTheOracleAtEveryRoundingEdge) {
  std::vector<float> v = edge_floats();
  expect_encodes_like_oracle(v, true, "edges");
  expect_encodes_like_oracle(v, false, "edges, scalar code");
  // The oracle itself: a few fixed points of the semantics.
  EXPECT_EQ(oracle_bits(dtypes::fp8e4m3, 464), 0x7e);     // the tie above 448 rounds to even (448)
  EXPECT_EQ(oracle_bits(dtypes::fp8e4m3, 465), 0x7f);     // beyond it: NaN
  EXPECT_EQ(oracle_bits(dtypes::fp8e4m3, -kInf), 0x7f);   // no inf
  EXPECT_EQ(oracle_bits(dtypes::fp8e5m2, 61440), 0x7c);   // the tie above 57344 rounds to inf
  EXPECT_EQ(oracle_bits(dtypes::fp8e5m2, -61439), 0xfb);  // below it: -max
}

TEST(Fp8, Float32EncodesLikeTheOracleOnADenseSweep) {
  // Every 1021st float32 bit pattern: all binades, both signs, denormals, infinities, NaNs.
  std::vector<float> v;
  for (uint64_t u = 0; u <= 0xffffffffull; u += 1021) v.push_back(std::bit_cast<float>(uint32_t(u)));
  // Every float32 in the fp8 range whose low 13 mantissa bits are 0, 1, 0x1000 (a half) or 0x1fff.
  for (uint32_t e = 127 - 20; e <= 127 + 17; e++)
    for (uint32_t m = 0; m < (1u << 10); m++)
      for (uint32_t low : {0u, 1u, 0x1000u, 0x1fffu}) v.push_back(std::bit_cast<float>((e << 23) | (m << 13) | low));
  expect_encodes_like_oracle(v, true, "sweep");
}

TEST(Fp8, WiderAndIntegerSourcesEncodeLikeTheOracle) {
  // float64: values a float32 rounding would move onto an fp8 tie (round to odd keeps them off it).
  std::vector<double> d;
  for (float f : edge_floats()) {
    double x = double(f);
    d.push_back(x);
    d.push_back(x * (1 + 0x1p-40));
    d.push_back(x * (1 - 0x1p-40));
  }
  for (double x : {1e300, -1e300, 1e-300, 5e-324, 464.0000000001, 463.9999999999, 61439.99999999}) d.push_back(x);
  for (DType dt : kFp8) {
    std::vector<uint8_t> got = run_raw(dtypes::float64, d, [dt](Graph& g, const UOp* x) { return cast(g, x, dt); });
    int bad = 0;
    for (size_t k = 0; k < d.size(); k++)
      if (got[k] != oracle_bits(dt, d[k]) && bad++ < 8)
        ADD_FAILURE() << "f64 " << d[k] << " -> " << dt.name() << ": got 0x" << std::hex << int(got[k]) << ", want 0x"
                      << int(oracle_bits(dt, d[k])) << std::dec;
    EXPECT_EQ(bad, 0) << dt.name();
  }
  // Every float16, bfloat16 and int16 bit pattern, and every value of the other fp8 format.
  std::vector<uint16_t> all16(65536);
  for (uint32_t k = 0; k < 65536; k++) all16[k] = uint16_t(k);
  std::vector<uint8_t> all8(256);
  for (int k = 0; k < 256; k++) all8[size_t(k)] = uint8_t(k);
  for (DType dt : kFp8) {
    for (DType from : {dtypes::float16, dtypes::bfloat16, dtypes::int16}) {
      std::vector<uint8_t> got = run_raw(from, all16, [dt](Graph& g, const UOp* x) { return cast(g, x, dt); });
      int bad = 0;
      for (size_t k = 0; k < all16.size(); k++) {
        double x = from == dtypes::int16 ? double(int16_t(all16[k]))
                                         : oracle::decode_float(from, reinterpret_cast<const uint8_t*>(&all16[k]));
        if (got[k] != oracle_bits(dt, x) && bad++ < 8)
          ADD_FAILURE() << from.name() << " " << x << " -> " << dt.name() << ": got 0x" << std::hex << int(got[k])
                        << ", want 0x" << int(oracle_bits(dt, x)) << std::dec;
      }
      EXPECT_EQ(bad, 0) << from.name() << " -> " << dt.name();
    }
    DType other = dt == dtypes::fp8e4m3 ? dtypes::fp8e5m2 : dtypes::fp8e4m3;
    std::vector<uint8_t> got = run_raw(other, all8, [dt](Graph& g, const UOp* x) { return cast(g, x, dt); });
    for (size_t k = 0; k < 256; k++)
      EXPECT_EQ(got[k], oracle_bits(dt, oracle_value(other, uint8_t(k))))
          << other.name() << " 0x" << std::hex << k << " -> " << dt.name();
  }
}

// The same conversions on vectors: in a matmul the optimizer upcasts the output columns, so the
// loads, fp8 -> f32 and f32 -> fp8 of every column run on <N x i8> / <N x float> lanes.
// out[m, n] = cast(sum_k w[m, k] * cast(x[k, n], f32), fp8) with w = [1, 0] and x = [bits; 0]:
// every bit pattern goes through both conversions (x + 0: -0 becomes +0).
TEST(Fp8, EveryBitPatternRoundTripsInVectorCode) {
  // Enough rows that the CPU heuristic tiles the matmul (tiny kernels get no register tile).
  constexpr int kRows = 32;
  for (DType dt : kFp8) {
    Graph g;
    const UOp* x = input(g, dt, {2, 256});
    const UOp* w = input(g, dtypes::float32, {kRows, 2});
    const UOp* out = cast(g, matmul(g, w, cast(g, x, dtypes::float32)), dt);
    auto dev = runtime().device("CPU");
    CompileOptions opts;
    opts.keep_stages = true;
    opts.use_cache = false;
    auto p = compile_program(runtime(), g, std::vector<const UOp*>{out}, dev, opts);
    bool vector_fp8 = false;
    for (const StageDump& d : *p->stages)
      vector_fp8 = vector_fp8 || (d.stage == "source" && d.text.find(" x i8>") != std::string::npos);
    EXPECT_TRUE(vector_fp8) << "no fp8 vectors in the kernel source";
    std::vector<uint8_t> xb(512, 0);
    for (int b = 0; b < 256; b++) xb[size_t(b)] = uint8_t(b);
    std::vector<float> wv(2 * kRows, 0.0f);
    for (int m = 0; m < kRows; m++) wv[size_t(2 * m)] = 1.0f;
    auto xbuf = Buffer::allocate(dev, dt, {2, 256});
    xbuf->copy_in(xb.data(), xb.size());
    auto wbuf = Buffer::allocate(dev, dtypes::float32, {kRows, 2});
    wbuf->copy_in(wv.data(), wv.size() * 4);
    std::vector<std::shared_ptr<Buffer>> ins{xbuf, wbuf}, outs{p->allocate_output(0)};
    p->run(ins, outs);
    std::vector<uint8_t> got(kRows * 256);
    outs[0]->copy_out(got.data(), got.size());
    int bad = 0;
    for (int m = 0; m < kRows; m++)
      for (int b = 0; b < 256; b++) {
        uint8_t want = oracle_bits(dt, oracle_value(dt, uint8_t(b)) + 0.0);
        uint8_t have = got[size_t(m * 256 + b)];
        if (have != want && bad++ < 8)
          ADD_FAILURE() << dt.name() << " 0x" << std::hex << b << ": got 0x" << int(have) << ", want 0x" << int(want)
                        << std::dec;
      }
    EXPECT_EQ(bad, 0) << dt.name();
  }
}

// ---- fp8 tensors compiled and run against the oracle ---------------------------------------------

class Fp8Test : public OracleFixture<8> {
 protected:
  // rtol 0: bit-exact values (NaN matches NaN).
  void check(std::vector<const UOp*> outs, const std::string& what, double rtol = 0, double atol = 0) {
    expect_matches_oracle(g, outs, data, what, rtol, atol);
  }
};

// One ulp of the format, relative: libm's float32 exp2/log2/sin/pow are not correctly rounded, so
// the rounded fp8 result may be the neighbour of the oracle's.
double ulp_rtol(DType dt) { return dt == dtypes::fp8e4m3 ? 0.125 : 0.25; }

TEST_F(Fp8Test, ElementwiseOps) {
  const std::vector<std::vector<int64_t>> shapes = {{7, 13}, {33}, {}, {4, 1}, {64}};
  int n = 0;
  for (DType dt : kFp8)
    for (Op op : {Op::Neg,   Op::Trunc, Op::Recip, Op::Sqrt,  Op::Exp2,  Op::Log2,  Op::Sin,
                  Op::Add,   Op::Sub,   Op::Mul,   Op::Div,   Op::Max,   Op::Pow,   Op::CmpLt,
                  Op::CmpNe, Op::CmpEq, Op::CmpGt, Op::CmpGe, Op::CmpLe, Op::Where, Op::Mulacc}) {
      const auto& sh = shapes[size_t(n++) % shapes.size()];
      bool unary_op = op == Op::Neg || op == Op::Trunc || op == Op::Recip || op == Op::Sqrt || op == Op::Exp2 ||
                      op == Op::Log2 || op == Op::Sin;
      int arity = op == Op::Where || op == Op::Mulacc ? 3 : unary_op ? 1 : 2;
      bool positive = op == Op::Sqrt || op == Op::Log2 || op == Op::Pow;
      std::vector<const UOp*> src;
      for (int k = 0; k < arity; k++) {
        if (op == Op::Where && k == 0) {
          src.push_back(in(dtypes::bool_, sh));
        } else {
          bool pos = positive && k == 0;
          src.push_back(in(dt, sh, pos ? 0.05 : -3, pos ? 4 : 3));
        }
      }
      bool approx = op == Op::Exp2 || op == Op::Log2 || op == Op::Sin || op == Op::Pow;
      double rt = approx ? ulp_rtol(dt) : 0;
      check({elementwise(g, op, src)}, cat(op_name(op), " on ", dt.name()), rt, approx ? 1e-3 : 0);
    }
}

TEST_F(Fp8Test, SpecialValuesOverflowAndNan) {
  for (DType dt : kFp8) {
    double max = dt.float_max();
    std::vector<double> a = {max, -max, 0.0, -0.0, max / 2, std::nan(""), 1.0, dt == dtypes::fp8e5m2 ? kInf : 2.0};
    std::vector<double> b = {max, -max, -0.0, -0.0, max / 2 + max / 16, 1.0, std::nan(""), 3.0};
    const UOp* x = in_values(dt, {8}, a);
    const UOp* y = in_values(dt, {8}, b);
    std::vector<double> b_max = b;
    b_max[2] = 0.0;  // max(+0, -0) may be either zero (sinter.h, SN_OP_MAX): max(+0, +0) instead
    const UOp* y_max = in_values(dt, {8}, b_max);
    check({add(g, x, y), sub(g, x, y), mul(g, x, y), maximum(g, x, y_max), cmplt(g, x, y), cmpeq(g, x, y), neg(g, x),
           divide(g, x, y)},
          cat("special values ", dt.name()));
    // Constants of the dtype (rounded to it), mixed with math.
    check({add(g, mul(g, x, constant(g, dt, 0.3)), constant(g, dt, -1.7))}, cat("constants ", dt.name()));
  }
}

TEST_F(Fp8Test, ReductionsAndMatmul) {
  for (DType dt : kFp8) {
    const UOp* x = in(dt, {5, 9, 3});
    check({reduce(g, x, Op::Add, {1})}, cat("sum ", dt.name()), 1e-6, 1e-6);
    check({reduce(g, x, Op::Max, {0, 2})}, cat("max ", dt.name()));
    check({reduce(g, in(dt, {4, 6}, 0.7, 1.3), Op::Mul, {1})}, cat("prod ", dt.name()), ulp_rtol(dt), 0);
    check({reduce(g, x, Op::Add, {0, 1, 2})}, cat("sum all ", dt.name()), 1e-6, 1e-6);
    const UOp* a = in(dt, {5, 7});
    const UOp* b = in(dt, {7, 3});
    check({matmul(g, a, b)}, cat("matmul ", dt.name()), 1e-6, 1e-6);
    check({matmul(g, in(dt, {16, 32}), in(dt, {32, 16}))}, cat("matmul 16x32x16 ", dt.name()), 1e-6, 1e-6);
    // Math that mixes fp8 with float32.
    const UOp* f = in(dtypes::float32, {5, 3});
    check({add(g, cast(g, reduce(g, x, Op::Add, {1}), dtypes::float32), f)}, cat("fp8 sum + f32 ", dt.name()), 1e-6,
          1e-6);
  }
}

// A sum of sums rounds the inner sums to fp8 first: rows [9, 0.5] sum to 9.5, which rounds to 10
// (to even), and three rows to 30 (e4m3); one sum over both axes would give 28.5, rounded to 28.
// Max of maxes has no rounding between them. Both match the oracle bit for bit.
TEST_F(Fp8Test, SumsOfSumsRoundBetweenThem) {
  const UOp* x = in_values(dtypes::fp8e4m3, {3, 2}, {9, 0.5, 9, 0.5, 9, 0.5});
  const UOp* total = reduce(g, reduce(g, x, Op::Add, {1}), Op::Add, {0});
  check({total}, "sum of row sums");
  EXPECT_EQ(testrt::compile_and_run(g, {total}, data)[0].f.at(0), 30.0);
  check({reduce(g, reduce(g, x, Op::Max, {1}), Op::Max, {0})}, "max of row maxes");
}

TEST_F(Fp8Test, CastsToAndFromOtherDtypes) {
  for (DType dt : kFp8) {
    for (DType other : {dtypes::int8, dtypes::uint8, dtypes::int32, dtypes::int64, dtypes::uint64, dtypes::float16,
                        dtypes::bfloat16, dtypes::float32, dtypes::float64, dtypes::bool_}) {
      double lo = other.is_unsigned() || other.is_bool() ? 0 : -100, hi = 100;
      check({cast(g, in(dt, {3, 7}, lo, hi), other)}, cat("cast ", dt.name(), " -> ", other.name()));
      check({cast(g, in(other, {3, 7}, lo, hi), dt)}, cat("cast ", other.name(), " -> ", dt.name()));
    }
    check({cast(g, in_values(dtypes::int32, {5}, {448, 464, 465, 1000000, -57344}), dt)},
          cat("int -> ", dt.name(), " overflow"));
    check({cast(g, in_values(dt, {6}, {2.5, -2.5, 0.75, -0.75, 3.5, -0.0}), dtypes::int32)},
          cat(dt.name(), " -> int truncates"));
    check({cast(g, in_values(dt, {4}, {0.0, -0.0, std::nan(""), 0.001953125}), dtypes::bool_)},
          cat(dt.name(), " -> bool"));
    // Bitcasts between fp8 and bytes are free.
    check({bitcast(g, in(dt, {9}), dtypes::uint8)}, cat(dt.name(), " -> u8"));
    check({bitcast(g, in(dtypes::uint8, {9}, 0, 255), dt)}, cat("u8 -> ", dt.name()));
  }
}

}  // namespace
}  // namespace sn
#endif
