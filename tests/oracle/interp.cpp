#include "tests/oracle/interp.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

#include "tests/oracle/scalar_ops.h"

namespace sn::oracle {

namespace {

thread_local int t_nudge = 0;  // RoundingNudge's direction

// The bits of dt's significand (the implicit one included): the first k at which 1 + 2^-k rounds
// back to 1 (round_float, ties to even), so the formats are known in one place.
int precision_bits(DType dt) {
  static thread_local std::array<int, size_t(Scalar::Count_)> known{};
  int& p = known[size_t(dt.scalar)];
  if (p == 0)
    for (p = 1; p < 64 && round_float(dt, 1.0 + std::ldexp(1.0, -p)) != 1.0;) p++;
  return p;
}

// v moved by 4 units in the last place of dt, relative to `scale` (t_nudge's direction).
double nudged(DType dt, double v, double scale) {
  if (t_nudge == 0 || !std::isfinite(v) || !std::isfinite(scale) || scale == 0) return v;
  return v + t_nudge * std::fabs(scale) * std::ldexp(4.0, -precision_bits(dt));
}

// The result of elementwise op (exact in double for the arithmetic of narrower floats), nudged where
// compiled code may round it otherwise.
double nudged_op(Op op, DType dt, double r) {
  if (t_nudge == 0) return r;
  switch (op) {
    case Op::Exp2:
    case Op::Log2:
    case Op::Sin:
    case Op::Pow:
      return nudged(dt, r, r);  // approximations: a few ulps either way
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Div:
    case Op::Recip:
    case Op::Sqrt:
    case Op::Mulacc:
      return round_float(dt, r) == r ? r : nudged(dt, r, r);  // correctly rounded: only inexact results
    default:
      return r;
  }
}

}  // namespace

RoundingNudge::RoundingNudge(int direction) : before_(t_nudge) { t_nudge = direction; }
RoundingNudge::~RoundingNudge() { t_nudge = before_; }

namespace {

using namespace scalar;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::string dims_str(const std::vector<int64_t>& d) {
  std::string s = "(";
  for (size_t i = 0; i < d.size(); i++) s += (i ? "," : "") + std::to_string(d[i]);
  if (d.size() == 1) s += ",";
  return s + ")";
}

int64_t count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<int64_t> strides_of(const std::vector<int64_t>& shape) {
  std::vector<int64_t> st(shape.size());
  int64_t s = 1;
  for (size_t k = shape.size(); k-- > 0;) {
    st[k] = s;
    s *= shape[k];
  }
  return st;
}

// Steps a multi-index through `shape` in row-major order; false once past the last element.
bool next_index(std::vector<int64_t>& idx, const std::vector<int64_t>& shape) {
  for (size_t k = idx.size(); k-- > 0;) {
    if (++idx[k] < shape[k]) return true;
    idx[k] = 0;
  }
  return false;
}

// Calls body(multi_index, flat_index) for every element of `shape`, row-major.
template <class F>
void for_each_index(const std::vector<int64_t>& shape, F body) {
  if (count(shape) == 0) return;
  std::vector<int64_t> idx(shape.size(), 0);
  size_t flat = 0;
  do {
    body(idx, flat++);
  } while (next_index(idx, shape));
}

void copy_elem(const Array& from, size_t i, Array& to, size_t j) {
  if (from.dtype.is_float())
    to.f[j] = from.f[i];
  else
    to.i[j] = from.i[i];
}

// ---- storage bytes ----

// A small binary float format: sign, ebits exponent bits, mbits mantissa bits. ieee: the all-ones
// exponent means inf (mantissa 0) or NaN; otherwise (e4m3fn) only all-ones everything is NaN and
// there is no inf.
struct MiniFloat {
  int ebits, mbits;
  bool ieee;
};

MiniFloat minifloat(DType dt) {
  switch (dt.scalar) {
    case Scalar::Float16:
      return {5, 10, true};
    case Scalar::Fp8E5M2:
      return {5, 2, true};
    case Scalar::Fp8E4M3:
      return {4, 3, false};
    default:
      fail(Code::Internal, "oracle: ", dt.name(), " is not a small float format");
  }
}

// `v` must already be representable (rounded with round_float).
uint32_t encode_minifloat(MiniFloat m, double v) {
  uint32_t emax = (1u << m.ebits) - 1;
  int bias = int(emax >> 1);
  uint32_t all_ones = (1u << (m.ebits + m.mbits)) - 1;
  uint32_t sign = std::signbit(v) ? 1u << (m.ebits + m.mbits) : 0;
  if (std::isnan(v)) return m.ieee ? (emax << m.mbits) | (1u << (m.mbits - 1)) : all_ones;
  if (std::isinf(v)) return m.ieee ? sign | (emax << m.mbits) : all_ones;
  double a = std::fabs(v);
  if (a == 0) return sign;
  int e;
  std::frexp(a, &e);
  int exp = e - 1;  // a is in [2^exp, 2^(exp+1))
  int emin = 1 - bias;
  if (exp < emin) return sign | uint32_t(std::ldexp(a, m.mbits - emin));  // subnormal: a = mant * 2^(emin-mbits)
  uint32_t mant = uint32_t(std::ldexp(a, m.mbits - exp)) - (1u << m.mbits);
  return sign | (uint32_t(exp + bias) << m.mbits) | mant;
}

double decode_minifloat(MiniFloat m, uint32_t bits) {
  uint32_t emax = (1u << m.ebits) - 1, mmask = (1u << m.mbits) - 1;
  int bias = int(emax >> 1);
  bool negative = (bits >> (m.ebits + m.mbits)) & 1;
  uint32_t field = (bits >> m.mbits) & emax, mant = bits & mmask;
  double v;
  if (m.ieee && field == emax)
    v = mant ? kNaN : kInf;
  else if (!m.ieee && field == emax && mant == mmask)
    v = kNaN;
  else if (field == 0)
    v = std::ldexp(double(mant), 1 - bias - m.mbits);
  else
    v = std::ldexp(double(mant | (1u << m.mbits)), int(field) - bias - m.mbits);
  return negative ? -v : v;
}

void encode_element(const Array& a, size_t k, uint8_t* out) {
  if (a.dtype.is_float()) return encode_float(a.dtype, a.f[k], out);
  uint64_t u = uint64_t(a.int_at(k));  // two's complement bits
  for (int b = 0; b < a.dtype.itemsize(); b++) out[b] = uint8_t(u >> (8 * b));
}

void decode_element(Array& a, size_t k, const uint8_t* in) {
  if (a.dtype.is_float()) {
    a.f[k] = decode_float(a.dtype, in);
    return;
  }
  uint64_t u = 0;
  for (int b = 0; b < a.dtype.itemsize(); b++) u |= uint64_t(in[b]) << (8 * b);
  a.set_int(k, i128(u));  // wrap_int sign-extends the signed types
}

// ---- element arithmetic ----

// ---- the evaluator ----

std::vector<int64_t> read_dims(const UOp* operand, const char* what) {
  if (operand->op != Op::Stack)
    fail(Code::Unsupported, "oracle: ", what, " operand is ", op_name(operand->op), ", not a Stack of constants");
  std::vector<int64_t> d;
  for (const UOp* s : operand->src()) {
    if (s->op != Op::Const || !s->holds<int64_t>())
      fail(Code::Unsupported, "oracle: symbolic ", what, " (", op_name(s->op), ") is not supported");
    d.push_back(s->as<int64_t>());
  }
  return d;
}

class Evaluator {
 public:
  explicit Evaluator(const BufferData& buffers) : buffers_(buffers) {}

  std::vector<Array> run(std::span<const UOp* const> roots) {
    std::vector<const UOp*> order = toposort(roots);
    // Only value edges are evaluated: shape/offset operands are read as constants. `uses` counts
    // each needed node's consumers so its array can be dropped after the last one ran.
    std::unordered_map<const UOp*, int> uses;
    for (const UOp* r : roots) uses[r] = 1;  // roots are never dropped
    for (size_t k = order.size(); k-- > 0;) {
      const UOp* u = order[k];
      if (!uses.count(u)) continue;
      for (const UOp* s : value_srcs(u)) uses[s]++;
    }
    for (const UOp* u : order) {
      if (!uses.count(u)) continue;
      Array a = eval(u);
      check_shape(u, a);
      values_.emplace(u, std::move(a));
      for (const UOp* s : value_srcs(u))
        if (--uses[s] == 0) values_.erase(s);
    }
    std::vector<Array> out;
    for (const UOp* r : roots) out.push_back(values_.at(r));
    return out;
  }

 private:
  static std::vector<const UOp*> value_srcs(const UOp* u) {
    if (u->op == Op::Reshape || u->op == Op::Expand || u->op == Op::Pad || u->op == Op::Shrink || u->op == Op::Reduce ||
        u->op == Op::Slice)
      return {u->src(0)};
    return {u->src().begin(), u->src().end()};
  }

  const Array& in(const UOp* u, size_t i) const { return values_.at(u->src(i)); }

  // The oracle derives every shape itself; the graph's derivation must agree.
  static void check_shape(const UOp* u, const Array& a) {
    const Shape* s = u->shape();
    if (s == nullptr) fail(Code::Internal, "oracle: ", op_name(u->op), " %", u->id, " has no shape in the graph");
    std::vector<int64_t> g;
    for (const Dim& d : *s) {
      if (!d.is_const()) fail(Code::Unsupported, "oracle: symbolic shape ", shape_str(*s), " is not supported");
      g.push_back(d.value);
    }
    if (g != a.shape)
      fail(Code::Internal, "oracle: ", op_name(u->op), " %", u->id, ": the graph derived shape ", dims_str(g),
           ", the oracle ", dims_str(a.shape));
  }

  Array eval(const UOp* u) {
    switch (u->op) {
      case Op::Buffer:
        return buffer(u);
      case Op::Const:
        return constant(u);
      case Op::Reshape: {
        const Array& x = in(u, 0);
        Array out = x;
        out.shape = read_dims(u->src(1), "reshape shape");
        if (count(out.shape) != count(x.shape))
          fail(Code::Internal, "oracle: reshape ", dims_str(x.shape), " to ", dims_str(out.shape));
        return out;
      }
      case Op::Permute:
        return permute(u);
      case Op::Expand:
        return expand(u);
      case Op::Flip:
        return flip(u);
      case Op::Pad:
        return pad(u);
      case Op::Shrink:
        return shrink(u);
      case Op::Reduce:
        return reduce(u);
      case Op::Cast:
        return cast(u);
      case Op::Bitcast:
        return bitcast(u);
      case Op::Contiguous:
      case Op::ContiguousBackward:
      case Op::Detach:
      case Op::Copy:      // moves data between devices; the values stay the same
        return in(u, 0);  // markers: identity on data
      case Op::Replicated:
        return replicated(u);
      case Op::Index:
        return index(u);
      case Op::Stack:
        return stack(u);
      case Op::Slice:
        return slice(u);
      case Op::Binary: {
        const std::string& bytes = u->as<std::string>();
        return Array::from_bytes(dtypes::uint8, {int64_t(bytes.size())}, bytes.data(), bytes.size());
      }
      default:
        break;
    }
    if (is_elementwise(u->op) && u->op != Op::Threefry) return elementwise(u);
    fail(Code::Unsupported, "oracle: ", op_name(u->op), " is not a tensor-level op it interprets");
  }

  Array buffer(const UOp* u) {
    const BufferArg& b = u->as<BufferArg>();
    if (b.device.tuple) fail(Code::Unsupported, "oracle: multi-device Buffer %", u->id);
    auto it = buffers_.find(u);
    if (it == buffers_.end())
      fail(Code::InvalidArg, "oracle: no data for Buffer %", u->id, " (", u->dtype.name(), ", size ", b.size, ")");
    const Array& data = it->second;
    if (data.dtype != u->dtype || count(data.shape) != b.size || int64_t(data.numel()) != b.size)
      fail(Code::InvalidArg, "oracle: data for Buffer %", u->id, " is ", data.dtype.name(), dims_str(data.shape),
           ", the Buffer holds ", b.size, " x ", u->dtype.name());
    Array out = data;
    out.shape = {b.size};
    return out;
  }

  static Array constant(const UOp* u) {
    Array out = Array::zeros(u->dtype, {});
    if (u->dtype.is_float()) {
      out.f[0] = round_float(u->dtype, u->holds<double>() ? u->as<double>() : double(u->as<int64_t>()));
    } else {
      int64_t v = u->as<int64_t>();
      out.set_int(0, u->dtype.scalar == Scalar::UInt64 ? i128(uint64_t(v)) : i128(v));
    }
    return out;
  }

  // out[idx] = x[src_index(idx)], or 0 where src_index gives -1.
  template <class F>
  static Array gather(const Array& x, const std::vector<int64_t>& out_shape, F src_index) {
    Array out = Array::zeros(x.dtype, out_shape);
    for_each_index(out_shape, [&](const std::vector<int64_t>& idx, size_t k) {
      int64_t from = src_index(idx);
      if (from >= 0) copy_elem(x, size_t(from), out, k);
    });
    return out;
  }

  Array permute(const UOp* u) {
    const Array& x = in(u, 0);
    const auto& order = u->as<std::vector<int64_t>>();
    if (order.size() != x.shape.size()) fail(Code::Internal, "oracle: permute rank");
    std::vector<int64_t> st = strides_of(x.shape), shape;
    for (int64_t a : order) shape.push_back(x.shape.at(size_t(a)));  // output axis k is input axis order[k]
    return gather(x, shape, [&](const std::vector<int64_t>& idx) {
      int64_t from = 0;
      for (size_t k = 0; k < idx.size(); k++) from += idx[k] * st[size_t(order[k])];
      return from;
    });
  }

  Array expand(const UOp* u) {
    const Array& x = in(u, 0);
    std::vector<int64_t> shape = read_dims(u->src(1), "expand shape");
    if (shape.size() != x.shape.size()) fail(Code::Internal, "oracle: expand rank");
    std::vector<int64_t> st = strides_of(x.shape);
    for (size_t k = 0; k < shape.size(); k++) {
      if (x.shape[k] != 1 && x.shape[k] != shape[k])
        fail(Code::Internal, "oracle: expand ", dims_str(x.shape), " to ", dims_str(shape));
      if (x.shape[k] == 1) st[k] = 0;  // broadcast axis: every output index reads element 0
    }
    return gather(x, shape, [&](const std::vector<int64_t>& idx) {
      int64_t from = 0;
      for (size_t k = 0; k < idx.size(); k++) from += idx[k] * st[k];
      return from;
    });
  }

  Array flip(const UOp* u) {
    const Array& x = in(u, 0);
    const auto& flags = u->as<std::vector<int64_t>>();
    if (flags.size() != x.shape.size()) fail(Code::Internal, "oracle: flip rank");
    std::vector<int64_t> st = strides_of(x.shape);
    return gather(x, x.shape, [&](const std::vector<int64_t>& idx) {
      int64_t from = 0;
      for (size_t k = 0; k < idx.size(); k++) from += (flags[k] ? x.shape[k] - 1 - idx[k] : idx[k]) * st[k];
      return from;
    });
  }

  Array pad(const UOp* u) {
    const Array& x = in(u, 0);
    std::vector<int64_t> off = read_dims(u->src(1), "pad offsets"), shape = read_dims(u->src(2), "pad shape");
    if (off.size() != x.shape.size() || shape.size() != x.shape.size()) fail(Code::Internal, "oracle: pad rank");
    std::vector<int64_t> st = strides_of(x.shape);
    return gather(x, shape, [&](const std::vector<int64_t>& idx) -> int64_t {
      int64_t from = 0;
      for (size_t k = 0; k < idx.size(); k++) {
        int64_t i = idx[k] - off[k];
        if (i < 0 || i >= x.shape[k]) return -1;  // outside the placed input: zero
        from += i * st[k];
      }
      return from;
    });
  }

  Array shrink(const UOp* u) {
    const Array& x = in(u, 0);
    std::vector<int64_t> off = read_dims(u->src(1), "shrink offsets"), shape = read_dims(u->src(2), "shrink sizes");
    if (off.size() != x.shape.size() || shape.size() != x.shape.size()) fail(Code::Internal, "oracle: shrink rank");
    for (size_t k = 0; k < shape.size(); k++)
      if (off[k] < 0 || shape[k] < 0 || off[k] + shape[k] > x.shape[k])
        fail(Code::Internal, "oracle: shrink window out of ", dims_str(x.shape));
    std::vector<int64_t> st = strides_of(x.shape);
    return gather(x, shape, [&](const std::vector<int64_t>& idx) {
      int64_t from = 0;
      for (size_t k = 0; k < idx.size(); k++) from += (idx[k] + off[k]) * st[k];
      return from;
    });
  }

  // Replicated: every device holds the same values along these axes; they collapse to their
  // first element.
  Array replicated(const UOp* u) {
    const Array& x = in(u, 0);
    std::vector<int64_t> shape = x.shape;
    for (int64_t a : u->as<std::vector<int64_t>>()) {
      int64_t k = a < 0 ? a + int64_t(shape.size()) : a;
      if (k < 0 || k >= int64_t(shape.size())) fail(Code::Internal, "oracle: replicated axis ", a);
      shape[size_t(k)] = std::min<int64_t>(shape[size_t(k)], 1);
    }
    std::vector<int64_t> st = strides_of(x.shape);
    return gather(x, shape, [&](const std::vector<int64_t>& idx) {
      int64_t from = 0;
      for (size_t k = 0; k < idx.size(); k++) from += idx[k] * st[k];
      return from;
    });
  }

  Array reduce(const UOp* u) {
    if (u->nsrc() != 1) fail(Code::Unsupported, "oracle: Reduce over ranges (kernel form)");
    const Array& x = in(u, 0);
    const ReduceArg& r = u->as<ReduceArg>();
    DType dt = x.dtype;
    std::vector<int64_t> shape = x.shape;
    for (int64_t a : r.axes) {
      int64_t k = a < 0 ? a + int64_t(shape.size()) : a;
      if (k < 0 || k >= int64_t(shape.size())) fail(Code::Internal, "oracle: reduce axis ", a);
      shape[size_t(k)] = 1;
    }
    std::vector<int64_t> out_st = strides_of(shape);
    for (size_t k = 0; k < shape.size(); k++)
      if (shape[k] == 1) out_st[k] = 0;  // reduced (or already size-1) axis: all land on one output
    size_t n = size_t(count(shape));
    Array out = Array::zeros(dt, shape);
    auto out_index = [&](const std::vector<int64_t>& idx) {
      int64_t o = 0;
      for (size_t k = 0; k < idx.size(); k++) o += idx[k] * out_st[k];
      return size_t(o);
    };
    if (dt.is_float()) {
      // A sum starts from -0.0, the identity of IEEE addition: a sum of -0.0s is -0.0, as the sum of
      // the values themselves is; a sum of no values is +0.0 (below).
      double init = r.op == Op::Add ? -0.0 : r.op == Op::Mul ? 1.0 : -kInf;
      std::vector<double> acc(n, init), largest(n, 0.0), magnitude(n, 0.0);
      std::vector<int64_t> terms(n, 0);
      std::vector<bool> integers(n, true);
      for_each_index(x.shape, [&](const std::vector<int64_t>& idx, size_t k) {
        const size_t o = out_index(idx);
        double& a = acc[o];
        double v = x.f[k];
        largest[o] = std::max(largest[o], std::fabs(v));
        magnitude[o] += std::fabs(v);
        integers[o] = integers[o] && v == std::trunc(v);
        terms[o]++;
        if (r.op == Op::Add)
          a += v;
        else if (r.op == Op::Mul)
          a *= v;
        else {
          const double pair[2] = {a, v};
          a = float_op(Op::Max, pair);  // (a max of -0 and +0 is undefined there)
        }
      });
      const bool none = count(x.shape) == 0;
      for (size_t o = 0; o < n; o++) {
        // A sum of several terms another order of adding may round otherwise (by its largest term's
        // ulps), unless they are integers whose partial sums the dtype holds in any order.
        const bool exact = r.op == Op::Add ? integers[o] && magnitude[o] < std::ldexp(1.0, precision_bits(dt))
                                           : round_float(dt, acc[o]) == acc[o] && integers[o];
        if (terms[o] > 1 && r.op != Op::Max && !exact)
          acc[o] = nudged(dt, acc[o], r.op == Op::Add ? largest[o] : acc[o]);
        out.f[o] = round_float(dt, none && r.op == Op::Add ? 0.0 : acc[o]);
      }
    } else {
      i128 init = r.op == Op::Add ? 0 : r.op == Op::Mul ? 1 : dt.int_min();
      std::vector<i128> acc(n, init);
      for_each_index(x.shape, [&](const std::vector<int64_t>& idx, size_t k) {
        i128& a = acc[out_index(idx)];
        i128 v = x.int_at(k);
        if (r.op == Op::Add)
          a = wrap_int(dt, a + v);
        else if (r.op == Op::Mul)
          a = wrap_mul(dt, a, v);
        else
          a = std::max(a, v);
      });
      for (size_t o = 0; o < n; o++) out.set_int(o, acc[o]);
    }
    return out;
  }

  Array cast(const UOp* u) {
    const Array& x = in(u, 0);
    DType to = u->dtype;
    Array out = Array::zeros(to, x.shape);
    for (size_t k = 0; k < x.numel(); k++) {
      if (!x.dtype.is_float()) {
        i128 v = x.int_at(k);
        if (to.is_float())
          out.f[k] = int_to_float(to, v);
        else
          out.set_int(k, v);  // wraps; bool: != 0
        continue;
      }
      double v = x.f[k];
      if (to.is_float()) {
        out.f[k] = round_float(to, v);
      } else if (to.is_bool()) {
        out.i[k] = v != 0;  // NaN is true
      } else {
        if (!std::isfinite(v) || std::fabs(v) >= 1e38)
          fail(Code::InvalidArg, "oracle: cast of ", v, " from ", x.dtype.name(), " to ", to.name(), " is undefined");
        out.set_int(k, static_cast<i128>(std::trunc(v)));  // toward zero, then wrap
      }
    }
    return out;
  }

  // Index(T, i0, i1, ...): index k selects along axis k; a ()-shaped index removes the axis, a
  // (k,)-shaped one makes it k long. An index outside the axis gives 0.
  Array index(const UOp* u) {
    const Array& x = in(u, 0);
    size_t m = u->nsrc() - 1;
    std::vector<int64_t> shape;
    for (size_t k = 0; k < m; k++)
      if (in(u, k + 1).shape.size() == 1) shape.push_back(in(u, k + 1).shape[0]);
    shape.insert(shape.end(), x.shape.begin() + long(m), x.shape.end());
    Array out = Array::zeros(x.dtype, shape);
    int64_t rest = 1;
    for (size_t k = m; k < x.shape.size(); k++) rest *= x.shape[k];
    if (rest == 0 || out.numel() == 0) return out;
    std::vector<int64_t> at(shape.size(), 0);  // position in the output
    for (size_t o = 0; o < out.numel(); o += size_t(rest)) {
      int64_t flat = 0;
      bool inside = true;
      size_t axis = 0;
      for (size_t k = 0; k < m; k++) {
        const Array& ix = in(u, k + 1);
        i128 v = ix.shape.empty() ? ix.int_at(0) : ix.int_at(size_t(at[axis++]));
        inside = inside && v >= 0 && v < x.shape[k];
        flat = flat * x.shape[k] + (inside ? int64_t(v) : 0);
      }
      for (int64_t r = 0; r < rest && inside; r++) copy_element(x, size_t(flat * rest + r), out, o + size_t(r));
      for (size_t k = axis; k-- > 0;) {  // next index combination (the trailing rest is copied whole)
        if (++at[k] < shape[k]) break;
        at[k] = 0;
      }
    }
    return out;
  }

  static void copy_element(const Array& from, size_t i, Array& to, size_t j) {
    if (from.dtype.is_float())
      to.f[j] = from.f[i];
    else
      to.i[j] = from.i[i];
  }

  Array stack(const UOp* u) {
    std::vector<int64_t> shape{int64_t(u->nsrc())};
    if (u->nsrc() > 0) shape.insert(shape.end(), in(u, 0).shape.begin(), in(u, 0).shape.end());
    Array out = Array::zeros(u->dtype, shape);
    size_t at = 0;
    for (size_t k = 0; k < u->nsrc(); k++)
      for (size_t e = 0; e < in(u, k).numel(); e++) copy_element(in(u, k), e, out, at++);
    return out;
  }

  // Slice(T, offset): `size` elements of `dtype` from T's bytes, starting offset elements of T in.
  Array slice(const UOp* u) {
    const Array& x = in(u, 0);
    const SliceArg& a = u->as<SliceArg>();
    const UOp* off = u->src(1);
    if (off->op != Op::Const) fail(Code::Unsupported, "oracle: a symbolic Slice offset");
    std::vector<uint8_t> bytes = x.to_bytes();
    size_t from = size_t(off->const_int()) * size_t(x.dtype.itemsize()),
           n = size_t(a.size) * size_t(a.dtype.itemsize());
    if (from + n > bytes.size()) fail(Code::InvalidArg, "oracle: Slice past the end of its source");
    return Array::from_bytes(a.dtype, {a.size}, bytes.data() + from, n);
  }

  Array bitcast(const UOp* u) {
    const Array& x = in(u, 0);
    DType to = u->dtype;
    std::vector<int64_t> shape = x.shape;
    int from_size = x.dtype.itemsize(), to_size = to.itemsize();
    if (from_size != to_size) {  // the last axis rescales; the bytes stay in place
      if (shape.empty() || (shape.back() * from_size) % to_size != 0)
        fail(Code::Internal, "oracle: bitcast of ", dims_str(shape), " from ", x.dtype.name(), " to ", to.name());
      shape.back() = shape.back() * from_size / to_size;
    }
    std::vector<uint8_t> bytes = x.to_bytes();
    return Array::from_bytes(to, shape, bytes.data(), bytes.size());
  }

  Array elementwise(const UOp* u) {
    Op op = u->op;
    size_t n_in = u->nsrc();
    std::vector<const Array*> xs;
    for (size_t j = 0; j < n_in; j++) xs.push_back(&in(u, j));

    // right-aligned broadcast of all operand shapes
    std::vector<int64_t> shape;
    for (const Array* x : xs) {
      const std::vector<int64_t>& s = x->shape;
      if (s.size() > shape.size()) shape.insert(shape.begin(), s.size() - shape.size(), 1);
      size_t lead = shape.size() - s.size();
      for (size_t k = 0; k < s.size(); k++) {
        int64_t& o = shape[lead + k];
        if (o == 1)
          o = s[k];
        else if (s[k] != 1 && s[k] != o)
          fail(Code::Internal, "oracle: ", op_name(op), " operands do not broadcast: ", dims_str(s), " into ",
               dims_str(shape));
      }
    }
    // per operand: the stride of each output axis in that operand (0 where it broadcasts)
    std::vector<std::vector<int64_t>> bst(n_in, std::vector<int64_t>(shape.size(), 0));
    for (size_t j = 0; j < n_in; j++) {
      const std::vector<int64_t>& s = xs[j]->shape;
      std::vector<int64_t> st = strides_of(s);
      size_t lead = shape.size() - s.size();
      for (size_t k = 0; k < s.size(); k++) bst[j][lead + k] = s[k] == 1 ? 0 : st[k];
    }

    DType vt = xs[op == Op::Where ? 1 : 0]->dtype;  // dtype of the value operands
    for (size_t j = op == Op::Where ? 1 : 0; j < n_in; j++)
      if (xs[j]->dtype != vt) fail(Code::Internal, "oracle: ", op_name(op), " operand dtypes differ");
    DType out_dt = is_comparison(op) ? dtypes::bool_ : vt;
    if (u->dtype != out_dt)
      fail(Code::Internal, "oracle: ", op_name(op), " has dtype ", u->dtype.name(), ", expected ", out_dt.name());

    Array out = Array::zeros(out_dt, shape);
    size_t at[3] = {0, 0, 0};
    for_each_index(shape, [&](const std::vector<int64_t>& idx, size_t k) {
      for (size_t j = 0; j < n_in; j++) {
        int64_t f = 0;
        for (size_t d = 0; d < idx.size(); d++) f += idx[d] * bst[j][d];
        at[j] = size_t(f);
      }
      if (op == Op::Where) {
        bool c = xs[0]->int_at(at[0]) != 0;
        copy_elem(c ? *xs[1] : *xs[2], c ? at[1] : at[2], out, k);
      } else if (is_comparison(op)) {
        bool r = vt.is_float() ? compare(op, xs[0]->f[at[0]], xs[1]->f[at[1]])
                               : compare(op, xs[0]->int_at(at[0]), xs[1]->int_at(at[1]));
        out.i[k] = r;
      } else if (vt.is_float()) {
        double v[3];
        for (size_t j = 0; j < n_in; j++) v[j] = xs[j]->f[at[j]];
        out.f[k] = round_float(vt, nudged_op(op, vt, float_op(op, v)));
      } else {
        i128 v[3];
        for (size_t j = 0; j < n_in; j++) v[j] = xs[j]->int_at(at[j]);
        out.set_int(k, int_op(op, v, vt));
      }
    });
    return out;
  }

  const BufferData& buffers_;
  std::unordered_map<const UOp*, Array> values_;
};

void check_array_dtype(DType dt) {
  if (dt.ptr || dt.lanes != 1 || dt.is_void())
    fail(Code::InvalidArg, "oracle: arrays hold scalar elements, got ", dt.name());
}

}  // namespace

// ---- Array ----

i128 Array::int_at(size_t k) const { return dtype.scalar == Scalar::UInt64 ? i128(uint64_t(i[k])) : i128(i[k]); }

double Array::value_at(size_t k) const { return dtype.is_float() ? f[k] : static_cast<double>(int_at(k)); }

void Array::set_int(size_t k, i128 v) {
  i[k] = int64_t(uint64_t(wrap_int(dtype, v)));  // uint64 keeps its bit pattern
}

Array Array::zeros(DType dtype, std::vector<int64_t> shape) {
  check_array_dtype(dtype);
  for (int64_t d : shape)
    if (d < 0) fail(Code::InvalidArg, "oracle: negative dim in ", dims_str(shape));
  Array a;
  a.dtype = dtype;
  size_t n = size_t(count(shape));
  a.shape = std::move(shape);
  if (dtype.is_float())
    a.f.assign(n, 0.0);
  else
    a.i.assign(n, 0);
  return a;
}

Array Array::from_doubles(DType dtype, std::vector<int64_t> shape, const std::vector<double>& values) {
  Array a = zeros(dtype, std::move(shape));
  if (values.size() != a.numel())
    fail(Code::InvalidArg, "oracle: ", values.size(), " values for shape ", dims_str(a.shape));
  for (size_t k = 0; k < values.size(); k++) {
    double v = values[k];
    if (dtype.is_float()) {
      a.f[k] = round_float(dtype, v);
      continue;
    }
    if (!std::isfinite(v) || std::trunc(v) != v || std::fabs(v) > 1e20 || i128(v) < dtype.int_min() ||
        i128(v) > dtype.int_max())
      fail(Code::InvalidArg, "oracle: value ", v, " is not a ", dtype.name());
    a.set_int(k, i128(v));
  }
  return a;
}

Array Array::from_ints(DType dtype, std::vector<int64_t> shape, const std::vector<int64_t>& values) {
  Array a = zeros(dtype, std::move(shape));
  if (values.size() != a.numel())
    fail(Code::InvalidArg, "oracle: ", values.size(), " values for shape ", dims_str(a.shape));
  for (size_t k = 0; k < values.size(); k++) {
    if (dtype.is_float())
      a.f[k] = int_to_float(dtype, values[k]);
    else
      a.set_int(k, dtype.scalar == Scalar::UInt64 ? i128(uint64_t(values[k])) : i128(values[k]));
  }
  return a;
}

Array Array::from_bytes(DType dtype, std::vector<int64_t> shape, const void* data, size_t nbytes) {
  Array a = zeros(dtype, std::move(shape));
  size_t size = size_t(dtype.itemsize());
  if (nbytes != a.numel() * size)
    fail(Code::InvalidArg, "oracle: ", nbytes, " bytes for ", a.numel(), " x ", dtype.name());
  const uint8_t* p = static_cast<const uint8_t*>(data);
  for (size_t k = 0; k < a.numel(); k++) decode_element(a, k, p + k * size);
  return a;
}

std::vector<uint8_t> Array::to_bytes() const {
  size_t size = size_t(dtype.itemsize());
  std::vector<uint8_t> out(numel() * size);
  for (size_t k = 0; k < numel(); k++) encode_element(*this, k, out.data() + k * size);
  return out;
}

std::string Array::str(size_t max_elems) const {
  std::string s = dtype.name() + dims_str(shape) + "[";
  for (size_t k = 0; k < numel() && k < max_elems; k++) {
    if (k) s += ", ";
    if (dtype.is_float())
      s += cat(f[k]);
    else if (dtype.scalar == Scalar::UInt64)
      s += std::to_string(uint64_t(i[k]));
    else
      s += std::to_string(i[k]);
  }
  if (numel() > max_elems) s += ", ...";
  return s + "]";
}

void encode_float(DType dtype, double v, uint8_t* out) {
  v = round_float(dtype, v);
  switch (dtype.scalar) {
    case Scalar::Float32: {
      float x = float(v);
      std::memcpy(out, &x, 4);
      return;
    }
    case Scalar::Float64:
      std::memcpy(out, &v, 8);
      return;
    case Scalar::BFloat16: {
      float x = float(v);  // exact: bf16 values are float32 values with 16 zero low bits
      uint32_t u;
      std::memcpy(&u, &x, 4);
      out[0] = uint8_t(u >> 16);
      out[1] = uint8_t(u >> 24);
      return;
    }
    case Scalar::Float16: {
      uint32_t u = encode_minifloat(minifloat(dtype), v);
      out[0] = uint8_t(u);
      out[1] = uint8_t(u >> 8);
      return;
    }
    case Scalar::Fp8E4M3:
    case Scalar::Fp8E5M2:
      out[0] = uint8_t(encode_minifloat(minifloat(dtype), v));
      return;
    default:
      fail(Code::InvalidArg, "oracle: encode_float of ", dtype.name());
  }
}

double decode_float(DType dtype, const uint8_t* in) {
  switch (dtype.scalar) {
    case Scalar::Float32: {
      float x;
      std::memcpy(&x, in, 4);
      return x;
    }
    case Scalar::Float64: {
      double x;
      std::memcpy(&x, in, 8);
      return x;
    }
    case Scalar::BFloat16: {
      uint32_t u = (uint32_t(in[0]) << 16) | (uint32_t(in[1]) << 24);
      float x;
      std::memcpy(&x, &u, 4);
      return x;
    }
    case Scalar::Float16:
      return decode_minifloat(minifloat(dtype), uint32_t(in[0]) | (uint32_t(in[1]) << 8));
    case Scalar::Fp8E4M3:
    case Scalar::Fp8E5M2:
      return decode_minifloat(minifloat(dtype), in[0]);
    default:
      fail(Code::InvalidArg, "oracle: decode_float of ", dtype.name());
  }
}

// ---- entry points ----

std::vector<Array> evaluate(std::span<const UOp* const> roots, const BufferData& buffers) {
  for (const UOp* r : roots)
    if (r == nullptr) fail(Code::InvalidArg, "oracle: root is null");
  return Evaluator(buffers).run(roots);
}

Array evaluate(const UOp* root, const BufferData& buffers) { return evaluate({&root, 1}, buffers).front(); }

}  // namespace sn::oracle
