// Functions (core/tensor/function.h): a body over Params called through Function/GetTuple,
// resolved by substitution (fusing with the callers) or kept apart when precompiled (its kernels
// compiled once for every call). Checked against the oracle on the same expressions written out.
#include <gtest/gtest.h>

#include "core/tensor/function.h"

#if SN_BACKEND_CPU
#include "core/tensor/compose.h"
#include "core/tensor/gradient.h"
#include "tests/unit/test_pipeline_util.h"

namespace sn {
namespace {

using namespace testrt;
using Dims = std::vector<int64_t>;
const DType f32 = dtypes::float32;

using testutil::error_of;

// f(a, b) = (a * b + a, sum over the last axis of a), called three times, once inside another
// function's body, compared with the same math written without functions.
TEST(Function, CallsSubstituteTheirArguments) {
  Graph g;
  Rng rng(5);
  oracle::BufferData data;
  auto in = [&](Dims s) {
    const UOp* t = input(g, f32, s);
    data[buffer_of(t)] = random_array(rng, f32, {numel(s)});
    return t;
  };
  const UOp* p0 = function_param(g, 0, f32, {2, 3});
  const UOp* p1 = function_param(g, 1, f32, {2, 3});
  const UOp* body[] = {add(g, mul(g, p0, p1), p0), reduce(g, p0, Op::Add, {1})};
  const UOp* params[] = {p0, p1};
  const UOp *x = in({2, 3}), *y = in({2, 3});
  const UOp* a1[] = {x, y};
  const UOp* a2[] = {y, unary(g, Op::Sin, x)};
  std::vector<const UOp*> r1 = call_function(g, body, params, a1, false);
  std::vector<const UOp*> r2 = call_function(g, body, params, a2, false);
  // a function whose body calls f: h(q) = f(q, q)[0] * 2
  const UOp* q = function_param(g, 0, f32, {2, 3});
  const UOp* qq[] = {q, q};
  const UOp* hbody[] = {mul(g, call_function(g, body, params, qq, false)[0], constant(g, f32, 2))};
  const UOp* hparams[] = {q};
  const UOp* a3[] = {r1[0]};
  std::vector<const UOp*> r3 = call_function(g, hbody, hparams, a3, false);
  std::vector<const UOp*> outs{r1[0], r1[1], r2[0], r3[0]};

  const UOp* e1 = add(g, mul(g, x, y), x);
  const UOp* e2 = reduce(g, x, Op::Add, {1});
  const UOp* sx = unary(g, Op::Sin, x);
  const UOp* e3 = add(g, mul(g, y, sx), y);
  const UOp* e4 = mul(g, add(g, mul(g, e1, e1), e1), constant(g, f32, 2));
  std::vector<Array> want = oracle::evaluate(std::vector<const UOp*>{e1, e2, e3, e4}, data);
  std::vector<Array> got = compile_and_run(g, outs, data);
  for (size_t i = 0; i < outs.size(); i++) EXPECT_EQ(mismatch(got[i], want[i], 1e-5, 1e-5), "") << "output " << i;
  EXPECT_EQ(static_shape(r1[1]), (Dims{2, 1}));
}

// A precompiled function called on four inputs in one program: its body's kernel is compiled once.
TEST(Function, PrecompiledBodyCompilesOnce) {
  Graph g;
  Rng rng(6);
  oracle::BufferData data;
  const UOp* p = function_param(g, 0, f32, {4, 8});
  const UOp* body[] = {softmax(g, mul(g, p, constant(g, f32, 1.7f)), -1)};
  const UOp* params[] = {p};
  std::vector<const UOp*> outs, want_outs;
  for (int k = 0; k < 4; k++) {
    const UOp* x = input(g, f32, {4, 8});
    data[buffer_of(x)] = random_array(rng, f32, {32});
    const UOp* arg[] = {add(g, x, constant(g, f32, double(k)))};  // an expression: materialized first
    outs.push_back(call_function(g, body, params, arg, true)[0]);
    want_outs.push_back(softmax(g, mul(g, arg[0], constant(g, f32, 1.7f)), -1));
  }
  auto dev = runtime().device("CPU");
  uint64_t before = dev->stats().compiled;
  std::shared_ptr<const Program> prog;
  CompileOptions opts;
  opts.use_cache = false;
  std::vector<Array> got = compile_and_run(g, outs, data, opts, &prog);
  uint64_t compiled = dev->stats().compiled - before;
  std::vector<Array> want = oracle::evaluate(want_outs, data);
  for (size_t i = 0; i < outs.size(); i++) EXPECT_EQ(mismatch(got[i], want[i], 1e-5, 1e-6), "") << "call " << i;
  // 4 calls: 4 argument kernels (each adds its own constant) + 4 launches of one body kernel
  EXPECT_EQ(prog->launches.size(), 8u);
  EXPECT_LE(compiled, 5u) << "the body's kernel must compile once for the four calls";
  std::printf("precompiled function: %zu launches, %llu kernels compiled\n", prog->launches.size(),
              (unsigned long long)compiled);
}

TEST(Function, GradientsFlowThroughCalls) {
  Graph g;
  Rng rng(7);
  oracle::BufferData data;
  const UOp* p = function_param(g, 0, dtypes::float64, {3});
  const UOp* body[] = {mul(g, p, p)};
  const UOp* params[] = {p};
  const UOp* x = input(g, dtypes::float64, {3});
  data[buffer_of(x)] = random_array(rng, dtypes::float64, {3});
  const UOp* arg[] = {x};
  const UOp* y = call_function(g, body, params, arg, false)[0];
  const UOp* loss = reduce(g, y, Op::Add, {0});
  const UOp* d = gradient(g, loss, {&x, 1})[0];
  std::vector<Array> got = compile_and_run(g, {d}, data);
  for (size_t k = 0; k < 3; k++) EXPECT_DOUBLE_EQ(got[0].f[k], 2 * data[buffer_of(x)].f[k]);
}

TEST(Function, BadCallsAreClearErrors) {
  Graph g;
  const UOp* p = function_param(g, 0, f32, {2, 3});
  const UOp* body[] = {mul(g, p, p)};
  const UOp* params[] = {p};
  const UOp* wrong_shape[] = {input(g, f32, {3, 2})};
  const UOp* wrong_dtype[] = {input(g, dtypes::float64, {2, 3})};
  EXPECT_NE(error_of([&] { call_function(g, body, params, wrong_shape, false); }).find("argument 0 is float32 (3,2)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { call_function(g, body, params, wrong_dtype, false); }).find("float64"), std::string::npos);
  EXPECT_NE(error_of([&] { call_function(g, body, params, {}, false); }).find("takes 1 arguments, got 0"),
            std::string::npos);
  EXPECT_NE(error_of([&] { function_param(g, -1, f32, {2}); }).find("negative"), std::string::npos);
  // a body's output compiled without calling the function
  auto dev = runtime().device("CPU");
  std::string m = error_of([&] { compile_program(runtime(), g, std::vector<const UOp*>{body[0]}, dev, {}); });
  EXPECT_NE(m.find("outside a function body"), std::string::npos) << m;
}

}  // namespace
}  // namespace sn
#endif
