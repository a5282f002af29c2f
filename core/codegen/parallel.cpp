// Parallel axes become the indices of the launch, in two stages:
//   launch (after optimize)   THREAD   Special("core_id"), one launch per core
//                             GLOBAL   Special("gidx0..2"): the work-group's position in the grid
//   parallel (after reduce)   LOCAL, GROUP_REDUCE   Special("lidx0..2"): the work-item's position in its group
//                             WARP     Special("lidx0"): the lane of a tensor core's warp, always dimension 0
// The grid's indices come first, on the small optimized AST: every later stage then builds the kernel over
// them, where replacing them after expand rebuilt each node that depends on them (a conv kernel's 392
// of 628, 6% of its lowering). The work-group's axes wait for lower_reduces, which turns a
// GROUP_REDUCE into partials in local memory, one slot per work-item of the LOCAL and GROUP_REDUCE
// axes. (lower_reduces then sees the GLOBAL axes as values, not loops around a reduce: a group
// reduce inside no serial loop needs no second barrier.)
// Otherwise the innermost axis (largest id) takes dimension 0 of its kind. A grid has three dimensions: the
// outer GLOBAL axes beyond two share dimension 2, which counts their product (each is recovered by
// division and modulo); when a dimension is larger than the target allows, all GLOBAL axes share
// dimension 0. Work-groups must fit the target (at most three local-like axes, per-dimension and
// total limits): the optimizer checks this, and so do these passes for forced opts.
#include <algorithm>
#include <unordered_map>

#include "core/codegen/codegen.h"
#include "core/codegen/kernel_util.h"

namespace sn {

namespace {

AxisType type_of(const UOp* r) { return r->as<RangeArg>().type; }

const UOp* special(Graph& g, const char* kind, size_t dim, const UOp* bound) {
  return g.make(Op::Special, dtypes::index, {bound}, cat(kind, dim));
}

// The product of the ranges' bounds: a constant where they all are (the simplifier's affine path
// takes a Special only over a constant bound).
const UOp* product(Graph& g, const std::vector<const UOp*>& rs) {
  int64_t n = 1;
  bool constant = true;
  for (const UOp* r : rs) {
    int64_t b = const_bound(r);
    constant = constant && b >= 0 && !__builtin_mul_overflow(n, b, &n);
  }
  if (constant) return g.cint(n, rs[0]->src(0)->dtype);
  const UOp* p = nullptr;
  for (const UOp* r : rs) p = p ? g.alu(Op::Mul, p, r->src(0)) : r->src(0);
  return p;
}

bool by_id(const UOp* a, const UOp* b) { return a->as<RangeArg>().id < b->as<RangeArg>().id; }

// Maps the ranges (outer to inner) onto the grid dimensions.
void assign_global(Graph& g, const std::vector<const UOp*>& rs, const Target& t, ParallelDims* out,
                   std::unordered_map<const UOp*, const UOp*>* map) {
  // dims[d]: the ranges sharing dimension d, outer to inner
  std::vector<std::vector<const UOp*>> dims;
  auto fits = [&](const std::vector<std::vector<const UOp*>>& ds) {
    for (size_t d = 0; d < ds.size(); d++) {
      int64_t n = 1;
      for (const UOp* r : ds[d]) {
        int64_t b = const_bound(r);
        if (b < 0) continue;  // symbolic: checked at launch
        if (b > 0 && n > t.max_global_size[d] / b) return false;
        n *= b;
      }
      if (n > t.max_global_size[d]) return false;
    }
    return true;
  };
  size_t n = rs.size();
  if (n <= 3) {
    for (size_t i = 0; i < n; i++) dims.push_back({rs[n - 1 - i]});
  } else {
    dims.push_back({rs[n - 1]});
    dims.push_back({rs[n - 2]});
    dims.push_back(std::vector<const UOp*>(rs.begin(), rs.end() - 2));
  }
  if (!fits(dims)) {
    dims.assign(1, rs);
    if (!fits(dims))
      fail(Code::Unsupported, "parallel axes: the grid of ", rs.size(), " GLOBAL axes does not fit the ", t.renderer,
           " target's limits (", t.max_global_size[0], ", ", t.max_global_size[1], ", ", t.max_global_size[2], ")");
  }
  for (size_t d = 0; d < dims.size(); d++) {
    const UOp* s = special(g, "gidx", d, product(g, dims[d]));
    out->global[d] = s->src(0);
    // outer = s / (product of the inner ones), then modulo its own bound
    const UOp* inner = nullptr;
    for (size_t i = dims[d].size(); i-- > 0;) {
      const UOp* r = dims[d][i];
      const UOp* v = inner ? g.alu(Op::Idiv, s, inner) : s;
      if (i > 0) v = g.alu(Op::Mod, v, r->src(0));
      (*map)[r] = v;
      inner = inner ? g.alu(Op::Mul, inner, r->src(0)) : r->src(0);
    }
  }
}

}  // namespace

const UOp* index_launch_axes(Graph& g, const UOp* sink, const Target& target, ParallelDims* out) {
  *out = ParallelDims{};
  std::vector<const UOp*> globals, threads;
  bool group_axes = false;
  for (const UOp* r : ranges_of(sink)) {  // by id: outer to inner
    switch (type_of(r)) {
      case AxisType::Global:
        globals.push_back(r);
        break;
      case AxisType::Thread:
        threads.push_back(r);
        break;
      case AxisType::Local:
      case AxisType::GroupReduce:
      case AxisType::Warp:
        group_axes = true;
        break;
      default:
        break;
    }
  }
  std::sort(globals.begin(), globals.end(), by_id);
  // (index_group_axes leaves targets without work-groups alone: their refusal is here)
  if ((!globals.empty() || group_axes) && !target.has_local)
    fail(Code::Unsupported, "parallel axes: GLOBAL/LOCAL axes need a target with work-groups; ", target.renderer,
         " has none");
  if (!threads.empty() && !target.has_threads)
    fail(Code::Unsupported, "parallel axes: THREAD axes need a target with threads; ", target.renderer, " has none");
  if (threads.size() > 1) fail(Code::Unsupported, "parallel axes: more than one THREAD axis");

  std::unordered_map<const UOp*, const UOp*> map;
  for (const UOp* r : threads) {
    out->threads = const_bound(r);
    if (out->threads < 1) fail(Code::Internal, "parallel axes: THREAD axis without a constant bound");
    map[r] = g.make(Op::Special, dtypes::index, {r->src(0)}, std::string("core_id"));
  }
  if (!globals.empty()) assign_global(g, globals, target, out, &map);
  return map.empty() ? sink : substitute_nodes(g, sink, map);
}

const UOp* index_group_axes(Graph& g, const UOp* sink, const Target& target, ParallelDims* out) {
  if (!target.has_local) return sink;  // (index_launch_axes refused work-group axes)
  std::vector<const UOp*> locals, warps;
  for (const UOp* r : ranges_of(sink)) {
    switch (type_of(r)) {
      case AxisType::Local:
      case AxisType::GroupReduce:
        locals.push_back(r);
        break;
      case AxisType::Warp:
        if (!warps.empty()) fail(Code::Unsupported, "parallel axes: more than one WARP axis");
        warps.push_back(r);
        break;
      default:
        break;
    }
  }
  std::sort(locals.begin(), locals.end(), by_id);
  // The lanes of a warp are the work-group's innermost dimension: consecutive work-items.
  locals.insert(locals.end(), warps.begin(), warps.end());
  if (locals.size() > 3)
    fail(Code::InvalidArg, "parallel axes: ", locals.size(), " LOCAL/GROUP_REDUCE axes (at most 3)");

  std::unordered_map<const UOp*, const UOp*> map;
  int64_t items = 1;
  for (size_t i = 0; i < locals.size(); i++) {
    const UOp* r = locals[locals.size() - 1 - i];
    int64_t n = const_bound(r);
    if (n < 1) fail(Code::InvalidArg, "parallel axes: a LOCAL axis needs a constant bound");
    if (n > target.max_local_size[i])
      fail(Code::InvalidArg, "parallel axes: local dimension ", i, " of ", n, " work-items exceeds the target's ",
           target.max_local_size[i]);
    out->local[i] = n;
    items *= n;
    map[r] = special(g, "lidx", i, r->src(0));
  }
  if (items > target.max_local_total)
    fail(Code::InvalidArg, "parallel axes: ", items, " work-items per group exceed the target's ",
         target.max_local_total);
  return map.empty() ? sink : substitute_nodes(g, sink, map);
}

}  // namespace sn
