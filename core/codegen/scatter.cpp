// Gathers and scatters: on targets with those instructions (Target::has_scatter), the k scalar
// accesses of one vector's lanes at addresses a constant distance apart in one buffer become one
// access through a vector of k addresses (an Index with a k-lane index):
//   - the stores of a vector's lanes (expand writes them for a reduction that takes a strided axis
//     as its lanes: a convolution's output channels) -> one scatter store;
//   - a vector built from k scalar loads (expand reads that way what walks the lanes with a stride:
//     the residual a convolution with output-channel lanes adds) -> one gather load.
// As k scalar accesses they cost LLVM more than the rest of the kernel: SLP regroups them into
// shuffles and dead-store elimination compares each store with the others (a 3x3 convolution's
// 8 x 32 lane stores: ~60% of its optimization time; a residual block's 2 x 8 x 32 loads: 185 ms).
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "core/codegen/codegen.h"
#include "core/codegen/kernel_util.h"
#include "core/symbolic/symbolic.h"

namespace sn {

namespace {

// The k-lane index of scalar addresses at[0..k) (Index nodes of one buffer), as lane 0's index plus
// constant offsets, or nullptr when an offset is not a constant or two lanes share an address (a
// broadcast, or a vector that repeats values, is cheaper loaded once per distinct element).
const UOp* lane_index(Graph& g, const std::vector<const UOp*>& at) {
  const size_t k = at.size();
  const UOp* base = at[0]->src(1);
  DType it = base->dtype;
  const UOp* neg_base = g.alu(Op::Mul, base, g.cint(-1, it));
  std::vector<const UOp*> offsets{g.cint(0, it)};
  std::set<int64_t> seen{0};
  for (size_t c = 1; c < k; c++) {
    if (at[c]->src(0) != at[0]->src(0) || at[c] == at[0]) return nullptr;
    const UOp* d = simplify(g, g.alu(Op::Add, at[c]->src(1), neg_base));
    if (d->op != Op::Const || !seen.insert(int64_t(d->const_int())).second) return nullptr;
    offsets.push_back(d);
  }
  DType vi = it.vec(uint16_t(k));
  const UOp* idx =
      g.alu(Op::Add, g.make(Op::Vectorize, vi, std::vector<const UOp*>(k, base)), g.make(Op::Vectorize, vi, offsets));
  DType p = at[0]->dtype;
  return g.make(Op::Index, p.base().vec(uint16_t(k)).as_ptr(p.addrspace), {at[0]->src(0), idx});
}

bool scalar_address(const UOp* a) {
  return a->op == Op::Index && a->nsrc() == 2 && a->dtype.lanes == 1 && a->src(1)->dtype.lanes == 1;
}

// A store this pass can merge: ungated, of lane `lane` of a vector, through a scalar Index.
struct LaneStore {
  const UOp* store;
  const UOp* vec;
  int64_t lane;
};

std::optional<LaneStore> lane_store(const UOp* s) {
  if (s->op != Op::Store || s->nsrc() != 2 || !scalar_address(s->src(0))) return std::nullopt;
  const UOp* val = s->src(1);
  if (val->op != Op::Gep || !val->holds<int64_t>() || val->src(0)->dtype.lanes < 2) return std::nullopt;
  return LaneStore{s, val->src(0), val->as<int64_t>()};
}

// The store of every lane of `v` through one k-lane index, or nullptr when the group does not hold
// each lane once or the addresses are not a constant distance apart.
const UOp* merge_stores(Graph& g, const UOp* v, const std::vector<LaneStore>& group) {
  const size_t k = v->dtype.lanes;
  if (group.size() != k) return nullptr;
  std::vector<const UOp*> at(k, nullptr);
  for (const LaneStore& l : group) {
    if (l.lane < 0 || size_t(l.lane) >= k || at[size_t(l.lane)]) return nullptr;
    at[size_t(l.lane)] = l.store->src(0);
  }
  const UOp* addr = lane_index(g, at);
  return addr ? g.make(Op::Store, dtypes::void_, {addr, v}, group[0].store->arg, group[0].store->tag) : nullptr;
}

// A Vectorize of k ungated scalar loads of one buffer at constant distances -> one gather load.
const UOp* merge_loads(Graph& g, const UOp* vec) {
  std::vector<const UOp*> at;
  for (const UOp* l : vec->src()) {
    if (l->op != Op::Load || l->nsrc() != 1 || !scalar_address(l->src(0))) return nullptr;
    at.push_back(l->src(0));
  }
  const UOp* addr = lane_index(g, at);
  return addr ? g.make(Op::Load, vec->dtype, {addr}, vec->src(0)->arg, vec->src(0)->tag) : nullptr;
}

}  // namespace

const UOp* combine_gathers_and_scatters(Graph& g, const UOp* sink) {
  // Loads: every Vectorize of loads under the sink, rebuilt bottom-up.
  Rebuilder gathers(g, [&](const UOp* u, std::span<const UOp* const> srcs) -> const UOp* {
    const UOp* r = g.replace_src(u, srcs);
    if (r->op == Op::Vectorize && r->nsrc() >= 2)
      if (const UOp* m = merge_loads(g, r)) return m;
    return r;
  });
  sink = gathers.get(sink);
  // Stores: the sink's lane stores grouped by (vector, buffer), in order of first appearance.
  std::map<std::pair<const UOp*, const UOp*>, std::vector<LaneStore>> groups;
  for (const UOp* s : sink->src())
    if (auto l = lane_store(s)) groups[{l->vec, l->store->src(0)->src(0)}].push_back(*l);
  std::unordered_map<const UOp*, const UOp*> first;  // first store of a merged group -> the scatter
  std::unordered_map<const UOp*, bool> merged;
  for (auto& [key, group] : groups) {
    const UOp* m = merge_stores(g, key.first, group);
    if (!m) continue;
    first[group[0].store] = m;
    for (const LaneStore& l : group) merged[l.store] = true;
  }
  if (first.empty()) return sink;
  std::vector<const UOp*> stores;
  for (const UOp* s : sink->src()) {
    if (auto it = first.find(s); it != first.end())
      stores.push_back(it->second);
    else if (!merged.count(s))
      stores.push_back(s);
  }
  return g.make(Op::Sink, sink->dtype, stores, sink->arg, sink->tag);
}

}  // namespace sn
