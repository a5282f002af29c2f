// Common tensor operations as compositions of the spec's primitives (the spec's "Common Ops as
// Compositions"): movement ops, Reduce, elementwise ops (decomposed ones included: Sub, Div, Exp2,
// Log2, Sqrt, Sin, comparisons), Cast, Bitcast and Where. Nothing here creates another op, so the
// scheduler and the compiler see only what tensor.h builds.
//
// Conventions:
// - `axis` arguments accept negative values counted from the end (-1 = last axis).
// - Reductions made here keep nothing: results have the shapes stated per function.
// - Every function checks its arguments and throws sn::Error(InvalidArg) naming the function and
//   the bad values, before it builds anything that could fail later.
// - Float math is computed in the input's dtype.
// - Names that would hide a <cmath>/<cstdlib> function or sn::cat inside namespace sn carry a
//   prefix or another name: tensor_exp, tensor_log, tensor_tanh, concat, rand_uniform.
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "core/ir/graph.h"

namespace sn {

// ---- linear algebra -------------------------------------------------------------------------

// (M,K) @ (K,N) -> (M,N), the spec's (A.reshape(M,K,1) * B.reshape(1,K,N)).sum(1). Numeric
// (non-bool) dtypes; both operands share one dtype.
const UOp* gemm(Graph& g, const UOp* a, const UOp* b);
// (..., M,K) @ (..., K,N) -> (..., M,N); both ranks >= 2; the batch dims broadcast right-aligned.
const UOp* matmul(Graph& g, const UOp* a, const UOp* b);

// ---- scans and index sources ----------------------------------------------------------------

// Inclusive prefix sum of a 1-D tensor (the spec's pad/expand/reshape/shrink window trick).
const UOp* prefix_sum(Graph& g, const UOp* x);
// Inclusive cumulative sum along `axis` (any rank; a shape-() tensor is returned unchanged).
// Numeric dtypes only.
const UOp* cumsum(Graph& g, const UOp* x, int64_t axis);
// [0, 1, ..., n-1] of `dtype` (n >= 0; n-1 must fit the dtype). Built as the spec's prefix sum of
// ones minus one in int32 (int64 past 2^31), cast to `dtype`; past 64 elements the index is split
// into two smaller aranges (i = q*b + r) so the work stays linear in n instead of quadratic.
const UOp* arange(Graph& g, int64_t n, DType dtype = dtypes::int32);

// ---- indexing -------------------------------------------------------------------------------

// idx (integer, any shape) -> idx.shape + (n,), 1 where idx == j, else 0 (indices outside
// [0, n) give a zero row).
const UOp* one_hot(Graph& g, const UOp* idx, int64_t n, DType dtype = dtypes::int32);
// PyTorch's gather: out has idx's shape (same rank as x; idx.shape[d] <= x.shape[d] for d != axis)
// and out[..i_axis..] = x[..idx[...]..] along `axis`. Built as a one-hot mask over x's axis,
// Where and a sum. Indices outside [0, x.shape[axis]) give 0.
const UOp* gather(Graph& g, const UOp* x, int64_t axis, const UOp* idx);
// numpy's take: out = x.shape[:axis] + idx.shape + x.shape[axis+1:], out[a, i..., b] =
// x[a, idx[i...], b] (embedding lookup for axis 0; the spec's gather for 1-D x and idx). Indices
// outside [0, x.shape[axis]) give 0.
const UOp* take(Graph& g, const UOp* x, const UOp* idx, int64_t axis = 0);
// PyTorch's scatter_add: x + (for each position p of idx: val[p] added at x[p with p_axis =
// idx[p]]). idx and val have x's rank, idx.shape[d] <= val.shape[d] for every d and
// idx.shape[d] <= x.shape[d] for d != axis; val's extra elements are ignored. Indices outside
// [0, x.shape[axis]) add nothing. Result: x's shape and dtype (val has x's dtype).
const UOp* scatter_add(Graph& g, const UOp* x, int64_t axis, const UOp* idx, const UOp* val);

// Concatenation along `axis` (torch.cat). Every tensor has one dtype and rank, and the same dims
// off `axis`. Each is padded to the full size and selected with Where over a padded bool mask,
// which keeps every bit (an Add of zero pads would turn -0.0 into +0.0 and is not defined on bool).
const UOp* concat(Graph& g, std::span<const UOp* const> xs, int64_t axis);
// Stacks same-shape tensors along a new axis (0 <= axis <= rank, or negative from rank+1): the spec's
// Stack (a new leading axis), permuted.
const UOp* stack(Graph& g, std::span<const UOp* const> xs, int64_t axis);

// ---- elementwise and normalizations (float dtypes unless stated) -----------------------------

const UOp* relu(Graph& g, const UOp* x);         // max(x, 0); any numeric dtype
const UOp* tensor_exp(Graph& g, const UOp* x);   // exp2(x * log2(e))
const UOp* tensor_log(Graph& g, const UOp* x);   // log2(x) * ln(2)
const UOp* sigmoid(Graph& g, const UOp* x);      // 1 / (1 + exp(-x))
const UOp* tensor_tanh(Graph& g, const UOp* x);  // 2 * sigmoid(2x) - 1
// PyTorch's gelu(approximate='tanh'): 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))), computed as
// the identical x * sigmoid(2 sqrt(2/pi)(x + 0.044715x^3)).
const UOp* gelu(Graph& g, const UOp* x);
// Along `axis`, after subtracting the axis max for stability (same shape as x).
const UOp* softmax(Graph& g, const UOp* x, int64_t axis);
const UOp* log_softmax(Graph& g, const UOp* x, int64_t axis);
// Normalizes over the last `naxes` axes (1 <= naxes <= rank, those axes non-empty): (x - mean) /
// sqrt(var + eps) with the biased variance, then * weight and + bias when given (each of the
// normalized axes' shape and x's dtype; nullptr = none).
const UOp* layernorm(Graph& g, const UOp* x, int64_t naxes, const UOp* weight = nullptr, const UOp* bias = nullptr,
                     double eps = 1e-5);
// Index of the first maximum along `axis` (a NaN counts as the maximum, like numpy), int32. The
// axis is removed unless `keepdim`. Any non-empty axis; numeric or bool dtypes.
const UOp* argmax(Graph& g, const UOp* x, int64_t axis, bool keepdim = false);

// ---- convolution and pooling (NCHW) -----------------------------------------------------------

// x (N, Cin, H, W), w (Cout, Cin/groups, KH, KW), bias (Cout,) or nullptr. Zero padding of
// padding[0] rows and padding[1] columns on both sides. Output (N, Cout, OH, OW) with
// OH = (H + 2*ph - dh*(KH-1) - 1) / sh + 1 (floor), likewise OW. Numeric (non-bool) dtypes.
const UOp* conv2d(Graph& g, const UOp* x, const UOp* w, const UOp* bias = nullptr,
                  std::array<int64_t, 2> stride = {1, 1}, std::array<int64_t, 2> padding = {0, 0},
                  std::array<int64_t, 2> dilation = {1, 1}, int64_t groups = 1);
// Pooling over the last two axes of x (rank >= 2, e.g. (N, C, H, W)); floor output size like
// PyTorch's ceil_mode=False; padding <= kernel/2 per axis (PyTorch's rule).
// max_pool2d pads with -inf (the dtype's minimum for integers), so padding never wins.
const UOp* max_pool2d(Graph& g, const UOp* x, std::array<int64_t, 2> kernel, std::array<int64_t, 2> stride,
                      std::array<int64_t, 2> padding = {0, 0});
// avg_pool2d pads with zeros that count toward the average (PyTorch's count_include_pad=True):
// every window sum is divided by kernel[0]*kernel[1]. Float dtypes.
const UOp* avg_pool2d(Graph& g, const UOp* x, std::array<int64_t, 2> kernel, std::array<int64_t, 2> stride,
                      std::array<int64_t, 2> padding = {0, 0});

// ---- random numbers ---------------------------------------------------------------------------

// Threefry-2x32 with 20 rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3";
// Random123's threefry2x32): counter words (c0, c1) under key (k0, k1), all uint32 tensors that
// broadcast together; returns the two uint32 output words. Built from Add, Shl, Shr, Or and Xor.
std::pair<const UOp*, const UOp*> threefry2x32(Graph& g, const UOp* c0, const UOp* c1, const UOp* k0, const UOp* k1);
// The spec's Threefry op on uint64 operands, as a composition: the low 32 bits of x are counter
// word 0 and the high bits word 1 (likewise the key); the result holds output word 1 in its high
// and word 0 in its low 32 bits.
const UOp* threefry(Graph& g, const UOp* x, const UOp* key);
// Uniform values in [0, 1) of `shape`: element i (row-major) is threefry2x32((i, 0), (seed low,
// seed high)) word 0, whose top m bits become m-bit fractions (m = 23 for float32, 10 for float16,
// 7 for bfloat16, 32 for float64). `seed` is a shape-() uint64 tensor (a runtime value) or a
// number. At most 2^32 elements.
const UOp* rand_uniform(Graph& g, const std::vector<int64_t>& shape, const UOp* seed, DType dtype = dtypes::float32);
const UOp* rand_uniform(Graph& g, const std::vector<int64_t>& shape, uint64_t seed, DType dtype = dtypes::float32);
// Standard normal values (float32, or another float dtype computed in float32 and cast) by
// Box-Muller: with u1, u2 the 23-bit fractions of words 0 and 1 of element i's Threefry block,
// sqrt(-2 ln(1 - u1)) * cos(2 pi u2) (cos as sin(x + pi/2)).
const UOp* randn(Graph& g, const std::vector<int64_t>& shape, const UOp* seed, DType dtype = dtypes::float32);
const UOp* randn(Graph& g, const std::vector<int64_t>& shape, uint64_t seed, DType dtype = dtypes::float32);

}  // namespace sn
