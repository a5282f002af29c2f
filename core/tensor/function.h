// Functions (the spec's Call ops): a body over Params, captured once as Function(Tuple(body),
// args...) at every call and read through GetTuple. The schedule resolves a call by substituting
// the arguments for the Params, so the body fuses with its callers; a function marked
// precompiled keeps its body's kernels apart instead (its arguments and results are
// materialized), so every call runs the same kernels, compiled once.
#pragma once
#include <span>
#include <string>
#include <vector>

#include "core/ir/graph.h"

namespace sn {

// Parameter `slot` of a function body: a tensor of `dtype` and `shape`, with no device (it takes
// its argument's).
const UOp* function_param(Graph& g, int64_t slot, DType dtype, const std::vector<int64_t>& shape);

// A call of the function whose body computes `outputs` from `params` (params[k] has slot k): one
// GetTuple per output, each of that output's shape and dtype. args[k] must have params[k]'s shape
// and dtype. The Function node's arg is 1 when the function is precompiled, else 0.
std::vector<const UOp*> call_function(Graph& g, std::span<const UOp* const> outputs, std::span<const UOp* const> params,
                                      std::span<const UOp* const> args, bool precompiled);

// Every GetTuple of a Function under `roots` replaced by its body with the arguments substituted
// (inner calls first). A Param left outside any function body is an InvalidArg error.
std::vector<const UOp*> resolve_functions(Graph& g, std::span<const UOp* const> roots);

}  // namespace sn
