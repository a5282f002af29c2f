// Small helpers shared by the codegen and optimizer passes over kernel ASTs.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/codegen/target.h"
#include "core/ir/graph.h"
#include "core/ir/node_map.h"

namespace sn {

// Rebuilds the graph under the roots bottom-up, memoized. `fn(u, srcs)` gets a node and its
// already-rebuilt sources and returns the replacement (return g.replace_src(u, srcs) to keep
// it). get() may be called again from inside fn (for nodes fn needs rebuilt first), as long as
// that does not reach the node being rebuilt.
class Rebuilder {
 public:
  using Fn = std::function<const UOp*(const UOp* u, std::span<const UOp* const> srcs)>;
  Rebuilder(Graph& g, Fn fn) : g_(g), fn_(std::move(fn)) {}
  const UOp* get(const UOp* u);
  // get(order.back()) where `order` is the toposort of it (children first, the root last), which
  // the caller already has: every node in order, without get's walk. fn may still call get().
  const UOp* run(std::span<const UOp* const> order);
  Graph& graph() { return g_; }
  // Nodes older than `id` stay as they are, unvisited: for an fn that changes only nodes at or
  // above some id, and their users (a node is always newer than its sources).
  void keep_below(uint32_t id) { keep_below_ = id; }

 private:
  Graph& g_;
  Fn fn_;
  uint32_t keep_below_ = 0;
  NodeMap<const UOp*> done_;
};

// Replaces nodes by a map in the graph under root; Reduce range lists follow (a Range that
// maps to a Range stays a range; a Range that maps to anything else is dropped from them).
const UOp* substitute_nodes(Graph& g, const UOp* root, const std::unordered_map<const UOp*, const UOp*>& map);
// substitute_nodes for each of the maps (all with the same keys): one walk finds the nodes the keys
// reach, and each copy rebuilds only those (expand's register copies: a walk of the whole body per
// copy before, half of expand's time).
std::vector<const UOp*> substitute_copies(Graph& g, const UOp* root,
                                          const std::vector<std::unordered_map<const UOp*, const UOp*>>& maps);

// Ranges each node is inside: the Ranges it reads that no Reduce or End on the way closes.
// Sorted by node id. Indexed by the node ids of `order` (toposort of the graph).
class OpenRanges {
 public:
  explicit OpenRanges(std::span<const UOp* const> order);
  // Empty for nodes that were not in `order`. Valid as long as this object; nodes with the same
  // set of open ranges get the same span.
  std::span<const UOp* const> of(const UOp* u) const;
  bool contains(const UOp* u, const UOp* range) const;

 private:
  struct Set {
    uint32_t begin, size;  // in ranges_
  };
  std::span<const UOp* const> set(int32_t k) const;  // set k's ranges
  NodeMap<int32_t> slot_;                            // node -> its set's index + 1; 0: not in order
  std::vector<Set> sets_;                            // 0: empty; a node shares a source's set where they are equal
  std::vector<const UOp*> ranges_;                   // the sets, one after another (one allocation, not one per set)
};

// The ranges a Reduce or End closes (its sources after the first).
std::span<const UOp* const> closed_ranges(const UOp* u);

// Evaluates an integer expression of Const, DefineVar, Range, Special and integer ALU ops with
// the given values (missing Ranges/vars/Specials evaluate to 0). Floor Idiv/Mod. Returns false
// for anything else (loads, floats).
bool eval_int(const UOp* u, const std::unordered_map<const UOp*, int64_t>& env, int64_t* out);
// eval_int at two points in one walk: with range (or variable) r at 0 and at 1, the rest as in env
// (at1 - at0 is the index's stride along r).
bool eval_int_step(const UOp* u, const std::unordered_map<const UOp*, int64_t>& env, const UOp* r, int64_t* at0,
                   int64_t* at1);
// How far index idx moves when r goes from 0 to 1 (the rest as in env); nullopt if not evaluable.
std::optional<int64_t> stride_of(const UOp* idx, const UOp* r, const std::unordered_map<const UOp*, int64_t>& env);
// The element index of a load's or store's address Index(buffer, i), or nullptr for any other address.
inline const UOp* address_index(const UOp* addr) {
  return addr->op == Op::Index && addr->nsrc() == 2 ? addr->src(1) : nullptr;
}
// The buffer an Index addresses (a Param, a Buffer, ...), under any Afters, or nullptr for any
// other address.
inline const UOp* address_buffer(const UOp* addr) {
  if (addr->op != Op::Index) return nullptr;
  const UOp* b = addr->src(0);
  while (b->op == Op::After) b = b->src(0);
  return b;
}
// Whether u is a Load of a Param whose slot is in `finite` (ascending: LowerOptions::finite_params),
// so never inf or NaN.
inline bool loads_finite_param(const UOp* u, std::span<const int64_t> finite) {
  const UOp* b = u->op == Op::Load ? address_buffer(u->src(0)) : nullptr;
  return b && b->op == Op::Param && std::binary_search(finite.begin(), finite.end(), b->as<ParamArg>().slot);
}

// Whether some load's or store's address in `order` (a kernel's nodes, sources first) depends on a
// loaded value (a gather or a scatter).
bool addresses_depend_on_loads(std::span<const UOp* const> order);
// Whether every element an Index into a kernel parameter can address lies inside the parameter's
// buffer (the index's bounds, over every range's whole length).
bool inside_buffer(const UOp* index);

// The k-lane index base + (offsets[0], ..., offsets[k-1]) (the addresses of a gather or a scatter:
// Index(buffer, it) loads or stores k elements at those positions), and its base, or nullptr when
// idx is not of that form.
const UOp* lane_index(Graph& g, const UOp* base, const std::vector<int64_t>& offsets);
// The same over offsets already built (a Vectorize of constants, as lane_index makes them).
const UOp* lane_index(Graph& g, const UOp* base, const UOp* offsets);
const UOp* lane_index_base(const UOp* idx);
// The vectors a Vectorize puts together whole and in order (every lane of each, one after another,
// as expand's loads of contiguous runs are joined), two or more of as many lanes each, a power of
// two of them; empty for any other Vectorize.
std::vector<const UOp*> concatenated_vectors(const UOp* vectorize);

// Whether the graph under u contains node x (u's value or address moves with x).
bool depends_on(const UOp* u, const UOp* x);
// The terms of sum e (its Adds flattened, left to right) appended to *out; e itself if no Add.
void add_terms(const UOp* e, std::vector<const UOp*>* out);

// All Range nodes under root, by loop id (RangeArg::id; the node id breaks ties).
std::vector<const UOp*> ranges_of(const UOp* root);
// The same of a toposort already at hand (each node once).
std::vector<const UOp*> ranges_in(std::span<const UOp* const> order);

// Bound of a range if it is a constant, else -1.
int64_t const_bound(const UOp* range);

// A tensor-core fragment coordinate (TcCoord) of element `elem` as an index expression of the
// lane (a WARP range, or its Special).
const UOp* fragment_coord(Graph& g, const TcCoord& c, const UOp* lane, int64_t elem);

// Identity element of a reduction op in dtype (0 for Add, 1 for Mul, -inf / dtype min for Max).
const UOp* reduce_identity(Graph& g, Op op, DType dt);

}  // namespace sn
