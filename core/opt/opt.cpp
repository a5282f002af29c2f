#include "core/opt/opt.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "core/codegen/kernel_util.h"

namespace sn {

std::string opt_str(const Opt& o) {
  const char* n = o.op == OptOp::Thread ? "THREAD" : o.op == OptOp::Upcast ? "UPCAST" : "UNROLL";
  return cat(n, "(", o.axis, ",", o.amount, ")");
}

void classify_ranges(const UOp* sink, std::vector<const UOp*>* loops, std::vector<const UOp*>* reduces) {
  std::unordered_set<const UOp*> closed;
  std::vector<const UOp*> all;
  for (const UOp* u : toposort(sink)) {
    if (u->op == Op::Range) all.push_back(u);
    if (u->op == Op::Reduce)
      for (const UOp* r : closed_ranges(u)) closed.insert(r);
  }
  std::sort(all.begin(), all.end(), [](const UOp* a, const UOp* b) { return a->id < b->id; });
  for (const UOp* r : all) (closed.count(r) ? reduces : loops)->push_back(r);
}

namespace {

const UOp* make_range(Graph& g, const UOp* bound, int64_t id, AxisType type) {
  return g.make(Op::Range, dtypes::index, {bound}, RangeArg{id, type});
}

int64_t max_range_id(const UOp* sink) {
  int64_t m = -1;
  for (const UOp* r : ranges_of(sink)) m = std::max(m, r->as<RangeArg>().id);
  return m;
}

// Replaces Range `r` by `expr` everywhere; in Reduce range lists r becomes `replacement`.
const UOp* replace_range(Graph& g, const UOp* sink, const UOp* r, const UOp* expr,
                         const std::vector<const UOp*>& replacement) {
  Rebuilder rb(g, [&](const UOp* u, std::span<const UOp* const> srcs) -> const UOp* {
    if (u == r) return expr;
    if (u->op == Op::Reduce) {
      std::vector<const UOp*> s{srcs[0]};
      for (size_t i = 1; i < u->nsrc(); i++) {
        if (u->src(i) == r)
          s.insert(s.end(), replacement.begin(), replacement.end());
        else
          s.push_back(srcs[i]);
      }
      if (s.size() == 1) return s[0];
      return g.make(Op::Reduce, u->dtype, s, u->arg, u->tag);
    }
    return g.replace_src(u, srcs);
  });
  return rb.get(sink);
}

}  // namespace

const UOp* apply_opt(Graph& g, const UOp* sink, const Opt& opt) {
  const UOp* r = nullptr;
  for (const UOp* x : ranges_of(sink))
    if (x->as<RangeArg>().id == opt.axis) r = x;
  if (!r) fail(Code::InvalidArg, opt_str(opt), ": the kernel has no range with id ", opt.axis);
  int64_t n = const_bound(r);
  if (n <= 0) fail(Code::InvalidArg, opt_str(opt), ": range ", opt.axis, " has no constant positive bound");
  bool ceil_split = opt.op == OptOp::Thread && opt.amount >= 1 && n % opt.amount != 0 && n >= opt.amount;
  if (opt.amount < 1 || (n % opt.amount != 0 && !ceil_split))
    fail(Code::InvalidArg, opt_str(opt), ": ", opt.amount, " does not divide the bound ", n);
  AxisType type = r->as<RangeArg>().type;
  std::vector<const UOp*> loops, reduces;
  classify_ranges(sink, &loops, &reduces);
  bool is_reduce = std::find(reduces.begin(), reduces.end(), r) != reduces.end();
  if ((opt.op == OptOp::Unroll) != is_reduce)
    fail(Code::InvalidArg, opt_str(opt), ": ", opt.op == OptOp::Unroll ? "needs a reduce axis" : "needs a loop axis",
         ", range ", opt.axis, " is a ", is_reduce ? "reduce" : "loop", " axis");
  if (opt.amount == 1) return sink;
  int64_t part_id = max_range_id(sink) + 1;
  const UOp* part = nullptr;
  const UOp* expr = nullptr;
  const UOp* rest = nullptr;
  if (ceil_split) {
    // Thread t runs rest = min(c, n - t*c) iterations from t*c (c = ceil(n/amount)).
    int64_t c = (n + opt.amount - 1) / opt.amount;
    part = make_range(g, g.cint(opt.amount), part_id, AxisType::Thread);
    const UOp* left = g.alu(Op::Add, g.cint(n), g.alu(Op::Mul, part, g.cint(-c)));
    rest = make_range(g, g.alu(Op::Where, g.alu(Op::CmpLt, left, g.cint(c)), left, g.cint(c)), opt.axis, type);
    expr = g.alu(Op::Add, g.alu(Op::Mul, part, g.cint(c)), rest);
  } else {
    int64_t rest_n = n / opt.amount;
    if (rest_n > 1) rest = make_range(g, g.cint(rest_n), opt.axis, type);
    if (opt.op == OptOp::Thread) {
      part = make_range(g, g.cint(opt.amount), part_id, AxisType::Thread);
      expr = g.alu(Op::Mul, part, g.cint(rest_n));
      if (rest) expr = g.alu(Op::Add, expr, rest);
    } else {
      part = make_range(g, g.cint(opt.amount), part_id, opt.op == OptOp::Upcast ? AxisType::Upcast : AxisType::Unroll);
      expr = part;
      if (rest) expr = g.alu(Op::Add, g.alu(Op::Mul, rest, g.cint(opt.amount)), part);
    }
  }
  std::vector<const UOp*> repl;
  if (rest) repl.push_back(rest);
  repl.push_back(part);
  return replace_range(g, sink, r, expr, repl);
}

const UOp* renumber_ranges(Graph& g, const UOp* sink, const std::vector<const UOp*>& loops,
                           const std::vector<const UOp*>& reduces) {
  std::vector<const UOp*> order;
  std::unordered_set<const UOp*> seen;
  for (const UOp* r : loops)
    if (seen.insert(r).second) order.push_back(r);
  for (const UOp* r : reduces)
    if (seen.insert(r).second) order.push_back(r);
  for (const UOp* r : ranges_of(sink))
    if (seen.insert(r).second) order.push_back(r);
  std::unordered_map<const UOp*, int64_t> pos;
  for (size_t i = 0; i < order.size(); i++) pos[order[i]] = int64_t(i);
  // Two steps so that no intermediate id collides with one still in use.
  int64_t base = std::max<int64_t>(max_range_id(sink), int64_t(order.size())) + 1;
  auto step = [&](const UOp* root, auto id_of) {
    Rebuilder rb(g, [&](const UOp* u, std::span<const UOp* const> srcs) -> const UOp* {
      if (u->op == Op::Range) return make_range(g, srcs[0], id_of(u), u->as<RangeArg>().type);
      return g.replace_src(u, srcs);
    });
    return rb.get(root);
  };
  std::unordered_map<int64_t, int64_t> by_old_id;
  for (const UOp* r : order) by_old_id[r->as<RangeArg>().id] = pos[r];
  const UOp* s1 = step(sink, [&](const UOp* u) { return base + by_old_id.at(u->as<RangeArg>().id); });
  return step(s1, [&](const UOp* u) { return u->as<RangeArg>().id - base; });
}

namespace {

// Representative launch values for variables in stride estimates.
std::unordered_map<const UOp*, int64_t> var_env(const UOp* sink) {
  std::unordered_map<const UOp*, int64_t> env;
  for (const UOp* u : toposort(sink))
    if (u->op == Op::DefineVar) {
      const auto& v = u->as<VarArg>();
      env[u] = std::max(v.min, std::min<int64_t>(v.max, 64));
    }
  return env;
}

// How far the index moves when r goes from 0 to 1 (others at 0). nullopt if not evaluable.
std::optional<int64_t> stride_of(const UOp* idx, const UOp* r, std::unordered_map<const UOp*, int64_t> env) {
  int64_t a = 0, b = 0;
  if (!eval_int(idx, env, &a)) return std::nullopt;
  env[r] = 1;
  if (!eval_int(idx, env, &b)) return std::nullopt;
  return b - a;
}

const UOp* address_index(const UOp* addr) {
  return addr->op == Op::Index && addr->nsrc() == 2 ? addr->src(1) : nullptr;
}

int64_t div_amount(int64_t n, std::initializer_list<int64_t> choices) {
  for (int64_t c : choices)
    if (c > 1 && n >= c && n % c == 0) return c;
  return 0;
}

}  // namespace

OptResult optimize_kernel(Graph& g, const UOp* sink, const CpuTarget& target, const LowerOptions& opts) {
  OptResult res;
  res.sink = sink;
  if (opts.opts) {  // forced opts, applied as given
    for (const Opt& o : *opts.opts) {
      res.sink = apply_opt(g, res.sink, o);
      res.applied.push_back(o);
      if (o.op == OptOp::Thread) res.threads *= o.amount;
    }
    return res;
  }
  if (!opts.optimize) return res;

  std::vector<const UOp*> loops, reduces;
  classify_ranges(sink, &loops, &reduces);
  auto env = var_env(sink);
  std::vector<const UOp*> stores;
  for (const UOp* s : sink->src())
    if (s->op == Op::Store) stores.push_back(s);

  // 1. Loop order: the axis with the smallest store stride innermost.
  constexpr int64_t kFar = std::numeric_limits<int64_t>::max();
  std::unordered_map<const UOp*, int64_t> loop_key;
  for (const UOp* r : loops) {
    int64_t best = kFar;
    for (const UOp* s : stores) {
      const UOp* idx = address_index(s->src(0));
      if (!idx) continue;
      if (auto st = stride_of(idx, r, env); st && *st != 0) best = std::min(best, *st < 0 ? -*st : *st);
    }
    loop_key[r] = best;
  }
  std::stable_sort(loops.begin(), loops.end(), [&](const UOp* a, const UOp* b) { return loop_key[a] > loop_key[b]; });

  // Reduce axes of each Reduce: the smallest load stride innermost.
  std::vector<const UOp*> topo = toposort(sink);
  std::vector<const UOp*> reduce_order;
  std::vector<const UOp*> reduce_loads;  // loads inside reduced values
  {
    std::unordered_set<const UOp*> in_reduce_loads;
    for (const UOp* u : topo) {
      if (u->op != Op::Reduce || u->nsrc() < 2) continue;
      std::vector<const UOp*> loads;
      for (const UOp* x : toposort(u->src(0)))
        if (x->op == Op::Load) {
          loads.push_back(x);
          if (in_reduce_loads.insert(x).second) reduce_loads.push_back(x);
        }
      std::vector<const UOp*> rs(u->src().begin() + 1, u->src().end());
      std::unordered_map<const UOp*, int64_t> key;
      for (const UOp* r : rs) {
        int64_t best = kFar;
        for (const UOp* l : loads) {
          const UOp* idx = address_index(l->src(0));
          if (!idx) continue;
          if (auto st = stride_of(idx, r, env); st && *st != 0) best = std::min(best, *st < 0 ? -*st : *st);
        }
        key[r] = best;
      }
      std::stable_sort(rs.begin(), rs.end(), [&](const UOp* a, const UOp* b) { return key[a] > key[b]; });
      for (const UOp* r : rs)
        if (std::find(reduce_order.begin(), reduce_order.end(), r) == reduce_order.end()) reduce_order.push_back(r);
    }
  }
  // Ids of the loops after renumbering: position in the order.
  std::vector<const UOp*> loops_in_order = loops;
  sink = renumber_ranges(g, sink, loops, reduce_order);
  auto range_by_id = [&](const UOp* s, int64_t id) -> const UOp* {
    for (const UOp* r : ranges_of(s))
      if (r->as<RangeArg>().id == id) return r;
    return nullptr;
  };
  auto apply = [&](Opt o) {
    sink = apply_opt(g, sink, o);
    res.applied.push_back(o);
  };

  // 2. Register tiles for reduces whose loads are reused across output axes (matmul, conv).
  //    The innermost output axis, when loads walk it contiguously, becomes vector lanes (two
  //    vector registers wide when it divides); then the output axis whose copies share the most
  //    load work (a vector load counts as a vector's worth) is unrolled, keeping the
  //    accumulators within 16 vector registers (half the AVX-512 file: the rest hold operands).
  bool inner_upcast = false;  // the innermost loop axis got an UPCAST
  if (!reduces.empty() && !loops.empty()) {
    topo = toposort(sink);
    OpenRanges open(topo);
    env = var_env(sink);
    // Loads inside the reduces that run inside loop axis `axis` (copies along the axis copy
    // those reduces; a reduce outside the axis, like softmax's row max, is not copied).
    std::vector<std::pair<const UOp*, std::vector<const UOp*>>> reduce_loads_of;
    for (const UOp* u : topo)
      if (u->op == Op::Reduce && u->nsrc() >= 2) {
        std::vector<const UOp*> ls;
        for (const UOp* x : toposort(u->src(0)))
          if (x->op == Op::Load) ls.push_back(x);
        reduce_loads_of.emplace_back(u, std::move(ls));
      }
    auto rloads_in = [&](const UOp* axis) {
      std::vector<const UOp*> out;
      std::unordered_set<const UOp*> seen;
      for (auto& [red, ls] : reduce_loads_of)
        if (open.contains(red, axis))
          for (const UOp* l : ls)
            if (seen.insert(l).second) out.push_back(l);
      return out;
    };
    int elem_bits = 32;
    for (const UOp* u : topo)
      if (u->op == Op::Reduce) elem_bits = std::max(8, u->dtype.bits());
    int64_t vw = std::max<int64_t>(4, target.vector_bits / elem_bits);  // lanes per vector register
    int64_t nloops = int64_t(loops_in_order.size());
    // 2a. vector lanes along the innermost axis
    const UOp* inner = nloops > 0 ? range_by_id(sink, nloops - 1) : nullptr;
    const UOp* vec_axis = nullptr;
    int64_t vregs = 1;  // vector registers per accumulator row
    if (inner) {
      bool contiguous = false;
      for (const UOp* l : rloads_in(inner)) {
        const UOp* idx = address_index(l->src(0));
        if (idx && open.contains(l, inner))
          if (auto st = stride_of(idx, inner, env); st && *st == 1) contiguous = true;
      }
      int64_t n = const_bound(inner);
      // Without reuse (a column sum: each output reads its own column) the lanes still turn the
      // reduce's strided walk into contiguous vector loads, one cache line for 16 outputs.
      int64_t amt = contiguous && n > 1 ? div_amount(n, {2 * vw, vw, vw / 2, 4}) : 0;
      if (amt) {
        apply({OptOp::Upcast, nloops - 1, amt});
        inner_upcast = true;
        vec_axis = inner;
        vregs = (amt + vw - 1) / vw;
      }
    }
    // 2b. one more output axis, unrolled into copies that share loads
    const UOp* best = nullptr;
    int64_t best_score = 0;
    for (int64_t pos = nloops - 1; pos >= 0; pos--) {
      const UOp* r = range_by_id(sink, pos);
      if (!r || (vec_axis && pos == nloops - 1) || const_bound(r) <= 1) continue;
      int64_t score = 0;
      for (const UOp* l : rloads_in(r))
        if (!open.contains(l, r)) score += vec_axis && open.contains(l, vec_axis) ? vw : 1;
      if (score > best_score) best = r, best_score = score;
    }
    if (best) {
      int64_t limit = std::max<int64_t>(1, 16 / vregs);
      std::vector<int64_t> choices;
      for (int64_t c : {8, 4, 2})
        if (c <= limit) choices.push_back(c);
      int64_t n = const_bound(best);
      int64_t amt = 0;
      for (int64_t c : choices)
        if (n >= c && n % c == 0) {
          amt = c;
          break;
        }
      if (amt) apply({OptOp::Upcast, best->as<RangeArg>().id, amt});
      inner_upcast = inner_upcast || (amt && best->as<RangeArg>().id == nloops - 1);
      // 2b'. Loop order of the tile: the loop of the unrolled axis goes innermost, inside the
      //      loop of the vector axis. Its copies share the loads along the vector axis (a
      //      matmul's B panel, K x lanes), which then stay in cache across its iterations while
      //      the small per-copy loads (A's rows) stream; the other order streams the whole of B
      //      for every tile row.
      int64_t best_id = best->as<RangeArg>().id;
      if (amt && vec_axis && best_id != nloops - 1) {
        std::vector<const UOp*> order;
        for (int64_t pos = 0; pos < nloops; pos++)
          if (const UOp* r = range_by_id(sink, pos); r && pos != best_id) order.push_back(r);
        if (const UOp* moved = range_by_id(sink, best_id)) {
          order.push_back(moved);
          std::vector<const UOp*> l2, red;
          classify_ranges(sink, &l2, &red);
          std::vector<const UOp*> red_order;
          for (const UOp* r : ranges_of(sink))
            if (std::find(red.begin(), red.end(), r) != red.end()) red_order.push_back(r);
          sink = renumber_ranges(g, sink, order, red_order);
        }
      }
    }
  }

  // 2c. Vector lanes for reduces that stream memory (row sums, softmax's max and sum): the
  //     innermost reduce axis of a Reduce whose loads all walk it contiguously is unrolled;
  //     expand turns that unroll into the lanes of a vector accumulator (two vector registers
  //     wide, so two independent add chains), folded across lanes once after the loop.
  //     Reduces inside a register tile (they depend on an UPCAST axis) keep scalar copies.
  {
    topo = toposort(sink);
    OpenRanges open(topo);
    env = var_env(sink);
    std::vector<Opt> lanes;
    for (const UOp* u : topo) {
      if (u->op != Op::Reduce || u->nsrc() < 2 || u->dtype.lanes != 1) continue;
      bool in_tile = false;
      for (const UOp* r : open.of(u)) in_tile = in_tile || r->as<RangeArg>().type == AxisType::Upcast;
      const UOp* inner = nullptr;
      for (size_t i = 1; i < u->nsrc(); i++) {
        const UOp* r = u->src(i);
        if (r->op == Op::Range && r->as<RangeArg>().type == AxisType::Reduce &&
            (!inner || r->as<RangeArg>().id > inner->as<RangeArg>().id))
          inner = r;
      }
      if (in_tile || !inner) continue;
      bool contiguous = true, any = false, heavy = false;
      for (const UOp* x : toposort(u->src(0))) {
        heavy = heavy || x->op == Op::Exp2 || x->op == Op::Log2 || x->op == Op::Sin || x->op == Op::Pow;
        if (x->op != Op::Load || !open.contains(x, inner)) continue;
        const UOp* idx = address_index(x->src(0));
        auto st = idx ? stride_of(idx, inner, env) : std::nullopt;
        any = true;
        contiguous = contiguous && st && *st == 1;
      }
      int64_t vw = std::max<int64_t>(4, target.vector_bits / std::max(8, u->dtype.bits()));
      // Math-heavy values are bound by their arithmetic, not the add chain: one register wide
      // (half the code to compile).
      int64_t amt = !any || !contiguous ? 0
                    : heavy             ? div_amount(const_bound(inner), {vw, vw / 2, 4})
                                        : div_amount(const_bound(inner), {2 * vw, vw, vw / 2, 4});
      Opt o{OptOp::Unroll, inner->as<RangeArg>().id, amt};
      if (amt && std::find(lanes.begin(), lanes.end(), o) == lanes.end()) lanes.push_back(o);
    }
    for (const Opt& o : lanes) apply(o);
  }

  // 2d. In a kernel with reduces, LLVM's loop vectorizer often gives up on the loop nest: the
  //     innermost loop axis every store walks contiguously becomes vector lanes here (the
  //     elementwise tail of softmax or layernorm after its row reductions), when no reduce runs
  //     inside that loop (those would be copied per lane, with strided loads).
  if (!reduces.empty() && !loops.empty() && !inner_upcast) {
    int64_t nloops = int64_t(loops_in_order.size());
    const UOp* inner = range_by_id(sink, nloops - 1);
    env = var_env(sink);
    bool contiguous = inner && inner->as<RangeArg>().type == AxisType::Loop;
    if (contiguous) {
      topo = toposort(sink);
      OpenRanges open(topo);
      for (const UOp* u : topo) contiguous = contiguous && !(u->op == Op::Reduce && open.contains(u, inner));
    }
    int bits = 8;
    for (const UOp* st : sink->src()) {
      const UOp* idx = st->op == Op::Store ? address_index(st->src(0)) : nullptr;
      auto stride = idx && contiguous ? stride_of(idx, inner, env) : std::nullopt;
      contiguous = contiguous && stride && *stride == 1;
      if (st->op == Op::Store) bits = std::max(bits, st->src(1)->dtype.bits());
    }
    int64_t vw = std::max<int64_t>(4, target.vector_bits / bits);
    int64_t amt = contiguous ? div_amount(const_bound(inner), {vw, vw / 2, 4}) : 0;
    if (amt) apply({OptOp::Upcast, nloops - 1, amt});
  }

  // 3. THREAD: split the outermost loop axis every store uses across the cores.
  if (opts.allow_threads && target.cores > 1) {
    int64_t t = target.cores;
    topo = toposort(sink);
    double iters = 1;
    int64_t alus = 0;
    for (const UOp* u : topo) {
      if (u->op == Op::Range) iters *= double(std::max<int64_t>(1, const_bound(u)));
      if (is_elementwise(u->op) || u->op == Op::Load || u->op == Op::Store) alus++;
    }
    if (iters * double(std::max<int64_t>(1, alus)) / double(t) >= double(opts.min_ops_per_thread)) {
      OpenRanges open(topo);
      for (int64_t pos = 0; pos < int64_t(loops_in_order.size()); pos++) {
        const UOp* r = range_by_id(sink, pos);
        if (!r) continue;
        int64_t n = const_bound(r);
        bool all = true;
        for (const UOp* s : sink->src()) all = all && open.contains(s, r);
        if (!all || n < t || n % t != 0) continue;
        apply({OptOp::Thread, pos, t});
        res.threads = t;
        break;
      }
      // No axis divides evenly: the outermost shared one gets uneven chunks (the last is shorter).
      for (int64_t pos = 0; res.threads == 1 && pos < int64_t(loops_in_order.size()); pos++) {
        const UOp* r = range_by_id(sink, pos);
        if (!r) continue;
        int64_t n = const_bound(r);
        bool all = true;
        for (const UOp* s : sink->src()) all = all && open.contains(s, r);
        if (!all || n < 4 * t) continue;
        apply({OptOp::Thread, pos, t});
        res.threads = t;
      }
    }
  }
  res.sink = sink;
  return res;
}

}  // namespace sn
