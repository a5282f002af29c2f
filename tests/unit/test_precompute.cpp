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

// A matrix made of constants (a model's weights) is packed in panels even for one row (rule 9): the packing
// depends on no input, so it runs at compile and the program keeps the packed copy as its constant; each
// run launches the product alone. 70 columns: the last panel is padded with zeros, so the constant is
// larger than the matrix. A matrix that depends on an input stays unpacked.
// A row x (1, k) and a matrix m (k, n) as inputs with random data, and a (k, n) constant of `bytes`.
struct RowAndMatrices {
  const UOp *x, *m, *cw;
  oracle::BufferData data;
  RowAndMatrices(Graph& g, uint64_t seed, int64_t k, int64_t n, std::string bytes) {
    Rng rng{seed};
    x = input(g, dtypes::float32, {1, k});
    m = input(g, dtypes::float32, {k, n});
    data = {{buffer_of(x), random_array(rng, dtypes::float32, {k})},
            {buffer_of(m), random_array(rng, dtypes::float32, {k * n})}};
    cw = reshape(g, slice(g, binary_data(g, std::move(bytes)), 0, k * n, dtypes::float32), {k, n});
  }
};

std::string float_bytes(int64_t count, int mul, int mod) {
  std::vector<float> w(static_cast<size_t>(count));
  for (size_t i = 0; i < w.size(); i++) w[i] = float(int(i * size_t(mul) % size_t(mod)) - mod / 2) / 8;
  return std::string(reinterpret_cast<const char*>(w.data()), w.size() * sizeof(float));
}

TEST(Precompute, ConstantMatrixOfAMatrixVectorProductIsPackedOnce) {
  const int64_t k = 96, n = 70, panel = runtime().device("CPU")->target().packed_panel;
  const std::string bytes = float_bytes(k * n, 7, 23);
  for (bool from_input : {false, true}) {
    Graph g;
    RowAndMatrices in(g, 3, k, n, bytes);
    const UOp *x = in.x, *m = in.m, *cw = in.cw;
    oracle::BufferData& data = in.data;
    const UOp* b = from_input ? mul(g, cw, m) : cw;
    const UOp* y = matmul(g, x, b);
    if (!from_input) data.erase(buffer_of(m));
    std::shared_ptr<const Program> p;
    compile_and_run(g, {y}, data, {}, &p);
    ASSERT_EQ(p->launches.size(), 1u);
    // the constant the product reads; the matrix as given, read only by the packing, keeps no memory
    int64_t constant = 0;
    size_t held = 0;
    for (const ProgramBuffer& pb : p->buffers)
      if (pb.role == ProgramBuffer::Role::Constant && pb.storage) constant = pb.size, held++;
    EXPECT_EQ(held, 1u);
    EXPECT_EQ(constant, from_input ? k * n : (n + panel - 1) / panel * panel * k) << "panels of " << panel;
    expect_matches_oracle(g, {y}, data, from_input ? "x @ (w * m)" : "x @ w", 1e-5, 1e-5);
  }
  // A compile-only device runs nothing at compile, so its program would pack at every run: unpacked there.
  Graph g;
  const UOp* cw = reshape(g, slice(g, binary_data(g, bytes), 0, k * n, dtypes::float32), {k, n});
  EXPECT_EQ(launches_of(g, matmul(g, input(g, dtypes::float32, {1, k}, "C"), cw), "C"), 1u);
}

// The packing reads the matrix where the graph holds it (the CPU reads host memory), unless a run reads it
// too: here the product reads it packed and a sum with an input reads it as given, so the program holds both.
TEST(Precompute, AConstantThatARunReadsTooGetsDeviceMemory) {
  const int64_t k = 96, n = 70;
  Graph g;
  RowAndMatrices in(g, 5, k, n, float_bytes(k * n, 5, 29));
  const oracle::BufferData& data = in.data;
  const std::vector<const UOp*> outs{matmul(g, in.x, in.cw), add(g, in.cw, in.m)};
  std::shared_ptr<const Program> p;
  compile_and_run(g, outs, data, {}, &p);
  ASSERT_EQ(p->launches.size(), 2u) << "the packing should have run at compile";
  size_t held = 0;
  for (const ProgramBuffer& pb : p->buffers) held += pb.role == ProgramBuffer::Role::Constant && pb.storage;
  EXPECT_EQ(held, 2u) << "the matrix as given and packed";
  expect_matches_oracle(g, outs, data, "x @ w, w + m", 1e-5, 1e-5);
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
