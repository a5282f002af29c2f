// Scatter stores: the k scalar stores of one vector's lanes, at addresses a constant distance apart
// in one buffer, become one store through a vector of k addresses (Index with a k-lane index) on
// targets with a scatter instruction (Target::has_scatter). expand writes such stores for a
// reduction that takes a strided axis as its vector lanes (a convolution's output channels).
// As k scalar stores they cost LLVM more than the rest of the kernel: SLP regroups them into
// shuffles and dead-store elimination compares each with the others (a 3x3 convolution's
// 8 x 32 lanes: ~60% of its optimization time).
#include <map>
#include <optional>
#include <unordered_map>

#include "core/codegen/codegen.h"
#include "core/symbolic/symbolic.h"

namespace sn {

namespace {

// A store this pass can merge: ungated, of lane `lane` of a vector, through a scalar Index.
struct LaneStore {
  const UOp* store;
  const UOp* vec;
  int64_t lane;
};

std::optional<LaneStore> lane_store(const UOp* s) {
  if (s->op != Op::Store || s->nsrc() != 2) return std::nullopt;
  const UOp* addr = s->src(0);
  const UOp* val = s->src(1);
  if (addr->op != Op::Index || addr->nsrc() != 2 || addr->dtype.lanes != 1 || addr->src(1)->dtype.lanes != 1)
    return std::nullopt;
  if (val->op != Op::Gep || !val->holds<int64_t>() || val->src(0)->dtype.lanes < 2) return std::nullopt;
  return LaneStore{s, val->src(0), val->as<int64_t>()};
}

// The store of every lane of `v` through one k-lane index (base + constant offsets), or nullptr
// when the group does not hold each lane once or an offset is not a constant.
const UOp* merge(Graph& g, const UOp* v, const std::vector<LaneStore>& group) {
  const size_t k = v->dtype.lanes;
  if (group.size() != k) return nullptr;
  std::vector<const UOp*> at(k, nullptr);
  for (const LaneStore& l : group) {
    if (l.lane < 0 || size_t(l.lane) >= k || at[size_t(l.lane)]) return nullptr;
    at[size_t(l.lane)] = l.store->src(0);
  }
  const UOp* base = at[0]->src(1);
  DType it = base->dtype;
  const UOp* neg_base = g.alu(Op::Mul, base, g.cint(-1, it));
  std::vector<const UOp*> offsets;
  for (size_t c = 0; c < k; c++) {
    const UOp* d = c == 0 ? g.cint(0, it) : simplify(g, g.alu(Op::Add, at[c]->src(1), neg_base));
    if (d->op != Op::Const) return nullptr;
    offsets.push_back(d);
  }
  DType vi = it.vec(uint16_t(k));
  const UOp* idx =
      g.alu(Op::Add, g.make(Op::Vectorize, vi, std::vector<const UOp*>(k, base)), g.make(Op::Vectorize, vi, offsets));
  DType p = at[0]->dtype;
  const UOp* addr = g.make(Op::Index, p.base().vec(uint16_t(k)).as_ptr(p.addrspace), {at[0]->src(0), idx});
  return g.make(Op::Store, dtypes::void_, {addr, v}, group[0].store->arg, group[0].store->tag);
}

}  // namespace

const UOp* combine_scatter_stores(Graph& g, const UOp* sink) {
  // Group the sink's lane stores by (vector, buffer), in order of first appearance.
  std::map<std::pair<const UOp*, const UOp*>, std::vector<LaneStore>> groups;
  for (const UOp* s : sink->src())
    if (auto l = lane_store(s)) groups[{l->vec, l->store->src(0)->src(0)}].push_back(*l);
  std::unordered_map<const UOp*, const UOp*> first;  // first store of a merged group -> the scatter
  std::unordered_map<const UOp*, bool> merged;
  for (auto& [key, group] : groups) {
    const UOp* m = merge(g, key.first, group);
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
