// The scheduler end to end: tensor graphs are scheduled, their kernels run by the kernel-IR
// interpreter, and the outputs compared with the tensor-level oracle; kernel counts check fusion.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/schedule/finite.h"
#include "core/schedule/indexing.h"
#include "core/schedule/schedule.h"
#include "core/tensor/compose.h"
#include "core/tensor/tensor.h"
#include "tests/oracle/interp.h"
#include "tests/oracle/kernel_interp.h"
#include "tests/unit/test_pipeline_util.h"
#include "tests/util/test_helpers.h"

namespace sn {
namespace {

using testutil::Rng;

using oracle::Array;

class ScheduleTest : public ::testing::Test {
 protected:
  // An input tensor of `shape` with deterministic data (floats in [lo, hi], ints in [lo, hi]).
  const UOp* in(DType dt, std::vector<int64_t> shape, double lo = -3, double hi = 3) {
    const UOp* t = input(g, dt, shape);
    int64_t n = numel(shape);
    Array a;
    if (dt.is_float()) {
      std::vector<double> v;
      for (int64_t k = 0; k < n; k++) v.push_back(rng.uniform(lo, hi));
      a = Array::from_doubles(dt, {n}, v);
    } else {
      if (dt.is_bool()) lo = 0, hi = 1;
      std::vector<int64_t> v;
      for (int64_t k = 0; k < n; k++) v.push_back(rng.integer(int64_t(lo), int64_t(hi)));
      a = Array::from_ints(dt, {n}, v);
    }
    data[buffer_of(t)] = a;
    return t;
  }

  // Schedules the outputs, runs the kernels, compares every output with the oracle.
  Schedule check(std::vector<const UOp*> outs, double rtol = 1e-6, double atol = 1e-6,
                 const ScheduleOptions& options = {}) {
    Schedule s = schedule_graph(g, outs, {}, options);
    last_ = s;
    std::vector<Array> inputs;
    for (const ScheduleBuffer& b : s.buffers)
      if (b.kind == ScheduleBuffer::Kind::Input) {
        EXPECT_EQ(size_t(b.index), inputs.size());
        inputs.push_back(data.at(b.source));
      }
    std::vector<Array> got = oracle::run_schedule(s, inputs);
    std::vector<Array> want = oracle::evaluate(outs, data);
    EXPECT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size() && i < want.size(); i++) expect_close(got[i], want[i], rtol, atol, i);
    return s;
  }

  static void expect_close(const Array& got, const Array& want, double rtol, double atol, size_t which) {
    ASSERT_EQ(got.dtype, want.dtype) << "output " << which;
    ASSERT_EQ(got.shape, want.shape) << "output " << which;
    int bad = 0;
    for (size_t k = 0; k < want.numel() && bad < 5; k++) {
      bool ok;
      if (want.dtype.is_float()) {
        double a = got.f[k], b = want.f[k];
        ok = (std::isnan(a) && std::isnan(b)) || a == b || std::fabs(a - b) <= atol + rtol * std::fabs(b);
      } else {
        ok = got.int_at(k) == want.int_at(k);
      }
      if (!ok) {
        bad++;
        ADD_FAILURE() << "output " << which << " element " << k << ": got " << got.value_at(k) << ", want "
                      << want.value_at(k) << "\n  got  " << got.str(24) << "\n  want " << want.str(24);
      }
    }
  }

  static std::vector<std::string> names(const Schedule& s) {
    std::vector<std::string> n;
    for (auto& k : s.kernels) n.push_back(k.ast->as<std::string>());
    return n;
  }

  const UOp* c(double v, DType dt = dtypes::float32) { return constant(g, dt, v); }
  const UOp* sum(const UOp* x, std::vector<int64_t> axes) { return reduce(g, x, Op::Add, axes); }
  const UOp* rmax(const UOp* x, std::vector<int64_t> axes) { return reduce(g, x, Op::Max, axes); }

  void TearDown() override {
    if (getenv("SN_SCHED_DUMP"))
      for (auto& k : last_.kernels) printf("%s\n", to_sexpr(k.ast).c_str());
  }
  Schedule last_;
  Graph g;
  Rng rng;
  oracle::BufferData data;
};

// ---- elementwise ----

// A reshape passes the index of every dim it keeps straight through and re-linearizes only the
// dims it merges or splits: (64, 3136) seen as (1, 64, 56, 56) reads channel c at c, and position
// (h, w) at h*56 + w, with no division even where h or w leave the map (a padded window's border).
TEST(ReshapeIndexing, KeptDimsPassTheirIndexThrough) {
  using sched::IndexCtx;
  using sched::through_movement;
  Graph g;
  const UOp* x = input(g, dtypes::float32, {64, 3136});
  const UOp* view = reshape(g, x, {1, 64, 56, 56});
  const UOp *c = g.var("c", 0, 63), *h = g.var("h", -1, 56), *w = g.var("w", -1, 56);
  IndexCtx out{{g.cint(0), c, h, w}, nullptr};
  IndexCtx in = through_movement(g, view, out, nullptr);
  ASSERT_EQ(in.idx.size(), 2u);
  EXPECT_EQ(in.idx[0], c);
  for (const UOp* u : toposort(in.idx[1])) EXPECT_TRUE(u->op != Op::Idiv && u->op != Op::Mod) << op_name(u->op);
  // a merge of two dims into one and a split of one into two still re-linearize
  const UOp* split = reshape(g, input(g, dtypes::float32, {6, 4}), {2, 3, 4});
  IndexCtx s =
      through_movement(g, split, IndexCtx{{g.var("a", 0, 1), g.var("b", 0, 2), g.var("k", 0, 3)}, nullptr}, nullptr);
  ASSERT_EQ(s.idx.size(), 2u);
  EXPECT_EQ(s.idx[1]->op, Op::DefineVar);  // the kept trailing 4
  EXPECT_NE(s.idx[0]->op, Op::DefineVar);  // a*3 + b
}

TEST_F(ScheduleTest, ElementwiseChainWithBroadcastIsOneKernel) {
  const UOp* a = in(dtypes::float32, {2, 3});
  const UOp* b = in(dtypes::float32, {3});
  const UOp* x = add(g, mul(g, a, c(2)), b);  // (2,3) * () + (3,)
  x = unary(g, Op::Exp2, sub(g, x, neg(g, b)));
  x = divide(g, x, add(g, unary(g, Op::Sqrt, mul(g, b, b)), c(1)));
  x = binary(g, Op::Pow, maximum(g, x, c(0.5)), c(1.5));
  x = ternary(g, Op::Mulacc, x, a, b);
  x = where(g, cmpgt(g, a, b), x, unary(g, Op::Sin, a));
  Schedule s = check({x});
  EXPECT_EQ(s.kernels.size(), 1u);
  EXPECT_EQ(names(s), std::vector<std::string>{"E_2_3"});
  // inputs in first-use order, then the output
  ASSERT_EQ(s.buffers.size(), 3u);
  EXPECT_EQ(s.buffers[0].kind, ScheduleBuffer::Kind::Input);
  EXPECT_EQ(s.buffers[2].kind, ScheduleBuffer::Kind::Output);
  EXPECT_EQ(s.buffers[2].size, 6);
}

TEST_F(ScheduleTest, KernelAstFollowsTheContract) {
  const UOp* a = in(dtypes::float32, {4, 5});
  Schedule s = check({add(g, a, c(1))});
  ASSERT_EQ(s.kernels.size(), 1u);
  const UOp* sink = s.kernels[0].ast;
  ASSERT_EQ(sink->op, Op::Sink);
  ASSERT_EQ(sink->nsrc(), 1u);
  const UOp* store = sink->src(0);
  ASSERT_EQ(store->op, Op::Store);
  const UOp* addr = store->src(0);
  ASSERT_EQ(addr->op, Op::Index);
  const UOp* out = addr->src(0);
  ASSERT_EQ(out->op, Op::Param);
  EXPECT_EQ(out->as<ParamArg>().slot, 0);  // the stored buffer comes first
  EXPECT_EQ(out->dtype, dtypes::float32.as_ptr(AddrSpace::Global));
  EXPECT_EQ(s.kernels[0].buffers, (std::vector<int>{1, 0}));  // slot 0: output buffer 1; slot 1: input 0
  int ranges = 0;
  for (const UOp* u : toposort(sink)) {
    EXPECT_TRUE(u->op == Op::Sink || u->op == Op::Store || (u->shape() && u->shape()->empty()) || u->op == Op::Param ||
                u->op == Op::Stack)
        << op_name(u->op);
    if (u->op == Op::Range) {
      ranges++;
      EXPECT_EQ(u->as<RangeArg>().type, AxisType::Loop);
    }
    EXPECT_FALSE(is_movement(u->op) && u->op != Op::Index && u->op != Op::Stack && u->op != Op::Bitcast)
        << op_name(u->op) << " left in a kernel";
  }
  EXPECT_EQ(ranges, 2);
}

// ---- movement ----

TEST_F(ScheduleTest, EveryMovementOp) {
  const UOp* x = in(dtypes::float32, {3, 4});
  std::vector<const UOp*> outs = {
      permute(g, x, {1, 0}),        flip(g, x, {1, 0}),        flip(g, x, {1, 1}),
      shrink(g, x, {1, 1}, {2, 2}), pad(g, x, {1, 0}, {5, 6}), expand(g, reshape(g, x, {3, 1, 4}), {3, 5, 4}),
      reshape(g, x, {2, 6}),        reshape(g, x, {12}),       reshape(g, permute(g, x, {1, 0}), {6, 2}),
  };
  Schedule s = check(outs);
  EXPECT_EQ(s.kernels.size(), outs.size());  // each output is one copy-like kernel
}

TEST_F(ScheduleTest, MovementCombinations) {
  const UOp* x = in(dtypes::float32, {2, 3, 4});
  const UOp* a = permute(g, pad(g, flip(g, shrink(g, x, {0, 1, 1}, {2, 2, 3}), {0, 1, 1}), {1, 0, 2}, {3, 3, 6}),
                         {2, 0, 1});                                                 // (6,3,3)
  const UOp* b = reshape(g, permute(g, x, {2, 1, 0}), {4, 6});                       // transpose then merge
  const UOp* cc = shrink(g, pad(g, x, {1, 1, 1}, {4, 5, 6}), {0, 1, 2}, {3, 3, 3});  // pad then cut across the edge
  const UOp* d = flip(g, reshape(g, pad(g, reshape(g, x, {24}), {3}, {30}), {5, 6}), {1, 0});
  const UOp* e = expand(g, shrink(g, x, {1, 0, 0}, {1, 3, 4}), {5, 3, 4});
  const UOp* f = pad(g, pad(g, x, {1, 0, 0}, {3, 3, 4}), {0, 2, 0}, {3, 5, 5});  // pad of pad
  Schedule s = check({a, b, cc, d, e, f});
  EXPECT_EQ(s.kernels.size(), 6u);
}

TEST_F(ScheduleTest, PadOfComputedValueIsZeroOutside) {
  const UOp* x = in(dtypes::float32, {3, 3});
  const UOp* y = pad(g, unary(g, Op::Exp2, x), {1, 1}, {5, 5});  // exp2(0) = 1 must not leak into the border
  const UOp* z = add(g, pad(g, add(g, x, c(7)), {0, 2}, {3, 5}), c(1));
  Schedule s = check({y, z});
  EXPECT_EQ(s.kernels.size(), 2u);
}

// ---- reductions ----

TEST_F(ScheduleTest, ReductionsOverSeveralAxes) {
  const UOp* x = in(dtypes::float32, {2, 3, 4}, 0.5, 1.5);
  std::vector<const UOp*> outs = {
      sum(x, {0, 2}), sum(x, {1}), rmax(x, {0, 1, 2}), reduce(g, x, Op::Mul, {2}), sum(x, {0, 1, 2}),
  };
  Schedule s = check(outs, 1e-5, 1e-5);
  ASSERT_EQ(s.kernels.size(), outs.size());
  EXPECT_EQ(names(s)[0], "r_3_2_4");
  EXPECT_EQ(names(s)[1], "r_2_4_3");
  EXPECT_EQ(names(s)[2], "r_2_3_4");
}

TEST_F(ScheduleTest, ReduceOfReduceIsOneReduce) {
  const UOp* x = in(dtypes::float32, {3, 4, 5});
  Schedule s = check({sum(sum(x, {2}), {1})}, 1e-5, 1e-5);
  ASSERT_EQ(s.kernels.size(), 1u);
  int reduces = 0;
  for (const UOp* u : toposort(s.kernels[0].ast)) reduces += u->op == Op::Reduce;
  EXPECT_EQ(reduces, 1);
}

TEST_F(ScheduleTest, ReduceFusesWithElementwiseInputsAndConsumers) {
  const UOp* x = in(dtypes::float32, {4, 6});
  const UOp* y = in(dtypes::float32, {4, 1});
  const UOp* r = sum(mul(g, unary(g, Op::Exp2, x), c(0.5)), {1});  // (4,1)
  const UOp* out = add(g, mul(g, r, c(2)), y);                     // consumer at the reduce's own shape
  Schedule s = check({out}, 1e-5, 1e-5);
  EXPECT_EQ(s.kernels.size(), 1u);
  EXPECT_EQ(names(s), std::vector<std::string>{"r_4_6"});
}

TEST_F(ScheduleTest, BroadcastReduceFusesWhenItsUnusedLoopsAreInner) {
  // x + x.sum(): the sum runs once, before the loop over x, in the same kernel.
  const UOp* x = in(dtypes::float32, {5});
  Schedule s = check({add(g, x, sum(x, {0}))}, 1e-5, 1e-5);
  EXPECT_EQ(s.kernels.size(), 1u);
  int intermediates = 0;
  for (auto& b : s.buffers) intermediates += b.kind == ScheduleBuffer::Kind::Intermediate;
  EXPECT_EQ(intermediates, 0);
  EXPECT_EQ(names(s), (std::vector<std::string>{"r_5_5"}));

  // Over axis 0, broadcast back down it: the unused loop (rows) is outside the used one
  // (columns), so inlined the column sum would be recomputed for every row: stored.
  const UOp* m = in(dtypes::float32, {3, 4});
  Schedule s2 = check({sub(g, m, sum(m, {0}))}, 1e-5, 1e-5);
  EXPECT_EQ(s2.kernels.size(), 2u);
  EXPECT_EQ(names(s2), (std::vector<std::string>{"r_4_3", "E_3_4"}));
}

TEST_F(ScheduleTest, ReduceUnderASlidingWindowIsStored) {
  // A convolution read by a 3x3 stride-2 max pool: inlined, each conv value would be computed for
  // every window that covers it (2.25 times on average): stored, and the pool is its own kernel.
  const UOp* x = in(dtypes::float32, {1, 2, 9, 9});
  const UOp* w = in(dtypes::float32, {3, 2, 3, 3});
  const UOp* conv = conv2d(g, x, w, nullptr, {1, 1}, {1, 1});
  Schedule s = check({max_pool2d(g, conv, {3, 3}, {2, 2}, {1, 1})}, 1e-5, 1e-5);
  EXPECT_EQ(s.kernels.size(), 2u);
  // A 2x2 stride-2 pool visits each conv value once, but its window slides over the conv's rows
  // (x = 2 * ox + dx): stored too, so the convolution keeps contiguous rows.
  Schedule s2 = check({max_pool2d(g, conv2d(g, x, w, nullptr, {1, 1}, {1, 1}), {2, 2}, {2, 2})}, 1e-5, 1e-5);
  EXPECT_EQ(s2.kernels.size(), 2u);
  // A global average pool over the 9x9 map (81 taps, more than the fused-window limit): stored.
  Schedule s3 = check({avg_pool2d(g, conv2d(g, x, w, nullptr, {1, 1}, {1, 1}), {9, 9}, {9, 9}, {0, 0})}, 1e-5, 1e-5);
  EXPECT_EQ(s3.kernels.size(), 2u);
}

TEST_F(ScheduleTest, AStoredReduceTakesItsElementwiseOpsAlong) {
  // relu(conv + bias) under ResNet's stem pool (3x3, stride 2, pad 1): what is stored is the
  // relu, so the convolution's kernel adds the bias and applies the relu once per value, and the
  // pool reads finished values, where it applied both at each of its 9 taps.
  const UOp* x = in(dtypes::float32, {1, 2, 9, 9});
  const UOp* w = in(dtypes::float32, {3, 2, 3, 3});
  const UOp* b = in(dtypes::float32, {3});
  const UOp* act = relu(g, conv2d(g, x, w, b, {1, 1}, {1, 1}));
  Schedule s = check({max_pool2d(g, act, {3, 3}, {2, 2}, {1, 1})}, 1e-5, 1e-5);
  ASSERT_EQ(s.kernels.size(), 2u);
  const ScheduleBuffer& stored = s.buffers[size_t(s.kernels[0].buffers[0])];
  EXPECT_EQ(stored.kind, ScheduleBuffer::Kind::Intermediate);
  EXPECT_EQ(stored.source, act);
  EXPECT_EQ(s.kernels[0].buffers.size(), 4u);  // stores the relu; loads x, w and the bias
  EXPECT_EQ(s.kernels[1].buffers.size(), 2u);  // stores the pool; loads only the relu

  // A cast down to f16 on the way is taken along (the f16 values are stored); a cast up to f64
  // stops the walk (twice the bytes): the f32 relu under it is stored.
  for (DType to : {dtypes::float16, dtypes::float64}) {
    Schedule s2 = check({max_pool2d(g, cast(g, act, to), {3, 3}, {2, 2}, {1, 1})}, 2e-3, 2e-3);
    ASSERT_EQ(s2.kernels.size(), 2u);
    const UOp* src = s2.buffers[size_t(s2.kernels[0].buffers[0])].source;
    EXPECT_EQ(src->dtype, to == dtypes::float16 ? to : dtypes::float32) << to.name();
    EXPECT_EQ(s2.kernels[1].buffers.size(), 2u) << to.name();
  }
}

TEST_F(ScheduleTest, AContiguousStoresItsSourceForEveryReader) {
  // A residual block's output h = relu(conv + bias + x) is read through the next convolution's
  // windows (conv2d stores a computed input: a Contiguous of it) and by the next residual add. h
  // itself is stored, once, by the first convolution's kernel, and both read it: no convolution is
  // stored without its bias, shortcut and relu, to have them applied by a kernel of their own.
  const UOp* x = in(dtypes::float32, {1, 16, 8, 8});
  const UOp *w1 = in(dtypes::float32, {16, 16, 3, 3}), *b1 = in(dtypes::float32, {16});
  const UOp *w2 = in(dtypes::float32, {16, 16, 3, 3}), *b2 = in(dtypes::float32, {16});
  const UOp* h = relu(g, add(g, conv2d(g, x, w1, b1, {1, 1}, {1, 1}), x));
  const UOp* y = relu(g, add(g, conv2d(g, h, w2, b2, {1, 1}, {1, 1}), h));
  Schedule s = check({y}, 1e-4, 1e-4);
  int stored_h = 0;
  for (const ScheduleBuffer& b : s.buffers) {
    if (b.kind != ScheduleBuffer::Kind::Intermediate) continue;
    EXPECT_NE(b.source->op, Op::Reduce) << "a convolution stored without its epilogue";
    stored_h += b.source == h;
  }
  EXPECT_EQ(stored_h, 1);
}

TEST_F(ScheduleTest, SoftmaxOverRowsIsOneKernel) {
  const UOp* x = in(dtypes::float32, {4, 7});
  const UOp* m = rmax(x, {1});
  const UOp* e = unary(g, Op::Exp2, sub(g, x, m));
  const UOp* out = divide(g, e, sum(e, {1}));
  Schedule s = check({out}, 1e-5, 1e-6);
  // max, sum of exp2 (reading the max inside its loop) and the output loop, per row
  EXPECT_EQ(s.kernels.size(), 1u);
  // over columns, the reductions are stored (the row loop is outside the column loop)
  const UOp* mc = rmax(x, {0});
  const UOp* ec = unary(g, Op::Exp2, sub(g, x, mc));
  Schedule sc = check({divide(g, ec, sum(ec, {0}))}, 1e-5, 1e-6);
  EXPECT_EQ(sc.kernels.size(), 3u);
}

TEST_F(ScheduleTest, LogSumExpAndNestedBroadcasts) {
  const UOp* x = in(dtypes::float32, {3, 5});
  const UOp* m = rmax(x, {1});
  const UOp* lse = add(g, unary(g, Op::Log2, sum(unary(g, Op::Exp2, sub(g, x, m)), {1})), m);
  const UOp* centered = sub(g, x, sum(x, {0, 1}));  // (3,5) minus a scalar reduce
  const UOp* var = sum(mul(g, centered, centered), {1});
  Schedule s = check({lse, var}, 1e-5, 1e-5);
  EXPECT_LE(s.kernels.size(), 5u);
}

TEST_F(ScheduleTest, MatmulIsOneKernel) {
  const UOp* a = in(dtypes::float32, {13, 17});
  const UOp* b = in(dtypes::float32, {17, 19});
  const UOp* prod = mul(g, reshape(g, a, {13, 17, 1}), reshape(g, b, {1, 17, 19}));
  const UOp* mm = reshape(g, sum(prod, {1}), {13, 19});
  Schedule s = check({mm}, 1e-5, 1e-5);
  ASSERT_EQ(s.kernels.size(), 1u);
  EXPECT_EQ(names(s)[0], "r_13_19_17");
  // the kernel reads each input once per reduce step: two loads, no intermediate buffer
  int loads = 0;
  for (const UOp* u : toposort(s.kernels[0].ast)) loads += u->op == Op::Load;
  EXPECT_EQ(loads, 2);
  EXPECT_EQ(s.buffers.size(), 3u);
}

TEST_F(ScheduleTest, MatmulChainAndTransposedUse) {
  const UOp* a = in(dtypes::float32, {4, 5});
  const UOp* b = in(dtypes::float32, {5, 3});
  const UOp* w = in(dtypes::float32, {3, 2});
  auto mm = [&](const UOp* x, const UOp* y, int64_t n, int64_t k, int64_t m) {
    return reshape(g, sum(mul(g, reshape(g, x, {n, k, 1}), reshape(g, y, {1, k, m})), {1}), {n, m});
  };
  const UOp* ab = mm(a, b, 4, 5, 3);
  const UOp* abw = mm(unary(g, Op::Exp2, ab), w, 4, 3, 2);  // the first product is broadcast in the second
  Schedule s = check({abw}, 1e-5, 1e-5);
  EXPECT_EQ(s.kernels.size(), 2u);
}

TEST_F(ScheduleTest, ReducePaddedInput) {
  const UOp* x = in(dtypes::float32, {3, 4}, -5, -1);
  // max over a zero-padded negative tensor is 0 in rows that include padding
  Schedule s = check({rmax(pad(g, x, {0, 1}, {3, 6}), {1}), sum(pad(g, x, {1, 1}, {5, 6}), {0, 1})}, 1e-5, 1e-5);
  EXPECT_EQ(s.kernels.size(), 2u);
}

// ---- values used several times ----

TEST_F(ScheduleTest, ReduceReadWithTwoIndexingsIsStoredOnce) {
  const UOp* x = in(dtypes::float32, {6, 4});
  const UOp* y = reshape(g, sum(x, {1}), {6});
  Schedule s = check({add(g, y, flip(g, y, {1}))}, 1e-5, 1e-5);
  EXPECT_EQ(s.kernels.size(), 2u);
}

TEST_F(ScheduleTest, ReduceSharedByTwoOutputsIsStoredOnce) {
  const UOp* x = in(dtypes::float32, {6, 4});
  const UOp* y = sum(x, {1});
  Schedule s = check({add(g, y, c(1)), mul(g, y, c(2))}, 1e-5, 1e-5);
  EXPECT_EQ(s.kernels.size(), 3u);
}

TEST_F(ScheduleTest, SharedElementwiseIsRecomputed) {
  const UOp* x = in(dtypes::float32, {6});
  const UOp* y = unary(g, Op::Exp2, x);
  Schedule s = check({add(g, y, flip(g, y, {1})), mul(g, y, c(2))});
  EXPECT_EQ(s.kernels.size(), 2u);  // no intermediate: exp2 is cheap to recompute
  for (auto& b : s.buffers) EXPECT_NE(b.kind, ScheduleBuffer::Kind::Intermediate);
}

TEST_F(ScheduleTest, StencilChainStaysBounded) {
  const UOp* x = in(dtypes::float32, {16});
  const UOp* y = x;
  for (int step = 0; step < 6; step++) {  // each step reads its input at three offsets
    const UOp* p = pad(g, y, {1}, {18});
    y = add(g, add(g, shrink(g, p, {0}, {16}), shrink(g, p, {1}, {16})), shrink(g, p, {2}, {16}));
    y = mul(g, y, c(0.25));
  }
  Schedule s = check({y}, 1e-5, 1e-5);
  EXPECT_GE(s.kernels.size(), 2u);  // 3^6 recomputations would be too many: some steps are stored
}

TEST_F(ScheduleTest, SharedValuesReadingManyBuffersAreStored) {
  auto softmax = [&](const UOp* x, int64_t axis) {
    const UOp* e = unary(g, Op::Exp2, mul(g, sub(g, x, rmax(x, {axis})), c(1.4426950408889634)));
    return divide(g, e, sum(e, {axis}));
  };
  const UOp* x = in(dtypes::float32, {6, 8});
  const UOp* y = softmax(x, 1);
  const UOp* z = softmax(mul(g, y, c(3)), 0);
  const UOp* w = softmax(add(g, z, x), 1);
  Schedule s = check({w}, 1e-5, 1e-7);
  // Inlined, the last softmax would recompute both earlier ones from x and their four reductions,
  // twice (in its sum and in its output): the shared exp2 values are stored instead.
  for (auto& k : s.kernels) EXPECT_LE(k.buffers.size(), 5u) << k.ast->as<std::string>();
  int stored_exp2 = 0;
  for (auto& b : s.buffers) stored_exp2 += b.kind == ScheduleBuffer::Kind::Intermediate && b.source->op == Op::Exp2;
  EXPECT_GE(stored_exp2, 1);
  // A single softmax over rows is one kernel that reads x and writes the output.
  Schedule one = check({softmax(x, 1)}, 1e-5, 1e-7);
  EXPECT_EQ(one.kernels.size(), 1u);
  EXPECT_EQ(one.kernels[0].buffers.size(), 2u);
}

TEST_F(ScheduleTest, ContiguousForcesAKernel) {
  const UOp* x = in(dtypes::float32, {3, 4});
  const UOp* y = g.make(Op::Contiguous, dtypes::float32, {add(g, x, c(1))});
  Schedule s = check({unary(g, Op::Exp2, permute(g, y, {1, 0}))});
  EXPECT_EQ(s.kernels.size(), 2u);
  const UOp* d = g.make(Op::Detach, dtypes::float32, {x});
  Schedule s2 = check({add(g, d, c(1))});
  EXPECT_EQ(s2.kernels.size(), 1u);
}

// ---- dtypes ----

TEST_F(ScheduleTest, IntegerAndBoolDtypes) {
  const UOp* a = in(dtypes::int32, {3, 4}, -50, 50);
  const UOp* b = in(dtypes::int32, {4}, 1, 7);
  const UOp* u = in(dtypes::uint8, {3, 4}, 0, 255);
  const UOp* m = in(dtypes::bool_, {3, 4});
  std::vector<const UOp*> outs = {
      add(g, idiv(g, a, b), mod(g, a, b)),
      shl(g, bitwise_and(g, a, constant(g, dtypes::int32, 15)), constant(g, dtypes::int32, 2)),
      shr(g, a, constant(g, dtypes::int32, 1)),
      add(g, u, constant(g, dtypes::uint8, 200)),  // wraps
      bitwise_xor(g, u, constant(g, dtypes::uint8, 0x5a)),
      where(g, bitwise_or(g, m, cmplt(g, a, constant(g, dtypes::int32, 0))), a, neg(g, a)),
      logical_not(g, bitwise_and(g, m, cmpeq(g, mod(g, a, b), constant(g, dtypes::int32, 0)))),
      reduce(g, a, Op::Add, {0, 1}),
      reduce(g, a, Op::Max, {1}),
      reduce(g, cast(g, m, dtypes::int32), Op::Add, {0}),
      reduce(g, m, Op::Max, {1}),  // any()
  };
  Schedule s = check(outs);
  EXPECT_EQ(s.kernels.size(), outs.size());
}

TEST_F(ScheduleTest, Casts) {
  const UOp* f = in(dtypes::float32, {2, 5}, -100, 100);
  const UOp* i = in(dtypes::int16, {2, 5}, -300, 300);
  const UOp* m = in(dtypes::bool_, {5});
  std::vector<const UOp*> outs = {
      cast(g, f, dtypes::int32),
      cast(g, f, dtypes::uint8),
      cast(g, f, dtypes::float16),
      cast(g, i, dtypes::float32),
      cast(g, i, dtypes::int8),
      cast(g, m, dtypes::float32),
      cast(g, f, dtypes::bool_),
      add(g, cast(g, i, dtypes::float64), cast(g, f, dtypes::float64)),
      mul(g, cast(g, m, dtypes::int16), i),
  };
  check(outs);
}

TEST_F(ScheduleTest, Bitcasts) {
  const UOp* f = in(dtypes::float32, {2, 4});
  const UOp* b = in(dtypes::uint8, {2, 8}, 0, 255);
  const UOp* h = in(dtypes::int16, {3, 2}, -30000, 30000);
  std::vector<const UOp*> outs = {
      bitcast(g, f, dtypes::int32),                                                 // same size
      bitcast(g, add(g, f, c(1)), dtypes::uint32),                                  // of a computed value
      bitcast(g, f, dtypes::uint8),                                                 // split: (2,16)
      bitcast(g, b, dtypes::int32),                                                 // join: (2,2)
      bitcast(g, b, dtypes::float16),                                               // join into a float
      bitcast(g, h, dtypes::float16),                                               // same size, int -> half
      bitcast(g, bitcast(g, f, dtypes::uint16), dtypes::float32),                   // round trip
      bitcast(g, permute(g, bitcast(g, b, dtypes::int16), {1, 0}), dtypes::uint8),  // through a permute
      bitcast(g, b, dtypes::int64),
  };
  check(outs);
}

// ---- outputs, sizes, symbols ----

TEST_F(ScheduleTest, OutputKinds) {
  const UOp* x = in(dtypes::float32, {2, 3});
  const UOp* y = add(g, x, c(1));
  // the same value twice, an input itself, a constant, a value another output reads
  Schedule s = check({y, y, x, c(4), mul(g, y, c(3))});
  EXPECT_EQ(s.kernels.size(), 5u);
  int outputs = 0;
  for (auto& b : s.buffers) outputs += b.kind == ScheduleBuffer::Kind::Output;
  EXPECT_EQ(outputs, 5);
}

TEST_F(ScheduleTest, ZeroSizeTensors) {
  const UOp* x = in(dtypes::float32, {3, 0});
  const UOp* e = in(dtypes::float32, {0, 4});
  const UOp* a = in(dtypes::float32, {2, 0});
  const UOp* b = in(dtypes::float32, {0, 3});
  const UOp* mm = reshape(g, sum(mul(g, reshape(g, a, {2, 0, 1}), reshape(g, b, {1, 0, 3})), {1}), {2, 3});
  std::vector<const UOp*> outs = {sum(x, {1}),     rmax(x, {1}), reduce(g, x, Op::Mul, {1}),
                                  add(g, e, c(1)), mm,           pad(g, x, {0, 1}, {3, 2})};
  Schedule s = check(outs);
  EXPECT_EQ(s.kernels.size(), 5u);  // the (0,4) elementwise kernel is skipped
}

// finite_params: a constant is finite when none of its elements is inf or NaN (by its dtype's
// exponent bits: float32, float16), integers always; inputs never.
TEST_F(ScheduleTest, FiniteParamsAreTheConstantsWithNoInfOrNaN) {
  // The question is asked of kernels that sum over zero-padded loads: each case's constant c is
  // summed against an input padded by one element on each side, sum(pad(x) * c) along the rows.
  auto padded_sum = [&](const UOp* x, const UOp* c) {
    std::vector<int64_t> shape = static_shape(x), padded = shape, offsets(shape.size(), 0);
    padded.back() += 2;
    offsets.back() = 1;
    return reduce(g, mul(g, pad(g, x, offsets, padded), c), Op::Add, {int64_t(shape.size()) - 1});
  };
  auto constant_of = [&](DType dt, std::vector<uint32_t> bits) {
    std::string bytes;
    for (uint32_t b : bits) bytes.append(reinterpret_cast<const char*>(&b), dt.itemsize());
    return slice(g, binary_data(g, bytes), 0, int64_t(bits.size()), dt);
  };
  // 9000 elements (two whole blocks of the vector scan and a tail) of 1.0, with `bad` at `at`
  auto long_constant = [&](DType dt, uint32_t one, uint32_t bad, size_t at) {
    std::vector<uint32_t> bits(9000, one);
    if (at < bits.size()) bits[at] = bad;
    return reshape(g, constant_of(dt, bits), {1500, 6});
  };
  const UOp* rows = input(g, dtypes::float32, {1500, 4});
  const std::vector<std::pair<const UOp*, bool>> long_cases = {
      {long_constant(dtypes::float32, 0x3f800000, 0, 9000), true},
      {long_constant(dtypes::float32, 0x3f800000, 0x7f800000, 5000), false},  // inf in the second block
      {long_constant(dtypes::float32, 0x3f800000, 0xffc00001, 8999), false},  // NaN in the tail
      {cast(g, long_constant(dtypes::float16, 0x3c00, 0xfc00, 17), dtypes::float32), false},
      {cast(g, long_constant(dtypes::float16, 0x3c00, 0x7bff, 17), dtypes::float32), true},
  };
  for (size_t i = 0; i < long_cases.size(); i++) {
    Schedule s = schedule_graph(g, std::vector<const UOp*>{padded_sum(rows, long_cases[i].first)});
    ASSERT_EQ(s.kernels.size(), 1u) << i;
    EXPECT_EQ(finite_params(s)[0].size(), long_cases[i].second ? 1u : 0u) << "long case " << i;
  }
  const UOp* x = input(g, dtypes::float32, {2});
  struct Case {
    const UOp* value;
    bool finite;
  };
  const std::vector<Case> cases = {
      {constant_of(dtypes::float32, {0x3f800000, 0xc0000000, 0x7f7fffff, 0x80000000}), true},   // 1 -2 max -0
      {constant_of(dtypes::float32, {0x3f800000, 0x7fc00000, 0, 0}), false},                    // NaN
      {constant_of(dtypes::float32, {0xff800000, 0, 0, 0}), false},                             // -inf
      {cast(g, constant_of(dtypes::float16, {0x3c00, 0x7bff, 0, 0}), dtypes::float32), true},   // 1 65504
      {cast(g, constant_of(dtypes::float16, {0x3c00, 0x7c00, 0, 0}), dtypes::float32), false},  // inf
      {cast(g, constant_of(dtypes::int32, {0xffffffff, 0x7fffffff, 0, 0}), dtypes::float32), true},
  };
  for (size_t i = 0; i < cases.size(); i++) {
    Schedule s = schedule_graph(g, std::vector<const UOp*>{padded_sum(x, cases[i].value)});
    ASSERT_EQ(s.kernels.size(), 1u) << i;
    const ScheduledKernel& k = s.kernels[0];
    std::vector<int64_t> want;
    for (size_t slot = 0; slot < k.buffers.size(); slot++)
      if (s.buffers[size_t(k.buffers[slot])].kind == ScheduleBuffer::Kind::Constant && cases[i].finite)
        want.push_back(int64_t(slot));
    EXPECT_EQ(finite_params(s)[0], want) << "case " << i;
  }
  // A kernel with no padded sum is not answered (its constants are not scanned).
  const UOp* wide = input(g, dtypes::float32, {1500, 6});
  Schedule plain =
      schedule_graph(g, std::vector<const UOp*>{add(g, wide, long_constant(dtypes::float32, 0x3f800000, 0, 9000))});
  ASSERT_EQ(plain.kernels.size(), 1u);
  EXPECT_TRUE(finite_params(plain)[0].empty());
}

TEST_F(ScheduleTest, SymbolicShape) {
  const UOp* n = g.var("n", 1, 10);
  const UOp* buf = input(g, dtypes::float32, {10});
  std::vector<double> vals;
  for (int k = 0; k < 10; k++) vals.push_back(k * 1.5);
  const UOp* x =
      g.make(Op::Shrink, dtypes::float32, {buf, g.shape_uop(std::vector<int64_t>{0}), g.shape_uop(Shape{Dim{0, n}})});
  // the tensor builders take static shapes only: build with the graph directly
  const UOp* y = g.alu(Op::Add, g.alu(Op::Mul, x, c(2)), c(1));
  const UOp* total = g.make(Op::Reduce, dtypes::float32, {x}, ReduceArg{Op::Add, {0}});
  Schedule s = schedule_graph(g, std::vector<const UOp*>{y, total});
  ASSERT_EQ(s.vars.size(), 1u);
  EXPECT_EQ(s.vars[0], n);
  EXPECT_EQ(s.buffers[1].size, 10);  // allocated for the largest n
  std::vector<Array> got = oracle::run_schedule(s, {Array::from_doubles(dtypes::float32, {10}, vals)}, {{"n", 7}});
  for (int k = 0; k < 7; k++) EXPECT_EQ(got[0].f[size_t(k)], k * 3.0 + 1) << k;
  EXPECT_EQ(got[1].f[0], 1.5 * 21);
  bool named = false;
  for (auto& k : s.kernels) named |= k.ast->as<std::string>() == "E_n";
  EXPECT_TRUE(named);
}

TEST_F(ScheduleTest, SymbolicReduceAndBroadcast) {
  const UOp* n = g.var("n", 1, 5);
  const UOp* buf = input(g, dtypes::float32, {20});
  std::vector<double> vals;
  for (int k = 0; k < 20; k++) vals.push_back(k);
  const UOp* full = reshape(g, buf, {5, 4});
  const UOp* x = g.make(Op::Shrink, dtypes::float32,
                        {full, g.shape_uop(std::vector<int64_t>{0, 0}), g.shape_uop(Shape{Dim{0, n}, Dim::of(4)})});
  const UOp* col = g.make(Op::Reduce, dtypes::float32, {x}, ReduceArg{Op::Add, {0}});   // (1,4)
  const UOp* centered = g.alu(Op::Sub, x, col);                                         // broadcast down n rows
  const UOp* rows = g.make(Op::Reduce, dtypes::float32, {x}, ReduceArg{Op::Max, {1}});  // (n,1)
  Schedule s = schedule_graph(g, std::vector<const UOp*>{centered, rows});
  EXPECT_EQ(s.kernels.size(), 3u);  // the column sums are stored before the broadcast
  ASSERT_EQ(s.vars.size(), 1u);
  for (int64_t nv : {1, 3, 5}) {
    std::vector<Array> got = oracle::run_schedule(s, {Array::from_doubles(dtypes::float32, {20}, vals)}, {{"n", nv}});
    for (int64_t j = 0; j < 4; j++) {
      double colsum = 0;
      for (int64_t i = 0; i < nv; i++) colsum += vals[size_t(i * 4 + j)];
      for (int64_t i = 0; i < nv; i++) EXPECT_EQ(got[0].f[size_t(i * 4 + j)], vals[size_t(i * 4 + j)] - colsum);
    }
    for (int64_t i = 0; i < nv; i++) EXPECT_EQ(got[1].f[size_t(i)], vals[size_t(i * 4 + 3)]);
  }
}

TEST_F(ScheduleTest, UnsupportedOpsThrow) {
  const UOp* x = in(dtypes::float32, {3});
  const UOp* copy = g.make(Op::Copy, dtypes::float32, {x}, MemArg{Device{{"CPU"}, false}});
  try {
    schedule_graph(g, std::vector<const UOp*>{add(g, copy, c(1))});
    ADD_FAILURE() << "Copy was scheduled";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::Unsupported) << e.what();
  }
}

TEST_F(ScheduleTest, HashIgnoresWhichBuffersButSeesTheProgram) {
  auto program = [&](Graph& gg, Op op) {
    const UOp* a = input(gg, dtypes::float32, {4, 4});
    const UOp* b = input(gg, dtypes::float32, {4});
    return schedule_graph(gg, std::vector<const UOp*>{binary(gg, op, a, b)});
  };
  Graph g1, g2;
  Schedule s1 = program(g1, Op::Add);
  program(g1, Op::Mul);  // burns buffer ids in g1
  Schedule s2 = program(g1, Op::Add);
  Schedule s3 = program(g2, Op::Add);
  Schedule s4 = program(g2, Op::Mul);
  EXPECT_EQ(s1.hash, s2.hash);
  EXPECT_EQ(s1.hash, s3.hash);
  EXPECT_NE(s1.hash, s4.hash);
  // the same kernel AST too (buffers are Params)
  EXPECT_EQ(s1.kernels[0].ast, s2.kernels[0].ast);
}

TEST_F(ScheduleTest, InputsInFirstUseOrder) {
  const UOp* a = in(dtypes::float32, {3});
  const UOp* b = in(dtypes::float32, {3});
  const UOp* cc = in(dtypes::float32, {3});
  Schedule s = check({add(g, mul(g, cc, a), b)});
  std::vector<const UOp*> order;
  for (const UOp* u : toposort(std::vector<const UOp*>{add(g, mul(g, cc, a), b)}))
    if (u->op == Op::Buffer) order.push_back(u);
  ASSERT_EQ(order.size(), 3u);
  for (int k = 0; k < 3; k++) {
    EXPECT_EQ(s.buffers[size_t(k)].source, order[size_t(k)]);
    EXPECT_EQ(s.buffers[size_t(k)].index, k);
  }
}

TEST_F(ScheduleTest, DeepChainDoesNotRecurse) {
  const UOp* x = in(dtypes::float32, {4});
  const UOp* y = x;
  for (int k = 0; k < 20000; k++) y = add(g, y, c(k % 2 ? 1 : -1));
  Schedule s = schedule_graph(g, std::vector<const UOp*>{y});
  EXPECT_EQ(s.kernels.size(), 1u);
}

TEST_F(ScheduleTest, RejectsBadOutputs) {
  const UOp* x = in(dtypes::float32, {3});
  std::vector<const UOp*> bad = {nullptr};
  EXPECT_THROW(schedule_graph(g, bad), Error);
  std::vector<const UOp*> sink = {g.sink(std::vector<const UOp*>{x})};
  EXPECT_THROW(schedule_graph(g, sink), Error);
  EXPECT_EQ(schedule_graph(g, std::vector<const UOp*>{}).kernels.size(), 0u);
}

// ---- random graphs ----

// Random programs of movement ops, elementwise ops, reductions, casts, bitcasts and
// materialization markers over small float tensors: whatever the scheduler decides, the kernels must compute what the
// oracle does.
class RandomGraph {
 public:
  RandomGraph(Graph& g, Rng& rng, oracle::BufferData& data) : g_(g), rng_(rng), data_(data) {}

  std::vector<const UOp*> build(int steps) {
    for (int k = 0; k < 2; k++) pool_.push_back(new_input());
    for (int k = 0; k < steps; k++) {
      const UOp* t = step(pick());
      if (t && numel(static_shape(t)) <= 96) pool_.push_back(t);
    }
    std::vector<const UOp*> outs{pool_.back()};
    if (rng_.integer(0, 2) == 0) outs.push_back(pool_[size_t(rng_.integer(2, int64_t(pool_.size()) - 1))]);
    return outs;
  }

 private:
  const UOp* new_input() {
    std::vector<int64_t> shape;
    for (int64_t r = rng_.integer(1, 3); r > 0; r--) shape.push_back(rng_.integer(1, 4));
    const UOp* t = input(g_, dtypes::float32, shape);
    std::vector<double> v;
    for (int64_t k = 0; k < numel(shape); k++) v.push_back(rng_.uniform(-2, 2));
    data_[buffer_of(t)] = Array::from_doubles(dtypes::float32, {numel(shape)}, v);
    return t;
  }
  const UOp* pick() { return pool_[size_t(rng_.integer(0, int64_t(pool_.size()) - 1))]; }
  const UOp* c(double v) { return constant(g_, dtypes::float32, v); }

  // `y` made to broadcast against `shape`: reshaped when the sizes agree, else summed to a scalar.
  const UOp* fit(const UOp* y, const std::vector<int64_t>& shape) {
    std::vector<int64_t> ys = static_shape(y);
    if (ys == shape) return y;
    if (numel(ys) == numel(shape)) return reshape(g_, y, shape);
    std::vector<int64_t> all;
    for (size_t k = 0; k < ys.size(); k++) all.push_back(int64_t(k));
    return reshape(g_, reduce(g_, y, rng_.integer(0, 1) ? Op::Add : Op::Max, all), {});
  }

  const UOp* step(const UOp* x) {
    std::vector<int64_t> s = static_shape(x);
    size_t rank = s.size();
    switch (rng_.integer(0, 13)) {
      case 0:
        return unary(g_, Op::Sin, x);
      case 1:
        return add(g_, mul(g_, x, c(rng_.uniform(-1, 1))), c(0.5));
      case 2:
        return binary(g_, rng_.integer(0, 1) ? Op::Add : Op::Max, x, fit(pick(), s));
      case 3: {
        const UOp* y = fit(pick(), s);
        return where(g_, cmplt(g_, x, y), mul(g_, x, y), sub(g_, x, y));
      }
      case 4: {
        std::vector<int64_t> perm(rank);
        for (size_t k = 0; k < rank; k++) perm[k] = int64_t(k);
        for (size_t k = rank; k > 1; k--) std::swap(perm[k - 1], perm[size_t(rng_.integer(0, int64_t(k) - 1))]);
        return permute(g_, x, perm);
      }
      case 5: {
        std::vector<int64_t> f;
        for (size_t k = 0; k < rank; k++) f.push_back(rng_.integer(0, 1));
        return flip(g_, x, f);
      }
      case 6: {
        std::vector<int64_t> off, size;
        for (int64_t d : s) {
          int64_t lo = rng_.integer(0, 2), hi = rng_.integer(0, 2);
          off.push_back(lo);
          size.push_back(d + lo + hi);
        }
        return pad(g_, x, off, size);
      }
      case 7: {
        std::vector<int64_t> off, size;
        for (int64_t d : s) {
          int64_t n = rng_.integer(std::min<int64_t>(d, 1), d);
          off.push_back(rng_.integer(0, d - n));
          size.push_back(n);
        }
        return shrink(g_, x, off, size);
      }
      case 8: {  // flatten, or split the flat tensor into two factors
        int64_t n = numel(s);
        for (int64_t a = 2; a < n; a++)
          if (n % a == 0 && rng_.integer(0, 1)) return reshape(g_, x, {a, n / a});
        return reshape(g_, x, {n});
      }
      case 9: {  // a new size-1 axis, broadcast
        std::vector<int64_t> r = s, e = s;
        size_t at = size_t(rng_.integer(0, int64_t(rank)));
        r.insert(r.begin() + long(at), 1);
        e.insert(e.begin() + long(at), rng_.integer(1, 3));
        return expand(g_, reshape(g_, x, r), e);
      }
      case 10: {
        std::vector<int64_t> axes;
        for (size_t k = 0; k < rank; k++)
          if (rng_.integer(0, 1)) axes.push_back(int64_t(k));
        if (axes.empty()) axes.push_back(int64_t(rank - 1));
        Op op = rng_.integer(0, 1) ? Op::Add : Op::Max;
        const UOp* r = reduce(g_, x, op, axes);
        return rng_.integer(0, 1) ? sub(g_, x, r) : r;  // often broadcast straight back
      }
      case 11:  // through int32 and back
        return cast(g_, cast(g_, mul(g_, x, c(4)), dtypes::int32), dtypes::float32);
      case 12:  // through the bytes: split into halves, permuted, joined again
        if (rank >= 2) {
          std::vector<int64_t> swap01(rank);
          for (size_t k = 0; k < rank; k++) swap01[k] = int64_t(k);
          std::swap(swap01[0], swap01[1]);
          const UOp* halves = permute(g_, bitcast(g_, x, dtypes::int16), swap01);
          return bitcast(g_, permute(g_, halves, swap01), dtypes::float32);
        }
        return bitcast(g_, bitcast(g_, x, dtypes::uint8), dtypes::float32);
      default:
        return g_.make(Op::Contiguous, dtypes::float32, {x});
    }
  }

  Graph& g_;
  Rng& rng_;
  oracle::BufferData& data_;
  std::vector<const UOp*> pool_;
};

TEST_F(ScheduleTest, RandomGraphsMatchTheOracle) {
  for (int seed = 0; seed < 120; seed++) {
    Graph gg;
    oracle::BufferData dd;
    Rng r;
    r.s = 0x1234567ull + uint64_t(seed) * 0x9e3779b97f4a7c15ull;
    std::vector<const UOp*> outs = RandomGraph(gg, r, dd).build(8);
    Schedule s;
    try {
      s = schedule_graph(gg, outs);
      std::vector<Array> inputs;
      for (const ScheduleBuffer& b : s.buffers)
        if (b.kind == ScheduleBuffer::Kind::Input) inputs.push_back(dd.at(b.source));
      std::vector<Array> got = oracle::run_schedule(s, inputs);
      std::vector<Array> want = oracle::evaluate(outs, dd);
      for (size_t i = 0; i < got.size(); i++) expect_close(got[i], want[i], 1e-5, 1e-5, i);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "threw: " << e.what();
    }
    if (HasFailure()) {
      ADD_FAILURE() << "seed " << seed << ":\n" << to_sexpr(gg.sink(outs));
      for (auto& k : s.kernels) ADD_FAILURE() << to_sexpr(k.ast);
      return;
    }
  }
}

// ---- the kernel interpreter's own checks ----

class KernelInterpTest : public ::testing::Test {
 protected:
  const UOp* param(int64_t slot, DType dt, int64_t n) {
    return g.make(Op::Param, dt.as_ptr(AddrSpace::Global), {g.shape_uop(std::vector<int64_t>{n})},
                  ParamArg{slot, Device{{"CPU"}, false}, AddrSpace::Global});
  }
  const UOp* range(int64_t id, int64_t n, AxisType t = AxisType::Loop) {
    return g.make(Op::Range, dtypes::index, {g.cint(n)}, RangeArg{id, t});
  }
  const UOp* at(const UOp* p, const UOp* i) { return g.make(Op::Index, p->dtype, {p, i}); }
  const UOp* store(const UOp* p, const UOp* i, const UOp* v) {
    return g.sink(std::vector<const UOp*>{g.make(Op::Store, dtypes::void_, {at(p, i), v})});
  }
  void run(const UOp* ast, std::vector<Array*> slots) { oracle::run_kernel(ast, slots); }
  // The kernel is rejected, for the reason named.
  void expect_rejected(const UOp* ast, const std::string& why) {
    try {
      run(ast, {&out, &src});
      ADD_FAILURE() << "accepted, expected: " << why;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  }

  Graph g;
  Array out = Array::zeros(dtypes::float32, {4});
  Array src = Array::from_doubles(dtypes::float32, {4}, {1, 2, 3, 4});
};

TEST_F(KernelInterpTest, RunsLoopsReducesAndGatedLoads) {
  const UOp* o = param(0, dtypes::float32, 4);
  const UOp* s = param(1, dtypes::float32, 4);
  const UOp* i = range(0, 4);
  const UOp* k = range(1, 4, AxisType::Reduce);
  // out[i] = sum_k (k <= i ? src[k] : 0) + src[i-1] (gated off at i = 0)
  const UOp* upto =
      g.make(Op::Load, dtypes::float32, {at(s, k), g.cfloat(0), g.alu(Op::CmpLt, k, g.alu(Op::Add, i, g.cint(1)))});
  const UOp* prefix = g.make(Op::Reduce, dtypes::float32, {upto, k}, ReduceArg{Op::Add, {}});
  const UOp* prev = g.make(Op::Load, dtypes::float32,
                           {at(s, g.alu(Op::Add, i, g.cint(-1))), g.cfloat(0), g.alu(Op::CmpLt, g.cint(0), i)});
  run(store(o, i, g.alu(Op::Add, prefix, prev)), {&out, &src});
  EXPECT_EQ(out.f, (std::vector<double>{1, 4, 8, 13}));
}

TEST_F(KernelInterpTest, CatchesContractViolations) {
  const UOp* o = param(0, dtypes::float32, 4);
  const UOp* s = param(1, dtypes::float32, 4);
  const UOp* i = range(0, 4);
  expect_rejected(store(o, i, g.make(Op::Load, dtypes::float32, {at(s, g.alu(Op::Add, i, g.cint(1)))})),
                  "out of bounds");
  expect_rejected(store(o, g.cint(0), g.make(Op::Load, dtypes::float32, {at(s, i)})), "stored twice");
  const UOp* s5 = param(1, dtypes::float32, 5);
  expect_rejected(store(o, i, g.make(Op::Load, dtypes::float32, {at(s5, i)})), "has shape");
  const UOp* x = g.make(Op::Reshape, dtypes::float32, {g.cfloat(1), g.shape_uop(std::vector<int64_t>{1})});
  expect_rejected(store(o, i, x), "not a kernel-IR op");
  const UOp* i2 = g.make(Op::Range, dtypes::index, {g.cint(2)}, RangeArg{0, AxisType::Loop});
  const UOp* both = g.alu(Op::Add, g.make(Op::Load, dtypes::float32, {at(s, i)}), g.cast(i2, dtypes::float32));
  expect_rejected(store(o, i, both), "share id");
  const UOp* k = range(1, 4, AxisType::Reduce);
  // a Range no Reduce closes is a loop of the Store, whatever its axis type: 4 stores per element
  expect_rejected(store(o, i, g.make(Op::Load, dtypes::float32, {at(s, k)})), "stored twice");
}

TEST_F(ScheduleTest, LargeReductionToFewValuesIsSplitAcrossChunks) {
  // 2^18 elements summed to one value: 64 partial sums of 4096 (a kernel the cores share), then
  // the sum of the partials.
  const UOp* x = in(dtypes::float32, {512, 512});
  Schedule s = check({reduce(g, x, Op::Add, {0, 1})}, 1e-5, 1e-4);
  ASSERT_EQ(s.kernels.size(), 2u);
  EXPECT_EQ(names(s), (std::vector<std::string>{"r_64_4096", "r_64"}));
  // max over the trailing axes of a (2, 256, 256) tensor: two outputs, each from 64 chunks
  const UOp* y = in(dtypes::float32, {2, 256, 256});
  Schedule s2 = check({reduce(g, y, Op::Max, {1, 2})}, 0, 0);
  EXPECT_EQ(names(s2), (std::vector<std::string>{"r_2_16_4096", "r_2_16"}));
  // integers split too; float16 (accumulated in float32 inside one kernel) and small or
  // non-trailing reductions do not
  EXPECT_EQ(check({reduce(g, in(dtypes::int32, {1 << 17}, -100, 100), Op::Add, {0})}, 0, 0).kernels.size(), 2u);
  EXPECT_EQ(check({reduce(g, in(dtypes::float16, {1 << 17}), Op::Add, {0})}, 1e-2, 1e-2).kernels.size(), 1u);
  EXPECT_EQ(check({reduce(g, in(dtypes::float32, {4096}), Op::Add, {0})}, 1e-5, 1e-5).kernels.size(), 1u);
  EXPECT_EQ(check({reduce(g, in(dtypes::float32, {1 << 16, 2}), Op::Add, {0})}, 1e-4, 1e-3).kernels.size(), 1u);
}

TEST_F(ScheduleTest, LargeMatmulPacksItsRightOperand) {
  // B (K, N) is copied into (N/32, K, 32) panels; the product reads them (rule 9).
  const UOp* a = in(dtypes::float32, {64, 96});
  const UOp* b = in(dtypes::float32, {96, 64});
  Schedule s = check({matmul(g, a, b)}, 1e-5, 1e-4);
  EXPECT_EQ(names(s), (std::vector<std::string>{"E_2_96_32", "r_64_64_96"}));
  // batched, and B transposed (a view): packed per batch
  const UOp* ba = in(dtypes::float32, {2, 64, 64});
  const UOp* bb = in(dtypes::float32, {2, 64, 64});
  Schedule s2 = check({matmul(g, ba, permute(g, bb, {0, 2, 1}))}, 1e-5, 1e-4);
  EXPECT_EQ(s2.kernels.size(), 2u);
  // N not a multiple of 32: the last panel is padded with zeros (3 panels for 72 columns)
  EXPECT_EQ(names(check({matmul(g, a, in(dtypes::float32, {96, 72}))}, 1e-5, 1e-4)),
            (std::vector<std::string>{"E_3_96_32", "r_64_72_96"}));
  // few rows (a matrix-vector product reads B once: packing would only add a copy), or fewer than
  // two panels' columns: not packed
  EXPECT_EQ(check({matmul(g, in(dtypes::float32, {4, 96}), b)}, 1e-5, 1e-4).kernels.size(), 1u);
  EXPECT_EQ(check({matmul(g, a, in(dtypes::float32, {96, 40}))}, 1e-5, 1e-4).kernels.size(), 1u);
}

// With 8 to 63 rows B is packed where it is larger than the caches (ScheduleOptions::cache_bytes):
// unpacked, every block of a tile's rows would read it again from memory in short strided pieces.
// Fewer rows, a B the caches hold, or caches of unknown size: not packed.
TEST_F(ScheduleTest, FewRowsPackABeyondTheCaches) {
  const UOp* b = in(dtypes::float32, {96, 256});  // 96 KiB
  const ScheduleOptions small{.cache_bytes = 64 << 10}, large{.cache_bytes = 1 << 20};
  EXPECT_EQ(names(check({matmul(g, in(dtypes::float32, {8, 96}), b)}, 1e-5, 1e-4, small)),
            (std::vector<std::string>{"E_8_96_32", "r_8_256_96"}));
  EXPECT_EQ(check({matmul(g, in(dtypes::float32, {40, 96}), b)}, 1e-5, 1e-4, small).kernels.size(), 2u);
  EXPECT_EQ(check({matmul(g, in(dtypes::float32, {4, 96}), b)}, 1e-5, 1e-4, small).kernels.size(), 1u);
  EXPECT_EQ(check({matmul(g, in(dtypes::float32, {8, 96}), b)}, 1e-5, 1e-4, large).kernels.size(), 1u);
  EXPECT_EQ(check({matmul(g, in(dtypes::float32, {8, 96}), b)}, 1e-5, 1e-4).kernels.size(), 1u);
}

// The panels are as wide as the target says (Target::packed_panel, through ScheduleOptions), for a
// matmul's B and a convolution's weight. The CPU backend sets the narrowest register tile its
// heuristic makes: one register of float lanes with 16 registers (AVX2: 8), two with 32 (AVX-512:
// 32), so this machine's compiles pack in panels of that width.
TEST_F(ScheduleTest, PackedPanelsAreAsWideAsTheTargetsTile) {
  const UOp* a = in(dtypes::float32, {64, 96});
  const ScheduleOptions avx2{.packed_panel = 16};
  EXPECT_EQ(names(check({matmul(g, a, in(dtypes::float32, {96, 64}))}, 1e-5, 1e-4, avx2)),
            (std::vector<std::string>{"E_4_96_16", "r_64_64_96"}));
  EXPECT_EQ(names(check({matmul(g, a, in(dtypes::float32, {96, 72}))}, 1e-5, 1e-4, avx2)),
            (std::vector<std::string>{"E_5_96_16", "r_64_72_96"}));  // the fifth panel padded
  // fewer than 64 columns: not packed, whatever the panel
  EXPECT_EQ(check({matmul(g, a, in(dtypes::float32, {96, 40}))}, 1e-5, 1e-4, avx2).kernels.size(), 1u);
  // A convolution's weight, packed by conv2d in 32-wide panels (its 14-wide rows fill no vector), is
  // packed in the target's panels instead: 64 output channels in 4 panels of 16 (each channel's
  // filters one run of 8 x 3 x 3).
  const UOp* x = in(dtypes::float32, {1, 8, 14, 14});
  const UOp* conv = conv2d(g, x, in(dtypes::float32, {64, 8, 3, 3}), nullptr, {1, 1}, {1, 1});
  EXPECT_EQ(names(check({conv}, 1e-5, 1e-4)), (std::vector<std::string>{"E_2_72_32", "r_64_14_14_8_3_3"}));
  EXPECT_EQ(names(check({conv}, 1e-5, 1e-4, avx2)), (std::vector<std::string>{"E_4_72_16", "r_64_14_14_8_3_3"}));
  const Target& cpu = testrt::runtime().device("CPU")->target();
  const int64_t registers_per_tile = cpu.vector_registers < 32 ? 1 : 2;
  EXPECT_EQ(cpu.packed_panel, cpu.vector_bits >= 256 ? registers_per_tile * cpu.vector_bits / 32 : 32)
      << cpu.vector_bits << " bits, " << cpu.vector_registers << " registers";
}

}  // namespace
}  // namespace sn
