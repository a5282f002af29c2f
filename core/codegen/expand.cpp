// Expand: UPCAST and UNROLL ranges become unrolled copies, THREAD ranges become the core index.
// The copies are plain substitutions of the range by each constant; hash-consing shares every
// node that does not depend on the range (a matmul's A load is shared by the copies that walk
// B's columns), so LLVM's SLP vectorizer sees a register tile of independent scalar chains.
#include <unordered_map>

#include "core/codegen/codegen.h"
#include "core/codegen/kernel_util.h"

namespace sn {

namespace {

bool is_type(const UOp* r, AxisType t) { return r->op == Op::Range && r->as<RangeArg>().type == t; }

// Every assignment of constants to the ranges (first range slowest), as substitution maps.
std::vector<std::unordered_map<const UOp*, const UOp*>> combos(Graph& g, const std::vector<const UOp*>& ranges) {
  std::vector<std::unordered_map<const UOp*, const UOp*>> out(1);
  for (const UOp* r : ranges) {
    int64_t n = const_bound(r);
    if (n < 1) fail(Code::InvalidArg, "expand: ", axis_type_name(r->as<RangeArg>().type), " range ", r->as<RangeArg>().id,
                    " needs a constant positive bound");
    if (n > 256) fail(Code::InvalidArg, "expand: ", axis_type_name(r->as<RangeArg>().type), " range of ", n, " is too large to unroll");
    std::vector<std::unordered_map<const UOp*, const UOp*>> next;
    for (auto& m : out)
      for (int64_t c = 0; c < n; c++) {
        auto m2 = m;
        m2[r] = g.cint(c, r->dtype);
        next.push_back(std::move(m2));
      }
    out = std::move(next);
  }
  return out;
}

const UOp* fold(Graph& g, Op op, const std::vector<const UOp*>& vals) {
  // Pairwise tree: shorter dependency chains than a left fold.
  std::vector<const UOp*> cur = vals;
  while (cur.size() > 1) {
    std::vector<const UOp*> next;
    for (size_t i = 0; i + 1 < cur.size(); i += 2) next.push_back(g.alu(op, cur[i], cur[i + 1]));
    if (cur.size() % 2) next.push_back(cur.back());
    cur.swap(next);
  }
  return cur[0];
}

}  // namespace

const UOp* expand_kernel(Graph& g, const UOp* sink) {
  // 1. UNROLL: a Reduce over unroll ranges reduces the copies of its value first.
  Rebuilder unroll(g, [&](const UOp* u, std::span<const UOp* const> srcs) -> const UOp* {
    if (u->op != Op::Reduce || u->nsrc() < 2) return g.replace_src(u, srcs);
    std::vector<const UOp*> unrolled, kept{srcs[0]};
    for (size_t i = 1; i < srcs.size(); i++) (is_type(srcs[i], AxisType::Unroll) ? unrolled : kept).push_back(srcs[i]);
    if (unrolled.empty()) return g.replace_src(u, srcs);
    std::vector<const UOp*> vals;
    for (auto& m : combos(g, unrolled)) vals.push_back(substitute_nodes(g, srcs[0], m));
    kept[0] = fold(g, u->as<ReduceArg>().op, vals);
    if (kept.size() == 1) return kept[0];
    return g.make(Op::Reduce, u->dtype, kept, u->arg, u->tag);
  });
  sink = unroll.get(sink);

  // 2. UPCAST: every store is copied once per value of the upcast ranges it uses.
  std::vector<const UOp*> stores;
  for (const UOp* s : sink->src()) {
    std::vector<const UOp*> up;
    for (const UOp* r : ranges_of(s))
      if (is_type(r, AxisType::Upcast)) up.push_back(r);
    if (up.empty()) {
      stores.push_back(s);
      continue;
    }
    for (auto& m : combos(g, up)) stores.push_back(substitute_nodes(g, s, m));
  }
  sink = g.make(Op::Sink, dtypes::void_, stores, sink->arg, sink->tag);

  // 3. THREAD: the range is the core index of the launch.
  std::unordered_map<const UOp*, const UOp*> threads;
  for (const UOp* r : ranges_of(sink)) {
    AxisType t = r->as<RangeArg>().type;
    if (t == AxisType::Thread) threads[r] = g.make(Op::Special, dtypes::index, {r->src(0)}, std::string("core_id"));
    if (t == AxisType::Upcast || t == AxisType::Unroll)
      fail(Code::InvalidArg, "expand: ", axis_type_name(t), " range ", r->as<RangeArg>().id,
           " is not where it can be expanded (upcast: a loop axis of stores, unroll: a reduce axis)");
    if (t == AxisType::Global || t == AxisType::Local || t == AxisType::Warp || t == AxisType::GroupReduce)
      fail(Code::Unsupported, "expand: ", axis_type_name(t), " ranges are GPU axes; the CPU backend has none");
  }
  if (threads.size() > 1) fail(Code::Unsupported, "expand: more than one THREAD range");
  if (!threads.empty()) sink = substitute_nodes(g, sink, threads);
  return sink;
}

}  // namespace sn
