// The oracle: a reference interpreter of tensor-level graphs, independent of the compiler.
//
// It evaluates every node of a graph to a dense row-major array, one op at a time, with the
// plainest code that implements the spec's semantics. Compiled results are compared with it, so
// it derives shapes itself (and checks them against the graph's) and shares no code with the
// lowering stages; it only uses the IR types, `wrap_int` and `round_float`.
//
// Value semantics:
// - floats are computed in double and rounded to the dtype after every op (reductions accumulate
//   in double and round once at the end);
// - integers are exact and wrap to the dtype (two's complement); Idiv/Mod are floor division and
//   floor modulo, CDiv/CMod truncate; division by zero throws (undefined, never compared);
// - comparisons give bool; CmpGe, CmpLe and Not follow the spec's decompositions (CmpGe(a,b) is
//   not(a<b), so it is true when either side is NaN);
// - Max propagates NaN; float -> int casts truncate toward zero and wrap, NaN/inf throw;
// - shifts by a negative amount throw; by >= the width give 0 (Shr of a negative signed value:
//   -1), as numpy does;
// - Bitcast reinterprets the array's little-endian storage bytes (the last axis rescales when
//   the element sizes differ).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/ir/graph.h"

namespace sn::oracle {

// A dense row-major array of one dtype. Float dtypes keep their values in `f` (already rounded to
// the dtype); bool and integer dtypes in `i` (uint64 as its bit pattern).
struct Array {
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<double> f;
  std::vector<int64_t> i;

  size_t numel() const { return dtype.is_float() ? f.size() : i.size(); }
  // Element k as an exact integer (bool and integer dtypes only).
  i128 int_at(size_t k) const;
  // Element k as a double (exact for floats; integers convert).
  double value_at(size_t k) const;
  // Stores an integer, wrapped to the dtype (bool and integer dtypes only).
  void set_int(size_t k, i128 v);

  static Array zeros(DType dtype, std::vector<int64_t> shape);
  // Float dtypes round each value to the dtype; integer dtypes need exact integers in range.
  static Array from_doubles(DType dtype, std::vector<int64_t> shape, const std::vector<double>& values);
  // Integers wrap to the dtype.
  static Array from_ints(DType dtype, std::vector<int64_t> shape, const std::vector<int64_t>& values);
  // Little-endian storage bytes, itemsize() per element.
  static Array from_bytes(DType dtype, std::vector<int64_t> shape, const void* data, size_t nbytes);
  std::vector<uint8_t> to_bytes() const;

  std::string str(size_t max_elems = 16) const;  // "float32(2,3)[1, 2, ...]" for messages
};

// Storage encoding of one element (little-endian, dtype.itemsize() bytes), for every scalar dtype
// (f16, bf16 and fp8 included). Encoding a float rounds it to the dtype first.
void encode_float(DType dtype, double v, uint8_t* out);
double decode_float(DType dtype, const uint8_t* in);

// Data of each Buffer node the graph reads (its numel must equal the Buffer's size).
using BufferData = std::unordered_map<const UOp*, Array>;

// Evaluates `root` (a tensor-level node) to an array of its shape. Throws sn::Error: InvalidArg for
// missing or mismatched buffer data and undefined values (division by zero, ...), Unsupported for
// ops it does not interpret, Internal when the graph's derived shape disagrees with its own.
Array evaluate(const UOp* root, const BufferData& buffers);
// Several roots at once; shared subgraphs are evaluated once.
std::vector<Array> evaluate(std::span<const UOp* const> roots, const BufferData& buffers);

// While one is alive (on this thread), evaluate moves every float result that compiled code may
// round differently by 4 units in the last place of its dtype, up (+1) or down (-1): arithmetic
// whose exact result the dtype cannot hold, transcendentals, and sums and products of several
// elements (a sum by 4 ulps of its largest term, which another order of adding may lose). Outputs
// that change under either are decided by rounding (a comparison of nearly equal values, a
// cancellation cast to an integer): a differential test cannot judge them.
class RoundingNudge {
 public:
  explicit RoundingNudge(int direction);
  ~RoundingNudge();
  RoundingNudge(const RoundingNudge&) = delete;
  RoundingNudge& operator=(const RoundingNudge&) = delete;

 private:
  int before_;
};

}  // namespace sn::oracle
