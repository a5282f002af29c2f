// The oracle itself: hand-computed results for every op family, dtype edge cases (wraparound,
// floor division, rounding, NaN), the storage encodings, the program parser and its errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "core/ir/graph.h"
#include "core/tensor/tensor.h"
#include "tests/oracle/interp.h"
#include "tests/oracle/program.h"

namespace sn::oracle {
namespace {

using Dims = std::vector<int64_t>;
using Vals = std::vector<double>;
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

class Oracle : public ::testing::Test {
 protected:
  Graph g;
  BufferData data;

  // An input tensor with the given values (doubles; integers must be exact).
  const UOp* in(DType dt, const Dims& shape, const Vals& values) {
    const UOp* t = input(g, dt, shape);
    data[buffer_of(t)] = Array::from_doubles(dt, {int64_t(values.size())}, values);
    return t;
  }
  const UOp* in_ints(DType dt, const Dims& shape, const std::vector<int64_t>& values) {
    const UOp* t = input(g, dt, shape);
    data[buffer_of(t)] = Array::from_ints(dt, {int64_t(values.size())}, values);
    return t;
  }
  const UOp* c(DType dt, double v) { return constant(g, dt, v); }
  Array run(const UOp* root) { return evaluate(root, data); }
  Vals values(const UOp* root) {
    Array a = run(root);
    Vals out;
    for (size_t k = 0; k < a.numel(); k++) out.push_back(a.value_at(k));
    return out;
  }
};

// NaN-aware exact comparison of value lists.
void expect_values(const Vals& got, const Vals& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); k++) {
    if (std::isnan(want[k]))
      EXPECT_TRUE(std::isnan(got[k])) << "[" << k << "] got " << got[k];
    else
      EXPECT_EQ(got[k], want[k]) << "[" << k << "]";
  }
}

void expect_error(const std::function<void()>& fn, Code code, const std::string& part) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.message();
    EXPECT_NE(e.message().find(part), std::string::npos) << e.message();
    return;
  }
  ADD_FAILURE() << "no sn::Error thrown (expected '" << part << "')";
}

// ---- rounding nudges ----

// RoundingNudge moves what compiled code may round otherwise, and only that: an inexact product,
// a transcendental and a sum of non-integers move by a few float32 ulps (so a comparison of
// exp2(log2(x)) with x can flip); exact arithmetic, max and sums of small integers stay.
TEST_F(Oracle, RoundingNudgeMovesOnlyWhatRounds) {
  const UOp* x = in(dtypes::float32, {3}, {0.1f, 3.0f, 5.0f});
  const UOp* ints = in(dtypes::float32, {3}, {1.0f, 2.0f, 3.0f});
  const UOp* inexact = mul(g, x, x);      // 0.1^2 is not a float32
  const UOp* exact = add(g, ints, ints);  // 2, 4, 6
  const UOp* round_trip = unary(g, Op::Exp2, unary(g, Op::Log2, ints));
  const UOp* int_sum = reduce(g, ints, Op::Add, {0});  // 6 in any order
  const UOp* sum = reduce(g, x, Op::Add, {0});         // 8.1: float32 order matters
  const UOp* largest = reduce(g, x, Op::Max, {0});
  std::vector<const UOp*> roots{inexact, exact, round_trip, int_sum, sum, largest};
  const std::vector<Array> plain = evaluate(roots, data);
  for (int direction : {1, -1}) {
    RoundingNudge nudge(direction);
    const std::vector<Array> moved = evaluate(roots, data);
    auto delta = [&](size_t r, size_t k) { return (moved[r].value_at(k) - plain[r].value_at(k)) * direction; };
    EXPECT_GT(delta(0, 0), 0);  // 0.1^2, moved a few ulps the nudge's way
    EXPECT_LT(delta(0, 0), 1e-7);
    for (size_t k = 0; k < 3; k++) EXPECT_EQ(delta(1, k), 0) << k;
    EXPECT_GT(delta(2, 0) + delta(2, 1) + delta(2, 2), 0);
    EXPECT_EQ(delta(3, 0), 0);
    EXPECT_GT(delta(4, 0), 0);
    EXPECT_EQ(delta(5, 0), 0);
  }
  EXPECT_EQ(values(inexact), plain[0].f);  // the nudge ends with its scope
}

// ---- movement ----

TEST_F(Oracle, Movement) {
  const UOp* x = in(dtypes::float32, {2, 3}, {0, 1, 2, 3, 4, 5});
  Array r = run(x);
  EXPECT_EQ(r.shape, (Dims{2, 3}));
  expect_values(values(x), {0, 1, 2, 3, 4, 5});
  expect_values(values(reshape(g, x, {3, 2})), {0, 1, 2, 3, 4, 5});
  EXPECT_EQ(run(reshape(g, x, {3, 1, 2})).shape, (Dims{3, 1, 2}));
  expect_values(values(permute(g, x, {1, 0})), {0, 3, 1, 4, 2, 5});
  expect_values(values(flip(g, x, {1, 0})), {3, 4, 5, 0, 1, 2});
  expect_values(values(flip(g, x, {0, 1})), {2, 1, 0, 5, 4, 3});
  expect_values(values(flip(g, x, {1, 1})), {5, 4, 3, 2, 1, 0});
  expect_values(values(pad(g, x, {1, 1}, {3, 5})), {0, 0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 5, 0});
  expect_values(values(shrink(g, x, {1, 1}, {1, 2})), {4, 5});
  expect_values(values(shrink(g, x, {0, 2}, {2, 1})), {2, 5});
  expect_values(values(expand(g, reshape(g, x, {2, 1, 3}), {2, 2, 3})), {0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5});
  expect_values(values(expand(g, reshape(g, c(dtypes::float32, 7), {1, 1}), {2, 2})), {7, 7, 7, 7});

  // 3-D permute: out[i][j][k] = x[j][k][i]
  const UOp* y = in(dtypes::int32, {2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  expect_values(values(permute(g, y, {2, 0, 1})), {0, 2, 4, 6, 1, 3, 5, 7});
  // pad of an int tensor fills zeros, shrink undoes pad
  const UOp* p = pad(g, y, {1, 0, 2}, {3, 2, 5});
  EXPECT_EQ(run(p).shape, (Dims{3, 2, 5}));
  expect_values(values(shrink(g, p, {1, 0, 2}, {2, 2, 2})), {0, 1, 2, 3, 4, 5, 6, 7});
  Vals pv = values(p);
  EXPECT_EQ(std::count(pv.begin(), pv.end(), 0.0), 30 - 7);  // 23 pads + the one 0 of y
}

TEST_F(Oracle, EmptyTensors) {
  const UOp* x = in(dtypes::float32, {0, 3}, {});
  EXPECT_EQ(run(add(g, x, c(dtypes::float32, 1))).shape, (Dims{0, 3}));
  Array s = run(reduce(g, x, Op::Add, {0}));
  EXPECT_EQ(s.shape, (Dims{1, 3}));
  expect_values(values(reduce(g, x, Op::Add, {0})), {0, 0, 0});
  expect_values(values(reduce(g, x, Op::Mul, {0})), {1, 1, 1});
  expect_values(values(reduce(g, x, Op::Max, {0})), {-kInf, -kInf, -kInf});
}

// ---- reduce ----

TEST_F(Oracle, Reduce) {
  const UOp* x = in(dtypes::float32, {2, 3}, {1, 2, 3, 4, 5, 6});
  expect_values(values(reduce(g, x, Op::Add, {1})), {6, 15});
  expect_values(values(reduce(g, x, Op::Add, {0})), {5, 7, 9});
  expect_values(values(reduce(g, x, Op::Mul, {0, 1})), {720});
  expect_values(values(reduce(g, x, Op::Max, {0})), {4, 5, 6});
  EXPECT_EQ(run(reduce(g, x, Op::Max, {0, 1})).shape, (Dims{1, 1}));
  const UOp* y = in(dtypes::float32, {3, 2, 2}, {1, -2, 3, 4, 5, 6, -7, 8, 9, 10, 11, -12});
  expect_values(values(reduce(g, y, Op::Add, {0, 2})), {1 - 2 + 5 + 6 + 9 + 10, 3 + 4 - 7 + 8 + 11 - 12});
  // NaN wins a max
  expect_values(values(reduce(g, in(dtypes::float32, {3}, {1, kNaN, 3}), Op::Max, {0})), {kNaN});
  // integer reductions wrap in the dtype
  expect_values(values(reduce(g, in(dtypes::int8, {3}, {100, 100, 100}), Op::Add, {0})), {300 - 256});
  expect_values(values(reduce(g, in(dtypes::uint8, {2}, {16, 17}), Op::Mul, {0})), {272 - 256});
  expect_values(values(reduce(g, in(dtypes::int32, {3}, {-5, -9, -2}), Op::Max, {0})), {-2});
  // bool add is "any"
  expect_values(values(reduce(g, in(dtypes::bool_, {3}, {0, 1, 1}), Op::Add, {0})), {1});
  // float32 sums accumulate exactly and round once: 2^24 + 1 + 1 stays 2^24+2
  expect_values(values(reduce(g, in(dtypes::float32, {3}, {16777216, 1, 1}), Op::Add, {0})), {16777218});
}

// ---- integer semantics ----

TEST_F(Oracle, IntegerArithmeticWraps) {
  const UOp* a = in(dtypes::int8, {3}, {100, -128, 127});
  const UOp* b = in(dtypes::int8, {3}, {100, 1, 1});
  expect_values(values(add(g, a, b)), {-56, -127, -128});
  expect_values(values(sub(g, a, b)), {0, 127, 126});
  expect_values(values(mul(g, a, b)), {16, -128, 127});  // 10000 = 39*256 + 16
  expect_values(values(neg(g, a)), {-100, -128, -127});
  expect_values(values(maximum(g, a, b)), {100, 1, 127});
  expect_values(values(mulacc(g, a, b, b)), {116, -127, -128});
  const UOp* u = in(dtypes::uint8, {2}, {0, 255});
  expect_values(values(sub(g, u, c(dtypes::uint8, 1))), {255, 254});
  expect_values(values(add(g, u, c(dtypes::uint8, 1))), {1, 0});
  // uint64 keeps all 64 bits: (2^63 + 1) * 3 mod 2^64 = 2^63 + 3
  const UOp* big = in_ints(dtypes::uint64, {1}, {int64_t(uint64_t(1) << 63) + 1});
  Array m = run(mul(g, big, constant_int(g, dtypes::uint64, 3)));
  EXPECT_TRUE(m.int_at(0) == (i128(1) << 63) + 3);
  Array mx = run(constant_int(g, dtypes::uint64, (i128(1) << 64) - 1));
  EXPECT_TRUE(mx.int_at(0) == (i128(1) << 64) - 1);
  // int64 overflow wraps
  const UOp* i64max = in_ints(dtypes::int64, {1}, {std::numeric_limits<int64_t>::max()});
  EXPECT_TRUE(run(add(g, i64max, constant(g, dtypes::int64, 1))).int_at(0) == std::numeric_limits<int64_t>::min());
}

TEST_F(Oracle, FloorDivisionAndModulo) {
  const UOp* a = in(dtypes::int32, {6}, {7, -7, 7, -7, 0, 6});
  const UOp* b = in(dtypes::int32, {6}, {2, 2, -2, -2, 3, 3});
  expect_values(values(idiv(g, a, b)), {3, -4, -4, 3, 0, 2});
  expect_values(values(mod(g, a, b)), {1, 1, -1, -1, 0, 0});
  // INT_MIN / -1 overflows and wraps
  const UOp* mn = in(dtypes::int32, {1}, {-2147483648.0});
  expect_values(values(idiv(g, mn, c(dtypes::int32, -1))), {-2147483648.0});
  expect_values(values(mod(g, mn, c(dtypes::int32, -1))), {0});
  expect_error([&] { run(idiv(g, a, c(dtypes::int32, 0))); }, Code::InvalidArg, "by zero");
  expect_error([&] { run(mod(g, a, c(dtypes::int32, 0))); }, Code::InvalidArg, "by zero");
  // the internal C-truncating pair rounds toward zero
  expect_values(values(g.make(Op::CDiv, dtypes::int32, {a, b})), {3, -3, -3, 3, 0, 2});
  expect_values(values(g.make(Op::CMod, dtypes::int32, {a, b})), {1, -1, 1, -1, 0, 0});
}

TEST_F(Oracle, BitwiseAndShifts) {
  const UOp* a = in(dtypes::int32, {3}, {12, -1, 5});
  const UOp* b = in(dtypes::int32, {3}, {10, 255, 3});
  expect_values(values(bitwise_and(g, a, b)), {8, 255, 1});
  expect_values(values(bitwise_or(g, a, b)), {14, -1, 7});
  expect_values(values(bitwise_xor(g, a, b)), {6, -256, 6});
  const UOp* s = in(dtypes::int32, {3}, {1, 31, 32});
  expect_values(values(shl(g, c(dtypes::int32, 3), s)), {6, -2147483648.0, 0});
  expect_values(values(shr(g, c(dtypes::int32, -8), s)), {-4, -1, -1});  // arithmetic
  expect_values(values(shr(g, c(dtypes::int32, 8), s)), {4, 0, 0});
  const UOp* u = in(dtypes::uint32, {2}, {4294967295.0, 1});
  expect_values(values(shr(g, u, c(dtypes::uint32, 4))), {268435455, 0});
  expect_values(values(shl(g, u, c(dtypes::uint32, 31))), {2147483648.0, 2147483648.0});
  expect_error([&] { run(shl(g, a, c(dtypes::int32, -1))); }, Code::InvalidArg, "negative");
  const UOp* p = in(dtypes::bool_, {4}, {0, 0, 1, 1});
  const UOp* q = in(dtypes::bool_, {4}, {0, 1, 0, 1});
  expect_values(values(bitwise_and(g, p, q)), {0, 0, 0, 1});
  expect_values(values(bitwise_or(g, p, q)), {0, 1, 1, 1});
  expect_values(values(bitwise_xor(g, p, q)), {0, 1, 1, 0});
  expect_values(values(logical_not(g, p)), {1, 1, 0, 0});
}

// ---- float semantics ----

TEST_F(Oracle, FloatOpsRoundToTheDtype) {
  // float16: 2048 + 1 is not representable (spacing 2) and rounds to even
  const UOp* h = in(dtypes::float16, {2}, {2048, 2050});
  expect_values(values(add(g, h, c(dtypes::float16, 1))), {2048, 2052});
  expect_values(values(mul(g, h, c(dtypes::float16, 32))), {kInf, kInf});  // > 65504: inf
  // float32 0.1 + 0.2 is the float32 sum, not the double one
  const UOp* f = in(dtypes::float32, {1}, {0.1});
  expect_values(values(add(g, f, c(dtypes::float32, 0.2))), {double(0.1f + 0.2f)});
  // float64 keeps double precision
  const UOp* d = in(dtypes::float64, {1}, {0.1});
  expect_values(values(add(g, d, c(dtypes::float64, 0.2))), {0.1 + 0.2});
  const UOp* x = in(dtypes::float32, {4}, {4, -2.5, 0, 0.25});
  expect_values(values(unary(g, Op::Recip, x)), {0.25, -0.4f, kInf, 4});
  expect_values(values(unary(g, Op::Trunc, x)), {4, -2, 0, 0});
  expect_values(values(unary(g, Op::Sqrt, x)), {2, kNaN, 0, 0.5});
  expect_values(values(unary(g, Op::Log2, x)), {2, kNaN, -kInf, -2});
  expect_values(values(unary(g, Op::Exp2, x)), {16, double(float(std::exp2(-2.5))), 1, double(float(std::exp2(0.25)))});
  expect_values(values(unary(g, Op::Sin, c(dtypes::float32, 0))), {0});
  expect_values(values(binary(g, Op::Pow, x, c(dtypes::float32, 2))), {16, 6.25, 0, 0.0625});
  expect_values(values(divide(g, x, c(dtypes::float32, 0))), {kInf, -kInf, kNaN, kInf});
  expect_values(values(neg(g, x)), {-4, 2.5, -0.0, -0.25});
  expect_values(values(mulacc(g, x, x, c(dtypes::float32, 1))), {17, 7.25, 1, 1.0625});
  expect_values(values(sub(g, x, x)), {0, 0, 0, 0});
  // Max propagates NaN
  expect_values(values(maximum(g, in(dtypes::float32, {2}, {kNaN, 1}), in(dtypes::float32, {2}, {1, kNaN}))),
                {kNaN, kNaN});
}

TEST_F(Oracle, ComparisonsFollowTheSpecDecompositions) {
  const UOp* a = in(dtypes::float32, {3}, {1, 2, kNaN});
  const UOp* b = in(dtypes::float32, {3}, {2, 2, 1});
  expect_values(values(cmplt(g, a, b)), {1, 0, 0});
  expect_values(values(cmpne(g, a, b)), {1, 0, 1});
  expect_values(values(cmpgt(g, a, b)), {0, 0, 0});
  expect_values(values(cmpeq(g, a, b)), {0, 1, 0});
  // CmpGe = not(a < b), CmpLe = not(b < a): true where NaN is involved
  expect_values(values(cmpge(g, a, b)), {0, 1, 1});
  expect_values(values(cmple(g, a, b)), {1, 1, 1});
  EXPECT_EQ(run(cmplt(g, a, b)).dtype, dtypes::bool_);
  // integers compare exactly, unsigned as unsigned
  const UOp* u = in_ints(dtypes::uint64, {2}, {-1, 5});  // 2^64-1, 5
  expect_values(values(cmplt(g, u, constant_int(g, dtypes::uint64, 6))), {0, 1});
}

TEST_F(Oracle, WhereBroadcasts) {
  const UOp* cond = in(dtypes::bool_, {2, 1}, {1, 0});
  const UOp* x = in(dtypes::int16, {3}, {1, 2, 3});
  expect_values(values(where(g, cond, x, constant(g, dtypes::int16, -1))), {1, 2, 3, -1, -1, -1});
}

TEST_F(Oracle, Casts) {
  const UOp* f = in(dtypes::float32, {6}, {2.7, -2.7, 0.5, -0.5, 300, -129});
  expect_values(values(cast(g, f, dtypes::int32)), {2, -2, 0, 0, 300, -129});
  // out-of-range values truncate, then wrap
  expect_values(values(cast(g, f, dtypes::int8)), {2, -2, 0, 0, 44, 127});
  expect_values(values(cast(g, f, dtypes::uint8)), {2, 254, 0, 0, 44, 127});
  expect_values(values(cast(g, in(dtypes::float32, {4}, {0, -0.0, kNaN, 0.1}), dtypes::bool_)), {0, 0, 1, 1});
  expect_error([&] { run(cast(g, in(dtypes::float32, {1}, {kNaN}), dtypes::int32)); }, Code::InvalidArg, "undefined");
  expect_error([&] { run(cast(g, in(dtypes::float32, {1}, {kInf}), dtypes::int64)); }, Code::InvalidArg, "undefined");
  const UOp* i = in(dtypes::int32, {4}, {-1, 300, 16777217, 2049});
  expect_values(values(cast(g, i, dtypes::uint8)), {255, 44, 1, 1});
  expect_values(values(cast(g, i, dtypes::bool_)), {1, 1, 1, 1});
  expect_values(values(cast(g, i, dtypes::float32)), {-1, 300, 16777216, 2049});
  expect_values(values(cast(g, i, dtypes::float16)), {-1, 300, kInf, 2048});
  expect_values(values(cast(g, i, dtypes::float64)), {-1, 300, 16777217, 2049});
  expect_values(values(cast(g, in(dtypes::float64, {2}, {0.1, 1e300}), dtypes::float32)), {double(0.1f), kInf});
  expect_values(values(cast(g, in(dtypes::bool_, {2}, {1, 0}), dtypes::float32)), {1, 0});
  // uint64 values above INT64_MAX convert as unsigned
  const UOp* u = in_ints(dtypes::uint64, {1}, {-1});
  expect_values(values(cast(g, u, dtypes::float64)), {18446744073709551615.0});
  expect_values(values(cast(g, u, dtypes::int64)), {-1});
}

TEST_F(Oracle, Bitcasts) {
  const UOp* f = in(dtypes::float32, {2}, {1.0, -2.0});
  expect_values(values(bitcast(g, f, dtypes::int32)), {0x3f800000, -1073741824.0});  // 0xc0000000
  expect_values(values(bitcast(g, f, dtypes::uint32)), {0x3f800000, 0xc0000000});
  expect_values(values(bitcast(g, bitcast(g, f, dtypes::int32), dtypes::float32)), {1.0, -2.0});
  // sizes differ: the last axis rescales, bytes keep their little-endian order
  Array h = run(bitcast(g, f, dtypes::float16));
  EXPECT_EQ(h.shape, (Dims{4}));
  expect_values(values(bitcast(g, f, dtypes::uint16)), {0, 0x3f80, 0, 0xc000});
  expect_values(values(bitcast(g, f, dtypes::float16)), {0, 1.875, 0, -2});
  expect_values(values(bitcast(g, in(dtypes::int8, {2}, {-1, 1}), dtypes::uint8)), {255, 1});
  expect_values(values(bitcast(g, in(dtypes::float16, {1}, {1}), dtypes::bfloat16)),
                {0.0078125});  // 0x3c00 as bfloat16 is 2^-7
}

// ---- storage encodings ----

uint32_t bits_of(DType dt, double v) {
  uint8_t b[2] = {0, 0};
  encode_float(dt, v, b);
  return uint32_t(b[0]) | (dt.itemsize() == 2 ? uint32_t(b[1]) << 8 : 0);
}
double from_bits(DType dt, uint32_t bits) {
  uint8_t b[2] = {uint8_t(bits), uint8_t(bits >> 8)};
  return decode_float(dt, b);
}

TEST(OracleEncoding, KnownBitPatterns) {
  EXPECT_EQ(bits_of(dtypes::float16, 1.0), 0x3c00u);
  EXPECT_EQ(bits_of(dtypes::float16, -2.0), 0xc000u);
  EXPECT_EQ(bits_of(dtypes::float16, 65504), 0x7bffu);
  EXPECT_EQ(bits_of(dtypes::float16, kInf), 0x7c00u);
  EXPECT_EQ(bits_of(dtypes::float16, std::ldexp(1.0, -24)), 0x0001u);  // smallest subnormal
  EXPECT_EQ(bits_of(dtypes::float16, std::ldexp(1.0, -14)), 0x0400u);  // smallest normal
  EXPECT_EQ(bits_of(dtypes::float16, -0.0), 0x8000u);
  EXPECT_EQ(bits_of(dtypes::float16, 0.1), 0x2e66u);  // rounds first
  EXPECT_EQ(bits_of(dtypes::bfloat16, 1.0), 0x3f80u);
  EXPECT_EQ(bits_of(dtypes::bfloat16, -3.0), 0xc040u);
  EXPECT_EQ(bits_of(dtypes::fp8e4m3, 448), 0x7eu);
  EXPECT_EQ(bits_of(dtypes::fp8e4m3, 1.0), 0x38u);
  EXPECT_EQ(bits_of(dtypes::fp8e4m3, kNaN), 0x7fu);
  EXPECT_EQ(bits_of(dtypes::fp8e5m2, 1.0), 0x3cu);
  EXPECT_EQ(bits_of(dtypes::fp8e5m2, 57344), 0x7bu);
  EXPECT_EQ(bits_of(dtypes::fp8e5m2, -kInf), 0xfcu);
  EXPECT_TRUE(std::isnan(from_bits(dtypes::float16, 0x7e00)));
  EXPECT_TRUE(std::isnan(from_bits(dtypes::fp8e4m3, 0xff)));
  EXPECT_EQ(from_bits(dtypes::fp8e4m3, 0x01), std::ldexp(1.0, -9));
  EXPECT_EQ(from_bits(dtypes::bfloat16, 0x4049), 3.140625);
  uint8_t b4[4];
  encode_float(dtypes::float32, 1.0, b4);
  EXPECT_EQ(b4[3], 0x3f);
  EXPECT_EQ(b4[2], 0x80);
}

// Every bit pattern of the 16- and 8-bit formats decodes to a value the format holds
// (round_float leaves it alone) and encodes back to the same bits.
TEST(OracleEncoding, SmallFormatsRoundTripEveryPattern) {
  for (DType dt : {dtypes::float16, dtypes::bfloat16, dtypes::fp8e4m3, dtypes::fp8e5m2}) {
    uint32_t n = dt.itemsize() == 2 ? 65536 : 256;
    int bad = 0;
    for (uint32_t bits = 0; bits < n; bits++) {
      double v = from_bits(dt, bits);
      if (std::isnan(v)) continue;
      if (round_float(dt, v) != v || bits_of(dt, v) != bits) bad++;
    }
    EXPECT_EQ(bad, 0) << dt.name();
  }
}

TEST(OracleEncoding, ArraysFromAndToBytes) {
  int16_t raw[3] = {-2, 300, 7};
  Array a = Array::from_bytes(dtypes::int16, {3}, raw, sizeof(raw));
  EXPECT_TRUE(a.int_at(0) == -2 && a.int_at(1) == 300 && a.int_at(2) == 7);
  std::vector<uint8_t> back = a.to_bytes();
  ASSERT_EQ(back.size(), sizeof(raw));
  EXPECT_EQ(std::memcmp(back.data(), raw, sizeof(raw)), 0);
  uint64_t big = ~uint64_t(0);
  Array u = Array::from_bytes(dtypes::uint64, {}, &big, 8);
  EXPECT_TRUE(u.int_at(0) == (i128(1) << 64) - 1);
  EXPECT_EQ(u.value_at(0), 18446744073709551615.0);
  float fs[2] = {0.5f, -1e-45f};
  Array f = Array::from_bytes(dtypes::float32, {2}, fs, sizeof(fs));
  EXPECT_EQ(f.f[0], 0.5);
  EXPECT_EQ(f.f[1], double(-1e-45f));
  expect_error([&] { Array::from_bytes(dtypes::float32, {3}, fs, sizeof(fs)); }, Code::InvalidArg, "bytes");
  expect_error([&] { Array::from_doubles(dtypes::int8, {1}, {200}); }, Code::InvalidArg, "int8");
  expect_error([&] { Array::from_doubles(dtypes::int8, {1}, {1.5}); }, Code::InvalidArg, "int8");
  EXPECT_EQ(Array::from_doubles(dtypes::float16, {1}, {0.1}).f[0], round_float(dtypes::float16, 0.1));
  EXPECT_EQ(Array::from_ints(dtypes::int8, {1}, {200}).int_at(0), -56);
}

// ---- evaluation errors ----

TEST_F(Oracle, ReportsMissingOrWrongData) {
  const UOp* x = input(g, dtypes::float32, {2, 2});
  expect_error([&] { run(x); }, Code::InvalidArg, "no data for Buffer");
  data[buffer_of(x)] = Array::from_doubles(dtypes::float32, {3}, {1, 2, 3});
  expect_error([&] { run(x); }, Code::InvalidArg, "holds 4");
  data[buffer_of(x)] = Array::from_doubles(dtypes::float64, {4}, {1, 2, 3, 4});
  expect_error([&] { run(x); }, Code::InvalidArg, "float64");
  data[buffer_of(x)] = Array::from_doubles(dtypes::float32, {2, 2}, {1, 2, 3, 4});  // any shape of 4 elements
  expect_values(values(x), {1, 2, 3, 4});
  const UOp* rng = g.make(Op::Range, dtypes::index, {g.cint(4)}, RangeArg{0, AxisType::Loop});
  expect_error([&] { run(rng); }, Code::Unsupported, "Range");
}

TEST_F(Oracle, SeveralRootsShareWork) {
  const UOp* x = in(dtypes::float32, {3}, {1, 2, 3});
  const UOp* s = reduce(g, x, Op::Add, {0});
  const UOp* roots[2] = {s, sub(g, x, s)};
  std::vector<Array> out = evaluate(roots, data);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].f, (Vals{6}));
  EXPECT_EQ(out[1].f, (Vals{-5, -4, -3}));
}

// ---- the program language ----

TEST(OracleProgram, BuildsThroughTheTensorFront) {
  Graph g;
  std::map<std::string, InputSpec> inputs = {{"a", {dtypes::float32, {2, 3}}}, {"b", {dtypes::float32, {3}}}};
  Program p = build_program(g, "(add (mul a a) (reshape (max b (const float32 0.5)) 1 3))", inputs);
  EXPECT_EQ(p.root->op, Op::Add);
  EXPECT_EQ(static_shape(p.root), (Dims{2, 3}));
  ASSERT_EQ(p.buffers.size(), 2u);  // `a` twice is one input
  EXPECT_EQ(p.buffers.at("a")->op, Op::Buffer);
  BufferData data;
  data[p.buffers.at("a")] = Array::from_doubles(dtypes::float32, {6}, {1, 2, 3, 4, 5, 6});
  data[p.buffers.at("b")] = Array::from_doubles(dtypes::float32, {3}, {0, 1, 2});
  EXPECT_EQ(evaluate(p.root, data).f, (Vals{1.5, 5, 11, 16.5, 26, 38}));

  Program q = build_program(g, " (pad (shrink a (0 1) (2 2)) (1 0) (3 2)) ", inputs);
  EXPECT_EQ(static_shape(q.root), (Dims{3, 2}));
  Program r = build_program(g, "(reduce max (cast int32 (flip (permute a 1 0) 1 0)) 0)", inputs);
  EXPECT_EQ(static_shape(r.root), (Dims{1, 2}));
  EXPECT_EQ(r.root->dtype, dtypes::int32);
  Program k = build_program(g,
                            "(where (cmpge (const uint64 18446744073709551615) (const uint64 0)) "
                            "(bitcast int32 (const float32 -inf)) (const int32 -7))",
                            {});
  Array kv = evaluate(k.root, {});
  EXPECT_EQ(kv.int_at(0), i128(int32_t(0xff800000u)));
  EXPECT_TRUE(build_program(g, "(const bool true)", {}).buffers.empty());
}

TEST(OracleProgram, ReportsErrors) {
  Graph g;
  std::map<std::string, InputSpec> inputs = {{"a", {dtypes::float32, {2, 3}}}};
  auto build = [&](const char* text) { build_program(g, text, inputs); };
  expect_error([&] { build("(neg a"); }, Code::InvalidArg, "missing ')'");
  expect_error([&] { build("(neg a))"); }, Code::InvalidArg, "trailing");
  expect_error([&] { build("(frobnicate a)"); }, Code::InvalidArg, "unknown op 'frobnicate'");
  expect_error([&] { build("(neg b)"); }, Code::InvalidArg, "unknown input 'b'");
  expect_error([&] { build("(add a 1)"); }, Code::InvalidArg, "bare number");
  expect_error([&] { build("(reshape a 2 x)"); }, Code::InvalidArg, "bad integer 'x'");
  expect_error([&] { build("(cast float33 a)"); }, Code::InvalidArg, "unknown dtype 'float33'");
  expect_error([&] { build("(const int8 1000)"); }, Code::InvalidArg, "int8");
  expect_error([&] { build("(reduce sum a 0)"); }, Code::InvalidArg, "add, max or mul");
  expect_error([&] { build("(pad a 1 2)"); }, Code::InvalidArg, "list of integers");
  expect_error([&] { build("(reshape a 7)"); }, Code::InvalidArg, "reshape");  // from the tensor front
  expect_error([&] { build("()"); }, Code::InvalidArg, "empty list");
}

}  // namespace
}  // namespace sn::oracle
