// Compositions (core/tensor/compose.h): each is evaluated with the oracle and compared with a
// direct computation in plain loops here; plus the argument errors, and Threefry's known answers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/tensor/compose.h"
#include "core/tensor/tensor.h"
#include "tests/oracle/interp.h"
#include "tests/util/test_helpers.h"

namespace sn {
namespace {

using testutil::expect_invalid;

using Dims = std::vector<int64_t>;
using Vals = std::vector<double>;
using oracle::Array;
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

int64_t count(const Dims& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// Row-major flat index of `idx` in `shape`.
int64_t flat(const Dims& idx, const Dims& shape) {
  int64_t f = 0;
  for (size_t k = 0; k < shape.size(); k++) f = f * shape[k] + idx[k];
  return f;
}

// Multi-index of flat position `f` in `shape`.
Dims unflat(int64_t f, const Dims& shape) {
  Dims idx(shape.size());
  for (size_t k = shape.size(); k-- > 0;) {
    idx[k] = f % shape[k];
    f /= shape[k];
  }
  return idx;
}

class ComposeTest : public ::testing::Test {
 protected:
  Graph g;
  oracle::BufferData data;
  std::mt19937 rng{20240611};

  // An input tensor holding `values` (integers must be exact).
  const UOp* in(DType dt, const Dims& shape, const Vals& values) {
    const UOp* t = input(g, dt, shape);
    data[buffer_of(t)] = Array::from_doubles(dt, {int64_t(values.size())}, values);
    return t;
  }
  // Random values in [lo, hi], rounded to the dtype (integers: whole numbers).
  Vals random(DType dt, const Dims& shape, double lo, double hi) {
    std::uniform_real_distribution<double> u(lo, hi);
    Vals v(size_t(count(shape)));
    for (double& x : v) x = dt.is_float() ? round_float(dt, u(rng)) : std::floor(u(rng));
    return v;
  }
  Array run(const UOp* t) { return oracle::evaluate(t, data); }
  Vals values(const UOp* t, Dims* shape = nullptr) {
    Array a = run(t);
    if (shape) *shape = a.shape;
    Vals out;
    for (size_t k = 0; k < a.numel(); k++) out.push_back(a.value_at(k));
    return out;
  }
  // Evaluates t, checks its shape and dtype, and compares it with `want` within
  // atol + rtol*|want| (NaN matches NaN, infinities must match exactly).
  void expect_near(const UOp* t, const Dims& shape, const Vals& want, double rtol = 0, double atol = 0,
                   DType dt = DType()) {
    Array a = run(t);
    EXPECT_EQ(a.shape, shape);
    if (!(dt == DType())) {
      EXPECT_EQ(a.dtype, dt);
    }
    ASSERT_EQ(a.numel(), want.size());
    for (size_t k = 0; k < want.size(); k++) {
      double got = a.value_at(k), w = want[k];
      if (std::isnan(w))
        EXPECT_TRUE(std::isnan(got)) << "[" << k << "] got " << got;
      else if (std::isinf(w))
        EXPECT_EQ(got, w) << "[" << k << "]";
      else
        EXPECT_NEAR(got, w, atol + rtol * std::fabs(w)) << "[" << k << "] of " << a.str();
    }
  }
  void expect_exact(const UOp* t, const Dims& shape, const Vals& want, DType dt = DType()) {
    expect_near(t, shape, want, 0, 0, dt);
  }
};

using ComposeLinalg = ComposeTest;
using ComposeScan = ComposeTest;
using ComposeIndex = ComposeTest;
using ComposeJoin = ComposeTest;
using ComposeMath = ComposeTest;
using ComposeNorm = ComposeTest;
using ComposeConv = ComposeTest;
using ComposePool = ComposeTest;
using ComposeRandom = ComposeTest;

// ---- linear algebra ---------------------------------------------------------------------------

// Reference batched matmul with right-aligned broadcast of the batch dims.
Vals ref_matmul(const Vals& a, const Dims& sa, const Vals& b, const Dims& sb, Dims* out_shape) {
  int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  Dims ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  size_t rank = std::max(ba.size(), bb.size());
  ba.insert(ba.begin(), rank - ba.size(), 1);
  bb.insert(bb.begin(), rank - bb.size(), 1);
  Dims batch(rank);
  for (size_t d = 0; d < rank; d++) batch[d] = ba[d] == 1 ? bb[d] : ba[d];
  *out_shape = batch;
  out_shape->insert(out_shape->end(), {m, n});
  Vals out;
  for (int64_t f = 0; f < count(batch); f++) {
    Dims bi = unflat(f, batch), ia(rank), ib(rank);
    for (size_t d = 0; d < rank; d++) {
      ia[d] = ba[d] == 1 ? 0 : bi[d];
      ib[d] = bb[d] == 1 ? 0 : bi[d];
    }
    int64_t oa = flat(ia, ba) * m * k, ob = flat(ib, bb) * k * n;
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double s = 0;
        for (int64_t q = 0; q < k; q++) s += a[size_t(oa + i * k + q)] * b[size_t(ob + q * n + j)];
        out.push_back(s);
      }
  }
  return out;
}

TEST_F(ComposeLinalg, GemmMatchesLoops) {
  // the last two are large enough for B to be packed into panels (schedule rule 9)
  for (Dims mkn : {Dims{3, 5, 4}, Dims{1, 1, 1}, Dims{7, 2, 1}, Dims{2, 0, 3}, Dims{0, 3, 2}, Dims{96, 70, 64},
                   Dims{130, 64, 160}}) {
    Dims sa{mkn[0], mkn[1]}, sb{mkn[1], mkn[2]}, so;
    Vals a = random(dtypes::float32, sa, -2, 2), b = random(dtypes::float32, sb, -2, 2);
    Vals want = ref_matmul(a, sa, b, sb, &so);
    expect_near(gemm(g, in(dtypes::float32, sa, a), in(dtypes::float32, sb, b)), so, want, 1e-6, 1e-6, dtypes::float32);
  }
  // integers are exact
  Vals a = random(dtypes::int32, {4, 3}, -50, 50), b = random(dtypes::int32, {3, 5}, -50, 50);
  Dims so;
  Vals want = ref_matmul(a, {4, 3}, b, {3, 5}, &so);
  expect_exact(gemm(g, in(dtypes::int32, {4, 3}, a), in(dtypes::int32, {3, 5}, b)), so, want, dtypes::int32);
}

TEST_F(ComposeLinalg, BatchedMatmulBroadcastsBatchDims) {
  struct Case {
    Dims sa, sb;
  };
  for (const Case& c : {Case{{2, 3, 4}, {2, 4, 5}}, Case{{2, 3, 4, 5}, {5, 2}}, Case{{3, 1, 2, 3}, {4, 3, 2}},
                        Case{{1, 1, 1}, {6, 1, 1}}, Case{{0, 2, 3}, {3, 2}}, Case{{2, 64, 70}, {2, 70, 96}},
                        Case{{3, 64, 64}, {64, 64}}, Case{{2, 1, 64, 64}, {3, 64, 64}}}) {
    Dims so;
    Vals a = random(dtypes::float32, c.sa, -1, 1), b = random(dtypes::float32, c.sb, -1, 1);
    Vals want = ref_matmul(a, c.sa, b, c.sb, &so);
    expect_near(matmul(g, in(dtypes::float32, c.sa, a), in(dtypes::float32, c.sb, b)), so, want, 1e-6, 1e-6);
  }
}

TEST_F(ComposeLinalg, Errors) {
  const UOp* a = input(g, dtypes::float32, {2, 4});
  expect_invalid([&] { gemm(g, a, input(g, dtypes::float32, {1, 3})); }, {"matmul", "inner dims", "(2,4)", "(1,3)"});
  expect_invalid([&] { gemm(g, a, input(g, dtypes::float32, {2, 4, 3})); }, {"gemm", "(2,4,3)"});
  expect_invalid([&] { matmul(g, input(g, dtypes::float32, {4}), a); }, {"matmul", "rank >= 2", "(4,)"});
  expect_invalid([&] { matmul(g, a, input(g, dtypes::int32, {4, 3})); }, {"matmul", "float32", "int32"});
  expect_invalid(
      [&] {
        matmul(g, input(g, dtypes::bool_, {2, 2}), input(g, dtypes::bool_, {2, 2}));
      },
      {"matmul", "bool"});
  expect_invalid(
      [&] {
        matmul(g, input(g, dtypes::float32, {3, 2, 4}), input(g, dtypes::float32, {2, 4, 1}));
      },
      {"matmul", "broadcast", "(3,)", "(2,)"});
}

// ---- scans and aranges ------------------------------------------------------------------------

TEST_F(ComposeScan, PrefixSum) {
  for (int64_t n : {1, 2, 7, 33}) {
    Vals x = random(dtypes::int32, {n}, -100, 100), want;
    double s = 0;
    for (double v : x) want.push_back(s += v);
    expect_exact(prefix_sum(g, in(dtypes::int32, {n}, x)), {n}, want, dtypes::int32);
  }
  expect_exact(prefix_sum(g, in(dtypes::float32, {0}, {})), {0}, {});
  expect_near(prefix_sum(g, in(dtypes::float32, {4}, {0.5, -1.25, 3, 1e-3})), {4}, {0.5, -0.75, 2.25, 2.251}, 1e-6);
  expect_invalid([&] { prefix_sum(g, input(g, dtypes::float32, {2, 2})); }, {"prefix_sum", "1-D", "(2,2)"});
}

TEST_F(ComposeScan, CumsumAlongEveryAxis) {
  Dims s{3, 4, 5};
  Vals x = random(dtypes::float32, s, -2, 2);
  const UOp* t = in(dtypes::float32, s, x);
  for (int64_t axis : {0, 1, 2, -1, -3}) {
    size_t a = size_t(axis < 0 ? axis + 3 : axis);
    Vals want(x.size());
    for (int64_t f = 0; f < count(s); f++) {
      Dims idx = unflat(f, s);
      double acc = 0;
      Dims j = idx;
      for (j[a] = 0; j[a] <= idx[a]; j[a]++) acc += x[size_t(flat(j, s))];
      want[size_t(f)] = acc;
    }
    expect_near(cumsum(g, t, axis), s, want, 1e-6, 1e-6);
  }
  // size-1 and zero-size axes, a scalar
  const UOp* col = in(dtypes::int32, {3, 1}, {4, 5, 6});
  expect_exact(cumsum(g, col, 1), {3, 1}, {4, 5, 6});
  expect_exact(cumsum(g, col, 0), {3, 1}, {4, 9, 15});
  expect_exact(cumsum(g, in(dtypes::int32, {2, 0}, {}), 1), {2, 0}, {});
  expect_exact(cumsum(g, in(dtypes::int32, {0, 2}, {}), 0), {0, 2}, {});
  expect_exact(cumsum(g, in(dtypes::float32, {}, {2.5}), 0), {}, {2.5});
  expect_invalid([&] { cumsum(g, t, 3); }, {"cumsum", "axis 3", "(3,4,5)"});
  expect_invalid([&] { cumsum(g, t, -4); }, {"cumsum", "axis -4"});
  expect_invalid([&] { cumsum(g, input(g, dtypes::bool_, {3}), 0); }, {"cumsum", "bool"});
}

TEST_F(ComposeScan, Arange) {
  for (int64_t n : {0, 1, 5, 64, 65, 200, 1000}) {
    Vals want;
    for (int64_t i = 0; i < n; i++) want.push_back(double(i));
    expect_exact(arange(g, n), {n}, want, dtypes::int32);
    if (n <= 200) expect_exact(arange(g, n, dtypes::float32), {n}, want, dtypes::float32);
  }
  expect_exact(arange(g, 4, dtypes::int8), {4}, {0, 1, 2, 3}, dtypes::int8);
  expect_exact(arange(g, 2, dtypes::bool_), {2}, {0, 1}, dtypes::bool_);
  // the largest n the dtype holds
  Vals u8;
  for (int i = 0; i < 256; i++) u8.push_back(i);
  expect_exact(arange(g, 256, dtypes::uint8), {256}, u8, dtypes::uint8);
  // float16 rounds past 2048 like a cast does
  Array h = run(arange(g, 2100, dtypes::float16));
  EXPECT_EQ(h.value_at(2049), 2048.0);
  EXPECT_EQ(h.value_at(2099), 2100.0);
  // big aranges stay small graphs (no n x n window)
  size_t before = g.size();
  EXPECT_EQ(static_shape(arange(g, 3'000'000'000LL, dtypes::int64)), Dims{3'000'000'000LL});
  EXPECT_LT(g.size() - before, 400u);

  expect_invalid([&] { arange(g, -1); }, {"arange", "-1"});
  expect_invalid([&] { arange(g, 200, dtypes::int8); }, {"arange", "200", "int8"});
  expect_invalid([&] { arange(g, 3, dtypes::bool_); }, {"arange", "bool"});
  expect_invalid([&] { arange(g, 3, dtypes::index); }, {"arange", "index"});
}

// ---- indexing ---------------------------------------------------------------------------------

TEST_F(ComposeIndex, OneHot) {
  const UOp* idx = in(dtypes::int32, {2, 3}, {0, 5, 2, -1, 6, 5});
  Vals want;
  for (double i : {0, 5, 2, -1, 6, 5})
    for (int j = 0; j < 6; j++) want.push_back(i == j ? 1 : 0);
  expect_exact(one_hot(g, idx, 6), {2, 3, 6}, want, dtypes::int32);
  expect_exact(one_hot(g, in(dtypes::uint8, {3}, {1, 2, 4}), 5, dtypes::float32), {3, 5},
               {0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1}, dtypes::float32);
  expect_exact(one_hot(g, in(dtypes::int64, {}, {3}), 4, dtypes::bool_), {4}, {0, 0, 0, 1}, dtypes::bool_);
  expect_exact(one_hot(g, in(dtypes::int32, {2}, {0, 1}), 0), {2, 0}, {});
  expect_invalid([&] { one_hot(g, idx, -1); }, {"one_hot", "-1"});
  expect_invalid([&] { one_hot(g, input(g, dtypes::float32, {2}), 3); }, {"one_hot", "idx", "float32"});
}

TEST_F(ComposeIndex, GatherAlongEveryAxis) {
  Dims sx{4, 5, 6}, si{3, 4, 5};
  Vals x = random(dtypes::float32, sx, -3, 3);
  const UOp* tx = in(dtypes::float32, sx, x);
  for (int64_t axis : {0, 1, 2, -1}) {
    size_t a = size_t(axis < 0 ? axis + 3 : axis);
    Vals idx = random(dtypes::int32, si, 0, double(sx[a]) - 1e-9);
    idx[0] = -1;  // outside the axis: 0
    idx[7] = double(sx[a]);
    Vals want;
    for (int64_t f = 0; f < count(si); f++) {
      Dims j = unflat(f, si);
      int64_t i = int64_t(idx[size_t(f)]);
      if (i < 0 || i >= sx[a]) {
        want.push_back(0);
        continue;
      }
      j[a] = i;
      want.push_back(x[size_t(flat(j, sx))]);
    }
    expect_exact(gather(g, tx, axis, in(dtypes::int32, si, idx)), si, want, dtypes::float32);
  }
  // infinities are selected, not multiplied by a 0/1 mask
  expect_exact(gather(g, in(dtypes::float32, {3}, {kInf, 2, -kInf}), 0, in(dtypes::int64, {4}, {2, 0, 1, 2})), {4},
               {-kInf, kInf, 2, -kInf});
  // the spec's 1-D form with an int dtype and an empty index
  expect_exact(gather(g, in(dtypes::int32, {3}, {7, 8, 9}), 0, in(dtypes::uint8, {0}, {})), {0}, {});

  expect_invalid([&] { gather(g, tx, 0, input(g, dtypes::int32, {3, 4})); }, {"gather", "rank", "(3,4)"});
  expect_invalid([&] { gather(g, tx, 0, input(g, dtypes::int32, {3, 6, 6})); }, {"gather", "larger", "axis 1"});
  expect_invalid([&] { gather(g, tx, 3, input(g, dtypes::int32, si)); }, {"gather", "axis 3"});
  expect_invalid([&] { gather(g, tx, 0, input(g, dtypes::float32, si)); }, {"gather", "idx", "float32"});
}

TEST_F(ComposeIndex, TakeIsNumpyTake) {
  Dims sx{5, 3};
  Vals x = random(dtypes::int32, sx, -9, 9);
  const UOp* tx = in(dtypes::int32, sx, x);
  Vals idx{4, 0, 0, 2};
  const UOp* ti = in(dtypes::int32, {2, 2}, idx);
  // axis 0: an embedding lookup (2,2) -> (2,2,3)
  Vals want;
  for (double i : idx)
    for (int c = 0; c < 3; c++) want.push_back(x[size_t(i * 3 + c)]);
  expect_exact(take(g, tx, ti), {2, 2, 3}, want);
  // axis 1 with indices up to 2: (5,) + (2,2)
  Vals idx1{2, 1, 0, 2};
  want.clear();
  for (int r = 0; r < 5; r++)
    for (double i : idx1) want.push_back(x[size_t(r * 3 + int(i))]);
  expect_exact(take(g, tx, in(dtypes::int32, {2, 2}, idx1), -1), {5, 2, 2}, want);
  // the spec's 1-D gather, a scalar index, an empty index
  expect_exact(take(g, in(dtypes::float32, {4}, {1.5, 2.5, 3.5, 4.5}), in(dtypes::int32, {3}, {3, 3, 1})), {3},
               {4.5, 4.5, 2.5});
  expect_exact(take(g, tx, in(dtypes::int32, {}, {1})), {3}, {x[3], x[4], x[5]});
  expect_exact(take(g, tx, in(dtypes::int32, {0}, {})), {0, 3}, {});
  expect_invalid([&] { take(g, tx, ti, 2); }, {"take", "axis 2"});
  expect_invalid([&] { take(g, in(dtypes::int32, {}, {1}), ti); }, {"take", "rank >= 1"});
}

TEST_F(ComposeIndex, ScatterAdd) {
  // the spec's 1-D form with repeated indices
  const UOp* t = in(dtypes::float32, {4}, {1, 2, 3, 4});
  expect_exact(
      scatter_add(g, t, 0, in(dtypes::int32, {5}, {0, 3, 0, 2, 9}), in(dtypes::float32, {5}, {10, 20, 30, 40, 50})),
      {4}, {41, 2, 43, 24});
  // 2-D along each axis; val larger than idx (its extra elements are ignored), idx smaller than x
  Dims sx{3, 4}, si{2, 3}, sv{3, 3};
  Vals x = random(dtypes::int32, sx, -5, 5), v = random(dtypes::int32, sv, -5, 5);
  for (int64_t axis : {0, 1}) {
    Vals idx = random(dtypes::int32, si, 0, double(sx[size_t(axis)]) - 1e-9);
    Vals want = x;
    for (int64_t f = 0; f < count(si); f++) {
      Dims j = unflat(f, si), at = j;
      at[size_t(axis)] = int64_t(idx[size_t(f)]);
      want[size_t(flat(at, sx))] += v[size_t(flat(j, sv))];
    }
    expect_exact(scatter_add(g, in(dtypes::int32, sx, x), axis, in(dtypes::int32, si, idx), in(dtypes::int32, sv, v)),
                 sx, want, dtypes::int32);
  }
  // inf values add as themselves
  expect_exact(scatter_add(g, in(dtypes::float32, {2}, {1, 1}), 0, in(dtypes::int32, {2}, {1, 1}),
                           in(dtypes::float32, {2}, {kInf, 2})),
               {2}, {1, kInf});
  // an empty index adds nothing
  expect_exact(scatter_add(g, t, 0, in(dtypes::int32, {0}, {}), in(dtypes::float32, {0}, {})), {4}, {1, 2, 3, 4});

  const UOp* i2 = input(g, dtypes::int32, {2, 3});
  const UOp* x2 = input(g, dtypes::int32, {3, 4});
  expect_invalid(
      [&] {
        scatter_add(g, x2, 0, i2, input(g, dtypes::int32, {2, 2}));
      },
      {"scatter_add", "larger than val", "axis 1"});
  expect_invalid(
      [&] {
        scatter_add(g, x2, 1, input(g, dtypes::int32, {4, 3}), input(g, dtypes::int32, {4, 3}));
      },
      {"scatter_add", "larger than x", "axis 0"});
  expect_invalid([&] { scatter_add(g, x2, 0, i2, input(g, dtypes::float32, {2, 3})); }, {"scatter_add", "val"});
  expect_invalid([&] { scatter_add(g, x2, 0, input(g, dtypes::int32, {6}), input(g, dtypes::int32, {6})); },
                 {"scatter_add", "one rank"});
  expect_invalid([&] { scatter_add(g, x2, 2, i2, i2); }, {"scatter_add", "axis 2"});
}

// ---- concat and stack -------------------------------------------------------------------------

TEST_F(ComposeJoin, ConcatAlongEveryAxis) {
  Dims base{3, 2, 4};
  for (int64_t axis : {0, 1, 2, -1, -3}) {
    size_t a = size_t(axis < 0 ? axis + 3 : axis);
    std::vector<Dims> shapes(3, base);
    shapes[1][a] = 1;
    shapes[2][a] = 0;  // an empty piece in the list
    std::vector<Vals> vals;
    std::vector<const UOp*> ts;
    for (const Dims& s : shapes) {
      vals.push_back(random(dtypes::float32, s, -5, 5));
      ts.push_back(in(dtypes::float32, s, vals.back()));
    }
    std::swap(ts[0], ts[2]);  // order: empty, (.., 1, ..), base
    std::swap(vals[0], vals[2]);
    std::swap(shapes[0], shapes[2]);
    Dims out = base;
    out[a] = base[a] + 1;
    Vals want(size_t(count(out)));
    for (int64_t f = 0; f < count(out); f++) {
      Dims j = unflat(f, out);
      size_t piece = 0;
      while (j[a] >= shapes[piece][a]) j[a] -= shapes[piece++][a];
      want[size_t(f)] = vals[piece][size_t(flat(j, shapes[piece]))];
    }
    expect_exact(concat(g, ts, axis), out, want);
  }
}

TEST_F(ComposeJoin, ConcatKeepsEveryBit) {
  // -0.0 stays negative (an Add of zero pads would not keep it), bool works, NaN passes through
  Array r = run(
      concat(g, std::vector<const UOp*>{in(dtypes::float32, {2}, {-0.0, kNaN}), in(dtypes::float32, {1}, {-0.0})}, 0));
  ASSERT_EQ(r.shape, Dims{3});
  EXPECT_TRUE(std::signbit(r.f[0]) && r.f[0] == 0);
  EXPECT_TRUE(std::isnan(r.f[1]));
  EXPECT_TRUE(std::signbit(r.f[2]));
  expect_exact(
      concat(g, std::vector<const UOp*>{in(dtypes::bool_, {1, 2}, {1, 0}), in(dtypes::bool_, {1, 2}, {1, 1})}, 0),
      {2, 2}, {1, 0, 1, 1}, dtypes::bool_);
  // one tensor is itself; all-empty pieces give the empty result
  const UOp* one = in(dtypes::int32, {2}, {5, 6});
  EXPECT_EQ(concat(g, std::vector<const UOp*>{one}, 0), one);
  expect_exact(concat(g, std::vector<const UOp*>{in(dtypes::int32, {0, 2}, {}), in(dtypes::int32, {0, 2}, {})}, 0),
               {0, 2}, {});
}

TEST_F(ComposeJoin, ConcatErrors) {
  const UOp* a = input(g, dtypes::float32, {2, 3});
  expect_invalid([&] { concat(g, std::vector<const UOp*>{}, 0); }, {"concat", "at least one"});
  expect_invalid(
      [&] {
        concat(g, std::vector<const UOp*>{a, input(g, dtypes::float32, {3, 3})}, 1);
      },
      {"concat", "tensor 1", "(3,3)", "(2,3)"});
  expect_invalid(
      [&] {
        concat(g, std::vector<const UOp*>{a, input(g, dtypes::int32, {2, 3})}, 0);
      },
      {"concat", "float32", "int32"});
  expect_invalid([&] { concat(g, std::vector<const UOp*>{a, a}, 2); }, {"concat", "axis 2"});
  expect_invalid([&] { concat(g, std::vector<const UOp*>{input(g, dtypes::float32, {})}, 0); }, {"concat", "rank"});
}

TEST_F(ComposeJoin, Stack) {
  Dims s{2, 3};
  std::vector<Vals> vals;
  std::vector<const UOp*> ts;
  for (int j = 0; j < 3; j++) {
    vals.push_back(random(dtypes::int32, s, -9, 9));
    ts.push_back(in(dtypes::int32, s, vals.back()));
  }
  for (int64_t axis : {0, 1, 2, -1, -3}) {
    size_t a = size_t(axis < 0 ? axis + 3 : axis);
    Dims out = s;
    out.insert(out.begin() + int64_t(a), 3);
    Vals want;
    for (int64_t f = 0; f < count(out); f++) {
      Dims j = unflat(f, out);
      int64_t which = j[a];
      j.erase(j.begin() + int64_t(a));
      want.push_back(vals[size_t(which)][size_t(flat(j, s))]);
    }
    expect_exact(stack(g, ts, axis), out, want);
  }
  expect_exact(stack(g, std::vector<const UOp*>{in(dtypes::float32, {}, {1}), in(dtypes::float32, {}, {2})}, 0), {2},
               {1, 2});
  expect_invalid(
      [&] {
        stack(g, std::vector<const UOp*>{ts[0], input(g, dtypes::int32, {3, 2})}, 0);
      },
      {"stack", "tensor 1", "(3,2)"});
  // the message names the tensors' shape, not a shape of ones (a new user's report)
  expect_invalid([&] { stack(g, ts, 3); }, {"stack", "axis 3", "[-3, 2]"});
}

// ---- elementwise --------------------------------------------------------------------------------

TEST_F(ComposeMath, ActivationsMatchCmath) {
  Vals x = random(dtypes::float32, {5, 7}, -6, 6);
  for (double v : {0.0, 1e-3, -1e-3, 30.0, -30.0, 100.0, -100.0}) x.push_back(double(float(v)));
  Dims s{int64_t(x.size())};
  const UOp* t = in(dtypes::float32, s, x);
  auto each = [&](double (*f)(double)) {
    Vals out;
    for (double v : x) out.push_back(f(v));
    return out;
  };
  expect_near(relu(g, t), s, each([](double v) { return v > 0 ? v : 0.0; }), 0, 0, dtypes::float32);
  expect_near(tensor_exp(g, in(dtypes::float32, {5}, {-2, 0, 1, 10, 80})), {5},
              {std::exp(-2.0), 1, std::exp(1.0), std::exp(10.0), std::exp(80.0)}, 2e-6);
  expect_near(sigmoid(g, t), s, each([](double v) { return 1 / (1 + std::exp(-v)); }), 1e-6, 1e-7);
  expect_near(tensor_tanh(g, t), s, each([](double v) { return std::tanh(v); }), 1e-6, 2e-7);
  expect_near(gelu(g, t), s, each([](double v) {
                return 0.5 * v * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (v + 0.044715 * v * v * v)));
              }),
              2e-6, 1e-7);
  // special values
  expect_near(sigmoid(g, in(dtypes::float32, {3}, {kInf, -kInf, kNaN})), {3}, {1, 0, kNaN});
  expect_near(tensor_tanh(g, in(dtypes::float32, {2}, {kInf, -kInf})), {2}, {1, -1});
  expect_near(tensor_exp(g, in(dtypes::float32, {3}, {kInf, -kInf, kNaN})), {3}, {kInf, 0, kNaN});
  expect_near(tensor_log(g, in(dtypes::float32, {5}, {kInf, 0, -1, 1, 0.5})), {5},
              {kInf, -kInf, kNaN, 0, std::log(0.5)}, 1e-6);
  Vals pos = random(dtypes::float32, {20}, 1e-3, 1e3);
  Vals logs;
  for (double v : pos) logs.push_back(std::log(v));
  expect_near(tensor_log(g, in(dtypes::float32, {20}, pos)), {20}, logs, 1e-6, 1e-7);
  // float64 runs at its own precision; relu works on ints; a (1,) and an empty tensor
  expect_near(sigmoid(g, in(dtypes::float64, {1}, {0.3})), {1}, {1 / (1 + std::exp(-0.3))}, 1e-14, 0, dtypes::float64);
  expect_exact(relu(g, in(dtypes::int8, {3}, {-128, 0, 127})), {3}, {0, 0, 127}, dtypes::int8);
  expect_exact(gelu(g, in(dtypes::float32, {0, 2}, {})), {0, 2}, {});

  const UOp* ints = input(g, dtypes::int32, {2});
  expect_invalid([&] { sigmoid(g, ints); }, {"sigmoid", "float", "int32"});
  expect_invalid([&] { tensor_exp(g, ints); }, {"exp", "int32"});
  expect_invalid([&] { tensor_log(g, ints); }, {"log", "int32"});
  expect_invalid([&] { tensor_tanh(g, ints); }, {"tanh", "int32"});
  expect_invalid([&] { gelu(g, ints); }, {"gelu", "int32"});
  expect_invalid([&] { relu(g, input(g, dtypes::bool_, {2})); }, {"relu", "bool"});
}

// Reference softmax / log_softmax of x (shape s) along axis a.
Vals ref_softmax(const Vals& x, const Dims& s, size_t a, bool log) {
  Vals out(x.size());
  for (int64_t f = 0; f < count(s); f++) {
    Dims j = unflat(f, s);
    double m = -kInf, total = 0;
    Dims k = j;
    for (k[a] = 0; k[a] < s[a]; k[a]++) m = std::max(m, x[size_t(flat(k, s))]);
    for (k[a] = 0; k[a] < s[a]; k[a]++) total += std::exp(x[size_t(flat(k, s))] - m);
    double v = x[size_t(f)] - m;
    out[size_t(f)] = log ? v - std::log(total) : std::exp(v) / total;
  }
  return out;
}

TEST_F(ComposeNorm, SoftmaxAndLogSoftmax) {
  struct Case {
    Dims s;
    int64_t axis;
    double scale;
  };
  for (const Case& c : {Case{{3, 5}, 1, 3}, Case{{3, 5}, 0, 3}, Case{{2, 3, 4}, -2, 3}, Case{{7}, 0, 3},
                        Case{{4, 1}, 1, 3}, Case{{2, 6}, -1, 500}}) {  // 500: stable only after subtracting the max
    Vals x = random(dtypes::float32, c.s, -c.scale, c.scale);
    const UOp* t = in(dtypes::float32, c.s, x);
    size_t a = size_t(c.axis < 0 ? c.axis + int64_t(c.s.size()) : c.axis);
    expect_near(softmax(g, t, c.axis), c.s, ref_softmax(x, c.s, a, false), 3e-6, 1e-7);
    expect_near(log_softmax(g, t, c.axis), c.s, ref_softmax(x, c.s, a, true), 2e-6, 2e-6);
  }
  expect_exact(softmax(g, in(dtypes::float32, {}, {3}), 0), {}, {1});
  expect_exact(log_softmax(g, in(dtypes::float32, {}, {3}), -1), {}, {0});
  expect_exact(softmax(g, in(dtypes::float32, {2, 0}, {}), 1), {2, 0}, {});
  expect_invalid([&] { softmax(g, input(g, dtypes::float32, {2, 3}), 2); }, {"softmax", "axis 2", "(2,3)"});
  expect_invalid([&] { log_softmax(g, input(g, dtypes::int32, {2, 3}), 0); }, {"log_softmax", "int32"});
}

TEST_F(ComposeNorm, Layernorm) {
  Dims s{2, 3, 4};
  Vals x = random(dtypes::float32, s, -3, 3);
  const UOp* t = in(dtypes::float32, s, x);
  for (int64_t naxes : {1, 2, 3}) {
    Dims ns(s.end() - naxes, s.end());
    int64_t n = count(ns), groups = count(s) / n;
    Vals w = random(dtypes::float32, ns, 0.5, 2), b = random(dtypes::float32, ns, -1, 1);
    const double eps = 1e-5;
    Vals plain(x.size()), affine(x.size());
    for (int64_t q = 0; q < groups; q++) {
      double mean = 0, var = 0;
      for (int64_t i = 0; i < n; i++) mean += x[size_t(q * n + i)] / double(n);
      for (int64_t i = 0; i < n; i++) var += std::pow(x[size_t(q * n + i)] - mean, 2) / double(n);
      for (int64_t i = 0; i < n; i++) {
        size_t f = size_t(q * n + i);
        plain[f] = (x[f] - mean) / std::sqrt(var + eps);
        affine[f] = plain[f] * w[size_t(i)] + b[size_t(i)];
      }
    }
    expect_near(layernorm(g, t, naxes), s, plain, 1e-5, 1e-5);
    expect_near(layernorm(g, t, naxes, in(dtypes::float32, ns, w), in(dtypes::float32, ns, b), eps), s, affine, 1e-5,
                1e-5);
  }
  // a constant row normalizes to 0 (eps keeps it finite); weight only; an empty batch
  expect_exact(layernorm(g, in(dtypes::float32, {1, 3}, {2, 2, 2}), 1, in(dtypes::float32, {3}, {1, 2, 3})), {1, 3},
               {0, 0, 0});
  expect_exact(layernorm(g, in(dtypes::float32, {0, 3}, {}), 1), {0, 3}, {});

  expect_invalid([&] { layernorm(g, t, 0); }, {"layernorm", "naxes", "0"});
  expect_invalid([&] { layernorm(g, t, 4); }, {"layernorm", "naxes", "4"});
  expect_invalid([&] { layernorm(g, t, 1, input(g, dtypes::float32, {3})); }, {"layernorm", "weight", "(4,)", "(3,)"});
  expect_invalid([&] { layernorm(g, t, 1, nullptr, input(g, dtypes::float64, {4})); },
                 {"layernorm", "bias", "float64"});
  expect_invalid([&] { layernorm(g, input(g, dtypes::float32, {2, 0}), 1); }, {"layernorm", "no elements"});
  expect_invalid([&] { layernorm(g, t, 1, nullptr, nullptr, -1); }, {"layernorm", "eps"});
  expect_invalid([&] { layernorm(g, input(g, dtypes::int32, {2}), 1); }, {"layernorm", "int32"});
}

TEST_F(ComposeNorm, ArgmaxFirstIndexOfTheMax) {
  // ties resolve to the first index; a NaN is the maximum
  expect_exact(argmax(g, in(dtypes::float32, {2}, {2, 2}), 0), {}, {0}, dtypes::int32);
  expect_exact(argmax(g, in(dtypes::float32, {3}, {1, 2, 2}), 0), {}, {1});
  expect_exact(argmax(g, in(dtypes::float32, {4}, {1, kNaN, 5, kNaN}), 0), {}, {1});
  expect_exact(argmax(g, in(dtypes::float32, {3}, {-kInf, -kInf, -kInf}), 0), {}, {0});
  Dims s{4, 6};
  Vals x = random(dtypes::int32, s, -3, 3);  // many ties
  const UOp* t = in(dtypes::int32, s, x);
  for (int64_t axis : {0, 1, -1}) {
    size_t a = size_t(axis < 0 ? axis + 2 : axis);
    Dims out = s;
    out.erase(out.begin() + int64_t(a));
    Vals want;
    for (int64_t f = 0; f < count(out); f++) {
      Dims j = unflat(f, out);
      j.insert(j.begin() + int64_t(a), 0);
      int64_t best = 0;
      double bv = x[size_t(flat(j, s))];
      for (j[a] = 1; j[a] < s[a]; j[a]++)
        if (x[size_t(flat(j, s))] > bv) {
          bv = x[size_t(flat(j, s))];
          best = j[a];
        }
      want.push_back(double(best));
    }
    expect_exact(argmax(g, t, axis), out, want, dtypes::int32);
    Dims kept = s;
    kept[a] = 1;
    expect_exact(argmax(g, t, axis, true), kept, want, dtypes::int32);
  }
  expect_exact(argmax(g, in(dtypes::bool_, {2, 3}, {0, 1, 1, 0, 0, 0}), 1), {2}, {1, 0});
  expect_exact(argmax(g, in(dtypes::uint8, {1, 70}, Vals(70, 9)), 1), {1}, {0});
  expect_exact(argmax(g, in(dtypes::float32, {}, {4}), 0), {}, {0});
  expect_exact(argmax(g, in(dtypes::float32, {0, 3}, {}), 1), {0}, {});
  expect_invalid([&] { argmax(g, input(g, dtypes::float32, {3, 0}), 1); }, {"argmax", "empty", "(3,0)"});
  expect_invalid([&] { argmax(g, t, 2); }, {"argmax", "axis 2"});
}

// ---- convolution and pooling --------------------------------------------------------------------

struct ConvCase {
  Dims x, w;
  std::array<int64_t, 2> stride{1, 1}, padding{0, 0}, dilation{1, 1};
  int64_t groups = 1;
  bool bias = false;
};

Vals ref_conv(const Vals& x, const Dims& sx, const Vals& w, const Dims& sw, const Vals& b, const ConvCase& c,
              Dims* out_shape) {
  int64_t n = sx[0], cin = sx[1], h = sx[2], wd = sx[3], cout = sw[0], kh = sw[2], kw = sw[3];
  int64_t cg = cin / c.groups, og = cout / c.groups;
  int64_t oh = (h + 2 * c.padding[0] - c.dilation[0] * (kh - 1) - 1) / c.stride[0] + 1;
  int64_t ow = (wd + 2 * c.padding[1] - c.dilation[1] * (kw - 1) - 1) / c.stride[1] + 1;
  *out_shape = {n, cout, oh, ow};
  Vals out;
  for (int64_t ni = 0; ni < n; ni++)
    for (int64_t co = 0; co < cout; co++)
      for (int64_t y = 0; y < oh; y++)
        for (int64_t xo = 0; xo < ow; xo++) {
          double s = b.empty() ? 0 : b[size_t(co)];
          int64_t grp = co / og;
          for (int64_t ci = 0; ci < cg; ci++)
            for (int64_t i = 0; i < kh; i++)
              for (int64_t j = 0; j < kw; j++) {
                int64_t yy = y * c.stride[0] + i * c.dilation[0] - c.padding[0];
                int64_t xx = xo * c.stride[1] + j * c.dilation[1] - c.padding[1];
                if (yy < 0 || yy >= h || xx < 0 || xx >= wd) continue;
                s += x[size_t(flat({ni, grp * cg + ci, yy, xx}, sx))] * w[size_t(flat({co, ci, i, j}, sw))];
              }
          out.push_back(s);
        }
  return out;
}

TEST_F(ComposeConv, Conv2dMatchesLoops) {
  std::vector<ConvCase> cases = {
      {{1, 4, 9, 9}, {4, 4, 3, 3}},
      {{2, 3, 7, 10}, {2, 3, 3, 2}, {2, 3}, {0, 0}, {1, 1}, 1, true},    // strided, bias
      {{1, 2, 5, 6}, {3, 2, 3, 3}, {1, 1}, {1, 2}},                      // padded
      {{1, 1, 9, 8}, {2, 1, 3, 2}, {1, 2}, {0, 1}, {2, 3}},              // dilated
      {{2, 4, 5, 5}, {6, 2, 2, 3}, {2, 1}, {1, 1}, {1, 1}, 2, true},     // grouped
      {{1, 3, 4, 4}, {3, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 3},           // depthwise
      {{1, 2, 3, 3}, {1, 2, 1, 1}, {5, 5}},                              // stride past the kernel, 1x1
      {{1, 1, 2, 2}, {1, 1, 2, 2}},                                      // one window
      {{0, 2, 4, 4}, {1, 2, 3, 3}},                                      // empty batch
      {{2, 8, 20, 20}, {16, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true},  // register tiles, filter width unrolled
  };
  for (const ConvCase& c : cases) {
    Vals x = random(dtypes::float32, c.x, -1, 1), w = random(dtypes::float32, c.w, -1, 1);
    Vals b = c.bias ? random(dtypes::float32, {c.w[0]}, -1, 1) : Vals{};
    Dims so;
    Vals want = ref_conv(x, c.x, w, c.w, b, c, &so);
    const UOp* tb = c.bias ? in(dtypes::float32, {c.w[0]}, b) : nullptr;
    expect_near(conv2d(g, in(dtypes::float32, c.x, x), in(dtypes::float32, c.w, w), tb, c.stride, c.padding, c.dilation,
                       c.groups),
                so, want, 1e-5, 1e-5);
  }
  // integers are exact
  ConvCase ci{{1, 2, 4, 5}, {2, 2, 2, 2}, {1, 2}, {1, 0}};
  Vals x = random(dtypes::int32, ci.x, -9, 9), w = random(dtypes::int32, ci.w, -9, 9);
  Dims so;
  Vals want = ref_conv(x, ci.x, w, ci.w, {}, ci, &so);
  expect_exact(conv2d(g, in(dtypes::int32, ci.x, x), in(dtypes::int32, ci.w, w), nullptr, ci.stride, ci.padding), so,
               want, dtypes::int32);
}

TEST_F(ComposeConv, Errors) {
  const UOp* x = input(g, dtypes::float32, {1, 4, 5, 5});
  const UOp* w = input(g, dtypes::float32, {2, 4, 3, 3});
  expect_invalid([&] { conv2d(g, input(g, dtypes::float32, {4, 5, 5}), w); }, {"conv2d", "(N,Cin,H,W)", "(4,5,5)"});
  expect_invalid([&] { conv2d(g, x, input(g, dtypes::float32, {2, 3, 3, 3})); }, {"conv2d", "Cin/groups = 4"});
  expect_invalid(
      [&] {
        conv2d(g, x, input(g, dtypes::float32, {2, 2, 3, 3}), nullptr, {1, 1}, {0, 0}, {1, 1}, 3);
      },
      {"conv2d", "groups 3", "Cin 4"});
  expect_invalid([&] { conv2d(g, x, w, nullptr, {0, 1}); }, {"conv2d", "stride", "(0,1)"});
  expect_invalid([&] { conv2d(g, x, w, nullptr, {1, 1}, {-1, 0}); }, {"conv2d", "padding", "(-1,0)"});
  expect_invalid([&] { conv2d(g, x, w, nullptr, {1, 1}, {0, 0}, {3, 1}); }, {"conv2d", "spans 7", "H", "5"});
  expect_invalid([&] { conv2d(g, x, w, input(g, dtypes::float32, {3})); }, {"conv2d", "bias", "(2,)", "(3,)"});
  expect_invalid([&] { conv2d(g, x, input(g, dtypes::float16, {2, 4, 3, 3})); }, {"conv2d", "weight", "float16"});
  expect_invalid([&] { conv2d(g, x, w, nullptr, {1, 1}, {0, 0}, {1, 1}, 0); }, {"conv2d", "groups", "0"});
}

// Reference pool over the last two axes; max pads with -inf, avg counts the zero padding.
Vals ref_pool(const Vals& x, const Dims& s, std::array<int64_t, 2> k, std::array<int64_t, 2> st,
              std::array<int64_t, 2> p, bool is_max, Dims* out_shape) {
  size_t r = s.size();
  int64_t h = s[r - 2], w = s[r - 1], oh = (h + 2 * p[0] - k[0]) / st[0] + 1, ow = (w + 2 * p[1] - k[1]) / st[1] + 1;
  *out_shape = Dims(s.begin(), s.end() - 2);
  out_shape->insert(out_shape->end(), {oh, ow});
  Vals out;
  for (int64_t q = 0; q < count(s) / (h * w); q++)
    for (int64_t y = 0; y < oh; y++)
      for (int64_t xo = 0; xo < ow; xo++) {
        double acc = is_max ? -kInf : 0;
        for (int64_t i = 0; i < k[0]; i++)
          for (int64_t j = 0; j < k[1]; j++) {
            int64_t yy = y * st[0] + i - p[0], xx = xo * st[1] + j - p[1];
            if (yy < 0 || yy >= h || xx < 0 || xx >= w) continue;
            double v = x[size_t(q * h * w + yy * w + xx)];
            acc = is_max ? std::max(acc, v) : acc + v;
          }
        out.push_back(is_max ? acc : acc / double(k[0] * k[1]));
      }
  return out;
}

TEST_F(ComposePool, MaxAndAvgPool) {
  struct Case {
    Dims s;
    std::array<int64_t, 2> k, st, p;
  };
  for (const Case& c : {Case{{2, 2, 11, 9}, {2, 2}, {2, 2}, {0, 0}}, Case{{1, 3, 7, 8}, {3, 3}, {2, 2}, {1, 1}},
                        Case{{1, 1, 6, 7}, {3, 2}, {1, 3}, {1, 0}}, Case{{2, 5, 5}, {5, 1}, {1, 1}, {2, 0}},
                        Case{{4, 4}, {1, 1}, {3, 3}, {0, 0}}, Case{{0, 2, 4, 4}, {2, 2}, {2, 2}, {1, 1}}}) {
    Vals x = random(dtypes::float32, c.s, -5, -1);  // all negative: a zero border would win a max
    const UOp* t = in(dtypes::float32, c.s, x);
    Dims so;
    Vals want = ref_pool(x, c.s, c.k, c.st, c.p, true, &so);
    expect_exact(max_pool2d(g, t, c.k, c.st, c.p), so, want, dtypes::float32);
    want = ref_pool(x, c.s, c.k, c.st, c.p, false, &so);
    expect_near(avg_pool2d(g, t, c.k, c.st, c.p), so, want, 1e-6, 1e-6, dtypes::float32);
  }
  // integer max pooling pads with the dtype's minimum
  Vals xi{-128, -100, -7, -128, -3, -9, -50, -60, -127};
  Dims so;
  Vals want = ref_pool(xi, {3, 3}, {2, 2}, {2, 2}, {1, 1}, true, &so);
  expect_exact(max_pool2d(g, in(dtypes::int8, {3, 3}, xi), {2, 2}, {2, 2}, {1, 1}), so, want, dtypes::int8);

  const UOp* x = input(g, dtypes::float32, {1, 1, 4, 4});
  expect_invalid([&] { max_pool2d(g, input(g, dtypes::float32, {4}), {2, 2}, {2, 2}); }, {"max_pool2d", "2 axes"});
  expect_invalid([&] { max_pool2d(g, x, {0, 2}, {2, 2}); }, {"max_pool2d", "kernel", "(0,2)"});
  expect_invalid([&] { avg_pool2d(g, x, {2, 2}, {2, -1}); }, {"avg_pool2d", "stride", "(2,-1)"});
  expect_invalid([&] { max_pool2d(g, x, {2, 2}, {1, 1}, {2, 0}); }, {"max_pool2d", "padding", "half"});
  expect_invalid([&] { avg_pool2d(g, x, {5, 2}, {1, 1}); }, {"avg_pool2d", "spans 5", "H", "4"});
  expect_invalid([&] { avg_pool2d(g, input(g, dtypes::int32, {4, 4}), {2, 2}, {1, 1}); }, {"avg_pool2d", "int32"});
}

// ---- random numbers ---------------------------------------------------------------------------

// Reference Threefry-2x32 written from its definition: R rounds of x0 += x1; x1 = rotl(x1) ^ x0,
// with the key (and the schedule word 0x1BD11BDA ^ k0 ^ k1) injected every 4 rounds.
std::array<uint32_t, 2> ref_threefry(uint32_t c0, uint32_t c1, uint32_t k0, uint32_t k1, int rounds = 20) {
  const int rot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  uint32_t ks[3] = {k0, k1, 0x1BD11BDAu ^ k0 ^ k1};
  uint32_t x0 = c0 + ks[0], x1 = c1 + ks[1];
  for (int r = 0; r < rounds; r++) {
    x0 += x1;
    x1 = ((x1 << rot[r % 8]) | (x1 >> (32 - rot[r % 8]))) ^ x0;
    if (r % 4 == 3) {
      uint32_t s = uint32_t(r / 4 + 1);
      x0 += ks[s % 3];
      x1 += ks[(s + 1) % 3] + s;
    }
  }
  return {x0, x1};
}

TEST_F(ComposeRandom, ThreefryKnownAnswers) {
  // Random123's kat_vectors for threefry2x32 (ctr0 ctr1 key0 key1 -> out0 out1) at 13 and 20 rounds
  struct Kat {
    uint32_t in[4], out13[2], out20[2];
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0x9d1c5ec6, 0x8bd50731}, {0x6b200159, 0x99ba4efe}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xfd36d048, 0x2d17272c}, {0x1cb996fc, 0xbb002be7}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xba3e4725, 0xf27d669e}, {0xc4923a9c, 0x483df7a0}},
  };
  Vals col[4];
  for (const Kat& k : kats) {
    auto r13 = ref_threefry(k.in[0], k.in[1], k.in[2], k.in[3], 13);
    auto r20 = ref_threefry(k.in[0], k.in[1], k.in[2], k.in[3]);
    EXPECT_EQ(r13[0], k.out13[0]);  // the reference itself is right
    EXPECT_EQ(r13[1], k.out13[1]);
    EXPECT_EQ(r20[0], k.out20[0]);
    EXPECT_EQ(r20[1], k.out20[1]);
    for (int j = 0; j < 4; j++) col[j].push_back(double(k.in[j]));
  }
  const UOp* t[4];
  for (int j = 0; j < 4; j++) t[j] = in(dtypes::uint32, {3}, col[j]);
  auto [o0, o1] = threefry2x32(g, t[0], t[1], t[2], t[3]);
  Vals w0, w1;
  for (const Kat& k : kats) {
    w0.push_back(k.out20[0]);
    w1.push_back(k.out20[1]);
  }
  expect_exact(o0, {3}, w0, dtypes::uint32);
  expect_exact(o1, {3}, w1, dtypes::uint32);

  // the spec's uint64 form: word 0 in the low half of counter, key and result
  std::vector<int64_t> xs, keys, want;
  for (const Kat& k : kats) {
    xs.push_back(int64_t(uint64_t(k.in[1]) << 32 | k.in[0]));
    keys.push_back(int64_t(uint64_t(k.in[3]) << 32 | k.in[2]));
    want.push_back(int64_t(uint64_t(k.out20[1]) << 32 | k.out20[0]));
  }
  const UOp* x64 = input(g, dtypes::uint64, {3});
  const UOp* k64 = input(g, dtypes::uint64, {3});
  data[x64] = Array::from_ints(dtypes::uint64, {3}, xs);
  data[k64] = Array::from_ints(dtypes::uint64, {3}, keys);
  Array r = run(threefry(g, x64, k64));
  EXPECT_EQ(r.dtype, dtypes::uint64);
  EXPECT_EQ(r.i, want);
}

TEST_F(ComposeRandom, ThreefryBroadcastsAndMatchesReference) {
  // counters (4,1) x key words (3,) -> (4,3)
  Vals c0{0, 1, 0xfffffffe, 12345}, k0{7, 0x80000000u, 99};
  auto [o0, o1] = threefry2x32(g, in(dtypes::uint32, {4, 1}, c0), constant_int(g, dtypes::uint32, 5),
                               in(dtypes::uint32, {3}, k0), constant_int(g, dtypes::uint32, 0xdeadbeef));
  Vals w0, w1;
  for (double c : c0)
    for (double k : k0) {
      auto r = ref_threefry(uint32_t(c), 5, uint32_t(k), 0xdeadbeef);
      w0.push_back(r[0]);
      w1.push_back(r[1]);
    }
  expect_exact(o0, {4, 3}, w0);
  expect_exact(o1, {4, 3}, w1);
  const UOp* u = input(g, dtypes::uint32, {2});
  expect_invalid([&] { threefry2x32(g, u, u, u, input(g, dtypes::int32, {2})); }, {"threefry2x32", "k1", "int32"});
  expect_invalid([&] { threefry2x32(g, u, input(g, dtypes::uint32, {3}), u, u); }, {"threefry2x32", "broadcast"});
  expect_invalid([&] { threefry(g, u, u); }, {"threefry", "uint64", "uint32"});
}

TEST_F(ComposeRandom, UniformBitsAndRange) {
  const uint64_t seed = 0x0123456789abcdefULL;
  Dims s{6, 7};
  Array r = run(rand_uniform(g, s, seed));
  EXPECT_EQ(r.dtype, dtypes::float32);
  EXPECT_EQ(r.shape, s);
  for (int64_t i = 0; i < count(s); i++) {
    uint32_t w = ref_threefry(uint32_t(i), 0, uint32_t(seed), uint32_t(seed >> 32))[0];
    EXPECT_EQ(r.f[size_t(i)], std::ldexp(double(w >> 9), -23)) << i;
  }
  // other float dtypes take their mantissa's worth of top bits
  Array h = run(rand_uniform(g, {5}, seed, dtypes::float16));
  Array d = run(rand_uniform(g, {5}, seed, dtypes::float64));
  for (int64_t i = 0; i < 5; i++) {
    uint32_t w = ref_threefry(uint32_t(i), 0, uint32_t(seed), uint32_t(seed >> 32))[0];
    EXPECT_EQ(h.f[size_t(i)], std::ldexp(double(w >> 22), -10));
    EXPECT_EQ(d.f[size_t(i)], std::ldexp(double(w), -32));
  }
  // a runtime seed gives the same stream; another seed another one; a scalar and an empty shape
  const UOp* seed_in = input(g, dtypes::uint64, {});
  data[buffer_of(seed_in)] = Array::from_ints(dtypes::uint64, {1}, {int64_t(seed)});
  EXPECT_EQ(run(rand_uniform(g, s, seed_in)).f, r.f);
  EXPECT_NE(run(rand_uniform(g, s, seed + 1)).f, r.f);
  EXPECT_EQ(run(rand_uniform(g, {}, seed)).f, Vals{r.f[0]});
  EXPECT_EQ(run(rand_uniform(g, {3, 0}, seed)).shape, (Dims{3, 0}));

  // the distribution: 600 values in [0, 1) with mean near 1/2 and variance near 1/12
  Array big = run(rand_uniform(g, {600}, 42));
  double mean = 0, var = 0;
  for (double v : big.f) {
    EXPECT_TRUE(v >= 0 && v < 1) << v;
    mean += v / 600;
  }
  for (double v : big.f) var += (v - mean) * (v - mean) / 600;
  EXPECT_NEAR(mean, 0.5, 0.04);
  EXPECT_NEAR(var, 1.0 / 12, 0.015);

  expect_invalid([&] { rand_uniform(g, {2}, seed, dtypes::int32); }, {"rand_uniform", "int32"});
  expect_invalid([&] { rand_uniform(g, {2, -1}, seed); }, {"rand_uniform", "(2,-1)"});
  expect_invalid([&] { rand_uniform(g, {1 << 20, 1 << 13}, seed); }, {"rand_uniform", "2^32"});
  expect_invalid([&] { rand_uniform(g, {2}, input(g, dtypes::uint64, {1})); }, {"rand_uniform", "seed", "()"});
  expect_invalid([&] { rand_uniform(g, {2}, input(g, dtypes::int64, {})); }, {"rand_uniform", "seed", "int64"});
}

TEST_F(ComposeRandom, NormalByBoxMuller) {
  const uint64_t seed = 77;
  Array r = run(randn(g, {400}, seed));
  EXPECT_EQ(r.dtype, dtypes::float32);
  double mean = 0, var = 0;
  for (int64_t i = 0; i < 400; i++) {
    auto w = ref_threefry(uint32_t(i), 0, uint32_t(seed), 0);
    double u1 = std::ldexp(double(w[0] >> 9), -23), u2 = std::ldexp(double(w[1] >> 9), -23);
    double z = std::sqrt(-2 * std::log(1 - u1)) * std::cos(2 * std::numbers::pi * u2);
    EXPECT_NEAR(r.f[size_t(i)], z, 1e-5 * (1 + std::fabs(z))) << i;
    mean += r.f[size_t(i)] / 400;
  }
  for (double v : r.f) var += (v - mean) * (v - mean) / 400;
  EXPECT_NEAR(mean, 0, 0.15);
  EXPECT_NEAR(var, 1, 0.2);
  Array h = run(randn(g, {2, 3}, seed, dtypes::float16));
  EXPECT_EQ(h.dtype, dtypes::float16);
  for (int i = 0; i < 6; i++) EXPECT_EQ(h.f[size_t(i)], round_float(dtypes::float16, r.f[size_t(i)]));
  expect_invalid([&] { randn(g, {2}, seed, dtypes::int32); }, {"randn", "int32"});
}

}  // namespace
}  // namespace sn
