// In-place updates (tensor.h's assign: Store then After): the value is written into the input
// buffer when the program runs, after every read of the old value; checked against the oracle
// run step by step.
#include <gtest/gtest.h>

#if SN_BACKEND_CPU
#include "core/tensor/compose.h"
#include "core/tensor/gradient.h"
#include "tests/unit/test_pipeline_util.h"

namespace sn {
namespace {

using namespace testrt;
using Dims = std::vector<int64_t>;

using testutil::error_of;

// One SGD step on a linear least-squares problem, as one program: the loss (an output, from the old
// w), the gradient (reads all of w through a matmul) and the update of w. Run 5 times on the same
// buffers; the oracle replays the steps one at a time.
TEST(Assign, OneProgramRunsAnOptimizerStep) {
  Graph g;
  Rng rng(11);
  const DType f32 = dtypes::float32;
  const UOp* x = input(g, f32, {8, 4});
  const UOp* t = input(g, f32, {8, 3});
  const UOp* w = input(g, f32, {4, 3});
  const UOp* err = sub(g, gemm(g, x, w), t);
  const UOp* loss = reduce(g, mul(g, err, err), Op::Add, {0, 1});
  const UOp* dw = gradient(g, loss, {&w, 1})[0];
  const UOp* updated = assign(g, w, sub(g, w, mul(g, dw, constant(g, f32, 0.01))));

  oracle::BufferData data;
  data[buffer_of(x)] = random_array(rng, f32, {32}, -1, 1);
  data[buffer_of(t)] = random_array(rng, f32, {24}, -1, 1);
  data[buffer_of(w)] = random_array(rng, f32, {12}, -1, 1);

  CompileOptions opts;
  opts.inputs = {x, t, w};
  opts.effects = {updated};
  auto dev = runtime().device("CPU");
  auto p = compile_program(runtime(), g, std::vector<const UOp*>{loss}, dev, opts);
  std::vector<std::shared_ptr<Buffer>> ins;
  for (const UOp* in : opts.inputs) {
    Array a = data.at(buffer_of(in));
    a.shape = static_shape(in);
    ins.push_back(to_buffer(dev, a));
  }
  auto out = p->allocate_output(0);
  // the oracle's step: the loss at the old w, then w <- w - 0.01 dw
  const UOp* new_w = sub(g, w, mul(g, dw, constant(g, f32, 0.01)));
  double first = 0, last = 0;
  for (int step = 0; step < 5; step++) {
    std::vector<std::shared_ptr<Buffer>> outs{out};
    p->run(ins, outs);
    std::vector<Array> want = oracle::evaluate(std::vector<const UOp*>{loss, new_w}, data);
    Array got_loss = from_buffer(*out), got_w = from_buffer(*ins[2]);
    EXPECT_EQ(mismatch(got_loss, want[0], 1e-5, 1e-5), "") << "step " << step << ": the loss reads the old w";
    EXPECT_EQ(mismatch(got_w, want[1], 1e-5, 1e-6), "") << "step " << step << ": the buffer of w holds the update";
    want[1].shape = {12};
    data[buffer_of(w)] = want[1];
    (step == 0 ? first : last) = want[0].f[0];
  }
  EXPECT_LT(last, first);
}

// An After reads as its value: y = 2 * assign(w, w + 1) is 2(w + 1), and the buffer gets w + 1.
// The assign runs as an output here (no effects list).
TEST(Assign, AfterReadsAsTheNewValue) {
  Graph g;
  const DType f32 = dtypes::float32;
  const UOp* w = input(g, f32, {2, 3});
  const UOp* a = assign(g, w, add(g, w, constant(g, f32, 1)));
  const UOp* y = mul(g, a, constant(g, f32, 2));
  const UOp* old = reduce(g, w, Op::Add, {0, 1});  // reads the old value, after the update in the graph
  auto dev = runtime().device("CPU");
  CompileOptions opts;
  opts.inputs = {w};
  auto p = compile_program(runtime(), g, std::vector<const UOp*>{y, old, a}, dev, opts);
  std::vector<double> v{1, 2, 3, 4, 5, 6};
  auto in = to_buffer(dev, Array::from_doubles(f32, {2, 3}, v));
  std::vector<std::shared_ptr<Buffer>> outs{p->allocate_output(0), p->allocate_output(1), p->allocate_output(2)};
  std::vector<std::shared_ptr<Buffer>> ins{in};
  p->run(ins, outs);
  Array ry = from_buffer(*outs[0]), rold = from_buffer(*outs[1]), ra = from_buffer(*outs[2]), rw = from_buffer(*in);
  EXPECT_EQ(rold.f[0], 21);
  for (size_t k = 0; k < 6; k++) {
    EXPECT_EQ(ry.f[k], 2 * (v[k] + 1));
    EXPECT_EQ(ra.f[k], v[k] + 1);
    EXPECT_EQ(rw.f[k], v[k] + 1);
  }
}

// A program of effects only: two buffers swap their contents (each write reads the other's old
// value, so both reads must come before both writes).
TEST(Assign, EffectsOnlySwap) {
  Graph g;
  const DType i32 = dtypes::int32;
  const UOp* a = input(g, i32, {5});
  const UOp* b = input(g, i32, {5});
  CompileOptions opts;
  opts.inputs = {a, b};
  // one effect: a Group of the two (a Store works as well as its After)
  opts.effects = {g.make(Op::Group, dtypes::void_, {assign(g, a, b), assign(g, b, a)->src(1)})};
  auto dev = runtime().device("CPU");
  auto p = compile_program(runtime(), g, std::vector<const UOp*>{}, dev, opts);
  auto ba = to_buffer(dev, Array::from_ints(i32, {5}, {1, 2, 3, 4, 5}));
  auto bb = to_buffer(dev, Array::from_ints(i32, {5}, {10, 20, 30, 40, 50}));
  std::vector<std::shared_ptr<Buffer>> ins{ba, bb}, none;
  p->run(ins, none);
  EXPECT_EQ(from_buffer(*ba).i, (std::vector<int64_t>{10, 20, 30, 40, 50}));
  EXPECT_EQ(from_buffer(*bb).i, (std::vector<int64_t>{1, 2, 3, 4, 5}));
}

TEST(Assign, BadUpdatesAreClearErrors) {
  Graph g;
  const DType f32 = dtypes::float32;
  const UOp* w = input(g, f32, {2, 3});
  const UOp* h = mul(g, w, w);
  EXPECT_NE(error_of([&] { assign(g, h, w); }).find("must be an input tensor"), std::string::npos);
  EXPECT_NE(error_of([&] {
              assign(g, w, reshape(g, w, {3, 2}));
            }).find("does not match the target's shape"),
            std::string::npos);
  EXPECT_NE(error_of([&] { assign(g, w, cast(g, w, dtypes::float64)); }).find("cast first"), std::string::npos);
  auto dev = runtime().device("CPU");
  CompileOptions twice;
  twice.effects = {assign(g, w, h), assign(g, w, add(g, w, w))};
  EXPECT_NE(
      error_of([&] { compile_program(runtime(), g, std::vector<const UOp*>{}, dev, twice); }).find("assigned twice"),
      std::string::npos);
  CompileOptions not_effect;
  not_effect.effects = {h};
  EXPECT_NE(error_of([&] {
              compile_program(runtime(), g, std::vector<const UOp*>{}, dev, not_effect);
            }).find("not an in-place update"),
            std::string::npos);
  EXPECT_NE(error_of([&] { compile_program(runtime(), g, std::vector<const UOp*>{}, dev, {}); }).find("no outputs"),
            std::string::npos);
}

}  // namespace
}  // namespace sn
#endif
