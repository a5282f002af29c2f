// Index math for rangeify: how an index into a movement op's output maps to an index into its
// source. Every index is an index-typed scalar expression over Ranges and DefineVars.
#pragma once
#include <span>
#include <vector>

#include "core/ir/graph.h"

namespace sn::sched {

// Where one point of a tensor value is read from: one index expression per axis, and the
// condition under which the point lies inside real data (nullptr: always). Pad makes points
// outside its source invalid; their loads are gated off and their value is zero.
struct IndexCtx {
  std::vector<const UOp*> idx;
  const UOp* valid = nullptr;
};

// A dim as an index scalar (a Const, or the dim's symbolic expression).
const UOp* dim_uop(Graph& g, const Dim& d);
// The product of the dims as an index scalar (constants folded).
const UOp* numel_uop(Graph& g, std::span<const Dim> dims);
// Row-major flat position of `idx` in a tensor of `shape` (simplified).
const UOp* linear_index(Graph& g, const Shape& shape, std::span<const UOp* const> idx);

// valid_a && valid_b, where nullptr means "always" (simplified).
const UOp* and_valid(Graph& g, const UOp* a, const UOp* b);

// The index of src(0) of the movement op `mop` (Reshape, Permute, Expand, Pad, Shrink, Flip)
// given the index of its output. For Pad, `*pad_valid` receives the condition that the point
// lies inside the placed source (nullptr when it always does); the result's valid includes it.
IndexCtx through_movement(Graph& g, const UOp* mop, const IndexCtx& out, const UOp** pad_valid);

// The index of an operand of shape `src` inside an elementwise op of shape `out`: right-aligned,
// a lower-rank operand is left-padded with 1s, and its size-1 axes broadcast (index 0).
IndexCtx through_broadcast(Graph& g, const Shape& src, const Shape& out, const IndexCtx& ctx);

// Simplifies an index or gate expression (the symbolic rules).
const UOp* simplify_index(Graph& g, const UOp* e);

}  // namespace sn::sched
