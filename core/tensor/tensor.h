// Tensor-level builders over a Graph: the lazy, shaped UOps a user program is made of.
//
// Semantics follow the spec: Expand broadcasts size-1 axes (same rank), Reduce keeps reduced axes
// as size 1, Pad fills with zero, movement shapes and offsets are shape operands (`g.shape_uop`),
// and elementwise ops broadcast their operands right-aligned (a shape-() constant broadcasts to
// anything). Decomposed ops (Neg, Sub, Div, CmpGe, Exp2, ...) stay their own Op nodes here;
// lowering decomposes them later.
//
// Every builder checks its arguments and throws sn::Error(InvalidArg) naming the op, the rule and
// the values. A movement op that would not change anything (reshape to the same shape, identity
// permutation, ...) returns its input unchanged. Dims are constants except where a builder says
// it takes symbolic dims (index uops over bounded DefineVars; see `input_sym`); the others refuse a
// symbolic dim with Unsupported naming the op and the dim.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/ir/graph.h"

namespace sn {

// ---- sources -------------------------------------------------------------------------------

// A fresh Buffer of numel(shape) elements on `device`, viewed with `shape` (Reshape of the Buffer;
// the Buffer itself when the shape is already (numel,)).
const UOp* input(Graph& g, DType dtype, const std::vector<int64_t>& shape, const std::string& device = "CPU");
// A tensor whose dims are index uops (constants, bounded DefineVars, or index arithmetic of them):
// a Buffer sized for the largest value of every dim, viewed at its largest shape and shrunk to
// `dims`. A program built on it compiles once and runs at any variable values in bounds. All
// constant dims: the same as `input`.
const UOp* input_sym(Graph& g, DType dtype, const Shape& dims, const std::string& device = "CPU");
// The Buffer node behind a tensor made by `input` (the tensor itself if it is a Buffer).
const UOp* buffer_of(const UOp* input_tensor);
// Whether x is computed by an elementwise op (under any movement ops) rather than read from a
// buffer or a constant: a value every reader that inlines it computes again.
bool is_computed(const UOp* x);

// A scalar constant of shape (). Float values are rounded to the dtype (the node holds what the
// dtype can hold); integer and bool dtypes need an exact integer value inside the dtype's range.
const UOp* constant(Graph& g, DType dtype, double value);
// An exact integer constant (any integer dtype, uint64 up to 2^64-1; bool: 0 or 1).
const UOp* constant_int(Graph& g, DType dtype, i128 value);

// The constant dims of a tensor's shape; throws InvalidArg naming `what` when it has no shape or
// a symbolic dim.
std::vector<int64_t> static_shape(const UOp* t, const char* what = "tensor");
// The shape of a tensor, symbolic dims included; throws InvalidArg naming `what` when it has none.
const Shape& sym_shape(const UOp* t, const char* what = "tensor");
// Right-aligned broadcast of two shapes; a symbolic dim broadcasts only with itself or a 1.
Shape broadcast_sym(const char* op, const Shape& a, const Shape& b);
// "(2,3)", "(5,)", "()": how every message of the tensor front writes static dims.
std::string dims_str(const std::vector<int64_t>& dims);
// The element count of a shape (checked_numel); an overflow is InvalidArg naming `op`.
int64_t numel(const std::vector<int64_t>& shape, const char* op = "numel");

// An in-place update: value written into the Buffer of input tensor `target` (Store), and the
// target after that write (After, returned; it reads as `value`). A program that includes the
// After (among its outputs or its effects) writes the buffer when it runs, after every read of the
// old value in that program. value has target's shape and dtype.
const UOp* assign(Graph& g, const UOp* target, const UOp* value);

// ---- movement -----------------------------------------------------------------------------

const UOp* reshape(Graph& g, const UOp* x, const std::vector<int64_t>& shape);
// Symbolic reshape: the constant dims keep their product and every symbolic dim stays its own axis
// (a symbolic dim merged into or split from others is Unsupported, naming the dim).
const UOp* reshape_sym(Graph& g, const UOp* x, const Shape& shape);
// Output axis k is input axis order[k].
const UOp* permute(Graph& g, const UOp* x, const std::vector<int64_t>& order);
// Same rank; every axis of x is 1 or equal to the new size.
const UOp* expand(Graph& g, const UOp* x, const std::vector<int64_t>& shape);
// Symbolic expand: a 1 may broadcast to a symbolic dim; a symbolic axis stays itself.
const UOp* expand_sym(Graph& g, const UOp* x, const Shape& shape);
// flags[k] (0 or 1) reverses axis k; any axis may be symbolic.
const UOp* flip(Graph& g, const UOp* x, const std::vector<int64_t>& flags);
// x placed at `offsets` inside a zero-filled tensor of `new_shape`. pad and shrink move constant
// axes only: a symbolic axis passes through whole, written as offset 0 and size -1.
const UOp* pad(Graph& g, const UOp* x, const std::vector<int64_t>& offsets, const std::vector<int64_t>& new_shape);
// sizes[k] elements of axis k starting at offsets[k].
const UOp* shrink(Graph& g, const UOp* x, const std::vector<int64_t>& offsets, const std::vector<int64_t>& sizes);
// A view of x read from a contiguous copy in which axis `axis` is cut into panels of `panel`
// elements: the copy holds the panels' index at position `outer_at` among x's other axes and each
// panel's elements innermost, so a register tile whose lanes run along the axis reads one
// contiguous block per step. Where `panel` does not divide the axis the last panel is padded with
// zeros: lanes padded past the axis still read inside the copy. Every axis of x is constant.
const UOp* panel_copy(Graph& g, const UOp* x, int64_t axis, int64_t panel, int64_t outer_at);
// The arguments panel_copy made `view` from, or nullopt when it is no view panel_copy made.
struct PanelCopy {
  const UOp* x;
  int64_t axis, panel, outer_at;
};
std::optional<PanelCopy> as_panel_copy(Graph& g, const UOp* view);
// The spec's Index: indices[k] (an integer tensor of shape () or (n,)) selects along axis k of x,
// from the left; a ()-shaped index removes the axis, an (n,)-shaped one makes it n long (a gather
// along the leading axes). An index outside its axis reads 0.
const UOp* index(Graph& g, const UOp* x, std::span<const UOp* const> indices);
// The spec's Stack: same-shape, same-dtype tensors joined along a new leading axis.
const UOp* stack_leading(Graph& g, std::span<const UOp* const> xs);
// The spec's Slice: `size` elements of `dtype` read from x's storage (row-major bytes), starting
// `offset` elements of x's dtype in; shape (size,).
const UOp* slice(Graph& g, const UOp* x, int64_t offset, int64_t size, DType dtype);
// The spec's Binary: constant bytes, a uint8 tensor of shape (bytes.size(),).
const UOp* binary_data(Graph& g, std::string bytes);
// Reduce (Add, Max or Mul) over `axes`, which keep size 1. Axes are stored sorted; none = x.
const UOp* reduce(Graph& g, const UOp* x, Op op, const std::vector<int64_t>& axes);
// Value conversion (float -> int truncates toward zero).
const UOp* cast(Graph& g, const UOp* x, DType dtype);
// Reinterpret the storage bytes; when element sizes differ the last axis rescales (total bytes kept).
const UOp* bitcast(Graph& g, const UOp* x, DType dtype);

// ---- elementwise --------------------------------------------------------------------------

// Any unary, binary or ternary elementwise op (primitive or decomposed; not Cast, use `cast`).
// Operands broadcast right-aligned; they share one dtype (Where: bool condition, then two values
// of one dtype). Result dtype: bool for comparisons, else the value operands' dtype.
const UOp* elementwise(Graph& g, Op op, std::span<const UOp* const> src);
const UOp* unary(Graph& g, Op op, const UOp* a);
const UOp* binary(Graph& g, Op op, const UOp* a, const UOp* b);
const UOp* ternary(Graph& g, Op op, const UOp* a, const UOp* b, const UOp* c);

// Named forms of the common ones. Math functions (Exp2, Log2, Sin, Sqrt, Trunc, Recip, Pow) go
// through unary/binary so no name here hides <cmath>'s inside namespace sn.
inline const UOp* neg(Graph& g, const UOp* a) { return unary(g, Op::Neg, a); }
inline const UOp* logical_not(Graph& g, const UOp* a) { return unary(g, Op::Not, a); }
inline const UOp* add(Graph& g, const UOp* a, const UOp* b) { return binary(g, Op::Add, a, b); }
inline const UOp* sub(Graph& g, const UOp* a, const UOp* b) { return binary(g, Op::Sub, a, b); }
inline const UOp* mul(Graph& g, const UOp* a, const UOp* b) { return binary(g, Op::Mul, a, b); }
inline const UOp* divide(Graph& g, const UOp* a, const UOp* b) { return binary(g, Op::Div, a, b); }
inline const UOp* maximum(Graph& g, const UOp* a, const UOp* b) { return binary(g, Op::Max, a, b); }
inline const UOp* idiv(Graph& g, const UOp* a, const UOp* b) { return binary(g, Op::Idiv, a, b); }
inline const UOp* mod(Graph& g, const UOp* a, const UOp* b) { return binary(g, Op::Mod, a, b); }
inline const UOp* cmplt(Graph& g, const UOp* a, const UOp* b) { return binary(g, Op::CmpLt, a, b); }
inline const UOp* cmpne(Graph& g, const UOp* a, const UOp* b) { return binary(g, Op::CmpNe, a, b); }
inline const UOp* cmpgt(Graph& g, const UOp* a, const UOp* b) { return binary(g, Op::CmpGt, a, b); }
inline const UOp* cmpge(Graph& g, const UOp* a, const UOp* b) { return binary(g, Op::CmpGe, a, b); }
inline const UOp* cmple(Graph& g, const UOp* a, const UOp* b) { return binary(g, Op::CmpLe, a, b); }
inline const UOp* cmpeq(Graph& g, const UOp* a, const UOp* b) { return binary(g, Op::CmpEq, a, b); }
inline const UOp* bitwise_and(Graph& g, const UOp* a, const UOp* b) { return binary(g, Op::And, a, b); }
inline const UOp* bitwise_or(Graph& g, const UOp* a, const UOp* b) { return binary(g, Op::Or, a, b); }
inline const UOp* bitwise_xor(Graph& g, const UOp* a, const UOp* b) { return binary(g, Op::Xor, a, b); }
inline const UOp* shl(Graph& g, const UOp* a, const UOp* b) { return binary(g, Op::Shl, a, b); }
inline const UOp* shr(Graph& g, const UOp* a, const UOp* b) { return binary(g, Op::Shr, a, b); }
inline const UOp* where(Graph& g, const UOp* cond, const UOp* a, const UOp* b) {
  return ternary(g, Op::Where, cond, a, b);
}
inline const UOp* mulacc(Graph& g, const UOp* a, const UOp* b, const UOp* c) { return ternary(g, Op::Mulacc, a, b, c); }

// Right-aligned broadcast of two static shapes; throws InvalidArg naming `op` when they do not
// broadcast.
std::vector<int64_t> broadcast_shapes(const char* op, const std::vector<int64_t>& a, const std::vector<int64_t>& b);

}  // namespace sn
