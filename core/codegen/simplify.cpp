// Index simplification: the symbolic engine folds the index math the scheduler and the expand
// stage produce ((r*16 + 3) // 16 -> r, divisions by a gate's tightened range, ...) before isel
// turns floor division into the C kind, so fewer sign corrections reach the renderer.
#include <map>

#include "core/codegen/codegen.h"
#include "core/codegen/kernel_util.h"
#include "core/ir/node_map.h"
#include "core/symbolic/symbolic.h"

namespace sn {

const UOp* simplify_indices(Graph& g, const UOp* sink, bool under_gates) {
  // All index expressions, gates and loop bounds, simplified together (shared subterms once).
  std::vector<const UOp*> exprs;
  NodeMap<uint8_t> wanted;
  auto want = [&](const UOp* e) {
    // vector lanes (gates of masked loads) are left as they are
    if (e->op == Op::Const || e->dtype.lanes != 1 || wanted.get(e)) return;
    wanted.set(e, 1);
    exprs.push_back(e);
  };
  const std::vector<const UOp*> order = toposort(sink);
  for (const UOp* u : order) {
    if (u->op == Op::Index && u->nsrc() == 2) {
      want(u->src(1));
      // a gather's or scatter's k addresses: their scalar base (the constant offsets stay)
      if (const UOp* b = lane_index_base(u->src(1))) want(b);
    }
    if ((u->op == Op::Load || u->op == Op::Store) && u->nsrc() == 3) want(u->src(2));
    if (u->op == Op::Range || u->op == Op::Special) want(u->src(0));
  }
  if (exprs.empty()) return sink;
  const UOp* simplified = simplify(g, g.make(Op::Sink, dtypes::void_, exprs));
  if (simplified->op != Op::Sink || simplified->nsrc() != exprs.size())
    fail(Code::Internal, "simplify_indices: the simplifier changed the shape of the expression list");
  NodeMap<const UOp*> map;  // an expression -> its simplified form, where that differs
  NodeMap<uint8_t> final_forms;
  for (const UOp* f : simplified->src()) final_forms.set(f, 1);
  for (size_t i = 0; i < exprs.size(); i++)
    if (simplified->src(i) != exprs[i]) map.set(exprs[i], simplified->src(i));

  auto final_form = [&](const UOp* e) {
    const UOp* f = map.get(e);
    return f ? f : e;
  };
  // The address of a gather or scatter rebuilt over its simplified base (its offsets' Vectorize of
  // constants as it is).
  auto lanes_over_final_base = [&](const UOp* idx) {
    const UOp* b = lane_index_base(idx);
    const UOp* f = b ? map.get(b) : nullptr;
    return f ? lane_index(g, f, idx->src(1)) : idx;
  };

  // Rebuild with the simplified expressions; with under_gates, a gated load's address also uses
  // what its gate proves about the index (a pad's i - 2 is non-negative where the load happens).
  std::map<std::pair<const UOp*, const UOp*>, const UOp*> given_valid;
  // The gated loads' (gate, address) pairs as the rebuild below will see them, simplified under each
  // gate together: one pass of simplify_given_valid per gate, not per pair (ResNet-18's kernels: 41
  // gates, 162 pairs). A pair the rebuild meets that was not foreseen is simplified on its own.
  if (under_gates) {
    std::vector<const UOp*> gates;
    std::map<const UOp*, std::vector<const UOp*>> under;  // gate -> its addresses, each once
    for (const UOp* u : order) {
      if (u->op != Op::Load || u->nsrc() != 3 || u->src(0)->op != Op::Index || u->src(0)->nsrc() != 2) continue;
      const UOp* gate = final_form(u->src(2));
      if (gate->op == Op::Const || gate->dtype.lanes != 1) continue;
      const UOp* idx = lanes_over_final_base(final_form(u->src(0)->src(1)));
      const UOp*& known = given_valid[{gate, idx}];
      if (known) continue;
      known = idx;  // a placeholder until the batch below
      auto [it, fresh] = under.try_emplace(gate);
      if (fresh) gates.push_back(gate);
      it->second.push_back(idx);
    }
    for (const UOp* gate : gates) {
      const std::vector<const UOp*>& idxs = under[gate];
      bool final = final_forms.get(gate) != 0;
      for (const UOp* idx : idxs) final = final && final_forms.get(idx) != 0;
      const UOp* out = simplify_given_valid(g, gate, g.make(Op::Sink, dtypes::void_, idxs), final);
      if (out->op != Op::Sink || out->nsrc() != idxs.size())
        fail(Code::Internal, "simplify_indices: simplifying under a gate changed the shape of the address list");
      for (size_t i = 0; i < idxs.size(); i++) given_valid[{gate, idxs[i]}] = out->src(i);
    }
  }
  std::vector<const UOp*> s;  // fn never re-enters rb: one buffer serves every node
  Rebuilder rb(g, [&](const UOp* u, std::span<const UOp* const> srcs) -> const UOp* {
    s.assign(srcs.begin(), srcs.end());
    auto remap = [&](size_t i) {
      if (const UOp* f = map.get(u->src(i))) s[i] = f;
    };
    if (u->op == Op::Index && u->nsrc() == 2) {
      remap(1);
      s[1] = lanes_over_final_base(s[1]);
    }
    if ((u->op == Op::Load || u->op == Op::Store) && u->nsrc() == 3) remap(2);
    if (u->op == Op::Range || u->op == Op::Special) remap(0);
    if (under_gates && u->op == Op::Load && u->nsrc() == 3 && s[0]->op == Op::Index && s[2]->op != Op::Const &&
        s[2]->dtype.lanes == 1) {
      // Loads of one kernel share few (gate, index) pairs: the unrolled copies of a padded
      // window read the same address under the same gate (24 loads, 10 pairs in a 3x3 conv).
      const UOp*& idx = given_valid[{s[2], s[0]->src(1)}];
      if (!idx) {
        // simplify's results need no second pass (it rewrites to a fixed point)
        bool final = final_forms.get(s[2]) && final_forms.get(s[0]->src(1));
        idx = simplify_given_valid(g, s[2], s[0]->src(1), final);
      }
      if (idx != s[0]->src(1)) s[0] = g.make(Op::Index, s[0]->dtype, {s[0]->src(0), idx}, s[0]->arg, s[0]->tag);
    }
    // A gate that is always true disappears; an always-false load is its alt value.
    if ((u->op == Op::Load || u->op == Op::Store) && u->nsrc() == 3 && s[2]->op == Op::Const) {
      bool open = s[2]->const_int() != 0;
      if (u->op == Op::Load) return open ? g.make(Op::Load, u->dtype, {s[0]}, u->arg, u->tag) : s[1];
      if (open) return g.make(Op::Store, u->dtype, {s[0], s[1]}, u->arg, u->tag);
    }
    return g.replace_src(u, s);  // no lookup where nothing changed
  });
  return rb.run(order);
}

}  // namespace sn
