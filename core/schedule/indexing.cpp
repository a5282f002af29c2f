#include "core/schedule/indexing.h"

#include <algorithm>

#include "core/symbolic/symbolic.h"
#include "core/util/checked.h"

namespace sn::sched {

namespace {

bool is_one(const Dim& d) { return d.is_const() && d.value == 1; }

const UOp* add(Graph& g, const UOp* a, const UOp* b) { return g.alu(Op::Add, a, b); }
const UOp* mul(Graph& g, const UOp* a, const UOp* b) { return g.alu(Op::Mul, a, b); }
// a - b in the ops index math uses (Add, Mul; Sub is a decomposed op codegen need not see).
const UOp* sub(Graph& g, const UOp* a, const UOp* b) {
  if (b->is_const()) return add(g, a, g.cint(-int64_t(b->const_int())));
  return add(g, a, mul(g, b, g.cint(-1)));
}

// Multiplies two index scalars, folding constants so that static shapes give plain strides
// without a simplifier round trip.
const UOp* mul_fold(Graph& g, const UOp* a, const UOp* b) {
  if (a->is_const() && b->is_const())
    return g.cint(checked_mul(int64_t(a->const_int()), int64_t(b->const_int()), "index: stride"));
  if (a->is_const_value(1)) return b;
  if (b->is_const_value(1)) return a;
  return mul(g, a, b);
}

}  // namespace

const UOp* simplify_index(Graph& g, const UOp* e) { return simplify(g, e); }

const UOp* dim_uop(Graph& g, const Dim& d) { return d.is_const() ? g.cint(d.value) : d.sym; }

const UOp* numel_uop(Graph& g, std::span<const Dim> dims) {
  const UOp* n = g.cint(1);
  for (const Dim& d : dims) n = mul_fold(g, n, dim_uop(g, d));
  return n;
}

const UOp* linear_index(Graph& g, const Shape& shape, std::span<const UOp* const> idx) {
  const UOp* flat = g.cint(0);
  const UOp* stride = g.cint(1);
  for (size_t k = shape.size(); k-- > 0;) {
    if (!is_one(shape[k])) flat = add(g, flat, mul(g, idx[k], stride));
    stride = mul_fold(g, stride, dim_uop(g, shape[k]));
  }
  return simplify_index(g, flat);
}

const UOp* and_valid(Graph& g, const UOp* a, const UOp* b) {
  if (a == nullptr) return b;
  if (b == nullptr) return a;
  return simplify_index(g, g.alu(Op::And, a, b));
}

IndexCtx through_movement(Graph& g, const UOp* mop, const IndexCtx& out, const UOp** pad_valid) {
  const Shape& in = *mop->src(0)->shape();
  const Shape& os = *mop->shape();
  IndexCtx r;
  r.valid = out.valid;
  if (pad_valid) *pad_valid = nullptr;
  switch (mop->op) {
    case Op::Permute: {
      // output axis k is input axis perm[k]
      const auto& perm = mop->as<std::vector<int64_t>>();
      r.idx.assign(in.size(), nullptr);
      for (size_t k = 0; k < perm.size(); k++) r.idx[size_t(perm[k])] = out.idx[k];
      return r;
    }
    case Op::Expand:
      // a broadcast size-1 axis reads its only element whatever the output index
      for (size_t k = 0; k < in.size(); k++) r.idx.push_back(is_one(in[k]) && !is_one(os[k]) ? g.cint(0) : out.idx[k]);
      return r;
    case Op::Flip: {
      const auto& flags = mop->as<std::vector<int64_t>>();
      for (size_t k = 0; k < in.size(); k++) {
        const UOp* i = out.idx[k];
        if (flags[k]) i = simplify_index(g, sub(g, sub(g, dim_uop(g, in[k]), g.cint(1)), i));
        r.idx.push_back(i);
      }
      return r;
    }
    case Op::Shrink: {
      Shape off = as_shape(mop->src(1));
      for (size_t k = 0; k < in.size(); k++) {
        const UOp* i = out.idx[k];
        if (!(off[k].is_const() && off[k].value == 0)) i = simplify_index(g, add(g, i, dim_uop(g, off[k])));
        r.idx.push_back(i);
      }
      return r;
    }
    case Op::Pad: {
      Shape off = as_shape(mop->src(1));
      const UOp* own = nullptr;
      for (size_t k = 0; k < in.size(); k++) {
        const UOp* i = out.idx[k];
        bool zero_off = off[k].is_const() && off[k].value == 0;
        const UOp* o = dim_uop(g, off[k]);
        // off <= i, written as off - 1 < i (index math is exact)
        if (!zero_off) own = and_valid(g, own, g.alu(Op::CmpLt, sub(g, o, g.cint(1)), i));
        // i < off + size is implied by the output range when the pad adds nothing at the end
        const UOp* end = simplify_index(g, add(g, o, dim_uop(g, in[k])));
        const UOp* out_dim = dim_uop(g, os[k]);
        if (end != out_dim) own = and_valid(g, own, g.alu(Op::CmpLt, i, end));
        r.idx.push_back(zero_off ? i : simplify_index(g, sub(g, i, o)));
      }
      if (own) own = simplify_index(g, own);
      if (own && own->is_const()) {
        if (own->const_int() != 0) own = nullptr;  // always inside
      }
      if (pad_valid) *pad_valid = own;
      r.valid = and_valid(g, out.valid, own);
      return r;
    }
    case Op::Reshape: {
      if (in == os) {
        r.idx = out.idx;
        return r;
      }
      // A reshape of no elements ((0,) to (0, 3, 2)) has no index that is ever used (a pad around
      // it is gated off everywhere there), and its dims need not pair up into blocks of equal count.
      auto empty = [](const Shape& s) {
        return std::any_of(s.begin(), s.end(), [](const Dim& d) { return d.is_const() && d.value == 0; });
      };
      if (empty(in) || empty(os)) {
        r.idx.assign(in.size(), g.cint(0));
        return r;
      }
      r.idx.assign(in.size(), nullptr);
      // Row-major re-linearization of input dims [i0, i1) from output dims [j0, j1) of the same
      // element count: the flat position in those output dims, split by the input dims' strides.
      auto relinearize = [&](size_t i0, size_t i1, size_t j0, size_t j1) {
        Shape part(os.begin() + long(j0), os.begin() + long(j1));
        std::vector<const UOp*> part_idx(out.idx.begin() + long(j0), out.idx.begin() + long(j1));
        const UOp* flat = linear_index(g, part, part_idx);
        const UOp* stride = g.cint(1);
        for (size_t k = i1; k-- > i0;) {
          if (is_one(in[k])) {
            r.idx[k] = g.cint(0);
            continue;
          }
          const UOp* e = flat;
          if (!stride->is_const_value(1)) e = g.alu(Op::Idiv, e, stride);
          if (k != i0) e = g.alu(Op::Mod, e, dim_uop(g, in[k]));  // the first: flat < the part's numel
          r.idx[k] = simplify_index(g, e);
          stride = mul_fold(g, stride, dim_uop(g, in[k]));
        }
      };
      // The shapes split into blocks of equal element count (a dim kept as it is, dims merged or
      // split); each block is re-linearized on its own, and a kept dim passes its index straight
      // through. Re-linearizing the whole shape instead left a padded window's index, which leaves
      // its axis at the border (gated there), inside an idiv/mod by the feature map's size in every
      // load of a convolution whose input had been reshaped (ResNet-18's 3x3 convolutions read
      // their channel as (c + (pos + 3079) / 3136) % 64 and ran 3x slower).
      size_t i = 0, jj = 0;
      while (i < in.size() || jj < os.size()) {
        if (i < in.size() && is_one(in[i])) {
          r.idx[i++] = g.cint(0);
          continue;
        }
        if (jj < os.size() && is_one(os[jj])) {
          jj++;
          continue;
        }
        if (i == in.size() || jj == os.size())
          fail(Code::Internal, "rangeify: reshape of ", shape_str(in), " to ", shape_str(os),
               " changes the element count");
        size_t i1 = i + 1, j1 = jj + 1;
        if (in[i] == os[jj]) {
          r.idx[i] = out.idx[jj];
        } else {
          // grow the block until both sides hold the same element count; a symbolic dim in a
          // merge or split makes the rest of the shapes one block
          bool ok = in[i].is_const() && os[jj].is_const();
          int64_t pin = in[i].value, pout = os[jj].value;
          while (ok && pin != pout) {
            if (pin < pout) {
              ok = i1 < in.size() && in[i1].is_const() && !__builtin_mul_overflow(pin, in[i1].value, &pin);
              i1++;
            } else {
              ok = j1 < os.size() && os[j1].is_const() && !__builtin_mul_overflow(pout, os[j1].value, &pout);
              j1++;
            }
          }
          if (!ok) {
            i1 = in.size();
            j1 = os.size();
          }
          relinearize(i, i1, jj, j1);
        }
        i = i1;
        jj = j1;
      }
      return r;
    }
    default:
      fail(Code::Internal, "rangeify: ", op_name(mop->op), " is not a movement op it indexes");
  }
}

IndexCtx through_broadcast(Graph& g, const Shape& src, const Shape& out, const IndexCtx& ctx) {
  IndexCtx r;
  r.valid = ctx.valid;
  size_t lead = out.size() - src.size();
  for (size_t k = 0; k < src.size(); k++)
    r.idx.push_back(is_one(src[k]) && !is_one(out[lead + k]) ? g.cint(0) : ctx.idx[lead + k]);
  return r;
}

}  // namespace sn::sched
