// Lazily derived properties: min/max, device, sharding axis, content hash. Each is computed
// once per node in topological order with an explicit stack, so deep graphs never recurse.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/ir/graph.h"
#include "core/util/checked.h"

namespace sn {

namespace {
enum : uint8_t { kMinMax = 1, kDevice = 2, kAxis = 4, kHash = 8 };

// Computes `compute(node)` for u and every source lacking `bit`, children first.
template <class F>
void ensure(const UOp* u, std::atomic<uint8_t>& (*flags)(const UOp*), uint8_t bit, F compute) {
  auto has = [&](const UOp* n) { return (flags(n).load(std::memory_order_acquire) & bit) != 0; };
  if (has(u)) return;
  // Most nodes are asked for right after they are made, over sources that have it: no stack.
  if (std::all_of(u->src().begin(), u->src().end(), has)) {
    compute(u);
    flags(u).fetch_or(bit, std::memory_order_release);
    return;
  }
  std::vector<std::pair<const UOp*, size_t>> stack{{u, 0}};
  while (!stack.empty()) {
    auto& [n, i] = stack.back();
    if (i < n->nsrc()) {
      const UOp* s = n->src(i++);
      if (!has(s)) stack.push_back({s, 0});
      continue;
    }
    if (!has(n)) {  // a shared child may have been finished through another path
      compute(n);
      flags(n).fetch_or(bit, std::memory_order_release);
    }
    stack.pop_back();
  }
}

constexpr i128 kBig = i128(1) << 100;  // clamp for exact integer bounds (never overflows i128)
i128 clampi(i128 v) { return std::max(-kBig, std::min(kBig, v)); }
// Saturating product: dtype ranges reach 2^64, whose square does not fit in i128.
i128 mul_sat(i128 a, i128 b) {
  i128 r;
  if (__builtin_mul_overflow(a, b, &r)) return ((a < 0) != (b < 0)) ? -kBig : kBig;
  return clampi(r);
}

MinMax dtype_range(DType dt) {
  MinMax m;
  if (dt.is_float()) {
    m.is_float = true;
    m.flo = -std::numeric_limits<double>::infinity();
    m.fhi = std::numeric_limits<double>::infinity();
  } else {
    m.lo = dt.int_min();
    m.hi = dt.int_max();
  }
  return m;
}
MinMax ints(i128 lo, i128 hi) {
  MinMax m;
  m.lo = clampi(lo);
  m.hi = clampi(hi);
  return m;
}
i128 floordiv(i128 a, i128 b) {
  i128 q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
  return q;
}
i128 floormod(i128 a, i128 b) { return a - floordiv(a, b) * b; }

// Bool result of a comparison whose outcome may be decided by the intervals.
MinMax decided(bool can_true, bool can_false) { return ints(can_false ? 0 : 1, can_true ? 1 : 0); }

MinMax compute_minmax(const UOp* u) {
  const DType dt = u->dtype;
  if (dt.ptr || dt.is_void()) return MinMax{};
  auto S = [&](size_t i) -> const MinMax& { return u->src(i)->minmax(); };
  if (u->op == Op::Const) {
    MinMax m;
    if (dt.is_float()) {
      m.is_float = true;
      m.flo = m.fhi = u->const_float();
    } else {
      m.lo = m.hi = u->const_int();
    }
    return m;
  }
  if (dt.is_float()) {
    if (u->op == Op::Cast || u->op == Op::After || is_movement(u->op) || u->op == Op::Contiguous ||
        u->op == Op::Detach || u->op == Op::Load || u->op == Op::Copy) {
      const MinMax& s = S(0);
      if (is_movement(u->op) && u->op != Op::Bitcast && s.is_float) return s;
      if (u->op == Op::Cast && !s.is_float) {
        MinMax m;
        m.is_float = true;
        m.flo = round_float(dt, double(s.lo));
        m.fhi = round_float(dt, double(s.hi));
        return m;
      }
    }
    return dtype_range(dt);  // floats: only constants (and int casts) are tracked
  }
  // integer / bool / index results
  const MinMax full = dtype_range(dt);
  auto fit = [&](MinMax m) {
    // non-index integers wrap: an interval beyond the dtype range is unsound, use the full range
    if (dt.scalar != Scalar::Index && (m.lo < full.lo || m.hi > full.hi)) return full;
    return m;
  };
  auto int_src = [&](size_t i) { return !S(i).is_float && !u->src(i)->dtype.ptr && !u->src(i)->dtype.is_void(); };
  switch (u->op) {
    case Op::DefineVar: {
      auto& v = u->as<VarArg>();
      return ints(v.min, v.max);
    }
    case Op::Range:
    case Op::Special:
      return ints(0, std::max<i128>(0, S(0).hi - 1));
    case Op::Add:
      return fit(ints(S(0).lo + S(1).lo, S(0).hi + S(1).hi));
    case Op::Sub:
      return fit(ints(S(0).lo - S(1).hi, S(0).hi - S(1).lo));
    case Op::Neg:
      return fit(ints(-S(0).hi, -S(0).lo));
    case Op::Mul: {
      i128 c[4] = {mul_sat(S(0).lo, S(1).lo), mul_sat(S(0).lo, S(1).hi), mul_sat(S(0).hi, S(1).lo),
                   mul_sat(S(0).hi, S(1).hi)};
      return fit(ints(*std::min_element(c, c + 4), *std::max_element(c, c + 4)));
    }
    case Op::Mulacc: {
      i128 c[4] = {mul_sat(S(0).lo, S(1).lo), mul_sat(S(0).lo, S(1).hi), mul_sat(S(0).hi, S(1).lo),
                   mul_sat(S(0).hi, S(1).hi)};
      return fit(ints(*std::min_element(c, c + 4) + S(2).lo, *std::max_element(c, c + 4) + S(2).hi));
    }
    case Op::Max:
      return ints(std::max(S(0).lo, S(1).lo), std::max(S(0).hi, S(1).hi));
    case Op::Idiv:
    case Op::CDiv: {
      const MinMax &a = S(0), &b = S(1);
      if (b.lo == 0 && b.hi == 0) return full;
      auto div = [&](i128 x, i128 y) { return u->op == Op::Idiv ? floordiv(x, y) : x / y; };
      // Division by zero is undefined, so a divisor range through 0 is the union of its
      // negative and positive parts; the quotient's extremes sit at the corners of each part.
      i128 lo = kBig, hi = -kBig;
      auto corners = [&](i128 blo, i128 bhi) {
        for (i128 x : {a.lo, a.hi})
          for (i128 y : {blo, bhi}) lo = std::min(lo, div(x, y)), hi = std::max(hi, div(x, y));
      };
      if (b.lo < 0) corners(b.lo, std::min<i128>(b.hi, -1));
      if (b.hi > 0) corners(std::max<i128>(b.lo, 1), b.hi);
      return fit(ints(lo, hi));
    }
    case Op::Mod: {
      const MinMax &a = S(0), &b = S(1);
      if (b.lo == b.hi && b.lo != 0) {
        i128 c = b.lo;
        if (c > 0 && floordiv(a.lo, c) == floordiv(a.hi, c)) return ints(floormod(a.lo, c), floormod(a.hi, c));
        return c > 0 ? ints(0, c - 1) : ints(c + 1, 0);
      }
      if (b.lo == 0 && b.hi == 0) return full;
      // floor modulo takes the divisor's sign and |r| < |divisor| (a zero divisor is undefined)
      return ints(std::min<i128>(b.lo + 1, 0), std::max<i128>(b.hi - 1, 0));
    }
    case Op::CMod: {
      const MinMax &a = S(0), &b = S(1);
      if (b.lo == 0 && b.hi == 0) return full;
      i128 m = std::max(b.hi, -b.lo) - 1;  // largest |divisor| - 1 (a zero divisor is undefined)
      if (a.lo >= 0) {
        if (b.lo == b.hi && a.lo / b.lo == a.hi / b.lo) return ints(a.lo % b.lo, a.hi % b.lo);
        return ints(0, std::min(a.hi, m));
      }
      if (a.hi <= 0) return ints(std::max(a.lo, -m), 0);
      return ints(std::max(a.lo, -m), std::min(a.hi, m));
    }
    case Op::Shl: {
      const MinMax &a = S(0), &b = S(1);
      if (b.lo == b.hi && b.lo >= 0 && b.lo < 64)
        return fit(ints(mul_sat(a.lo, i128(1) << int(b.lo)), mul_sat(a.hi, i128(1) << int(b.lo))));
      return full;
    }
    case Op::Shr: {
      const MinMax &a = S(0), &b = S(1);
      if (b.lo == b.hi && b.lo >= 0 && b.lo < 64)
        return ints(floordiv(a.lo, i128(1) << int(b.lo)), floordiv(a.hi, i128(1) << int(b.lo)));
      return full;
    }
    case Op::And: {
      const MinMax &a = S(0), &b = S(1);
      if (dt.scalar == Scalar::Bool) return ints(a.lo & b.lo, a.hi & b.hi);
      if (b.lo == b.hi && b.lo >= 0) return ints(0, a.lo >= 0 ? std::min(a.hi, b.lo) : b.lo);
      if (a.lo == a.hi && a.lo >= 0) return ints(0, b.lo >= 0 ? std::min(b.hi, a.lo) : a.lo);
      if (a.lo >= 0 && b.lo >= 0) return ints(0, std::min(a.hi, b.hi));
      return full;
    }
    case Op::Or: {
      const MinMax &a = S(0), &b = S(1);
      if (dt.scalar == Scalar::Bool) return ints(a.lo | b.lo, a.hi | b.hi);
      if (a.lo >= 0 && b.lo >= 0) {
        i128 hi = std::max(a.hi, b.hi), p = 1;
        while (p <= hi) p <<= 1;
        return fit(ints(std::max(a.lo, b.lo), p - 1));
      }
      return full;
    }
    case Op::Xor: {
      const MinMax &a = S(0), &b = S(1);
      if (dt.scalar == Scalar::Bool) {
        if (a.lo == a.hi && b.lo == b.hi) return ints(a.lo ^ b.lo, a.lo ^ b.lo);
        return ints(0, 1);
      }
      if (a.lo >= 0 && b.lo >= 0) {
        i128 hi = std::max(a.hi, b.hi), p = 1;
        while (p <= hi) p <<= 1;
        return fit(ints(0, p - 1));
      }
      return full;
    }
    case Op::Not:
      if (dt.scalar == Scalar::Bool) return ints(1 - S(0).hi, 1 - S(0).lo);
      return full;
    case Op::CmpLt:
    case Op::CmpGt:
    case Op::CmpLe:
    case Op::CmpGe:
    case Op::CmpNe:
    case Op::CmpEq: {
      if (!int_src(0) || !int_src(1)) {
        if (S(0).is_float && S(0).flo == S(0).fhi && S(1).flo == S(1).fhi && S(0).is_float == S(1).is_float) {
          double x = S(0).flo, y = S(1).flo;
          bool r = u->op == Op::CmpLt   ? x < y
                   : u->op == Op::CmpGt ? x > y
                   : u->op == Op::CmpLe ? x <= y
                   : u->op == Op::CmpGe ? x >= y
                   : u->op == Op::CmpNe ? x != y
                                        : x == y;
          return ints(r, r);
        }
        return ints(0, 1);
      }
      const MinMax &a = S(0), &b = S(1);
      switch (u->op) {
        case Op::CmpLt:
          return decided(a.lo < b.hi, a.hi >= b.lo);
        case Op::CmpGt:
          return decided(a.hi > b.lo, a.lo <= b.hi);
        case Op::CmpLe:
          return decided(a.lo <= b.hi, a.hi > b.lo);
        case Op::CmpGe:
          return decided(a.hi >= b.lo, a.lo < b.hi);
        default: {
          bool disjoint = a.hi < b.lo || b.hi < a.lo;
          bool both_point = a.lo == a.hi && b.lo == b.hi && a.lo == b.lo;
          bool can_ne = !both_point, can_eq = !disjoint;
          return u->op == Op::CmpNe ? decided(can_ne, can_eq) : decided(can_eq, can_ne);
        }
      }
    }
    case Op::Where: {
      const MinMax &c = S(0), &a = S(1), &b = S(2);
      if (c.lo == 1) return a;
      if (c.hi == 0) return b;
      return ints(std::min(a.lo, b.lo), std::max(a.hi, b.hi));
    }
    case Op::Cast: {
      const MinMax& s = S(0);
      if (dt.scalar == Scalar::Bool) {
        if (s.is_float) {
          if (s.flo == s.fhi) return ints(s.flo != 0, s.flo != 0);
          return ints(0, 1);
        }
        if (s.lo == 0 && s.hi == 0) return ints(0, 0);
        if (s.lo > 0 || s.hi < 0) return ints(1, 1);
        return ints(0, 1);
      }
      if (s.is_float) {
        if (std::isfinite(s.flo) && std::isfinite(s.fhi) && s.flo >= -1e30 && s.fhi <= 1e30)
          return fit(ints(i128(std::trunc(s.flo)), i128(std::trunc(s.fhi))));
        return full;
      }
      return fit(s);
    }
    case Op::Trunc:
    case Op::Contiguous:
    case Op::ContiguousBackward:
    case Op::Detach:
    case Op::After:
    case Op::Load:
    case Op::Copy:
    case Op::Index:
    case Op::Stage:
    case Op::Permute:
    case Op::Flip:
    case Op::Reshape:
    case Op::Expand:
    case Op::Shrink:
    case Op::Replicated:
      if (u->op == Op::Index && u->src(0)->dtype.ptr) return full;
      return int_src(0) ? S(0) : full;
    case Op::Pad: {  // pads with zero
      if (!int_src(0)) return full;
      return ints(std::min<i128>(S(0).lo, 0), std::max<i128>(S(0).hi, 0));
    }
    case Op::Stack:
    case Op::Vectorize: {
      if (u->nsrc() == 0) return full;
      MinMax m = S(0);
      for (size_t i = 1; i < u->nsrc(); i++) m = ints(std::min(m.lo, S(i).lo), std::max(m.hi, S(i).hi));
      return m;
    }
    case Op::Gep:
      return S(0);
    default:
      return full;  // Reduce, Buffer, Param, Bitcast, Recip...: dtype range
  }
}

const Device kNullDevice{};

const Device* compute_device(const UOp* u) {
  switch (u->op) {
    case Op::Buffer:
      return &u->as<BufferArg>().device;
    case Op::Param:
      return &u->as<ParamArg>().device;
    case Op::Load:
    case Op::Copy:
    case Op::Stage:
      if (auto* m = std::get_if<MemArg>(&u->arg); m && !m->device.null()) return &m->device;
      break;
    case Op::Const:
    case Op::DefineVar:
    case Op::Range:
    case Op::Special:
      return &kNullDevice;
    case Op::Function:
    case Op::Call:
      if (u->nsrc() > 1) return &u->src(1)->device();
      return &kNullDevice;
    default:
      break;
  }
  for (auto* s : u->src())
    if (!s->device().null()) return &s->device();
  return &kNullDevice;
}

int compute_axis(const UOp* u) {
  auto src_axis = [&](size_t i) { return u->src(i)->axis(); };
  // (A value of rank 0 on an n-tuple device has no axis 0 to shard: each device holds all of it.)
  const bool has_axis0 = u->shape() && !u->shape()->empty();
  switch (u->op) {
    case Op::Buffer:
      return u->as<BufferArg>().device.tuple && has_axis0 ? 0 : -1;
    case Op::Param:
      return u->as<ParamArg>().device.tuple && has_axis0 ? 0 : -1;
    case Op::Copy:  // a copy to an n-tuple device reshards on axis 0
      if (auto* m = std::get_if<MemArg>(&u->arg); m && m->device.tuple && has_axis0) return 0;
      return -1;
    case Op::Const:
    case Op::DefineVar:
    case Op::Range:
      return -1;
    case Op::Permute: {
      int a = src_axis(0);
      if (a < 0) return -1;
      auto& p = u->as<std::vector<int64_t>>();
      for (size_t k = 0; k < p.size(); k++)
        if (p[k] == a) return int(k);
      return -1;
    }
    case Op::Reshape: {
      int a = src_axis(0);
      if (a < 0 || !u->shape() || !u->src(0)->shape() || size_t(a) >= u->src(0)->shape()->size()) return -1;
      // keep the shard boundary: the new axis starts at the same flat offset
      const Shape &in = *u->src(0)->shape(), &out = *u->shape();
      auto before = [](const Shape& s, size_t k) -> std::optional<int64_t> {
        int64_t p = 1;
        for (size_t i = 0; i < k; i++) {
          if (!s[i].is_const()) return std::nullopt;
          p = checked_mul(p, s[i].value, "Reshape: shard axis offset");
        }
        return p;
      };
      auto want = before(in, size_t(a));
      if (!want) return -1;
      // An axis that starts where the shard axis started keeps each device's block whole when it
      // has the same length, or when both lengths divide by the device count.
      const int64_t n = int64_t(u->device().names.size());
      auto divides = [&](const Dim& d) { return n > 0 && d.is_const() && d.value > 0 && d.value % n == 0; };
      for (size_t k = 0; k < out.size(); k++)
        if (before(out, k) == want && (out[k] == in[size_t(a)] || (divides(out[k]) && divides(in[size_t(a)]))))
          return int(k);
      return -1;
    }
    case Op::Reduce: {
      int a = src_axis(0);
      if (a < 0) return -1;
      auto& r = u->as<ReduceArg>();
      int rank = u->shape() ? int(u->shape()->size()) : 0;
      for (auto x : r.axes)
        if ((x < 0 ? x + rank : x) == a) return -1;
      return a;
    }
    case Op::Replicated: {
      int a = src_axis(0);
      if (a < 0) return -1;
      int rank = u->shape() ? int(u->shape()->size()) : 0;
      for (auto x : u->as<std::vector<int64_t>>())
        if ((x < 0 ? x + rank : x) == a) return -1;
      return a;
    }
    default:
      break;
  }
  for (size_t i = 0; i < u->nsrc(); i++)
    if (int a = src_axis(i); a >= 0) return a;
  return -1;
}

uint64_t compute_hash(const UOp* u) {
  uint64_t h = hash_combine(0x5eed, uint64_t(u->op));
  h = hash_combine(h, (uint64_t(u->dtype.scalar) << 24) | (uint64_t(u->dtype.lanes) << 8) |
                          (uint64_t(u->dtype.ptr) << 4) | uint64_t(u->dtype.addrspace));
  h = hash_combine(h, u->graph() ? u->graph()->arg_hash(u) : hash_arg(u->arg));
  h = hash_combine(h, uint64_t(u->tag));
  h = hash_combine(h, u->nsrc());
  for (auto* s : u->src()) h = hash_combine(h, s->content_hash());
  return h;
}
}  // namespace

struct PropsAccess {
  static std::atomic<uint8_t>& flags(const UOp* u) { return u->lazy_; }
  static MinMax& minmax(const UOp* u) { return u->minmax_; }
  static const Device*& device(const UOp* u) { return u->device_; }
  static int& axis(const UOp* u) { return u->axis_; }
  static uint64_t& hash(const UOp* u) { return u->content_hash_; }
};

const MinMax& UOp::minmax() const {
  ensure(this, &PropsAccess::flags, kMinMax, [](const UOp* n) { PropsAccess::minmax(n) = compute_minmax(n); });
  return minmax_;
}
const Device& UOp::device() const {
  ensure(this, &PropsAccess::flags, kDevice, [](const UOp* n) { PropsAccess::device(n) = compute_device(n); });
  return *device_;
}
int UOp::axis() const {
  ensure(this, &PropsAccess::flags, kAxis, [](const UOp* n) { PropsAccess::axis(n) = compute_axis(n); });
  return axis_;
}
uint64_t UOp::content_hash() const {
  ensure(this, &PropsAccess::flags, kHash, [](const UOp* n) { PropsAccess::hash(n) = compute_hash(n); });
  return content_hash_;
}
void UOp::derive_for_readers() const {
  (void)minmax();
  (void)content_hash();
}

}  // namespace sn
