// cumsum on long axes, compiled and run: the scan in blocks (core/tensor/compose.cpp, prefix_sum_last) against
// prefix sums computed here in double (integers exact), on the CPU and through OpenCL.
#include <gtest/gtest.h>

#if SN_BACKEND_CPU
#include "core/tensor/compose.h"
#include "tests/unit/test_pipeline_util.h"

namespace sn {
namespace {

using namespace testrt;
using Dims = std::vector<int64_t>;

// cumsum of a (rows, n, cols) tensor along `axis` (0, 1 or 2), checked against sums in double: floats within a
// tolerance that grows with the partial sums' size (the block order differs from a sequential loop), integers
// exactly.
void check_cumsum(const std::string& device, DType dt, const Dims& shape, int64_t axis) {
  Graph g;
  Rng rng{uint64_t(shape[0] * 131 + shape[1] * 7 + shape[2] + axis)};
  const UOp* x = input(g, dt, shape, device);
  Array xs = random_array(rng, dt, {numel(shape)}, -4, 4);
  std::vector<Array> got = compile_and_run(g, {cumsum(g, x, axis)}, {{buffer_of(x), xs}}, {}, nullptr, device);
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0].shape, shape);
  int64_t stride = 1;
  for (size_t d = size_t(axis) + 1; d < shape.size(); d++) stride *= shape[d];
  const int64_t len = shape[size_t(axis)], total = numel(shape);
  int bad = 0;
  for (int64_t f = 0; f < total && bad < 5; f++) {
    const int64_t pos = f / stride % len;
    if (pos != 0) continue;  // f starts a line along the axis
    double acc = 0, abs_acc = 0;
    for (int64_t k = 0; k < len && bad < 5; k++) {
      const size_t e = size_t(f + k * stride);
      acc += xs.value_at(e);
      abs_acc += std::fabs(xs.value_at(e));
      const double tol = dt.is_float() ? 1e-6 * abs_acc + 1e-6 : 0;
      if (std::fabs(got[0].value_at(e) - acc) > tol) {
        ADD_FAILURE() << device << " " << dt.name() << " shape (" << shape[0] << "," << shape[1] << "," << shape[2]
                      << ") axis " << axis << ": element " << e << " (position " << k << ") got " << got[0].value_at(e)
                      << ", want " << acc;
        bad++;
      }
    }
  }
}

void run_cases(const std::string& device) {
  // around the block size (16), several levels of blocks, a ragged tail
  for (int64_t n : {1, 2, 15, 16, 17, 255, 256, 257, 1000, 4097, 100000})
    check_cumsum(device, dtypes::float32, {1, n, 1}, 1);
  for (int64_t n : {17, 4097, 65537}) check_cumsum(device, dtypes::int32, {1, n, 1}, 1);
  // every axis of a 3-d tensor
  check_cumsum(device, dtypes::float32, {37, 3, 5}, 0);
  check_cumsum(device, dtypes::float32, {3, 41, 5}, 1);
  check_cumsum(device, dtypes::float32, {3, 5, 300}, 2);
  check_cumsum(device, dtypes::int64, {2, 1000, 3}, 1);
}

TEST(CumsumScan, LongAxesOnTheCpu) {
  run_cases("CPU");
  check_cumsum("CPU", dtypes::float32, {1, 1000003, 1}, 1);  // a million, and an odd tail
}

TEST(CumsumScan, LongAxesOnOpenCL) {
  std::string why;
  if (runtime().devices().count("CL", &why) == 0) {
    if (cl_required()) FAIL() << "SN_REQUIRE_CL=1 but no OpenCL device: " << why;
    GTEST_SKIP() << "no OpenCL device: " << why;
  }
  run_cases("CL");
}

}  // namespace
}  // namespace sn
#endif
