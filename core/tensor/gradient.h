// Reverse-mode differentiation of tensor graphs: the gradient is itself a tensor graph, built from
// the same builders (tensor.h), so it fuses, compiles and runs like any other part of a program.
#pragma once
#include <span>
#include <vector>

#include "core/ir/graph.h"

namespace sn {

// grads[i] = d loss / d wrt[i], one tensor of wrt[i]'s shape and dtype each. `loss` is a float
// tensor of one element (any shape of ones, e.g. a full reduce). Gradients flow through float
// values only: integer and bool values (indices, masks, comparisons) carry none. A wrt the loss
// does not depend on gets zeros. `Detach` stops the gradient; `ContiguousBackward` materializes it
// (a Contiguous of the gradient). Throws InvalidArg for a bad loss or wrt, and Unsupported naming
// the op when the gradient would have to pass an op that has none (Bitcast, Threefry, ...).
std::vector<const UOp*> gradient(Graph& g, const UOp* loss, std::span<const UOp* const> wrt);

// The markers of tensor.h's graph language that only the gradient reads.
const UOp* detach(Graph& g, const UOp* x);
const UOp* contiguous_backward(Graph& g, const UOp* x);

}  // namespace sn
