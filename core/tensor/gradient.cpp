// Reverse-mode differentiation over the tensor graph (the spec's "Gradient-able" ops).
//
// One rule per op turns the gradient of a node into the gradients of its sources (the chain rule
// for that op alone); `gradient` walks the nodes between the loss and the wrt tensors in reverse
// topological order and sums what reaches each node from its users. Rules build with the tensor
// builders, so a gradient graph is checked like any user graph and compiles the same way.
#include "core/tensor/gradient.h"

#include <numbers>
#include <unordered_map>
#include <unordered_set>

#include "core/tensor/compose.h"
#include "core/tensor/function.h"
#include "core/tensor/tensor.h"

namespace sn {

namespace {

using Dims = std::vector<int64_t>;

const UOp* scalar(Graph& g, const UOp* like, double v) { return constant(g, like->dtype, v); }

// Shapes may be symbolic (a batch variable) wherever a rule keeps each dim where it is; the rules
// that move data between positions (Stack, Slice, Index) take constant shapes.
const UOp* full_like(Graph& g, const UOp* x, double v) {
  const Shape& s = sym_shape(x, "gradient");
  return expand_sym(g, reshape(g, scalar(g, x, v), Dims(s.size(), 1)), s);
}

bool is_one(const Dim& d) { return d.is_const() && d.value == 1; }

// Sums a gradient of the broadcast result shape back to the shape of the operand `src` (elementwise
// ops broadcast their operands right-aligned, so the gradient of a broadcast operand is the sum over
// the axes it was broadcast along).
const UOp* unbroadcast(Graph& g, const UOp* grad, const UOp* src) {
  const Shape &gs = sym_shape(grad, "gradient"), &ss = sym_shape(src, "gradient");
  if (gs == ss) return grad;
  size_t lead = gs.size() - ss.size();
  Dims axes;
  for (size_t k = 0; k < gs.size(); k++)
    if (k < lead || (is_one(ss[k - lead]) && !is_one(gs[k]))) axes.push_back(int64_t(k));
  return reshape_sym(g, reduce(g, grad, Op::Add, axes), ss);
}

Dims operand_dims(const UOp* shape_operand) {
  Dims out;
  for (const Dim& d : as_shape(shape_operand)) out.push_back(d.value);
  return out;
}

Dims inverse(const Dims& order) {
  Dims inv(order.size());
  for (size_t k = 0; k < order.size(); k++) inv[size_t(order[k])] = int64_t(k);
  return inv;
}

// Axes of `from` that are 1 where `to` is not (what an Expand broadcast).
Dims expanded_axes(const Shape& from, const Shape& to) {
  Dims axes;
  for (size_t k = 0; k < from.size(); k++)
    if (is_one(from[k]) && !is_one(to[k])) axes.push_back(int64_t(k));
  return axes;
}

// Pad (or Shrink) d back to x's shape at `offsets`; a symbolic axis passes through whole.
const UOp* pad_or_shrink_to(Graph& g, Op op, const UOp* d, const Dims& offsets, const UOp* x) {
  const Shape& to = *x->shape();
  if (shape_numel(to)) {
    Dims fixed;
    for (const Dim& dim : to) fixed.push_back(dim.value);
    return op == Op::Pad ? pad(g, d, offsets, fixed) : shrink(g, d, offsets, fixed);
  }
  return g.make(op, d->dtype, {d, g.shape_uop(offsets), g.shape_uop(to)});
}

constexpr double kLn2 = std::numbers::ln2;

// Index(x, i0, ...): each element of x receives the sum of the gradients of the points that read
// it. With q index axes in the result, the mask (result index axes..., x's indexed axes..., 1...)
// says which point reads which element; the gradient, broadcast over it, is summed over the
// result's index axes.
const UOp* index_gradient(Graph& g, const UOp* u, const UOp* d) {
  const UOp* x = u->src(0);
  Dims xs = static_shape(x), ds = static_shape(d);
  size_t m = u->nsrc() - 1, q = ds.size() - (xs.size() - m), rank = q + xs.size(), axis = 0;
  const UOp* mask = nullptr;
  for (size_t k = 0; k < m; k++) {
    const UOp* ix = cast(g, u->src(k + 1), dtypes::int64);
    Dims at(rank, 1), along(rank, 1);
    if (static_shape(ix).size() == 1) at[axis] = ds[axis], axis++;
    along[q + k] = xs[k];
    const UOp* hit = cmpeq(g, reshape(g, ix, at), reshape(g, arange(g, xs[k], dtypes::int64), along));
    mask = mask ? bitwise_and(g, mask, hit) : hit;
  }
  Dims dshape(ds.begin(), ds.begin() + long(q));
  dshape.insert(dshape.end(), m, 1);
  dshape.insert(dshape.end(), xs.begin() + long(m), xs.end());
  const UOp* spread = where(g, mask, reshape(g, d, dshape), constant(g, d->dtype, 0));
  Dims axes;
  for (size_t k = 0; k < q; k++) axes.push_back(int64_t(k));
  return reshape(g, reduce(g, spread, Op::Add, axes), xs);
}

// The gradient each source of `u` receives when `u` receives `d` (same shape as u), before
// unbroadcasting; nullptr = none. Only sources that carry float values are ever asked for.
std::vector<const UOp*> local_gradients(Graph& g, const UOp* u, const UOp* d) {
  auto x = [&] { return u->src(0); };
  auto y = [&] { return u->src(1); };
  auto c = [&](double v) { return scalar(g, u, v); };
  const UOp* none = nullptr;
  switch (u->op) {
    // elementwise (u = f(x, y, ...))
    case Op::Add:
      return {d, d};
    case Op::Sub:
      return {d, neg(g, d)};
    case Op::Mul:
      return {mul(g, d, y()), mul(g, d, x())};
    case Op::Div:
      return {divide(g, d, y()), neg(g, divide(g, mul(g, d, u), y()))};
    case Op::Neg:
      return {neg(g, d)};
    case Op::Recip:
      return {neg(g, mul(g, d, mul(g, u, u)))};
    case Op::Exp2:
      return {mul(g, d, mul(g, u, c(kLn2)))};
    case Op::Log2:
      return {divide(g, d, mul(g, x(), c(kLn2)))};
    case Op::Sin:
      return {mul(g, d, unary(g, Op::Sin, add(g, x(), c(std::numbers::pi / 2))))};
    case Op::Sqrt:
      return {divide(g, mul(g, d, c(0.5)), u)};
    case Op::Pow:  // x^y: y x^(y-1) and x^y ln x (taken as 0 where x <= 0, which has no real log)
      return {mul(g, d, mul(g, y(), binary(g, Op::Pow, x(), sub(g, y(), c(1))))),
              where(g, cmpgt(g, x(), c(0)), mul(g, d, mul(g, u, mul(g, unary(g, Op::Log2, x()), c(kLn2)))), c(0))};
    case Op::Max:  // the larger side takes it all; a tie splits it evenly
      return {where(g, cmpgt(g, x(), y()), d, where(g, cmpeq(g, x(), y()), mul(g, d, c(0.5)), c(0))),
              where(g, cmpgt(g, y(), x()), d, where(g, cmpeq(g, x(), y()), mul(g, d, c(0.5)), c(0)))};
    case Op::Mulacc:
      return {mul(g, d, y()), mul(g, d, x()), d};
    case Op::Where:
      return {none, where(g, x(), d, c(0)), where(g, x(), c(0), d)};
    case Op::Trunc:
      return {none};  // piecewise constant: zero almost everywhere
    case Op::Cast:
      return {cast(g, d, x()->dtype)};
    // movement
    case Op::Reshape:
      return {reshape_sym(g, d, sym_shape(x()))};
    case Op::Permute:
      return {permute(g, d, inverse(u->as<Dims>()))};
    case Op::Flip:
      return {flip(g, d, u->as<Dims>())};
    case Op::Expand:
      return {reduce(g, d, Op::Add, expanded_axes(sym_shape(x()), sym_shape(u)))};
    case Op::Pad:
      return {pad_or_shrink_to(g, Op::Shrink, d, operand_dims(u->src(1)), x())};
    case Op::Shrink:
      return {pad_or_shrink_to(g, Op::Pad, d, operand_dims(u->src(1)), x())};
    case Op::Index:
      return {index_gradient(g, u, d)};
    case Op::Stack: {
      std::vector<const UOp*> parts;
      Dims ds = static_shape(d), off(ds.size(), 0), size = ds;
      size[0] = 1;
      for (size_t k = 0; k < u->nsrc(); k++) {
        off[0] = int64_t(k);
        parts.push_back(reshape(g, shrink(g, d, off, size), static_shape(u->src(k))));
      }
      return parts;
    }
    case Op::Slice: {
      if (u->as<SliceArg>().dtype != x()->dtype)
        fail(Code::Unsupported, "gradient: a Slice that reinterprets ", x()->dtype.name(), " as ", u->dtype.name(),
             " has no gradient; the loss depends on a wrt tensor through it");
      Dims xs = static_shape(x());
      return {reshape(g, pad(g, d, {int64_t(u->src(1)->const_int())}, {numel(xs)}), xs)};
    }
    // reductions (reduced axes keep size 1, so u and d broadcast against x)
    case Op::Reduce: {
      const ReduceArg& r = u->as<ReduceArg>();
      if (r.op == Op::Add) return {expand_sym(g, d, sym_shape(x()))};
      if (r.op == Op::Mul) return {divide(g, mul(g, d, u), x())};
      const UOp* hit = cast(g, cmpeq(g, x(), u), u->dtype);  // Max: split among the maxima
      return {mul(g, hit, divide(g, d, reduce(g, hit, Op::Add, r.axes)))};
    }
    // markers
    case Op::Contiguous:
      return {d};
    case Op::ContiguousBackward:
      return {g.make(Op::Contiguous, d->dtype, {d})};
    case Op::Detach:
      return {none};
    default:
      fail(Code::Unsupported, "gradient: ", op_name(u->op), " (", u->dtype.name(),
           ") has no gradient, and the loss depends on a wrt tensor through it");
  }
}

}  // namespace

const UOp* detach(Graph& g, const UOp* x) {
  static_shape(x, "detach");
  return g.make(Op::Detach, x->dtype, {x});
}

const UOp* contiguous_backward(Graph& g, const UOp* x) {
  static_shape(x, "contiguous_backward");
  return g.make(Op::ContiguousBackward, x->dtype, {x});
}

std::vector<const UOp*> gradient(Graph& g, const UOp* loss, std::span<const UOp* const> wrt) {
  Dims ls = static_shape(loss, "gradient: loss");
  if (!loss->dtype.is_float())
    fail(Code::InvalidArg, "gradient: the loss must be a float tensor, got ", loss->dtype.name());
  if (numel(ls) != 1)
    fail(Code::InvalidArg, "gradient: the loss must have one element (reduce it first), got shape ",
         shape_str(*loss->shape()));
  std::unordered_set<const UOp*> targets;
  for (size_t i = 0; i < wrt.size(); i++) {
    std::string what = cat("gradient: wrt[", i, "]");
    sym_shape(wrt[i], what.c_str());
    if (wrt[i]->graph() != loss->graph()) fail(Code::InvalidArg, what, " belongs to another graph than the loss");
    if (!wrt[i]->dtype.is_float())
      fail(Code::InvalidArg, what, " is ", wrt[i]->dtype.name(), ": gradients exist for float tensors only");
    targets.insert(wrt[i]);
  }

  // Calls are differentiated through their bodies (the spec's Function is gradient-able).
  loss = resolve_functions(g, {&loss, 1})[0];

  // Nodes on a path from a wrt tensor to the loss, through float values: only they get gradients.
  std::vector<const UOp*> order = toposort({&loss, 1});
  std::unordered_set<const UOp*> on_path;
  for (const UOp* u : order) {
    if (!u->dtype.is_float() || u->shape() == nullptr) continue;
    bool hit = targets.count(u) > 0;
    for (const UOp* s : u->src()) hit = hit || on_path.count(s) > 0;
    if (hit) on_path.insert(u);
  }

  std::unordered_map<const UOp*, const UOp*> grads;
  grads[loss] = full_like(g, loss, 1);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const UOp* u = *it;
    auto gi = grads.find(u);
    if (gi == grads.end() || !on_path.count(u)) continue;
    bool wanted = false;
    for (const UOp* s : u->src()) wanted = wanted || on_path.count(s) > 0;
    if (!wanted) continue;  // a wrt tensor itself, with nothing of interest below it
    if (u->op == Op::Bitcast)
      fail(Code::Unsupported, "gradient: Bitcast (", u->src(0)->dtype.name(), " to ", u->dtype.name(),
           ") reinterprets bits and has no gradient; the loss depends on a wrt tensor through it");
    std::vector<const UOp*> local = local_gradients(g, u, gi->second);
    for (size_t k = 0; k < local.size() && k < u->nsrc(); k++) {
      const UOp* s = u->src(k);
      if (local[k] == nullptr || !on_path.count(s)) continue;
      const UOp* d = is_elementwise(u->op) ? unbroadcast(g, local[k], s) : local[k];
      auto [at, fresh] = grads.emplace(s, d);
      if (!fresh) at->second = add(g, at->second, d);
    }
  }

  std::vector<const UOp*> out;
  for (const UOp* w : wrt) {
    auto gi = grads.find(w);
    out.push_back(gi != grads.end() ? gi->second : full_like(g, w, 0));
  }
  return out;
}

}  // namespace sn
