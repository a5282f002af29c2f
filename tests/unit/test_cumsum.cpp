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

// Unit roundoff of a float dtype's sums (the tolerance of a partial sum is a few of these times the sum of the
// magnitudes added into it: the blocks add in another order than a sequential loop).
double roundoff(DType dt) {
  switch (dt.scalar) {
    case Scalar::Float16:
      return 0x1p-11;
    case Scalar::BFloat16:
      return 0x1p-8;
    case Scalar::Float64:
      return 0x1p-53;
    default:
      return 0x1p-24;
  }
}

// cumsum of a (rows, n, cols) tensor along `axis` (0, 1 or 2), checked against prefix sums computed here: floats
// in double, within a tolerance that grows with the partial sums' size, integers exactly (wrapped to the dtype:
// integer sums wrap the same in any order).
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
  Array want = Array::zeros(dt, {1});  // one integer wrapped to the dtype
  const double eps = dt.is_float() ? roundoff(dt) : 0;
  int bad = 0;
  for (int64_t f = 0; f < total && bad < 5; f++) {
    const int64_t pos = f / stride % len;
    if (pos != 0) continue;  // f starts a line along the axis
    double acc = 0, abs_acc = 0;
    i128 iacc = 0;
    for (int64_t k = 0; k < len && bad < 5; k++) {
      const size_t e = size_t(f + k * stride);
      bool ok;
      double w;
      if (dt.is_float()) {
        acc += xs.value_at(e);
        abs_acc += std::fabs(xs.value_at(e));
        ok = std::fabs(got[0].value_at(e) - acc) <= 16 * eps * abs_acc + 1e-6;
        w = acc;
      } else {
        iacc += xs.int_at(e);
        want.set_int(0, iacc);
        ok = got[0].int_at(e) == want.int_at(0);
        w = want.value_at(0);
      }
      if (!ok) {
        ADD_FAILURE() << device << " " << dt.name() << " shape (" << shape[0] << "," << shape[1] << "," << shape[2]
                      << ") axis " << axis << ": element " << e << " (position " << k << ") got " << got[0].value_at(e)
                      << ", want " << w;
        bad++;
      }
    }
  }
}

void run_cases(const std::string& device) {
  // direct (n <= 16), blocks of 16 (levels of at most 16384 elements), blocks of 4 (larger levels), ragged tails
  for (int64_t n : {1, 2, 15, 16, 17, 255, 256, 257, 1000, 4097, 16384, 16385, 100000})
    check_cumsum(device, dtypes::float32, {1, n, 1}, 1);
  for (int64_t n : {17, 4097, 65537}) check_cumsum(device, dtypes::int32, {1, n, 1}, 1);
  // every axis of a 3-d tensor, short and long
  check_cumsum(device, dtypes::float32, {37, 3, 5}, 0);
  check_cumsum(device, dtypes::float32, {3, 41, 5}, 1);
  check_cumsum(device, dtypes::float32, {3, 5, 300}, 2);
  check_cumsum(device, dtypes::float32, {4097, 2, 3}, 0);
  check_cumsum(device, dtypes::float32, {2, 3, 4097}, 2);
  check_cumsum(device, dtypes::int32, {20000, 3, 2}, 0);
  check_cumsum(device, dtypes::int32, {3, 2, 20000}, 2);
  check_cumsum(device, dtypes::int64, {2, 1000, 3}, 1);
  // a short float and a wrapping integer through several levels
  check_cumsum(device, dtypes::float16, {2, 4097, 1}, 1);
  check_cumsum(device, dtypes::int8, {2, 4097, 1}, 1);
}

TEST(CumsumScan, LongAxesOnTheCpu) {
  run_cases("CPU");
  // every other numeric dtype through several levels (uint8 wraps)
  for (DType dt : {dtypes::uint8, dtypes::int16, dtypes::uint16, dtypes::uint32, dtypes::uint64, dtypes::int64,
                   dtypes::bfloat16, dtypes::float64})
    check_cumsum("CPU", dt, {2, 4097, 1}, 1);
  // a million along each kind of axis, an odd tail
  check_cumsum("CPU", dtypes::float32, {1000000, 1, 1}, 0);
  check_cumsum("CPU", dtypes::float32, {1, 1000003, 1}, 1);
  check_cumsum("CPU", dtypes::int32, {1, 1, 1000003}, 2);
}

TEST(CumsumScan, LongAxesOnOpenCL) {
  SN_SKIP_WITHOUT_DEVICE("CL", cl_required());
  run_cases("CL");
}

}  // namespace
}  // namespace sn
#endif
