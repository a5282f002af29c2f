// The symbolic simplifier: constant folding, identities, canonical order, like terms,
// interval reasoning, comparison/where folding, floor and C division/modulo folding.
#pragma once
#include <vector>

#include "core/rewrite/pattern.h"

namespace sn {

// The full simplifier rule set (index and integer math, bool algebra, folding).
const PatternMatcher& symbolic_rules();
// Simplify every node under root to a fixed point.
const UOp* simplify(Graph& g, const UOp* root);
// Simplify `expr` assuming `valid` (a bool expression) holds: tightens variable ranges under
// the gate, then simplifies. Used for indexing under a validity mask. `simplified`: both are already
// simplify's results (they are not simplified again).
const UOp* simplify_given_valid(Graph& g, const UOp* valid, const UOp* expr, bool simplified = false);

// The leaves of u's tree of `op` nodes of u's dtype (a conjunction's clauses for Op::And), in order.
void flatten(const UOp* u, Op op, std::vector<const UOp*>& out);

}  // namespace sn
