#include "core/schedule/rangeify.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "core/schedule/indexing.h"
#include "core/symbolic/symbolic.h"

namespace sn::sched {

namespace {

// An elementwise value reached with more distinct indexings than this in one kernel is stored
// instead of being recomputed at each (stencils of stencils would otherwise grow without bound).
// 9: a 3x3 pool's taps, each a view of its own (compose.cpp's window_axis_taps), read a computed
// input (ResNet-18's stem's bias and relu) in the pool's kernel, as the one tiled view did.
constexpr int kMaxRecompute = 9;
// The largest window of an enclosing reduce a reduce is fused into (a 2x2 or 4x4 pool stays fused).
constexpr double kMaxFusedWindow = 16;
// An elementwise value inlined at several places (other indexings or other kernels) is stored
// when computing it reads more buffers than this: each copy would read them all again, and the
// kernels that inline it keep all those buffers alive (tinygrad's rule too).
constexpr size_t kMaxInlineReads = 3;

bool is_pass_through(Op op) { return op == Op::Detach || op == Op::ContiguousBackward || op == Op::Contiguous; }

bool is_index_movement(Op op) {
  return op == Op::Reshape || op == Op::Permute || op == Op::Expand || op == Op::Pad || op == Op::Shrink ||
         op == Op::Flip;
}

// The unsigned integer dtype of `bytes` bytes (bit twiddling for size-changing bitcasts).
DType uint_of(int bytes) {
  switch (bytes) {
    case 1:
      return dtypes::uint8;
    case 2:
      return dtypes::uint16;
    case 4:
      return dtypes::uint32;
    case 8:
      return dtypes::uint64;
    default:
      fail(Code::Unsupported, "rangeify: no unsigned integer of ", bytes, " bytes for a bitcast");
  }
}

const UOp* scalar_const(Graph& g, DType dt, int64_t v) {
  return dt.is_float() ? g.cfloat(double(v), dt.base()) : g.cint(v, dt.base());
}

const UOp* identity_of(Graph& g, Op reduce_op, DType dt) {
  switch (reduce_op) {
    case Op::Add:
      return scalar_const(g, dt, 0);
    case Op::Mul:
      return scalar_const(g, dt, 1);
    default:  // Max
      if (dt.is_float()) return g.cfloat(-INFINITY, dt);
      return g.cint(int64_t(dt.int_min()), dt);
  }
}

// Ranges an index expression depends on.
void collect_ranges(const UOp* e, std::unordered_set<const UOp*>& out) {
  if (e == nullptr) return;
  for (const UOp* u : toposort(e))  // (toposort's marks, not a set of every node visited)
    if (u->op == Op::Range) out.insert(u);
}

// The terms of a conjunction (And of bools).
void conjuncts(const UOp* e, std::unordered_set<const UOp*>& out) {
  std::vector<const UOp*> stack{e};
  while (!stack.empty()) {
    const UOp* u = stack.back();
    stack.pop_back();
    if (u->op == Op::And && u->dtype.is_bool()) {
      stack.push_back(u->src(0));
      stack.push_back(u->src(1));
    } else {
      out.insert(u);
    }
  }
}

// Does `gate` imply `cond`? (Syntactically: every term of cond is a term of gate.)
bool implies(const UOp* gate, const UOp* cond) {
  std::unordered_set<const UOp*> g, c;
  conjuncts(gate, g);
  conjuncts(cond, c);
  for (const UOp* t : c)
    if (!g.count(t)) return false;
  return true;
}

std::string dim_name(const UOp* bound) {
  if (bound->is_const()) return std::to_string(int64_t(bound->const_int()));
  if (bound->op == Op::DefineVar) return bound->as<VarArg>().name;
  return "s";  // a symbolic expression
}

class Lowerer {
 public:
  Lowerer(Graph& g, Plan& plan, const KernelSpec& spec, int kernel_no, Findings& findings,
          const std::function<void(const UOp*)>& store_now)
      : g_(g), plan_(plan), spec_(spec), kernel_no_(kernel_no), findings_(findings), store_now_(store_now) {}

  LoweredKernel run() {
    const Shape& shape = *spec_.root->shape();
    if (auto n = shape_numel(shape); n && *n == 0) return {};  // nothing to store
    const UOp* out = param(spec_.out_buffer);
    IndexCtx c;
    for (const Dim& d : shape) {
      if (d.is_const() && d.value == 1) {
        c.idx.push_back(g_.cint(0));  // a size-1 axis needs no loop
        continue;
      }
      const UOp* r = new_range(dim_uop(g_, d), AxisType::Loop);
      loops_.push_back(r);
      c.idx.push_back(r);
    }
    const UOp* addr = g_.make(Op::Index, out->dtype, {out, linear_index(g_, shape, c.idx)});
    const UOp* value = lower(spec_.root, intern(std::move(c)));
    const UOp* store = g_.make(Op::Store, dtypes::void_, {addr, value});
    LoweredKernel k;
    k.ast = g_.make(Op::Sink, dtypes::void_, {store}, kernel_name(store));
    k.buffers = slots_;
    return k;
  }

 private:
  struct Child {
    const UOp* node;
    int ctx;
  };
  struct Frame {
    Frame(const UOp* n, int c) : node(n), ctx(c) {}
    const UOp* node;
    int ctx;
    bool expanded = false;
    std::vector<Child> children;
    std::vector<const UOp*> ranges;  // Reduce: the ranges it closes
    const UOp* pad_valid = nullptr;  // Pad: the point lies inside the placed source
    const UOp* part = nullptr;       // size-splitting Bitcast: which piece of the source element
    bool empty = false;              // Reduce over zero elements, Pad of nothing
    bool leaf = false;               // loaded from its buffer (decided when expanded)
  };

  static uint64_t key(const UOp* u, int ctx) { return (uint64_t(u->id) << 32) | uint32_t(ctx); }

  int intern(IndexCtx c) {
    std::vector<const UOp*> k = c.idx;
    k.push_back(c.valid);
    auto [it, fresh] = ctx_ids_.emplace(std::move(k), int(ctxs_.size()));
    if (fresh) ctxs_.push_back(std::move(c));
    return it->second;
  }

  const UOp* new_range(const UOp* bound, AxisType type) {
    return g_.make(Op::Range, dtypes::index, {bound}, RangeArg{next_range_++, type});
  }

  // Values of tensor nodes stored elsewhere are loaded; the kernel's own root is computed.
  bool is_leaf(const UOp* u) const {
    if (u->op == Op::Buffer) return true;
    if (u == spec_.root && spec_.compute) return false;
    return plan_.stored_in.count(u) != 0;
  }

  const UOp* param(int buffer) {
    auto it = params_.find(buffer);
    if (it != params_.end()) return it->second;
    const BufferInfo& b = plan_.buffers.at(size_t(buffer));
    int64_t slot = int64_t(slots_.size());
    int64_t size = b.size;
    const UOp* p =
        g_.make(Op::Param, b.dtype.as_ptr(AddrSpace::Global), {g_.shape_uop(std::span<const int64_t>(&size, 1))},
                ParamArg{slot, b.device, AddrSpace::Global});
    slots_.push_back(buffer);
    params_.emplace(buffer, p);
    return p;
  }

  const UOp* load(int buffer, const Shape& shape, const IndexCtx& c) {
    DType dt = plan_.buffers.at(size_t(buffer)).dtype;
    const UOp* valid = c.valid ? simplify_index(g_, c.valid) : nullptr;
    if (valid && valid->is_const()) {
      if (valid->const_int() == 0) return scalar_const(g_, dt, 0);  // never inside: no access
      valid = nullptr;
    }
    const UOp* p = param(buffer);
    const UOp* flat = linear_index(g_, shape, c.idx);
    if (valid) flat = simplify_given_valid(g_, valid, flat);
    const UOp* addr = g_.make(Op::Index, p->dtype, {p, flat});
    if (!valid) return g_.make(Op::Load, dt, {addr});
    return g_.make(Op::Load, dt, {addr, scalar_const(g_, dt, 0), valid});
  }

  // A Reduce inlined here sits in the loops its index uses; codegen computes it there, before
  // any loop it does not use (the linearizer hoists loop-invariant work), so a reduce broadcast
  // along inner loops (x - max(x) along a row) or read inside another reduce's loop without
  // using that loop's range (softmax's max inside the sum of exp) is computed once per point of
  // its own loops. That holds only when the loops it does not use can nest inside it: the
  // kernel's loops nest in store order, so an unused loop outside a used one (a column sum
  // broadcast along rows) would recompute the whole reduction at every point of it; and a
  // reduce that uses an enclosing reduce's range runs inside that reduce's loop, inside every
  // kernel loop (a product read inside a second matmul's reduce). Those are stored instead:
  // `stack` holds the frames being lowered, the reduce's on top (see stored_for).
  void check_reduce_scope(const UOp* u, int ctx, const std::vector<Frame>& stack) {
    std::unordered_set<const UOp*> used;
    for (const UOp* e : ctxs_[size_t(ctx)].idx) collect_ranges(e, used);
    collect_ranges(ctxs_[size_t(ctx)].valid, used);
    bool in_outer_reduce = false;
    for (const UOp* r : open_reduce_) in_outer_reduce = in_outer_reduce || used.count(r);
    bool unused_outside = false;
    for (const UOp* r : loops_) {
      if (!used.count(r)) unused_outside = true;
      if (unused_outside && (in_outer_reduce || used.count(r)))
        return findings_.flag(stored_for(u, stack), Why::Broadcast);
    }
    // Read inside an enclosing reduce's window, it is stored when:
    // - the windows overlap (a 3x3 stride-2 max pool over a convolution, ResNet's stem): inlined it
    //   would be computed once per (point, window tap), more evaluations than it has values, each
    //   a whole reduction (the stem convolution ran 2.25 times over);
    // - the window slides over its output axes (a pool: an index adds an enclosing reduce's range
    //   to an output loop, x = 2 * ox + dx), even without overlap. Inside the pool the
    //   convolution's output rows are walked with the pool's stride, so its vector lanes become
    //   strided gathers and its reduction nests inside the window's: a small CNN's two conv + relu
    //   + 2x2 pool kernels ran 2x slower fused (0.33-0.54 -> 0.19-0.24 ms for the model) and took
    //   twice the LLVM time. Stored, the convolution is an ordinary one and the pool a cheap pass;
    // - the window is large (a global average pool over a convolution's 7x7 map): inside it the
    //   convolution's output axes become reduce axes, which the optimizer neither vectorizes nor
    //   tiles (ResNet-18's last convolution ran 7x slower fused into the average pool).
    if (in_outer_reduce) {
      double taps = 1, values = 1, window = 1;
      auto bound = [](const UOp* r) {
        return r->src(0)->op == Op::Const && r->src(0)->holds<int64_t>()
                   ? std::max<int64_t>(1, r->src(0)->as<int64_t>())
                   : int64_t(1);
      };
      auto in_window = [&](const UOp* r) {
        return std::find(open_reduce_.begin(), open_reduce_.end(), r) != open_reduce_.end();
      };
      for (const UOp* r : used) taps *= double(bound(r));
      for (const UOp* r : open_reduce_)
        if (used.count(r)) window *= double(bound(r));
      for (const Dim& d : *u->shape()) values *= double(d.is_const() ? std::max<int64_t>(1, d.value) : 1);
      bool slides = false;
      for (const UOp* e : ctxs_[size_t(ctx)].idx) {
        std::unordered_set<const UOp*> rs;
        collect_ranges(e, rs);
        bool loop = false, tap = false;
        for (const UOp* r : rs) (in_window(r) ? tap : loop) = true;
        slides = slides || (loop && tap);
      }
      if (slides || taps > 1.5 * values || window > kMaxFusedWindow)
        findings_.flag(stored_for(u, stack), Why::Broadcast);
    }
  }

  // What to store when a reduce must be: the outermost value computed from it point for point, up
  // to the first op that moves its indices (a pad, a window's view, a broadcast). The reduce's own
  // kernel then finishes those elementwise ops once per value in its epilogue, where the readers
  // would repeat them at every read: ResNet's stem convolution is read by a 3x3 max pool, which
  // applied the convolution's bias and relu at each of its 9 taps. Reshapes (the reduce's size-1
  // axes dropped) are looked through; a value with more elements (a broadcast) or wider elements
  // (a cast up) than the reduce is not taken. The frames on `stack` that were expanded already
  // are the reduce's ancestors, outermost first.
  const UOp* stored_for(const UOp* reduce, const std::vector<Frame>& stack) const {
    const std::optional<int64_t> n = shape_numel(*reduce->shape());
    const UOp* pick = reduce;
    for (size_t i = stack.size() - 1; i-- > 0;) {
      const Frame& a = stack[i];
      if (!a.expanded) continue;  // a sibling waiting its turn
      const UOp* v = a.node;
      if (v == spec_.root || plan_.stored_in.count(v)) break;
      if (v->op == Op::Reshape || is_pass_through(v->op)) continue;
      if (!is_elementwise(v->op) || v->dtype.itemsize() > reduce->dtype.itemsize() || !n ||
          shape_numel(*v->shape()) != n)
        break;
      pick = v;
    }
    return pick;
  }

  // Records that (u, ctx) is lowered in this kernel for the first time.
  void note_use(const UOp* u, int ctx) {
    if (is_leaf(u)) return;
    if (u->op == Op::Reduce) {
      // A reduce inlined at two places (other indexing, or another kernel) would be computed
      // twice: store it once instead.
      std::vector<const UOp*> k = ctxs_[size_t(ctx)].idx;
      k.push_back(ctxs_[size_t(ctx)].valid);
      auto [it, fresh] = findings_.reduce_use.emplace(u, std::make_pair(kernel_no_, k));
      if (!fresh && (it->second.first != kernel_no_ || it->second.second != k)) findings_.flag(u, Why::Duplicate);
      return;
    }
    if (!is_elementwise(u->op) || u == spec_.root) return;
    if (++variants_[u] > kMaxRecompute) findings_.flag(u, Why::Recompute);
    std::vector<const UOp*> k = ctxs_[size_t(ctx)].idx;
    k.push_back(ctxs_[size_t(ctx)].valid);
    auto [it, fresh] = findings_.value_use.emplace(u, std::make_pair(kernel_no_, k));
    if (!fresh && (it->second.first != kernel_no_ || it->second.second != k)) findings_.value_shared.insert(u);
  }

  // The buffers the value of a finished frame reads (up to kMaxInlineReads + 1 of them).
  std::vector<int> reads_of(const Frame& f) {
    std::vector<int> r;
    if (f.leaf) {
      r.push_back(plan_.stored_in.at(f.node));
      return r;
    }
    for (const Child& c : f.children) {
      const std::vector<int>& cr = reads_.at(key(c.node, c.ctx));
      r.insert(r.end(), cr.begin(), cr.end());
      std::sort(r.begin(), r.end());
      r.erase(std::unique(r.begin(), r.end()), r.end());
      if (r.size() > kMaxInlineReads) break;
    }
    return r;
  }

  void add_child(Frame& f, const UOp* node, IndexCtx c) { f.children.push_back({node, intern(std::move(c))}); }

  // Index(x, i0, i1, ...): the point reads x at (i0, i1, ..., rest), where each index value is
  // computed at this point first (a gather: the address depends on loaded data). A point whose
  // index lies outside its axis reads 0 (its loads are gated off).
  void expand_index(Frame& f, const IndexCtx& c) {
    const UOp* u = f.node;
    const Shape& xs = *u->src(0)->shape();
    IndexCtx cc;
    size_t axis = 0;
    const UOp* inside = nullptr;
    for (size_t k = 0; k + 1 < u->nsrc(); k++) {
      const UOp* ix = u->src(k + 1);
      IndexCtx ic;
      ic.valid = c.valid;
      if (ix->shape()->size() == 1) ic.idx.push_back(c.idx[axis++]);
      const UOp* i = g_.cast(lower(ix, intern(std::move(ic))), dtypes::index);
      const UOp* ok =
          g_.alu(Op::And, g_.alu(Op::Not, g_.alu(Op::CmpLt, i, g_.cint(0))), g_.alu(Op::CmpLt, i, dim_uop(g_, xs[k])));
      inside = inside ? g_.alu(Op::And, inside, ok) : ok;
      cc.idx.push_back(i);
    }
    cc.idx.insert(cc.idx.end(), c.idx.begin() + long(axis), c.idx.end());
    f.pad_valid = inside;
    cc.valid = c.valid ? g_.alu(Op::And, c.valid, inside) : inside;
    add_child(f, u->src(0), std::move(cc));
  }

  void expand(Frame& f) {
    const UOp* u = f.node;
    const IndexCtx c = ctxs_[size_t(f.ctx)];  // a copy: interning may grow ctxs_
    f.leaf = is_leaf(u);
    if (f.leaf || u->op == Op::Const || u->op == Op::DefineVar) return;
    if (is_pass_through(u->op)) return add_child(f, u->src(0), c);
    if (is_index_movement(u->op)) {
      IndexCtx cc = through_movement(g_, u, c, &f.pad_valid);
      if (f.pad_valid && f.pad_valid->is_const()) {  // nothing of the source is visible
        f.empty = true;
        return;
      }
      return add_child(f, u->src(0), std::move(cc));
    }
    if (u->op == Op::Index) return expand_index(f, c);
    if (u->op == Op::Stack) {
      // element (k, rest...) is source k at rest: every source is read under "this is k"
      for (size_t k = 0; k < u->nsrc(); k++) {
        IndexCtx cc;
        cc.idx.assign(c.idx.begin() + 1, c.idx.end());
        const UOp* is_k = g_.alu(Op::CmpEq, c.idx[0], g_.cint(int64_t(k)));
        cc.valid = c.valid ? g_.alu(Op::And, c.valid, is_k) : is_k;
        add_child(f, u->src(k), std::move(cc));
      }
      return;
    }
    if (u->op == Op::Bitcast) {
      int from = u->src(0)->dtype.itemsize(), to = u->dtype.itemsize();
      if (from == to) return add_child(f, u->src(0), c);
      // the last axis changes size: piece together the bytes of neighbouring elements
      size_t last = c.idx.size() - 1;
      const UOp* i = c.idx[last];
      if (from > to) {  // each source element holds from/to results
        IndexCtx cc = c;
        cc.idx[last] = simplify_index(g_, g_.alu(Op::Idiv, i, g_.cint(from / to)));
        f.part = simplify_index(g_, g_.alu(Op::Mod, i, g_.cint(from / to)));
        return add_child(f, u->src(0), std::move(cc));
      }
      for (int m = 0; m < to / from; m++) {  // each result joins to/from source elements
        IndexCtx cc = c;
        cc.idx[last] = simplify_index(g_, g_.alu(Op::Add, g_.alu(Op::Mul, i, g_.cint(to / from)), g_.cint(m)));
        add_child(f, u->src(0), std::move(cc));
      }
      return;
    }
    if (u->op == Op::Reduce) {
      if (u->nsrc() != 1) fail(Code::Unsupported, "rangeify: Reduce over ranges in a tensor graph");
      const Shape& xs = *u->src(0)->shape();
      IndexCtx cc = c;
      for (int64_t a : u->as<ReduceArg>().axes) {
        size_t k = size_t(a < 0 ? a + int64_t(xs.size()) : a);
        const Dim& d = xs[k];
        if (d.is_const() && d.value == 0) {
          f.empty = true;  // nothing to reduce: the identity
          return;
        }
        if (d.is_const() && d.value == 1) {
          cc.idx[k] = g_.cint(0);
          continue;
        }
        const UOp* r = new_range(dim_uop(g_, d), AxisType::Reduce);
        f.ranges.push_back(r);
        cc.idx[k] = r;
      }
      return add_child(f, u->src(0), std::move(cc));
    }
    if (is_elementwise(u->op)) {
      const Shape& os = *u->shape();
      for (const UOp* s : u->src()) add_child(f, s, through_broadcast(g_, *s->shape(), os, c));
      return;
    }
    fail(Code::Unsupported, "rangeify: ", op_name(u->op), " is not supported in a tensor graph (", u->dtype.name(),
         ")");
  }

  const UOp* value_of(const Child& c) const { return memo_.at(key(c.node, c.ctx)); }

  const UOp* zero_like(DType dt) { return scalar_const(g_, dt, 0); }

  // x as the unsigned integer of its size (bool counts as one byte 0/1).
  const UOp* to_uint(const UOp* x) {
    DType u = uint_of(x->dtype.itemsize());
    if (x->dtype == u) return x;
    if (x->dtype.is_bool()) return g_.cast(x, u);
    return g_.make(Op::Bitcast, u, {x}, u);
  }
  const UOp* from_uint(const UOp* x, DType dt) {
    if (x->dtype == dt) return x;
    if (dt.is_bool()) return g_.cast(x, dt);
    return g_.make(Op::Bitcast, dt, {x}, dt);
  }

  const UOp* build(const Frame& f) {
    const UOp* u = f.node;
    const IndexCtx& c = ctxs_[size_t(f.ctx)];
    if (f.leaf) return load(plan_.stored_in.at(u), *u->shape(), c);
    if (u->op == Op::Const || u->op == Op::DefineVar) return u;
    if (is_pass_through(u->op)) return value_of(f.children[0]);
    if (u->op == Op::Stack) {  // source k where the leading index is k
      const UOp* v = value_of(f.children.back());
      for (size_t k = f.children.size() - 1; k-- > 0;)
        v = g_.alu(Op::Where, g_.alu(Op::CmpEq, c.idx[0], g_.cint(int64_t(k))), value_of(f.children[k]), v);
      return v;
    }
    if (is_index_movement(u->op) || u->op == Op::Index) {
      if (f.empty) return zero_like(u->dtype);
      const UOp* v = value_of(f.children[0]);
      if (!f.pad_valid) return v;
      // outside the placed source the value is zero; a load gated by that condition is zero there already
      if (v->is_const_value(0) && !v->dtype.is_float()) return v;
      if (v->op == Op::Load && v->nsrc() == 3 && implies(v->src(2), f.pad_valid)) return v;
      return g_.alu(Op::Where, f.pad_valid, v, zero_like(u->dtype));
    }
    if (u->op == Op::Bitcast) {
      DType from = u->src(0)->dtype, to = u->dtype;
      if (from.itemsize() == to.itemsize()) {
        const UOp* v = value_of(f.children[0]);
        if (from == to) return v;
        if (from.is_bool() || to.is_bool()) return g_.cast(v, to);  // a bool's byte is 0 or 1
        return g_.make(Op::Bitcast, to, {v}, to);
      }
      DType ut = uint_of(to.itemsize());
      if (from.itemsize() > to.itemsize()) {  // little-endian: piece m is bits [8*to*m, 8*to*(m+1))
        DType uf = uint_of(from.itemsize());
        const UOp* bits = to_uint(value_of(f.children[0]));
        const UOp* shift = simplify_index(g_, g_.alu(Op::Mul, f.part, g_.cint(8 * to.itemsize())));
        return from_uint(g_.cast(g_.alu(Op::Shr, bits, g_.cast(shift, uf)), ut), to);
      }
      const UOp* acc = nullptr;
      for (size_t m = 0; m < f.children.size(); m++) {
        const UOp* w = g_.cast(to_uint(value_of(f.children[m])), ut);
        if (m) w = g_.alu(Op::Shl, w, g_.cint(int64_t(8 * from.itemsize() * m), ut));
        acc = acc ? g_.alu(Op::Or, acc, w) : w;
      }
      return from_uint(acc, to);
    }
    if (u->op == Op::Reduce) {
      Op rop = u->as<ReduceArg>().op;
      if (f.empty) return identity_of(g_, rop, u->dtype);
      const UOp* v = value_of(f.children[0]);
      if (f.ranges.empty()) return v;  // only size-1 axes: nothing to combine
      std::vector<const UOp*> src{v};
      src.insert(src.end(), f.ranges.begin(), f.ranges.end());
      // A reduce of a reduce is one reduce over both, except a sum or product of floats narrower than
      // float32: those accumulate in float32 (codegen's reduce), and the inner one's result rounded to
      // its dtype is part of the value (fp8 rows [9, 0.5] sum to 10, three of them to 30; one sum of
      // all six gives 28.5, which rounds to 28).
      const bool rounds_between = u->dtype.is_float() && u->dtype.bits() < 32 && (rop == Op::Add || rop == Op::Mul);
      if (v->op == Op::Reduce && v->as<ReduceArg>().op == rop && !rounds_between) {
        src = {v->src(0)};
        src.insert(src.end(), f.ranges.begin(), f.ranges.end());
        src.insert(src.end(), v->src().begin() + 1, v->src().end());
      }
      return g_.make(Op::Reduce, u->dtype, src, ReduceArg{rop, {}});
    }
    std::vector<const UOp*> src;
    for (const Child& ch : f.children) src.push_back(value_of(ch));
    return g_.make(u->op, u->dtype, src, u->arg);
  }

  // Lowers `root` at index context `rctx`: an explicit stack, since tensor graphs can be deep.
  const UOp* lower(const UOp* root, int rctx) {
    std::vector<Frame> stack;
    stack.reserve(64);
    stack.emplace_back(root, rctx);
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (!f.expanded) {
        if (f.node->op == Op::Reduce && !is_leaf(f.node)) check_reduce_scope(f.node, f.ctx, stack);
        if (memo_.count(key(f.node, f.ctx))) {
          stack.pop_back();
          continue;
        }
        note_use(f.node, f.ctx);
        if (!is_leaf(f.node) && findings_.flagged(f.node)) store_now_(f.node);  // from here on: a load
        f.expanded = true;
        expand(f);
        open_reduce_.insert(open_reduce_.end(), f.ranges.begin(), f.ranges.end());
        const size_t at = stack.size() - 1;  // pushing invalidates f: index the frame instead
        for (size_t k = f.children.size(); k-- > 0;) {
          const Child c = stack[at].children[k];
          if (!memo_.count(key(c.node, c.ctx))) stack.emplace_back(c.node, c.ctx);
        }
        continue;
      }
      const UOp* v = build(f);
      open_reduce_.resize(open_reduce_.size() - f.ranges.size());
      memo_.emplace(key(f.node, f.ctx), v);
      std::vector<int> reads = reads_of(f);
      if (reads.size() > kMaxInlineReads && !f.leaf && findings_.value_shared.count(f.node)) findings_.costly(f.node);
      reads_.emplace(key(f.node, f.ctx), std::move(reads));
      stack.pop_back();
    }
    return memo_.at(key(root, rctx));
  }

  // tinygrad style: E_<loop sizes> for elementwise kernels, r_<loop sizes>_<reduce sizes> when
  // the kernel reduces.
  std::string kernel_name(const UOp* store) {
    std::vector<const UOp*> reduces;
    std::unordered_set<const UOp*> ranges;
    collect_ranges(store, ranges);
    for (const UOp* r : ranges)
      if (r->as<RangeArg>().type == AxisType::Reduce) reduces.push_back(r);
    std::sort(reduces.begin(), reduces.end(),
              [](const UOp* a, const UOp* b) { return a->as<RangeArg>().id < b->as<RangeArg>().id; });
    std::string name = reduces.empty() ? "E" : "r";
    for (const UOp* r : loops_) name += "_" + dim_name(r->src(0));
    for (const UOp* r : reduces) name += "_" + dim_name(r->src(0));
    return name;
  }

  Graph& g_;
  Plan& plan_;
  KernelSpec spec_;
  int kernel_no_;
  Findings& findings_;
  const std::function<void(const UOp*)>& store_now_;
  std::vector<IndexCtx> ctxs_;
  std::map<std::vector<const UOp*>, int> ctx_ids_;
  std::unordered_map<uint64_t, const UOp*> memo_;
  std::unordered_map<uint64_t, std::vector<int>> reads_;
  std::unordered_map<const UOp*, int> variants_;
  std::vector<const UOp*> loops_;
  std::vector<const UOp*> open_reduce_;  // ranges of the Reduces being lowered around this point
  std::vector<int> slots_;
  std::unordered_map<int, const UOp*> params_;
  int64_t next_range_ = 0;
};

}  // namespace

LoweredKernel lower_kernel(Graph& g, Plan& plan, const KernelSpec& spec, int kernel_no, Findings& findings,
                           const std::function<void(const UOp*)>& store_now) {
  return Lowerer(g, plan, spec, kernel_no, findings, store_now).run();
}

}  // namespace sn::sched
