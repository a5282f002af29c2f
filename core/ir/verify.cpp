// The verifier: arity, dtype and arg rules per op, and shape derivation with the spec's
// movement-op rules. A violation throws Error(InvalidArg) naming the op, the rule and the values.
#include <algorithm>

#include "core/ir/graph.h"
#include "core/util/checked.h"

namespace sn {

namespace {

std::string_view nm(Op op) { return op_name(op); }

template <class... T>
[[noreturn]] void bad(Op op, const T&... parts) {
  fail(Code::InvalidArg, nm(op), ": ", parts...);
}

const Shape& shape_of(Op op, const UOp* s, size_t i) {
  if (!s->shape()) bad(op, "source ", i, " (", nm(s->op), ") has no shape");
  return *s->shape();
}

bool is_shape_operand(const UOp* u) {
  if (u->op != Op::Stack) return false;
  for (auto* d : u->src())
    if (!d->dtype.is_index() || !d->shape() || !d->shape()->empty()) return false;
  return true;
}

const UOp* shape_operand(Op op, std::span<const UOp* const> src, size_t i, const char* what) {
  if (!is_shape_operand(src[i]))
    bad(op, what, " (source ", i, ") must be a Stack of index scalars, got ", nm(src[i]->op), " of ",
        src[i]->dtype.name());
  return src[i];
}

// Broadcast right-aligned; each axis equal or 1.
Shape broadcast(Op op, std::span<const UOp* const> src) {
  Shape out;
  for (size_t i = 0; i < src.size(); i++) {
    const Shape& s = shape_of(op, src[i], i);
    if (s.size() > out.size()) out.insert(out.begin(), s.size() - out.size(), Dim::of(1));
    size_t off = out.size() - s.size();
    for (size_t k = 0; k < s.size(); k++) {
      Dim& o = out[off + k];
      const Dim& d = s[k];
      if (o == d || (d.is_const() && d.value == 1)) continue;
      if (o.is_const() && o.value == 1) {
        o = d;
        continue;
      }
      std::string shapes;
      for (size_t j = 0; j < src.size(); j++) shapes += (j ? " and " : "") + shape_str(*src[j]->shape());
      bad(op, "shapes ", shapes, " do not broadcast (axis ", int64_t(off + k) - int64_t(out.size()), ")");
    }
  }
  return out;
}

bool same_value_type(DType a, DType b) { return a.scalar == b.scalar && a.lanes == b.lanes && a.ptr == b.ptr; }

void need_dtype_arg(Op op, DType dtype, const Arg& arg) {
  auto* d = std::get_if<DType>(&arg);
  if (!d) bad(op, "arg must be the target dtype");
  if (!(*d == dtype)) bad(op, "node dtype ", dtype.name(), " differs from the target dtype arg ", d->name());
}

std::vector<int64_t> norm_axes(Op op, const std::vector<int64_t>& axes, size_t rank, const char* what) {
  std::vector<int64_t> out;
  for (auto a : axes) {
    if (a < -int64_t(rank) || a >= int64_t(rank)) bad(op, what, " axis ", a, " is out of range for rank ", rank);
    out.push_back(a < 0 ? a + int64_t(rank) : a);
  }
  auto sorted = out;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) bad(op, what, " axes repeat an axis");
  return out;
}

// The constant dims of a shape (its symbolic dims left out).
std::vector<int64_t> const_dims(const Shape& s) {
  std::vector<int64_t> out;
  for (auto& d : s)
    if (d.is_const()) out.push_back(d.value);
  return out;
}

// Product check for Reshape with possibly symbolic dims: constant parts equal and the same
// multiset of symbolic dims.
// A symbolic dim's factors: a product (Mul tree) of constants and other index uops contributes its
// constants to *c and its other factors to `out`, so a dim written as the product of others (t*2,
// input_sym's flat view) compares equal to them.
void dim_factors(const UOp* d, int64_t* c, std::vector<const UOp*>& out) {
  if (d->op == Op::Mul) {
    dim_factors(d->src(0), c, out);
    dim_factors(d->src(1), c, out);
  } else if (d->op == Op::Const && d->holds<int64_t>()) {
    *c = checked_mul(*c, d->as<int64_t>(), "Reshape: symbolic element count");
  } else {
    out.push_back(d);
  }
}

bool same_numel(Op op, const Shape& a, const Shape& b) {
  int64_t pa = checked_numel(const_dims(a), nm(op), ": source");
  int64_t pb = checked_numel(const_dims(b), nm(op), ": new shape");
  std::vector<const UOp*> sa, sb;
  for (auto& d : a)
    if (!d.is_const()) dim_factors(d.sym, &pa, sa);
  for (auto& d : b)
    if (!d.is_const()) dim_factors(d.sym, &pb, sb);
  std::sort(sa.begin(), sa.end());
  std::sort(sb.begin(), sb.end());
  if (pa == 0 || pb == 0) return pa == pb;
  return pa == pb && sa == sb;
}

}  // namespace

void verify_node(Op op, DType dtype, std::span<const UOp* const> src, const Arg& arg) {
  const OpInfo& info = op_info(op);
  if (int(src.size()) < info.min_src || (info.max_src >= 0 && int(src.size()) > info.max_src)) {
    if (info.min_src == info.max_src) bad(op, "needs ", int(info.min_src), " sources, got ", src.size());
    if (info.max_src < 0) bad(op, "needs at least ", int(info.min_src), " sources, got ", src.size());
    bad(op, "needs ", int(info.min_src), " to ", int(info.max_src), " sources, got ", src.size());
  }
  if (dtype.lanes == 0) bad(op, "dtype has 0 lanes");
  auto src_dt = [&](size_t i) { return src[i]->dtype; };
  switch (info.category) {
    case OpCategory::Binary: {
      if (!same_value_type(src_dt(0), src_dt(1)))
        bad(op, "dtype mismatch: ", src_dt(0).name(), " vs ", src_dt(1).name());
      DType in = src_dt(0);
      if (is_comparison(op)) {
        if (!(dtype == DType(Scalar::Bool).vec(in.lanes))) bad(op, "result dtype must be bool, got ", dtype.name());
      } else if (!same_value_type(dtype, in)) {
        bad(op, "result dtype ", dtype.name(), " differs from the source dtype ", in.name());
      }
      if ((op == Op::Idiv || op == Op::Mod || op == Op::CDiv || op == Op::CMod || op == Op::Shl || op == Op::Shr) &&
          !in.is_int())
        bad(op, "needs integer sources, got ", in.name());
      if ((op == Op::And || op == Op::Or || op == Op::Xor) && !(in.is_int() || in.scalar == Scalar::Bool))
        bad(op, "needs integer or bool sources, got ", in.name());
      if ((op == Op::Div || op == Op::Pow) && !in.is_float()) bad(op, "needs float sources, got ", in.name());
      if (op == Op::Threefry && in.scalar != Scalar::UInt64) bad(op, "needs uint64 sources, got ", in.name());
      break;
    }
    case OpCategory::Unary: {
      DType in = src_dt(0);
      if (op == Op::Cast) {
        need_dtype_arg(op, dtype, arg);
        if (in.ptr || dtype.ptr || in.is_void() || dtype.is_void())
          bad(op, "cannot cast ", in.name(), " to ", dtype.name());
        if (in.lanes != dtype.lanes) bad(op, "lane count changes: ", in.name(), " to ", dtype.name());
        break;
      }
      if (!same_value_type(dtype, in))
        bad(op, "result dtype ", dtype.name(), " differs from the source dtype ", in.name());
      if ((op == Op::Recip || op == Op::Exp2 || op == Op::Log2 || op == Op::Sin || op == Op::Sqrt) && !in.is_float())
        bad(op, "needs a float source, got ", in.name());
      if (op == Op::Not && !(in.scalar == Scalar::Bool || in.is_int()))
        bad(op, "needs a bool or integer source, got ", in.name());
      if ((op == Op::Neg || op == Op::Trunc) && !(in.is_float() || in.is_int()))
        bad(op, "needs a numeric source, got ", in.name());
      break;
    }
    case OpCategory::Ternary:
      if (op == Op::Where) {
        if (src_dt(0).scalar != Scalar::Bool) bad(op, "condition must be bool, got ", src_dt(0).name());
        if (!same_value_type(src_dt(1), src_dt(2)))
          bad(op, "dtype mismatch: ", src_dt(1).name(), " vs ", src_dt(2).name());
        if (!same_value_type(dtype, src_dt(1)))
          bad(op, "result dtype must be ", src_dt(1).name(), ", got ", dtype.name());
      } else {  // Mulacc
        for (size_t i = 1; i < 3; i++)
          if (!same_value_type(src_dt(0), src_dt(i)))
            bad(op, "dtype mismatch: ", src_dt(0).name(), " vs ", src_dt(i).name());
        if (!same_value_type(dtype, src_dt(0))) bad(op, "result dtype must be ", src_dt(0).name());
      }
      break;
    default:
      break;
  }
  switch (op) {
    case Op::Const: {
      if (dtype.is_void() || dtype.ptr) bad(op, "dtype must be a value type, got ", dtype.name());
      if (dtype.lanes != 1) bad(op, "must be scalar (build vectors with Stack), got ", dtype.name());
      if (dtype.is_float() ? !std::holds_alternative<double>(arg) : !std::holds_alternative<int64_t>(arg))
        bad(op, "arg must be ", dtype.is_float() ? "a float" : "an integer", " value for ", dtype.name());
      break;
    }
    case Op::DefineVar: {
      auto* v = std::get_if<VarArg>(&arg);
      if (!v) bad(op, "arg must be (name, min, max)");
      if (v->min > v->max) bad(op, "variable ", v->name, " has min ", v->min, " > max ", v->max);
      if (!dtype.is_int()) bad(op, "dtype must be an integer type, got ", dtype.name());
      break;
    }
    case Op::Buffer: {
      auto* b = std::get_if<BufferArg>(&arg);
      if (!b) bad(op, "arg must be (id, size, device, addrspace)");
      if (b->size < 0) bad(op, "size ", b->size, " is negative");
      if (dtype.is_void() || dtype.ptr) bad(op, "dtype must be the element type, got ", dtype.name());
      break;
    }
    case Op::Param:
      if (!std::holds_alternative<ParamArg>(arg)) bad(op, "arg must be (slot, device, addrspace)");
      if (std::get<ParamArg>(arg).slot < 0) bad(op, "slot ", std::get<ParamArg>(arg).slot, " is negative");
      break;
    case Op::Binary:
      if (!std::holds_alternative<std::string>(arg)) bad(op, "arg must be the data bytes");
      if (!(dtype == dtypes::uint8)) bad(op, "dtype must be uint8, got ", dtype.name());
      break;
    case Op::Bitcast:
      need_dtype_arg(op, dtype, arg);
      if (dtype.ptr || src_dt(0).ptr || dtype.is_void())
        bad(op, "cannot bitcast ", src_dt(0).name(), " to ", dtype.name());
      break;
    case Op::Reduce: {
      auto* r = std::get_if<ReduceArg>(&arg);
      if (!r) bad(op, "arg must be (op, axes)");
      if (r->op != Op::Add && r->op != Op::Max && r->op != Op::Mul)
        bad(op, "reduce op must be Add, Max or Mul, got ", nm(r->op));
      if (!same_value_type(dtype, src_dt(0))) bad(op, "result dtype must be ", src_dt(0).name());
      for (size_t i = 1; i < src.size(); i++)
        if (src[i]->op != Op::Range) bad(op, "source ", i, " must be a Range, got ", nm(src[i]->op));
      break;
    }
    case Op::Range: {
      auto* r = std::get_if<RangeArg>(&arg);
      if (!r) bad(op, "arg must be (id, axis type)");
      if (!src_dt(0).is_int()) bad(op, "bound must be an integer, got ", src_dt(0).name());
      if (!dtype.is_int()) bad(op, "dtype must be an integer type, got ", dtype.name());
      break;
    }
    case Op::Special:
      if (!std::holds_alternative<std::string>(arg)) bad(op, "arg must be the index name");
      break;
    case Op::Store:
      if (!dtype.is_void()) bad(op, "dtype must be void, got ", dtype.name());
      break;
    case Op::Sink:
    case Op::Group:
    case Op::End:
    case Op::Barrier:
    case Op::If:
    case Op::Endif:
      if (!dtype.is_void()) bad(op, "dtype must be void, got ", dtype.name());
      break;
    case Op::GetTuple:
      if (!std::holds_alternative<int64_t>(arg)) bad(op, "arg must be the element index");
      break;
    case Op::Load:
    case Op::Copy:
      if (!std::holds_alternative<MemArg>(arg) && !std::holds_alternative<std::monostate>(arg))
        bad(op, "arg must be (device, addrspace)");
      break;
    case Op::Permute:
    case Op::Flip:
    case Op::Replicated:
      if (!std::holds_alternative<std::vector<int64_t>>(arg)) bad(op, "arg must be a list of integers");
      break;
    case Op::Slice:
      if (!std::holds_alternative<SliceArg>(arg)) bad(op, "arg must be (size, dtype)");
      break;
    default:
      break;
  }
}

namespace {

bool derive_shape_of(Op op, DType dtype, std::span<const UOp* const> src, const Arg& arg, Shape* out) {
  Shape& s = *out;
  switch (op) {
    case Op::Const:
    case Op::DefineVar:
    case Op::Range:
    case Op::Special:
    case Op::Store:
    case Op::Vectorize:
    case Op::Gep:
    case Op::Wmma:
    case Op::AtomicAdd:
    case Op::Custom:
    case Op::Ins:
      return true;  // scalar: ()
    case Op::Buffer: {
      auto& b = std::get<BufferArg>(arg);
      int64_t n = b.device.tuple ? int64_t(b.device.names.size()) : 1;
      s = {Dim::of(
          checked_mul(b.size, n, nm(op), ": size x devices of ", b.device.tuple ? "a device tuple" : "one device"))};
      return true;
    }
    case Op::Binary:
      s = {Dim::of(int64_t(std::get<std::string>(arg).size()))};
      return true;
    case Op::Param:
      s = as_shape(shape_operand(op, src, 0, "shape"));
      return true;
    case Op::Slice:
      s = {Dim::of(std::get<SliceArg>(arg).size)};
      return true;
    case Op::Cast:
    case Op::Load:
    case Op::Copy:
    case Op::After:
    case Op::Contiguous:
    case Op::ContiguousBackward:
    case Op::Detach:
    case Op::Stage:
      s = shape_of(op, src[0], 0);
      return true;
    case Op::Bitcast: {
      s = shape_of(op, src[0], 0);
      int from = src[0]->dtype.itemsize(), to = dtype.itemsize();
      if (from == to) return true;
      if (s.empty()) bad(op, "a scalar cannot change size from ", src[0]->dtype.name(), " to ", dtype.name());
      Dim& last = s.back();
      if (!last.is_const()) bad(op, "cannot rescale a symbolic last axis");
      int64_t bytes = checked_mul(last.value, from, nm(op), ": bytes of the last axis of ", src[0]->dtype.name(),
                                  " (elements * itemsize)");
      if (bytes % to) bad(op, "last axis of ", last.value, " x ", from, " bytes is not a multiple of ", to, " bytes");
      last.value = bytes / to;
      return true;
    }
    case Op::Reshape: {
      const Shape& in = shape_of(op, src[0], 0);
      s = as_shape(shape_operand(op, src, 1, "shape"));
      for (auto& d : s)
        if (d.is_const() && d.value < 0) bad(op, "dimension ", d.value, " is negative in ", shape_str(s));
      if (!same_numel(op, in, s)) bad(op, "element count changes: ", shape_str(in), " to ", shape_str(s));
      return true;
    }
    case Op::Expand: {
      const Shape& in = shape_of(op, src[0], 0);
      s = as_shape(shape_operand(op, src, 1, "shape"));
      if (s.size() != in.size())
        bad(op, "rank changes from ", in.size(), " to ", s.size(), " (", shape_str(in), " to ", shape_str(s), ")");
      for (size_t k = 0; k < s.size(); k++)
        if (!(in[k] == s[k]) && !(in[k].is_const() && in[k].value == 1))
          bad(op, "axis ", k, " of ", shape_str(in), " is not 1 and cannot expand to ", shape_str(s));
      return true;
    }
    case Op::Pad:
    case Op::Shrink: {
      const Shape& in = shape_of(op, src[0], 0);
      Shape off = as_shape(shape_operand(op, src, 1, "offsets"));
      s = as_shape(shape_operand(op, src, 2, "sizes"));
      if (off.size() != in.size() || s.size() != in.size())
        bad(op, "offsets ", shape_str(off), " and sizes ", shape_str(s), " must have rank ", in.size());
      for (size_t k = 0; k < in.size(); k++) {
        if (!off[k].is_const() || !s[k].is_const() || !in[k].is_const()) continue;  // symbolic: checked at run time
        int64_t o = off[k].value, n = s[k].value, d = in[k].value;
        if (o < 0 || n < 0) bad(op, "axis ", k, ": negative offset ", o, " or size ", n);
        if (op == Op::Pad && checked_add(o, d, nm(op), ": axis ", k, " offset + size") > n)
          bad(op, "axis ", k, ": offset ", o, " + size ", d, " exceeds the padded size ", n, " (input ", shape_str(in),
              ")");
        if (op == Op::Shrink && checked_add(o, n, nm(op), ": axis ", k, " offset + size") > d)
          bad(op, "axis ", k, ": offset ", o, " + size ", n, " exceeds the axis size ", d, " (input ", shape_str(in),
              ")");
      }
      return true;
    }
    case Op::Permute: {
      const Shape& in = shape_of(op, src[0], 0);
      auto& p = std::get<std::vector<int64_t>>(arg);
      std::vector<int64_t> sorted = p;
      std::sort(sorted.begin(), sorted.end());
      bool ok = p.size() == in.size();
      for (size_t k = 0; ok && k < sorted.size(); k++) ok = sorted[k] == int64_t(k);
      if (!ok) {
        std::string ps;
        for (size_t k = 0; k < p.size(); k++) ps += (k ? "," : "") + std::to_string(p[k]);
        bad(op, "(", ps, ") is not a permutation of the ", in.size(), " axes of ", shape_str(in));
      }
      for (auto a : p) s.push_back(in[size_t(a)]);
      return true;
    }
    case Op::Flip: {
      s = shape_of(op, src[0], 0);
      auto& f = std::get<std::vector<int64_t>>(arg);
      if (f.size() != s.size()) bad(op, "needs one flag per axis: ", f.size(), " flags for ", shape_str(s));
      for (auto x : f)
        if (x != 0 && x != 1) bad(op, "flags must be 0 or 1, got ", x);
      return true;
    }
    case Op::Replicated: {
      s = shape_of(op, src[0], 0);
      for (auto a : norm_axes(op, std::get<std::vector<int64_t>>(arg), s.size(), "replicated"))
        s[size_t(a)] = Dim::of(1);
      return true;
    }
    case Op::Reduce: {
      s = shape_of(op, src[0], 0);
      if (src.size() > 1) return true;  // kernel form: ranges are closed, value shape unchanged
      for (auto a : norm_axes(op, std::get<ReduceArg>(arg).axes, s.size(), "reduce")) s[size_t(a)] = Dim::of(1);
      return true;
    }
    case Op::Index: {
      const Shape& in = shape_of(op, src[0], 0);
      if (src[0]->dtype.ptr) return true;  // pointer arithmetic in kernels: scalar
      if (src.size() - 1 > in.size()) bad(op, src.size() - 1, " indices for rank ", in.size(), " ", shape_str(in));
      for (size_t i = 1; i < src.size(); i++) {
        const Shape& is = shape_of(op, src[i], i);
        if (!src[i]->dtype.is_int()) bad(op, "index ", i - 1, " must be an integer, got ", src[i]->dtype.name());
        if (is.size() > 1) bad(op, "index ", i - 1, " must have shape () or (k,), got ", shape_str(is));
        if (is.size() == 1) s.push_back(is[0]);
      }
      s.insert(s.end(), in.begin() + long(src.size() - 1), in.end());
      return true;
    }
    case Op::Stack: {
      if (src.empty()) {
        s = {Dim::of(0)};
        return true;
      }
      const Shape& first = shape_of(op, src[0], 0);
      for (size_t i = 1; i < src.size(); i++) {
        if (!(shape_of(op, src[i], i) == first))
          bad(op, "all shapes must match: source 0 is ", shape_str(first), ", source ", i, " is ",
              shape_str(*src[i]->shape()));
        if (!same_value_type(src[i]->dtype, src[0]->dtype))
          bad(op, "dtype mismatch: ", src[0]->dtype.name(), " vs ", src[i]->dtype.name());
      }
      s = {Dim::of(int64_t(src.size()))};
      s.insert(s.end(), first.begin(), first.end());
      return true;
    }
    case Op::GetTuple: {
      const UOp* t = src[0];
      if (t->op == Op::Function || t->op == Op::Call) t = t->src(0);
      int64_t i = std::get<int64_t>(arg);
      if (t->op != Op::Tuple) return false;
      if (i < 0 || i >= int64_t(t->nsrc())) bad(op, "index ", i, " is out of range for a tuple of ", t->nsrc());
      if (!t->src(size_t(i))->shape()) return false;
      s = *t->src(size_t(i))->shape();
      return true;
    }
    default:
      break;
  }
  OpCategory c = op_info(op).category;
  if (c == OpCategory::Unary || c == OpCategory::Binary || c == OpCategory::Ternary) {
    s = broadcast(op, src);
    return true;
  }
  return false;  // void ops (Sink, Group, End, Function, Tuple, Linear, Program, ...)
}

}  // namespace

bool checked_by_source_types(Op op) {
  switch (op) {
    case Op::Reduce:    // verify_node: its sources after the first must be Ranges
    case Op::GetTuple:  // derive_shape: the shape of its tuple's element
    case Op::Param:     // derive_shape: the values of a shape operand
    case Op::Reshape:
    case Op::Expand:
    case Op::Pad:
    case Op::Shrink:
      return false;
    default:
      return true;
  }
}

bool derive_shape(Op op, DType dtype, std::span<const UOp* const> src, const Arg& arg, Shape* out) {
  if (!derive_shape_of(op, dtype, src, arg, out)) return false;
  if (out->empty()) return true;  // a scalar: one element
  // Every shape in a graph has an element count that fits int64 (checked_numel), so the passes
  // after this (schedule, indexing, allocation) multiply dims without checks of their own. Shapes
  // of constant, non-negative dims whose product fits are checked here without a vector of their
  // dims (every node a graph interns comes through: 308k vectors lowering ResNet-18); the others
  // go to checked_numel, which names what is wrong.
  int64_t n = 1;
  for (const Dim& d : *out)
    if (!d.is_const() || d.value < 0 || __builtin_mul_overflow(n, d.value == 0 ? 1 : d.value, &n)) {
      (void)checked_numel(const_dims(*out), nm(op));
      break;
    }
  return true;
}

}  // namespace sn
