// Applying OptOps to a kernel AST (see opt.h for their semantics).
#include "core/opt/opt.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "core/codegen/kernel_util.h"
#include "core/util/checked.h"

namespace sn {

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

bool contains_reduce(const UOp* value) {
  for (const UOp* x : toposort(value))
    if (x->op == Op::Reduce) return true;
  return false;
}

bool window_reduce(const UOp* u, std::vector<Opt>* windows) {
  if (u->op != Op::Reduce || u->nsrc() < 2 || contains_reduce(u->src(0))) return false;
  std::vector<Opt> axes;
  int64_t steps = 1;
  for (size_t i = 1; i < u->nsrc() && steps <= 16; i++) {
    const UOp* r = u->src(i);
    const bool reduce = r->op == Op::Range && r->as<RangeArg>().type == AxisType::Reduce;
    const int64_t n = r->op == Op::Range ? const_bound(r) : -1;
    steps = n < 1 || (reduce && n > 4) ? 17 : steps * n;
    if (reduce && n > 1) axes.push_back(Opt::unroll(r->as<RangeArg>().id, n));
  }
  if (steps > 16) return false;
  if (windows)
    for (const Opt& o : axes)
      if (std::find(windows->begin(), windows->end(), o) == windows->end()) windows->push_back(o);
  return true;
}

const UOp* range_with_id(const UOp* sink, int64_t id) {
  for (const UOp* r : ranges_of(sink))
    if (r->as<RangeArg>().id == id) return r;
  return nullptr;
}

const std::vector<const UOp*>& OptState::ranges() const {
  if (ranges_sink_ != sink) {  // a Graph never frees a node: the same sink has the same ranges
    ranges_ = ranges_of(sink);
    ranges_sink_ = sink;
  }
  return ranges_;
}

const UOp* OptState::range(int64_t id) const {
  for (const UOp* r : ranges())
    if (r->as<RangeArg>().id == id) return r;
  return nullptr;
}

namespace {

const UOp* make_range(Graph& g, const UOp* bound, int64_t id, AxisType type) {
  return g.make(Op::Range, dtypes::index, {bound}, RangeArg{id, type});
}

int64_t max_range_id(std::span<const UOp* const> ranges) {
  int64_t m = -1;
  for (const UOp* r : ranges) m = std::max(m, r->as<RangeArg>().id);
  return m;
}

// Rebuilds the graph with range `r` replaced by `expr`; in Reduce range lists r becomes
// `replacement` (the ranges that now run over its iterations).
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
  rb.keep_below(r->id);  // (nodes older than r cannot read it)
  return rb.get(sink);
}

bool is_reduce_type(AxisType t) { return t == AxisType::Reduce || t == AxisType::GroupReduce; }

// Whether `part` of type t may be split off a range of type `from`.
const char* split_rule(AxisType t, AxisType from, bool top) {
  switch (t) {
    case AxisType::Upcast:
      if (top) return "UPCAST splits off the inner part";
      return from == AxisType::Loop || from == AxisType::Global || from == AxisType::Local
                 ? nullptr
                 : "UPCAST needs a LOOP, GLOBAL or LOCAL axis";
    case AxisType::Unroll:
      if (top) return "UNROLL splits off the inner part";
      return is_reduce_type(from) ? nullptr : "UNROLL needs a REDUCE or GROUP_REDUCE axis";
    case AxisType::Thread:
      if (!top) return "THREAD splits off the outer part";
      return from == AxisType::Loop ? nullptr : "THREAD needs a LOOP axis";
    case AxisType::Local:
      if (top) return "LOCAL splits off the inner part";
      return from == AxisType::Global ? nullptr : "LOCAL needs a GLOBAL axis";
    case AxisType::GroupReduce:
      return from == AxisType::Reduce ? nullptr : "GROUP_REDUCE needs a REDUCE axis";
    case AxisType::Loop:  // a cache block: of a loop, the inner part becomes the innermost loop;
                          // of a reduce, the outer part loops over its blocks (apply_reduce_blocks)
      if (from == AxisType::Reduce) return top ? nullptr : "a LOOP split of a REDUCE axis splits off the outer part";
      if (top) return "a LOOP split of a LOOP axis splits off the inner part";
      return from == AxisType::Loop ? nullptr : "a LOOP split needs a LOOP or REDUCE axis";
    default:
      return "a split can only make UPCAST, UNROLL, THREAD, LOCAL, GROUP_REDUCE or LOOP axes";
  }
}

// Work-items per work-group after adding a local-like axis of size n.
int64_t local_items(const UOp* sink, int64_t extra, int* dims) {
  int64_t items = extra;
  *dims = 1;
  for (const UOp* r : ranges_of(sink)) {
    AxisType t = r->as<RangeArg>().type;
    if (t == AxisType::Local || t == AxisType::GroupReduce || t == AxisType::Warp) {
      items *= std::max<int64_t>(1, const_bound(r));
      ++*dims;
    }
  }
  return items;
}

// The bound of a range of symbolic length N split by `amount`: N / amount when N is provably a
// multiple of it (x * c with amount dividing c, as PADTO makes it), else nullptr.
const UOp* symbolic_quotient(Graph& g, const UOp* bound, int64_t amount) {
  if (bound->op != Op::Mul) return nullptr;
  for (int i = 0; i < 2; i++) {
    const UOp* c = bound->src(size_t(1 - i));
    if (c->op != Op::Const || !c->holds<int64_t>() || c->as<int64_t>() % amount != 0) continue;
    int64_t q = c->as<int64_t>() / amount;
    return q == 1 ? bound->src(size_t(i)) : g.alu(Op::Mul, bound->src(size_t(i)), g.cint(q));
  }
  return nullptr;
}

}  // namespace

// SPLIT(r, blocks, LOOP, top) of a REDUCE axis r: the Reduce runs over one block of r per step of a
// new loop, and the blocks' sums accumulate in the output buffer: each store adds what the steps
// before it stored there (a load gated off in the first step). That loop can then move outside the
// output loops: a matrix-vector product then reads its matrix's rows a block at a time, each as
// one stream (where a whole column of tiles walked all rows at once, a piece of each), and a
// matmul's K in blocks is GotoBLAS's kc. The same sum only where one Reduce, an add, closes r and
// is stored as it is, by stores that are the kernel's only stores and whose buffers it reads
// nowhere else (the blocks' partial sums live there while the loop runs): reduce_blocks_rule.
std::string reduce_blocks_rule(const UOp* sink, const UOp* r) {
  const std::vector<const UOp*> order = toposort(sink);
  const UOp* reduce = nullptr;
  for (const UOp* u : order) {
    if (u->op != Op::Reduce) continue;
    std::span<const UOp* const> closed = closed_ranges(u);
    if (std::find(closed.begin(), closed.end(), r) == closed.end()) continue;
    if (reduce) return "more than one Reduce runs over it";
    reduce = u;
  }
  if (!reduce) return "no Reduce runs over it";
  if (reduce->as<ReduceArg>().op != Op::Add)
    return cat("its Reduce is a ", op_name(reduce->as<ReduceArg>().op), ", not a sum (only sums accumulate)");
  if (const_bound(r) <= 0) return "its length is symbolic";
  // (a narrower float would round the partial sums between blocks, where the accumulator keeps float32)
  if (reduce->dtype.is_float() && reduce->dtype.bits() < 32)
    return cat("its partial sums would round to ", reduce->dtype.name(), " between blocks");
  for (const UOp* u : order)
    for (size_t i = 0; i < u->nsrc(); i++)
      if (u->src(i) == reduce && !(u->op == Op::Store && i == 1))
        return cat("its sum is not stored as it is (a ", op_name(u->op), " reads it)");
  std::unordered_set<const UOp*> written;
  for (const UOp* s : sink->src()) {
    if (s->op != Op::Store) continue;
    const UOp* buf = address_buffer(s->src(0));
    if (s->src(1) != reduce || !buf || buf->op != Op::Param || !address_index(s->src(0)))
      return "the kernel stores something other than its sum into a parameter";
    written.insert(buf);
  }
  for (const UOp* u : order)
    if (u->op == Op::Load && written.count(address_buffer(u->src(0))))
      return "the kernel also reads the buffer its sum is stored in";
  return "";
}

namespace {

const UOp* apply_reduce_blocks(Graph& g, const OptState& k, const Opt& opt, const UOp* r) {
  const UOp* sink = k.sink;
  if (std::string why = reduce_blocks_rule(sink, r); !why.empty())
    fail(Code::InvalidArg, opt_str(opt), ": range ", opt.axis, " does not split into blocks: ", why);
  const int64_t n = const_bound(r);
  const int64_t block = n / opt.amount;
  const UOp* part = make_range(g, g.cint(opt.amount), max_range_id(k.ranges()) + 1, AxisType::Loop);
  const UOp* rest = block > 1 ? make_range(g, g.cint(block), opt.axis, AxisType::Reduce) : nullptr;
  const UOp* expr = g.alu(Op::Mul, part, g.cint(block));
  if (rest) expr = g.alu(Op::Add, expr, rest);
  std::vector<const UOp*> repl;
  if (rest) repl.push_back(rest);
  const UOp* split = replace_range(g, sink, r, expr, repl);
  // The stores, in the sink's order still: each adds the buffer's earlier blocks.
  const UOp* later = g.alu(Op::CmpLt, g.cint(0), part);
  std::vector<const UOp*> srcs(split->src().begin(), split->src().end());
  for (const UOp*& s : srcs) {
    if (s->op != Op::Store) continue;
    const UOp* gate = s->nsrc() == 3 ? g.alu(Op::And, later, s->src(2)) : later;
    const UOp* sum = s->src(1);
    const UOp* before = g.make(Op::Load, sum->dtype, {s->src(0), g.const_like(sum, 0), gate});
    std::vector<const UOp*> ss(s->src().begin(), s->src().end());
    ss[1] = g.alu(Op::Add, before, sum);
    s = g.make(Op::Store, s->dtype, ss, s->arg, s->tag);
  }
  return g.replace_src(split, srcs);
}

const UOp* apply_split(Graph& g, const OptState& k, const Opt& opt, const Target& target) {
  const UOp* sink = k.sink;
  const UOp* r = k.range(opt.axis);
  if (!r) fail(Code::InvalidArg, opt_str(opt), ": the kernel has no range with id ", opt.axis);
  AxisType from = r->as<RangeArg>().type;
  int64_t n = const_bound(r);
  // A symbolic length splits when PADTO made it a multiple of the amount (UPCAST/UNROLL of a batch).
  const UOp* sym_rest = n <= 0 && opt.amount >= 1 && opt.type != AxisType::Thread && opt.type != AxisType::Local &&
                                opt.type != AxisType::GroupReduce
                            ? symbolic_quotient(g, r->src(0), opt.amount)
                            : nullptr;
  if (n <= 0 && !sym_rest)
    fail(Code::InvalidArg, opt_str(opt), ": range ", opt.axis,
         " has no constant positive bound (a symbolic one must be a multiple of the amount, by PADTO, and split by "
         "UPCAST or UNROLL)");
  if (const char* why = split_rule(opt.type, from, opt.top))
    fail(Code::InvalidArg, opt_str(opt), ": ", why, "; range ", opt.axis, " is ", axis_type_name(from));
  bool ceil_split =
      !sym_rest && opt.type == AxisType::Thread && opt.amount >= 1 && n % opt.amount != 0 && n >= opt.amount;
  if (opt.amount < 1 || (!sym_rest && n % opt.amount != 0 && !ceil_split))
    fail(Code::InvalidArg, opt_str(opt), ": ", opt.amount, " does not divide the bound ", n);
  // A store that runs inside a loop axis without its address moving with it (the sum of a reduce's
  // blocks, accumulated in the output) reads what the step before stored: the steps must run one
  // after another. As threads they would race; as lanes or copies (UPCAST) each would read the
  // output before the one before it stored (BEAM found such candidates: wrong sums).
  if (from != AxisType::Reduce && opt.type != AxisType::Loop)
    for (const UOp* s : sink->src())
      if (s->op == Op::Store && depends_on(s, r) && !depends_on(s->src(0), r))
        fail(Code::InvalidArg, opt_str(opt), ": a store runs inside range ", opt.axis,
             " at the same address for all of its steps (they must run one after another)");
  switch (opt.type) {
    case AxisType::Thread:
      if (!target.has_threads)
        fail(Code::InvalidArg, opt_str(opt), ": the ", target.renderer, " target has no THREAD axes");
      for (const UOp* x : k.ranges())
        if (x->as<RangeArg>().type == AxisType::Thread)
          fail(Code::InvalidArg, opt_str(opt), ": the kernel already has a THREAD axis");
      break;
    case AxisType::Local:
    case AxisType::GroupReduce: {
      if (!target.has_local || (opt.type == AxisType::GroupReduce && !target.has_shared))
        fail(Code::InvalidArg, opt_str(opt), ": the ", target.renderer, " target has no ",
             opt.type == AxisType::Local ? "LOCAL axes" : "local memory");
      if (k.nolocals) fail(Code::InvalidArg, opt_str(opt), ": NOLOCALS was applied");
      if (opt.type == AxisType::GroupReduce)
        for (const UOp* x : k.ranges())
          if (x->as<RangeArg>().type == AxisType::Warp)
            fail(Code::InvalidArg, opt_str(opt), ": a tensor-core kernel (TC) has no group reduce");
      int dims = 0;
      int64_t items = local_items(sink, opt.amount, &dims);
      if (dims > 3) fail(Code::InvalidArg, opt_str(opt), ": a work-group has at most 3 LOCAL/GROUP_REDUCE axes");
      if (items > target.max_local_total)
        fail(Code::InvalidArg, opt_str(opt), ": ", items, " work-items per group, the target allows ",
             target.max_local_total);
      break;
    }
    default:
      break;
  }
  if (opt.amount == 1) return sink;
  if (from == AxisType::Reduce && opt.type == AxisType::Loop) {
    if (n <= 0) fail(Code::InvalidArg, opt_str(opt), ": a reduce of symbolic length does not split into blocks");
    return apply_reduce_blocks(g, k, opt, r);
  }
  int64_t part_id = max_range_id(k.ranges()) + 1;
  const UOp *part, *expr, *rest = nullptr;
  if (ceil_split) {
    // Thread t runs rest = min(c, n - t*c) iterations from t*c (c = ceil(n/amount)).
    int64_t c = (n + opt.amount - 1) / opt.amount;
    part = make_range(g, g.cint(opt.amount), part_id, opt.type);
    const UOp* left = g.alu(Op::Add, g.cint(n), g.alu(Op::Mul, part, g.cint(-c)));
    rest = make_range(g, g.alu(Op::Where, g.alu(Op::CmpLt, left, g.cint(c)), left, g.cint(c)), opt.axis, from);
    expr = g.alu(Op::Add, g.alu(Op::Mul, part, g.cint(c)), rest);
  } else {
    const UOp* rest_n = sym_rest ? sym_rest : g.cint(n / opt.amount);
    if (sym_rest || n / opt.amount > 1) rest = make_range(g, rest_n, opt.axis, from);
    part = make_range(g, g.cint(opt.amount), part_id, opt.type);
    if (opt.top) {
      expr = g.alu(Op::Mul, part, rest_n);
      if (rest) expr = g.alu(Op::Add, expr, rest);
    } else {
      expr = part;
      if (rest) expr = g.alu(Op::Add, g.alu(Op::Mul, rest, g.cint(opt.amount)), part);
    }
  }
  std::vector<const UOp*> repl;
  if (opt.top) repl.push_back(part);
  if (rest) repl.push_back(rest);
  if (!opt.top) repl.push_back(part);
  return replace_range(g, sink, r, expr, repl);
}

// Whether a load or store of the kernel walks r contiguously (its address moves one element per
// step of r), or might: r may then become vector lanes, one contiguous load each.
bool walked_contiguously(std::span<const UOp* const> order, const UOp* r) {
  static const std::unordered_map<const UOp*, int64_t> no_vars;
  for (const UOp* u : order) {
    const UOp* idx = u->op == Op::Load || u->op == Op::Store ? address_index(u->src(0)) : nullptr;
    if (!idx) continue;
    std::optional<int64_t> stride = stride_of(idx, r, no_vars);
    if (!stride || *stride == 1 || *stride == -1) return true;
  }
  return false;
}

// Padto: the range runs to N = ceil(n/m)*m; where r >= n nothing is stored and a reduce over r
// adds its identity.
const UOp* apply_padto(Graph& g, const OptState& k, const Opt& opt) {
  const UOp* r = k.range(opt.axis);
  if (!r) fail(Code::InvalidArg, opt_str(opt), ": the kernel has no range with id ", opt.axis);
  AxisType type = r->as<RangeArg>().type;
  if (type == AxisType::Thread || type == AxisType::Upcast || type == AxisType::Unroll)
    fail(Code::InvalidArg, opt_str(opt), ": cannot pad a ", axis_type_name(type), " axis");
  int64_t n = const_bound(r);
  if (opt.amount < 1) fail(Code::InvalidArg, opt_str(opt), ": the multiple must be at least 1");
  const UOp *nr, *valid, *clamped = nullptr;
  bool clamp_unless_contiguous = false;
  if (n > 0) {
    const int64_t rest = n % opt.amount;
    if (rest == 0) return k.sink;
    const int64_t padded = checked_add(n, opt.amount - rest, opt_str(opt), ": the padded length");
    if (i128(padded) > 4 * i128(n))
      fail(Code::InvalidArg, opt_str(opt), ": padding ", n, " to ", padded, " is over 4x the work");
    nr = make_range(g, g.cint(padded), opt.axis, type);
    valid = g.alu(Op::CmpLt, nr, g.cint(n));
    // The padding iterations of an axis no reduce runs over recompute the last valid one, as for
    // a symbolic length below; gated loads stay where r may become vector lanes (a clamped index
    // would break their contiguous load). A matmul's rows padded to its register tile's 6 were
    // 6 gated loads of A in the inner loop, a cmov each: matmul 4096 ran 1.2-1.35 s, against
    // 0.87-1.01 s for 4092 rows, which need no padding.
    clamp_unless_contiguous = type != AxisType::Reduce && type != AxisType::GroupReduce;
  } else {
    // A symbolic length N (a batch variable) runs to ceil(N/m)*m, written so that a split by m
    // sees the multiple (symbolic_quotient).
    if (opt.amount == 1) return k.sink;
    if (type == AxisType::Reduce)
      fail(Code::InvalidArg, opt_str(opt), ": padding a reduce axis of symbolic length is not supported");
    const UOp* bound = r->src(0);
    const UOp* chunks = g.alu(Op::Idiv, g.alu(Op::Add, bound, g.cint(opt.amount - 1)), g.cint(opt.amount));
    nr = make_range(g, g.alu(Op::Mul, chunks, g.cint(opt.amount)), opt.axis, type);
    valid = g.alu(Op::CmpLt, nr, bound);
    // The padding iterations recompute the last valid one (the index is clamped to N-1) and store
    // nothing: loads need no gate, which in a register tile would branch around every load of the
    // inner loop (a symbolic-batch MLP ran 1.5x slower with gated loads).
    clamped = g.alu(Op::Where, valid, nr, g.alu(Op::Add, bound, g.cint(-1)));
  }
  const std::vector<const UOp*> order = toposort(k.sink);
  if (clamp_unless_contiguous && !walked_contiguously(order, r)) clamped = g.alu(Op::Where, valid, nr, g.cint(n - 1));
  // Where r stays a contiguous walk, a float load whose index stays inside its buffer over the
  // padded range needs no gate either: what it reads in the padding (other elements of the same
  // buffer) reaches only the padding's results, which no store writes and no reduce over r adds
  // (r is no reduce axis). Not where an address depends on a loaded value (a gather's index read
  // in the padding could point anywhere). A matmul's columns padded to whole vectors read B's
  // packed panels, padded to whole panels (schedule.cpp, rule 9): 1020 columns ran 3x slower than
  // 1024 with 4 lanes, and 2x slower with 16 lanes and their loads gated.
  const bool ungate_in_bounds = clamp_unless_contiguous && !clamped && !addresses_depend_on_loads(order);
  OpenRanges open(order);
  // Whether a node reads r at all (its value or address moves with it).
  std::unordered_set<const UOp*> uses;
  for (const UOp* u : order) {
    if (u == r) uses.insert(u);
    for (const UOp* s : u->src())
      if (uses.count(s)) uses.insert(u);
  }
  Rebuilder rb(g, [&](const UOp* u, std::span<const UOp* const> s) -> const UOp* {
    if (u == r) return nr;
    if (clamped && u->op != Op::End && u->op != Op::Reduce && u->op != Op::Store &&
        std::find(u->src().begin(), u->src().end(), r) != u->src().end()) {
      std::vector<const UOp*> src(s.begin(), s.end());
      for (size_t i = 0; i < src.size(); i++)
        if (u->src(i) == r) src[i] = clamped;
      return g.replace_src(u, src);
    }
    if (u->op == Op::Load && uses.count(u->src(0)) && !clamped &&
        !(ungate_in_bounds && u->dtype.is_float() && inside_buffer(s[0]))) {
      const UOp* gate = u->nsrc() == 3 ? g.alu(Op::And, valid, s[2]) : valid;
      const UOp* alt = u->nsrc() == 3 ? s[1] : g.const_like(u, 0);
      return g.make(Op::Load, u->dtype, {s[0], alt, gate}, u->arg, u->tag);
    }
    if (u->op == Op::Store && uses.count(u) && open.contains(u, r)) {
      const UOp* gate = u->nsrc() == 3 ? g.alu(Op::And, valid, s[2]) : valid;
      return g.make(Op::Store, u->dtype, {s[0], s[1], gate}, u->arg, u->tag);
    }
    if (u->op == Op::Reduce && std::find(u->src().begin() + 1, u->src().end(), r) != u->src().end()) {
      std::vector<const UOp*> src(s.begin(), s.end());
      src[0] = g.alu(Op::Where, valid, s[0], reduce_identity(g, u->as<ReduceArg>().op, u->dtype));
      return g.make(Op::Reduce, u->dtype, src, u->arg, u->tag);
    }
    return g.replace_src(u, s);
  });
  return rb.get(k.sink);
}

const UOp* apply_swap(Graph& g, const OptState& k, const Opt& opt) {
  const UOp* a = k.range(opt.axis);
  const UOp* b = k.range(opt.amount);
  if (!a || !b) fail(Code::InvalidArg, opt_str(opt), ": the kernel has no range with id ", a ? opt.amount : opt.axis);
  if (a == b) return k.sink;
  Rebuilder rb(g, [&](const UOp* u, std::span<const UOp* const> s) -> const UOp* {
    if (u->op == Op::Range && (u == a || u == b))
      return make_range(g, s[0], u == a ? opt.amount : opt.axis, u->as<RangeArg>().type);
    return g.replace_src(u, s);
  });
  return rb.get(k.sink);
}

// ---- TC ----------------------------------------------------------------------------------------

// A matmul operand of the tensor core's input type: x itself, or what a Cast to the accumulator's
// type widened (a product computed in float32 from half inputs).
const UOp* tc_operand(const UOp* x, Scalar in) {
  if (x->op == Op::Cast && x->src(0)->dtype.lanes == 1 && x->src(0)->dtype.scalar == in) x = x->src(0);
  return x->dtype.lanes == 1 && x->dtype.scalar == in ? x : nullptr;
}

// base * size + the fragment coordinate (a row or column inside the tile of `size`).
const UOp* tc_index(Graph& g, const UOp* base, int64_t size, const TcCoord& c, const UOp* lane, int64_t elem) {
  const UOp* in_tile = fragment_coord(g, c, lane, elem);
  return base ? g.alu(Op::Add, g.alu(Op::Mul, base, g.cint(size)), in_tile) : in_tile;
}

// The parts of a kernel that TC(k, t) rewrites: its one Reduce (a sum over range k), the product's
// operands A and B, and the output axes M and N.
struct TcMatch {
  const UOp *red = nullptr, *kr = nullptr, *mr = nullptr, *nr = nullptr, *a = nullptr, *b = nullptr;
};

// A value that is 0 wherever its loads are gated off: a gated Load, or a Cast of one.
bool zero_when_gated(const UOp* x) {
  if (x->op == Op::Cast) x = x->src(0);
  return x->op == Op::Load && x->nsrc() == 3;
}

// Matches the kernel against TC's form; `multiples`: M, N and K must be multiples of the tensor
// core's m, n and k (else only constant). Fails (InvalidArg, through `no`) saying what does not fit.
template <class No>
TcMatch match_tc(const UOp* sink, int64_t axis, const TensorCoreShape& tc, bool multiples, const No& no) {
  TcMatch t;
  t.kr = range_with_id(sink, axis);
  if (!t.kr) no("the kernel has no range with id ", axis);
  if (t.kr->as<RangeArg>().type != AxisType::Reduce) no("range ", axis, " is not a REDUCE axis");
  for (const UOp* u : toposort(sink)) {
    if (u->op != Op::Reduce) continue;
    if (t.red) no("the kernel has more than one Reduce");
    t.red = u;
  }
  if (!t.red || std::find(t.red->src().begin() + 1, t.red->src().end(), t.kr) == t.red->src().end())
    no("range ", axis, " is not reduced");
  if (t.red->as<ReduceArg>().op != Op::Add) no("the Reduce is not a sum");
  const UOp* prod = t.red->src(0);
  // PADTO of the reduce axis adds its identity where it is off; the gated loads of both operands
  // make the product 0 there anyway.
  if (prod->op == Op::Where && prod->src(2)->op == Op::Const && prod->src(2)->const_float() == 0.0 &&
      prod->src(1)->op == Op::Mul && zero_when_gated(prod->src(1)->src(0)) && zero_when_gated(prod->src(1)->src(1)))
    prod = prod->src(1);
  if (prod->op != Op::Mul) no("the reduced value is not a product");
  t.a = tc_operand(prod->src(0), tc.in);
  t.b = tc_operand(prod->src(1), tc.in);
  if (!t.a || !t.b) no("the product's operands are not ", scalar_name(tc.in));
  if (t.red->dtype.lanes != 1 || (t.red->dtype.scalar != tc.acc && t.red->dtype.scalar != tc.in))
    no("the sum is ", t.red->dtype.name(), ", the tensor core accumulates ", scalar_name(tc.acc));
  int64_t kn = const_bound(t.kr);
  if (kn < 1 || (multiples && kn % tc.k != 0)) no("the reduce axis of ", kn, " is not a multiple of ", tc.k);
  // What each operand reads, walked once.
  std::vector<const UOp*> under_a = toposort(t.a), under_b = toposort(t.b);
  const std::unordered_set<const UOp*> in_a(under_a.begin(), under_a.end()), in_b(under_b.begin(), under_b.end());
  if (!in_a.count(t.kr) || !in_b.count(t.kr)) no("both operands must read the reduce axis");
  // M and N: the innermost GLOBAL/LOOP ranges read by one operand only.
  for (const UOp* r : ranges_of(sink)) {
    AxisType type = r->as<RangeArg>().type;
    int64_t n = const_bound(r);
    if ((type != AxisType::Global && type != AxisType::Loop) || n <= 0) continue;
    bool reads_a = in_a.count(r) != 0, reads_b = in_b.count(r) != 0;
    if (reads_a && !reads_b && (!multiples || n % tc.m == 0)) t.mr = r;
    if (reads_b && !reads_a && (!multiples || n % tc.n == 0)) t.nr = r;
  }
  if (!t.mr || !t.nr)
    no("no output axis that only ", t.mr ? "B" : "A", " reads", multiples ? " with a bound that is a multiple of " : "",
       multiples ? cat(t.mr ? tc.n : tc.m) : "");
  // Everything that reads M or N must be a store of the sum (no second output in the tile).
  for (const UOp* st : sink->src()) {
    if (st->op != Op::Store) no("the kernel's sink holds a ", op_name(st->op));
    if ((depends_on(st, t.mr) || depends_on(st, t.nr)) && !depends_on(st, t.red))
      no("a store reads the output axes but not the sum");
  }
  return t;
}

// TC(axis, t[, pad]): the kernel's one Reduce, a sum over range `axis` (K) of a product A(M, K) * B(K, N)
// of inputs of the tensor core's type, becomes per warp a tile of m x n outputs: a WARP range of
// `threads` lanes; M, N and K keep their ids for what is left of them (M/m and N/n GLOBAL, K/k
// REDUCE); the product becomes Wmma(A fragment, B fragment, 0) (each fragment a Vectorize of the
// lane's elements, loaded where the layout puts them), summed over what is left of K (reduce
// lowering adds it to the accumulator as Wmma's C); and each store becomes one store per element
// of the lane's C fragment. M is the innermost loop axis A reads and B does not, N the innermost
// one B reads and A does not. With `pad`, M, N and K that are not multiples of the tile are padded
// first (PADTO's gated loads and stores; at most 4x the work).
const UOp* apply_tc(Graph& g, const OptState& k, const Opt& opt, const Target& target) {
  auto no = [&](auto&&... why) { fail(Code::InvalidArg, opt_str(opt), ": ", why...); };
  if (!k.applied.empty()) no("TC must be the first opt of a kernel");
  if (opt.amount < 0 || opt.amount >= int64_t(target.tensor_cores.size()))
    no("the ", target.renderer, " target ", target.arch.empty() ? "" : "(" + target.arch + ") ", "has ",
       target.tensor_cores.size(), " tensor core", target.tensor_cores.size() == 1 ? "" : "s");
  const TensorCoreShape& tc = target.tensor_cores[size_t(opt.amount)];
  OptState padded = k;
  if (opt.top) {
    TcMatch loose = match_tc(k.sink, opt.axis, tc, false, no);
    for (auto [r, size] : {std::pair{loose.mr, tc.m}, std::pair{loose.nr, tc.n}, std::pair{loose.kr, tc.k}}) {
      Opt pad = Opt::padto(r->as<RangeArg>().id, size);
      try {
        padded.sink = apply_padto(g, padded, pad);
      } catch (const Error& e) {
        no(e.what());
      }
    }
  }
  const UOp* sink = padded.sink;
  TcMatch t = match_tc(sink, opt.axis, tc, true, no);
  const UOp *red = t.red, *kr = t.kr, *mr = t.mr, *nr = t.nr, *a = t.a, *b = t.b;

  int64_t next_id = max_range_id(padded.ranges()) + 1;
  AxisType mt = mr->as<RangeArg>().type, nt = nr->as<RangeArg>().type;
  auto rest = [&](const UOp* r, int64_t size, AxisType t) -> const UOp* {
    int64_t n = const_bound(r) / size;
    return n > 1 ? make_range(g, g.cint(n), r->as<RangeArg>().id, t) : nullptr;
  };
  const UOp* m_rest = rest(mr, tc.m, mt);
  const UOp* n_rest = rest(nr, tc.n, nt);
  const UOp* k_rest = rest(kr, tc.k, AxisType::Reduce);
  const UOp* lane = make_range(g, g.cint(tc.threads), next_id, AxisType::Warp);

  auto fragment = [&](const UOp* x, int elems, const TcCoord& row, const TcCoord& col, const UOp* row_axis,
                      const UOp* row_rest, int64_t row_size, const UOp* col_axis, const UOp* col_rest,
                      int64_t col_size) {
    std::vector<const UOp*> lanes;
    for (int e = 0; e < elems; e++)
      lanes.push_back(substitute_nodes(g, x,
                                       {{row_axis, tc_index(g, row_rest, row_size, row, lane, e)},
                                        {col_axis, tc_index(g, col_rest, col_size, col, lane, e)}}));
    return g.make(Op::Vectorize, DType{tc.in}.vec(uint16_t(elems)), lanes);
  };
  const UOp* fa = fragment(a, tc.a_elems, tc.a_row, tc.a_col, mr, m_rest, tc.m, kr, k_rest, tc.k);
  const UOp* fb = fragment(b, tc.b_elems, tc.b_row, tc.b_col, kr, k_rest, tc.k, nr, n_rest, tc.n);
  DType acc = DType{tc.acc}.vec(uint16_t(tc.c_elems));
  const UOp* zero =
      g.make(Op::Vectorize, acc, std::vector<const UOp*>(size_t(tc.c_elems), g.cfloat(0.0, DType{tc.acc})));
  const UOp* wmma = g.make(Op::Wmma, acc, {fa, fb, zero}, tc.name);
  std::vector<const UOp*> rsrc{wmma};
  for (size_t i = 1; i < red->nsrc(); i++)
    if (red->src(i) != kr) rsrc.push_back(red->src(i));
  if (k_rest) rsrc.push_back(k_rest);
  const UOp* sum = rsrc.size() == 1 ? wmma : g.make(Op::Reduce, acc, rsrc, red->arg, red->tag);

  // One store per element of the C fragment, at the element's row and column.
  std::vector<const UOp*> stores;
  for (const UOp* st : sink->src()) {
    if (!depends_on(st, red)) {
      stores.push_back(st);
      continue;
    }
    for (int e = 0; e < tc.c_elems; e++) {
      const UOp* d = g.make(Op::Gep, DType{tc.acc}, {sum}, int64_t(e));
      if (d->dtype != red->dtype) d = g.cast(d, red->dtype);
      stores.push_back(substitute_nodes(g, st,
                                        {{red, d},
                                         {mr, tc_index(g, m_rest, tc.m, tc.c_row, lane, e)},
                                         {nr, tc_index(g, n_rest, tc.n, tc.c_col, lane, e)}}));
    }
  }
  return g.make(Op::Sink, sink->dtype, stores, sink->arg, sink->tag);
}

}  // namespace

OptState start_optimization(Graph& g, const UOp* sink, const Target& target) {
  OptState k;
  k.sink = sink;
  if (!target.has_local) return k;
  std::vector<const UOp*> loops, reduces;
  classify_ranges(sink, &loops, &reduces);
  Rebuilder rb(g, [&](const UOp* u, std::span<const UOp* const> s) -> const UOp* {
    if (u->op == Op::Range && u->as<RangeArg>().type == AxisType::Loop &&
        std::find(loops.begin(), loops.end(), u) != loops.end())
      return make_range(g, s[0], u->as<RangeArg>().id, AxisType::Global);
    return g.replace_src(u, s);
  });
  k.sink = rb.get(sink);
  return k;
}

void apply_opt(Graph& g, OptState& k, const Opt& opt, const Target& target) {
  switch (opt.op) {
    case OptOp::Split:
      k.sink = apply_split(g, k, opt, target);
      break;
    case OptOp::Padto:
      k.sink = apply_padto(g, k, opt);
      break;
    case OptOp::Swap:
      k.sink = apply_swap(g, k, opt);
      break;
    case OptOp::TC:
      k.sink = apply_tc(g, k, opt, target);
      break;
    case OptOp::Nolocals:
      for (const UOp* r : k.ranges())
        if (r->as<RangeArg>().type == AxisType::Local || r->as<RangeArg>().type == AxisType::GroupReduce ||
            r->as<RangeArg>().type == AxisType::Warp)
          fail(Code::InvalidArg, "NOLOCALS: the kernel already has a ", axis_type_name(r->as<RangeArg>().type),
               " axis");
      k.nolocals = true;
      break;
  }
  k.applied.push_back(opt);
}

void reorder_ranges(Graph& g, OptState& k, const std::vector<int64_t>& order, const Target& target) {
  std::vector<int64_t> slots = order;
  std::sort(slots.begin(), slots.end());
  std::vector<int64_t> at = order;  // at[i]: where the range wanted at slot i sits now
  for (size_t i = 0; i < order.size(); i++) {
    if (at[i] == slots[i]) continue;
    apply_opt(g, k, Opt::swap(slots[i], at[i]), target);
    for (size_t j = i + 1; j < order.size(); j++)  // the range that sat at slots[i] moved to at[i]
      if (at[j] == slots[i]) at[j] = at[i];
    at[i] = slots[i];
  }
}

// Whether the kernel's iterations (its ranges' largest bounds multiplied) pass 2^62: a tensor of
// one-byte elements may have 2^63 - 2 of them and compile, though no device could hold it. The
// heuristics leave such a kernel as it is: tiling it buys nothing, and the sizes its padding and
// tiles compute would overflow int64.
bool beyond_any_device(const OptState& k) {
  constexpr i128 kLimit = i128(1) << 62;
  i128 n = 1;
  for (const UOp* r : k.ranges()) {
    const i128 b = r->src(0)->minmax().hi;
    if (b <= 0) continue;
    if (b > kLimit || (n *= b) > kLimit) return true;
  }
  return false;
}

OptResult optimize_kernel(Graph& g, const UOp* sink, const Target& target, const LowerOptions& opts) {
  OptState k = start_optimization(g, sink, target);
  if (opts.opts) {
    for (const Opt& o : *opts.opts) apply_opt(g, k, o, target);
  } else if (opts.optimize && !beyond_any_device(k)) {
    if (target.has_local)
      gpu_heuristic(g, k, target, opts);
    else
      cpu_heuristic(g, k, target, opts);
  }
  OptResult res{k.sink, k.applied, 1};
  for (const Opt& o : k.applied)
    if (o.op == OptOp::Split && o.type == AxisType::Thread) res.threads = o.amount;
  return res;
}

std::string kernel_name(const UOp* sink) {
  if (sink->holds<std::string>() && !sink->as<std::string>().empty()) return sink->as<std::string>();
  std::vector<const UOp*> loops, reduces;
  classify_ranges(sink, &loops, &reduces);
  std::vector<std::pair<int, int64_t>> dims;  // (type rank, bound) in order
  auto rank = [](AxisType t) {
    switch (t) {
      case AxisType::Thread:
      case AxisType::Global:
        return 0;
      case AxisType::Local:
        return 1;
      case AxisType::Loop:
        return 2;
      case AxisType::GroupReduce:
        return 3;
      case AxisType::Reduce:
        return 5;
      case AxisType::Upcast:
        return 4;
      case AxisType::Unroll:
        return 6;
      default:
        return 7;
    }
  };
  std::vector<const UOp*> all = loops;
  all.insert(all.end(), reduces.begin(), reduces.end());
  std::stable_sort(all.begin(), all.end(), [&](const UOp* a, const UOp* b) {
    int ra = rank(a->as<RangeArg>().type), rb = rank(b->as<RangeArg>().type);
    if (ra != rb) return ra < rb;
    return a->as<RangeArg>().id < b->as<RangeArg>().id;
  });
  std::string name = reduces.empty() ? "E" : "r";
  for (const UOp* r : all) {
    int64_t n = const_bound(r);
    name += n >= 0 ? cat("_", n) : "_n";
  }
  return name;
}

}  // namespace sn
