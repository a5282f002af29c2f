// Reduce -> accumulator. Each Reduce(value, k...) becomes a one-element Reg buffer:
//   init:   Store(Index(After(acc, outer ranges...), 0), identity)     once per outer iteration
//   update: Store(Index(a, 0), op(Load(Index(a, 0)), value)), a = After(acc, init, k...)
//   close:  End(...End(update, k_inner)..., k_outer)
//   result: Load(Index(After(acc, close), 0))
// The After sources place each piece in the right loop for the linearizer: the init depends on
// the outer ranges only, the update on the reduce ranges, the result on the closed loop.
// Reduces with the same ranges and the same outer loops that do not feed each other share one
// loop (the copies of an upcast register tile): one End closes a Group of their updates.
// GROUP_REDUCE ranges are not looped over: each work-item of a group accumulates its share, then
// the partials meet in local memory (a Buffer(Local) slot per work-item, a Barrier) and every
// work-item reduces its group's partials; the kernel's stores are gated to the first work-item.
// Where the weights are known finite (LowerOptions::finite_params), products of zero padding drop
// out of the update, and a step whose every product reads padding (a convolution's filter row
// below the image) is skipped: its update is a store gated by the padding's condition.
#include <algorithm>
#include <iterator>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "core/codegen/codegen.h"
#include "core/codegen/kernel_util.h"
#include "core/symbolic/symbolic.h"

namespace sn {

namespace {

// Whether v is a product or a tree of Adds over products (an unrolled reduce's copies, summed by
// expand); `terms` gets the products in order. The accumulator then takes them one by one as
// Mulaccs (acc + a0*b0 + a1*b1 ...), the reduction order being free: a tree summed first and
// added once costs a multiply and an add more per step, and its FMAs wait on each other.
bool sum_of_products(const UOp* v, std::vector<const UOp*>* terms) {
  if (v->op == Op::Mul) {
    terms->push_back(v);
    return true;
  }
  return v->op == Op::Add && sum_of_products(v->src(0), terms) && sum_of_products(v->src(1), terms);
}

// Whether v is a Wmma whose C is zero, or a tree of Adds over such (an unrolled reduce's copies,
// summed by expand); `terms` gets them in order. Each then takes the accumulator as its C, so the
// tensor core does the adding: acc + wmma(a, b, 0) = wmma(a, b, acc).
bool sum_of_wmmas(const UOp* v, std::vector<const UOp*>* terms) {
  if (v->op == Op::Wmma) {
    const UOp* c = v->src(2);
    bool zero = c->op == Op::Vectorize;
    for (const UOp* x : c->src()) zero = zero && x->op == Op::Const && x->const_float() == 0.0;
    if (zero) terms->push_back(v);
    return zero;
  }
  return v->op == Op::Add && sum_of_wmmas(v->src(0), terms) && sum_of_wmmas(v->src(1), terms);
}

// Whether every lane of v is a zero constant (+0 or -0).
bool is_zero_const(const UOp* v) {
  if (v->op == Op::Const) return v->dtype.is_float() && v->const_float() == 0.0;
  if (v->op != Op::Vectorize) return false;
  for (const UOp* x : v->src())
    if (!is_zero_const(x)) return false;
  return true;
}

// Whether v is a load of a `finite` slot (or lanes of such loads: 16 lanes as two loads of 8 on
// AVX2), so never inf or NaN.
bool finite_load(const UOp* v, std::span<const int64_t> finite) {
  if (v->op == Op::Gep) return finite_load(v->src(0), finite);
  if (v->op == Op::Vectorize) {
    for (const UOp* x : v->src())
      if (!finite_load(x, finite)) return false;
    return true;
  }
  return v->nsrc() == 1 && loads_finite_param(v, finite);  // (a gated load's alt is another value)
}

// A product that adds nothing to a sum: zero times a finite value is +-0, and the accumulator
// (from -0) plus +-0 is itself except that -0 + +0 is +0: only an all-zero sum can change, in sign.
bool adds_nothing(const UOp* product, std::span<const int64_t> finite) {
  const UOp* a = product->src(0);
  const UOp* b = product->src(1);
  return (is_zero_const(a) && finite_load(b, finite)) || (is_zero_const(b) && finite_load(a, finite));
}

// The operands of a scalar condition's And tree (c itself when it is no And), by id, once each.
std::vector<const UOp*> conjuncts(const UOp* c) {
  std::vector<const UOp*> out;
  flatten(c, Op::And, out);
  std::sort(out.begin(), out.end(), [](const UOp* a, const UOp* b) { return a->id < b->id; });
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// The conditions in both lists (each by id, as conjuncts gives them).
std::vector<const UOp*> intersect_conjuncts(std::span<const UOp* const> a, std::span<const UOp* const> b) {
  std::vector<const UOp*> out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out),
                        [](const UOp* x, const UOp* y) { return x->id < y->id; });
  return out;
}

// The scalar conditions (by id) where any is false every lane of `gate` is: a scalar gate's
// conjuncts; of a conjunction of lanes, those of either side; of lanes built one by one, those of
// every lane.
std::vector<const UOp*> all_lanes_conditions(const UOp* gate) {
  if (gate->dtype.lanes == 1) return conjuncts(gate);
  std::vector<const UOp*> out;
  if (gate->op == Op::And) {
    std::vector<const UOp*> a = all_lanes_conditions(gate->src(0)), b = all_lanes_conditions(gate->src(1));
    std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out),
                   [](const UOp* x, const UOp* y) { return x->id < y->id; });
  } else if (gate->op == Op::Vectorize) {
    out = all_lanes_conditions(gate->src(0));
    for (size_t i = 1; i < gate->nsrc() && !out.empty(); i++)
      if (gate->src(i) != gate->src(i - 1)) out = intersect_conjuncts(out, all_lanes_conditions(gate->src(i)));
  }
  return out;
}

// The conditions (an And's operands, by id) under which v, a factor of a product, may be nonzero:
// v reads zero padding, a load gated with a zero alternative (or lanes of such loads), and is
// zero where any of them is false. Empty for any other value. (`gates` gets the loads' scalar
// gates.)
std::vector<const UOp*> padding_conditions(const UOp* v, std::vector<const UOp*>* gates) {
  if (v->op == Op::Gep) return padding_conditions(v->src(0), gates);
  if (v->op == Op::Vectorize) {
    std::vector<const UOp*> common;
    for (size_t i = 0; i < v->nsrc(); i++) {
      if (i > 0 && v->src(i) == v->src(i - 1)) continue;  // a broadcast: one load in every lane
      std::vector<const UOp*> c = padding_conditions(v->src(i), gates);
      if (i > 0) c = intersect_conjuncts(common, c);
      if (c.empty()) return {};
      common = std::move(c);
    }
    return common;
  }
  if (v->op != Op::Load || v->nsrc() != 3 || !is_zero_const(v->src(1))) return {};
  if (v->src(2)->dtype.lanes == 1) gates->push_back(v->src(2));
  return all_lanes_conditions(v->src(2));
}

// A condition where it is false every product of a sum adds nothing, or nullptr: each multiplies a
// finite value by zero padding whose gate has the condition among its conjuncts (the filter rows of
// a convolution that fall below the image, its loop's step over them). The accumulators' updates
// are then skipped there (gated stores, whose work the linearizer moves into the If): a branch
// instead of a step of multiply-adds of zeros.
// Only upper bounds (x < c) are taken, the padding at the end of the loops: a step skipped at their
// start does not read its weights where they are first read, and the next row reads them instead,
// a third of each filter's lines out of sequence from memory. ResNet-18's 512x7x7 convolution with
// its weights out of the caches: 0.55 ms keeping every padded row, 0.77 skipping those above and
// below the image, 0.53 skipping those below (with the weights in the caches 0.40, 0.37, 0.39).
const UOp* padded_step_gate(Graph& g, std::span<const UOp* const> products, std::span<const int64_t> finite) {
  if (finite.empty() || products.empty()) return nullptr;
  std::vector<const UOp*> common, gates;
  for (size_t i = 0; i < products.size(); i++) {
    const UOp* a = products[i]->src(0);
    const UOp* b = products[i]->src(1);
    std::vector<const UOp*> c;
    if (finite_load(b, finite)) c = padding_conditions(a, &gates);
    if (c.empty() && finite_load(a, finite)) c = padding_conditions(b, &gates);
    if (i > 0) c = intersect_conjuncts(common, c);
    if (c.empty()) return nullptr;
    common = std::move(c);
  }
  std::erase_if(common, [](const UOp* c) {
    return c->op != Op::CmpLt || c->src(0)->op == Op::Const || c->src(1)->op != Op::Const;
  });
  if (common.empty()) return nullptr;
  // A load's own gate where it is the whole condition (the same node: a renderer inside If(gate)
  // knows that load's gate holds).
  for (const UOp* x : gates)
    if (conjuncts(x) == common) return x;
  const UOp* gate = common[0];
  for (size_t i = 1; i < common.size(); i++) gate = g.alu(Op::And, gate, common[i]);
  return gate;
}

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

const UOp* lower_reduces(Graph& g, const UOp* sink, std::span<const int64_t> finite_params) {
  std::vector<const UOp*> topo = toposort(sink);
  OpenRanges open(topo);
  uint64_t next_buf = 1;
  int64_t next_range = 0;
  for (const UOp* u : topo) {
    if (u->op == Op::Buffer) next_buf = std::max(next_buf, u->as<BufferArg>().id + 1);
    if (u->op == Op::Range) next_range = std::max(next_range, u->as<RangeArg>().id + 1);
  }

  // Which nodes read a Reduce (most reduced values read only loads: their feeds need no walk).
  NodeMap<bool> reads_reduce;
  for (const UOp* u : topo) {
    bool r = false;
    for (const UOp* x : u->src()) r = r || x->op == Op::Reduce || reads_reduce.get(x);
    if (r) reads_reduce.set(u, true);
  }

  // Group the reduces (in topological order, so a reduce comes after those it reads).
  std::vector<Group> groups;
  std::unordered_map<const UOp*, size_t> group_of;
  for (const UOp* u : topo) {
    if (u->op != Op::Reduce || u->nsrc() < 2) continue;
    std::vector<const UOp*> rs(u->src().begin() + 1, u->src().end());
    std::sort(rs.begin(), rs.end(), [](const UOp* a, const UOp* b) { return a->id < b->id; });
    rs.erase(std::unique(rs.begin(), rs.end()), rs.end());
    std::span<const UOp* const> open_here = open.of(u);
    std::vector<const UOp*> outer(open_here.begin(), open_here.end());
    std::unordered_set<const UOp*> feeds;  // reduces this one reads
    if (u->src(0)->op == Op::Reduce || reads_reduce.get(u->src(0)))
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
  std::vector<const UOp*> group_axes;                 // GROUP_REDUCE ranges of the kernel
  Rebuilder* self = nullptr;

  // One accumulator per value, all updated in one loop nest over `ranges` (serial REDUCE ranges,
  // outer to inner) inside the loops `outer`; returns the read of each after the loops.
  // (keep_acc: the reads stay in the accumulator's dtype, float32 for halves, instead of the values'.)
  auto accumulate = [&](std::vector<const UOp*> values, const std::vector<const UOp*>& ranges,
                        const std::vector<const UOp*>& outer, const std::vector<Op>& ops, bool keep_acc) {
    std::vector<const UOp*> accs, updates, reads;
    for (size_t i = 0; i < values.size(); i++) {
      Op op = ops[i];
      DType dt = values[i]->dtype;
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
      const UOp* upd = nullptr;
      const UOp* skip = nullptr;  // where false, the update adds nothing
      std::vector<const UOp*> terms;
      if (op == Op::Add && acc_dt.is_float() && sum_of_products(v, &terms)) {
        upd = cur;
        std::erase_if(terms, [&](const UOp* t) { return adds_nothing(t, finite_params); });
        for (const UOp* t : terms) upd = g.alu(Op::Mulacc, t->src(0), t->src(1), upd);
        skip = padded_step_gate(g, terms, finite_params);
      } else if (std::vector<const UOp*> wmmas; op == Op::Add && sum_of_wmmas(v, &wmmas)) {
        upd = cur;
        for (const UOp* t : wmmas) upd = g.make(Op::Wmma, acc_dt, {t->src(0), t->src(1), upd}, t->arg, t->tag);
      } else {
        upd = g.alu(op, cur, v);
      }
      updates.push_back(skip ? g.make(Op::Store, dtypes::void_, {slot, upd, skip})
                             : g.make(Op::Store, dtypes::void_, {slot, upd}));
      accs.push_back(acc);
    }
    const UOp* body = updates.size() == 1 ? updates[0] : g.make(Op::Group, dtypes::void_, updates);
    for (size_t k = ranges.size(); k-- > 0;) body = g.make(Op::End, dtypes::void_, {body, ranges[k]});
    for (size_t i = 0; i < values.size(); i++) {
      const UOp* acc = accs[i];
      const UOp* read = g.make(Op::Load, acc->dtype,
                               {g.make(Op::Index, acc->dtype.as_ptr(AddrSpace::Reg),
                                       {g.make(Op::After, acc->dtype, {acc, body}), g.cint(0)})});
      if (read->dtype != values[i]->dtype && !keep_acc) read = g.cast(read, values[i]->dtype);
      reads.push_back(read);
    }
    return reads;
  };

  // The second stage of a GROUP_REDUCE: every work-item stores its partial in local memory at its
  // own slot (over all LOCAL and GROUP_REDUCE axes of the kernel), a barrier, then every
  // work-item reduces the partials of its group along the `group` axes.
  std::vector<const UOp*> local_axes;
  for (const UOp* r : ranges_in(topo))
    if (r->as<RangeArg>().type == AxisType::Local || r->as<RangeArg>().type == AxisType::GroupReduce)
      local_axes.push_back(r);
  auto combine_group = [&](std::vector<const UOp*> partials, const std::vector<const UOp*>& group,
                           const std::vector<const UOp*>& outer, const std::vector<Op>& ops) {
    std::vector<const UOp*> stores, lbufs;
    const UOp* slot = nullptr;
    int64_t size = 1;
    for (const UOp* r : local_axes) {
      slot = slot ? g.alu(Op::Add, g.alu(Op::Mul, slot, r->src(0)), r) : r;
      size *= const_bound(r);
    }
    // A vector partial (lanes of an UNROLL) takes `lanes` consecutive scalars per slot.
    auto at = [&](const UOp* lb, DType dt, const UOp* idx) {
      if (dt.lanes > 1) idx = g.alu(Op::Mul, idx, g.cint(dt.lanes));
      return g.make(Op::Index, dt.as_ptr(AddrSpace::Local), {lb, idx});
    };
    for (const UOp* p : partials) {
      const UOp* lb = g.make(Op::Buffer, p->dtype.base(), {},
                             BufferArg{next_buf++, size * p->dtype.lanes, Device{}, AddrSpace::Local});
      stores.push_back(g.make(Op::Store, dtypes::void_, {at(lb, p->dtype, slot), p}));
      lbufs.push_back(lb);
    }
    const UOp* barrier = g.make(Op::Barrier, dtypes::void_, stores);
    std::unordered_map<const UOp*, const UOp*> to_loop;
    std::vector<const UOp*> loops;
    for (const UOp* r : group) {
      const UOp* l = g.make(Op::Range, r->dtype, {r->src(0)}, RangeArg{next_range++, AxisType::Reduce});
      to_loop[r] = l;
      loops.push_back(l);
    }
    const UOp* other = substitute_nodes(g, slot, to_loop);
    std::vector<const UOp*> values;
    for (size_t i = 0; i < lbufs.size(); i++)
      values.push_back(
          g.make(Op::Load, partials[i]->dtype,
                 {at(g.make(Op::After, lbufs[i]->dtype, {lbufs[i], barrier}), partials[i]->dtype, other)}));
    std::vector<const UOp*> reads = accumulate(values, loops, outer, ops, true);
    if (!outer.empty()) {
      // Inside a serial loop the next iteration writes the same slots: everyone reads first.
      const UOp* done = g.make(Op::Barrier, dtypes::void_, reads);
      for (auto& r : reads) r = g.make(Op::After, r->dtype, {r, done});
    }
    return reads;
  };

  auto lower_group = [&](Group& gr) {
    gr.lowered = true;
    std::vector<const UOp*> values;
    std::vector<Op> ops;
    for (const UOp* m : gr.members) {
      values.push_back(self->get(m->src(0)));
      ops.push_back(m->as<ReduceArg>().op);
    }
    // A range already looped over by another group is cloned: each loop needs its own Range.
    // GROUP_REDUCE ranges are not loops: they are the work-items of a group.
    std::vector<const UOp*> ranges, group;
    std::unordered_map<const UOp*, const UOp*> clone;
    for (const UOp* r : gr.ranges) {
      if (r->as<RangeArg>().type == AxisType::GroupReduce) {
        group.push_back(r);
        if (std::find(group_axes.begin(), group_axes.end(), r) == group_axes.end()) group_axes.push_back(r);
        continue;
      }
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
    // Group partials stay in the accumulator's dtype (float32 for halves) until the end.
    std::vector<const UOp*> reads = accumulate(values, ranges, outer, ops, !group.empty());
    if (!group.empty()) reads = combine_group(reads, group, outer, ops);
    for (size_t i = 0; i < gr.members.size(); i++) {
      const UOp* m = gr.members[i];
      result[m] = reads[i]->dtype == m->dtype ? reads[i] : g.cast(reads[i], m->dtype);
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
  const UOp* out = rb.run(topo);
  if (group_axes.empty()) return out;
  // After a group reduce every work-item of the group holds the result: the first one stores it
  // (a store that moves along a GROUP_REDUCE axis is the kernel's own, per work-item).
  std::vector<const UOp*> stores;
  for (const UOp* st : out->src()) {
    const UOp* gate = nullptr;
    std::vector<const UOp*> addr = st->op == Op::Store ? toposort(st->src(0)) : std::vector<const UOp*>{};
    for (const UOp* r : group_axes)
      if (st->op == Op::Store && std::find(addr.begin(), addr.end(), r) == addr.end()) {
        const UOp* first = g.alu(Op::CmpLt, r, g.cint(1));
        gate = gate ? g.alu(Op::And, gate, first) : first;
      }
    if (gate && st->nsrc() == 3) gate = g.alu(Op::And, st->src(2), gate);
    stores.push_back(gate ? g.make(Op::Store, st->dtype, {st->src(0), st->src(1), gate}, st->arg, st->tag) : st);
  }
  return g.make(Op::Sink, out->dtype, stores, out->arg, out->tag);
}

}  // namespace sn
