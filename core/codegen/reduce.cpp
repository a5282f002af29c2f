// Reduce -> accumulator. Each Reduce(value, k...) becomes a one-element Reg buffer:
//   init:   Store(Index(After(acc, outer ranges...), 0), identity)     once per outer iteration
//   update: Store(Index(a, 0), op(Load(Index(a, 0)), value)), a = After(acc, init, k...)
//   close:  End(...End(update, k_inner)..., k_outer)
//   result: Load(Index(After(acc, close), 0))
// The After sources place each piece in the right loop for the linearizer: the init depends on
// the outer ranges only, the update on the reduce ranges, the result on the closed loop.
// Reduces with the same ranges and the same outer loops that do not feed each other share one
// loop (the copies of an upcast register tile): one End closes a Group of their updates.
#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "core/codegen/codegen.h"
#include "core/codegen/kernel_util.h"

namespace sn {

namespace {

// Floats narrower than float32 (f16, bf16, fp8): their sums accumulate in float32.
bool is_half(DType dt) {
  return dt.scalar == Scalar::Float16 || dt.scalar == Scalar::BFloat16 || dt.scalar == Scalar::Fp8E4M3 ||
         dt.scalar == Scalar::Fp8E5M2;
}

struct Group {
  std::vector<const UOp*> ranges;  // the original reduce ranges, by id
  std::vector<const UOp*> outer;   // open ranges of the Reduce node
  std::vector<const UOp*> members;
  std::unordered_set<const UOp*> member_set;
  bool lowered = false;
};

}  // namespace

const UOp* lower_reduces(Graph& g, const UOp* sink) {
  std::vector<const UOp*> topo = toposort(sink);
  OpenRanges open(topo);
  uint64_t next_buf = 1;
  int64_t next_range = 0;
  for (const UOp* u : topo) {
    if (u->op == Op::Buffer) next_buf = std::max(next_buf, u->as<BufferArg>().id + 1);
    if (u->op == Op::Range) next_range = std::max(next_range, u->as<RangeArg>().id + 1);
  }

  // Group the reduces (in topological order, so a reduce comes after those it reads).
  std::vector<Group> groups;
  std::unordered_map<const UOp*, size_t> group_of;
  for (const UOp* u : topo) {
    if (u->op != Op::Reduce || u->nsrc() < 2) continue;
    std::vector<const UOp*> rs(u->src().begin() + 1, u->src().end());
    std::sort(rs.begin(), rs.end(), [](const UOp* a, const UOp* b) { return a->id < b->id; });
    rs.erase(std::unique(rs.begin(), rs.end()), rs.end());
    const auto& outer = open.of(u);
    std::unordered_set<const UOp*> feeds;  // reduces this one reads
    for (const UOp* x : toposort(u->src(0)))
      if (x->op == Op::Reduce) feeds.insert(x);
    size_t chosen = groups.size();
    for (size_t gi = 0; gi < groups.size(); gi++) {
      Group& gr = groups[gi];
      if (gr.ranges != rs || gr.outer != outer) continue;
      bool independent = true;
      for (const UOp* m : gr.members) independent = independent && !feeds.count(m);
      if (independent) chosen = gi;
    }
    if (chosen == groups.size()) groups.push_back(Group{rs, outer, {}, {}, false});
    groups[chosen].members.push_back(u);
    groups[chosen].member_set.insert(u);
    group_of[u] = chosen;
  }

  std::unordered_set<const UOp*> claimed;             // ranges already looped over by a lowered group
  std::unordered_map<const UOp*, const UOp*> result;  // original Reduce -> its accumulator read
  Rebuilder* self = nullptr;

  auto lower_group = [&](Group& gr) {
    gr.lowered = true;
    std::vector<const UOp*> values;
    for (const UOp* m : gr.members) values.push_back(self->get(m->src(0)));
    // A range already looped over by another group is cloned: each loop needs its own Range.
    std::vector<const UOp*> ranges;
    std::unordered_map<const UOp*, const UOp*> clone;
    for (const UOp* r : gr.ranges) {
      const UOp* nr = r;
      if (!claimed.insert(r).second) {
        nr = g.make(Op::Range, r->dtype, {self->get(r->src(0))}, RangeArg{next_range++, r->as<RangeArg>().type});
        clone[r] = nr;
      }
      ranges.push_back(nr);
    }
    if (!clone.empty())
      for (auto& v : values) v = substitute_nodes(g, v, clone);
    std::vector<const UOp*> outer;
    for (const UOp* o : gr.outer) outer.push_back(self->get(o));

    std::vector<const UOp*> accs, updates;
    for (size_t i = 0; i < gr.members.size(); i++) {
      const UOp* m = gr.members[i];
      Op op = m->as<ReduceArg>().op;
      DType dt = m->dtype;
      DType acc_dt = is_half(dt) ? dtypes::float32.vec(dt.lanes) : dt;  // half sums accumulate in float32
      const UOp* v = values[i];
      if (acc_dt != dt) v = g.cast(v, acc_dt);
      const UOp* acc = g.make(Op::Buffer, acc_dt, {}, BufferArg{next_buf++, 1, Device{}, AddrSpace::Reg});
      const UOp* zero = g.cint(0);
      DType ptr = acc_dt.as_ptr(AddrSpace::Reg);
      std::vector<const UOp*> a0src{acc};
      a0src.insert(a0src.end(), outer.begin(), outer.end());
      const UOp* a0 = outer.empty() ? acc : g.make(Op::After, acc_dt, a0src);
      const UOp* init =
          g.make(Op::Store, dtypes::void_, {g.make(Op::Index, ptr, {a0, zero}), reduce_identity(g, op, acc_dt)});
      std::vector<const UOp*> a1src{acc, init};
      a1src.insert(a1src.end(), ranges.begin(), ranges.end());
      const UOp* slot = g.make(Op::Index, ptr, {g.make(Op::After, acc_dt, a1src), zero});
      const UOp* cur = g.make(Op::Load, acc_dt, {slot});
      // acc + a*b as one Mulacc: the renderer may fuse it (the reduction order is free anyway).
      const UOp* upd = op == Op::Add && v->op == Op::Mul && acc_dt.is_float()
                           ? g.alu(Op::Mulacc, v->src(0), v->src(1), cur)
                           : g.alu(op, cur, v);
      updates.push_back(g.make(Op::Store, dtypes::void_, {slot, upd}));
      accs.push_back(acc);
    }
    const UOp* body = updates.size() == 1 ? updates[0] : g.make(Op::Group, dtypes::void_, updates);
    for (size_t k = ranges.size(); k-- > 0;) body = g.make(Op::End, dtypes::void_, {body, ranges[k]});
    for (size_t i = 0; i < gr.members.size(); i++) {
      const UOp* acc = accs[i];
      const UOp* read = g.make(Op::Load, acc->dtype,
                               {g.make(Op::Index, acc->dtype.as_ptr(AddrSpace::Reg),
                                       {g.make(Op::After, acc->dtype, {acc, body}), g.cint(0)})});
      if (read->dtype != gr.members[i]->dtype) read = g.cast(read, gr.members[i]->dtype);
      result[gr.members[i]] = read;
    }
  };

  Rebuilder rb(g, [&](const UOp* u, std::span<const UOp* const> srcs) -> const UOp* {
    if (u->op != Op::Reduce) return g.replace_src(u, srcs);
    if (u->nsrc() < 2) return srcs[0];  // nothing to reduce over
    Group& gr = groups[group_of.at(u)];
    if (!gr.lowered) lower_group(gr);
    return result.at(u);
  });
  self = &rb;
  return rb.get(sink);
}

}  // namespace sn
