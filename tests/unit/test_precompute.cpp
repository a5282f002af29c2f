// Launches whose results depend on no input and no variable run once, at compile time (core/runtime/precompute.h):
// what they write becomes a constant of the program, and every run skips them.
#include <gtest/gtest.h>

#if SN_BACKEND_CPU
#include "core/tensor/compose.h"
#include "tests/unit/test_pipeline_util.h"

namespace sn {
namespace {

using namespace testrt;

const UOp* contiguous(Graph& g, const UOp* x) { return g.make(Op::Contiguous, x->dtype, {x}); }

size_t launches_of(Graph& g, const UOp* out, const std::string& device) {
  return compile_program(runtime(), g, std::vector<const UOp*>{out}, runtime().device(device), CompileOptions{})
      ->launches.size();
}

// argmax compares every row with an arange (0..9) that a kernel of its own builds (a cumsum of ones): that
// kernel runs once, at compile, and each run launches one kernel; the results stay the oracle's, run after run.
void argmax_runs_one_kernel(const std::string& device) {
  for (uint64_t seed = 1; seed <= 3; seed++) {
    Graph g;
    Rng rng{seed};
    const UOp* x = input(g, dtypes::float32, {64, 10}, device);
    oracle::BufferData data{{buffer_of(x), random_array(rng, dtypes::float32, {640})}};
    const UOp* y = argmax(g, x, 1);
    EXPECT_EQ(launches_of(g, y, device), 1u) << device;
    expect_matches_oracle(g, {y}, data, "argmax over (64,10) on " + device, -1, -1, {}, device);
  }
}

TEST(Precompute, ArgmaxRunsOneKernelOnTheCpu) { argmax_runs_one_kernel("CPU"); }

TEST(Precompute, ArgmaxRunsOneKernelOnOpenCL) {
  SN_SKIP_WITHOUT_DEVICE("CL", cl_required());
  argmax_runs_one_kernel("CL");
}

// A random tensor of a fixed seed, materialized because two reductions read it, is computed once: every run adds
// the same values, the ones a program that outputs it directly computes.
TEST(Precompute, RandomTensorOfAFixedSeedIsComputedOnce) {
  Graph g;
  Rng rng{5};
  const UOp* x = input(g, dtypes::float32, {4, 8});
  oracle::BufferData data{{buffer_of(x), random_array(rng, dtypes::float32, {32})}};
  const UOp* r = contiguous(g, rand_uniform(g, {4, 8}, uint64_t(7)));
  const UOp* y = add(g, x, r);
  std::shared_ptr<const Program> p;
  std::vector<Array> first = compile_and_run(g, {y}, data, {}, &p);
  EXPECT_EQ(p->launches.size(), 1u) << "the random tensor's kernel should have run at compile";
  std::vector<Array> second = compile_and_run(g, {y}, data);
  EXPECT_EQ(mismatch(second[0], first[0], 0, 0), "");

  Graph g2;
  const UOp* r2 = rand_uniform(g2, {4, 8}, uint64_t(7));
  Array want_r = compile_and_run(g2, {r2}, {})[0];
  Array xs = data.at(buffer_of(x));
  for (int64_t i = 0; i < 32; i++)
    EXPECT_FLOAT_EQ(float(first[0].value_at(size_t(i))), float(xs.value_at(size_t(i)) + want_r.value_at(size_t(i))))
        << "element " << i;
}

// What depends on an input runs every time: a seed given as an input makes the same kernel input-dependent.
TEST(Precompute, InputDependentKernelsStay) {
  Graph g;
  const UOp* seed = input(g, dtypes::uint64, {});
  const UOp* r = contiguous(g, rand_uniform(g, {4, 8}, seed));
  const UOp* y = reduce(g, mul(g, r, r), Op::Add, {0, 1});
  EXPECT_EQ(launches_of(g, y, "CPU"), 2u);
}

// A compile-only device runs nothing at compile: its program keeps every kernel (and exports them).
TEST(Precompute, CompileOnlyDeviceKeepsEveryKernel) {
  Graph g;
  const UOp* x = input(g, dtypes::float32, {64, 10}, "C");
  const UOp* y = argmax(g, x, 1);
  EXPECT_EQ(launches_of(g, y, "C"), 2u);
}

}  // namespace
}  // namespace sn
#endif
