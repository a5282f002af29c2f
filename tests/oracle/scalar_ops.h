// The value semantics of one elementwise op on scalars, shared by the two oracles (the tensor-level
// interpreter and the kernel-IR interpreter) so that they cannot disagree with each other. Floats are
// evaluated in double (the callers round to the dtype); integers exactly in i128, wrapped to the dtype.
#pragma once
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/ir/graph.h"

namespace sn::oracle::scalar {

using u128 = unsigned __int128;

inline i128 wrap_mul(DType dt, i128 a, i128 b) {
  // operands are 64-bit values, so the product may exceed i128; the low bits are what matter
  return wrap_int(dt, i128(u128(a) * u128(b)));
}

template <class T>
bool compare(Op op, T a, T b) {
  switch (op) {
    case Op::CmpLt:
      return a < b;
    case Op::CmpNe:
      return a != b;
    case Op::CmpGt:
      return b < a;
    // the spec defines these three as negations (CmpNe(x, 1)); that decides the NaN cases
    case Op::CmpGe:
      return !(a < b);
    case Op::CmpLe:
      return !(b < a);
    case Op::CmpEq:
      return !(a != b);
    default:
      fail(Code::Internal, "oracle: ", op_name(op), " is not a comparison");
  }
}

inline double float_op(Op op, const double* x) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  switch (op) {
    case Op::Add:
      return x[0] + x[1];
    case Op::Sub:
      return x[0] - x[1];
    case Op::Mul:
      return x[0] * x[1];
    case Op::Div:
      return x[0] / x[1];
    case Op::Max:
      // Which zero max(-0, +0) gives is not specified (sinter.h, SN_OP_MAX): the CPU's maximum does
      // not order -0 below +0, and either may be returned. A value that depends on it is undefined.
      if (x[0] == 0 && x[1] == 0 && std::signbit(x[0]) != std::signbit(x[1]))
        fail(Code::InvalidArg, "oracle: max(", x[0], ", ", x[1], ") is either zero: undefined");
      return std::isnan(x[0]) || std::isnan(x[1]) ? kNaN : std::max(x[0], x[1]);
    case Op::Neg:
      return -x[0];
    case Op::Recip:
      return 1.0 / x[0];
    case Op::Trunc:
      return std::trunc(x[0]);
    case Op::Exp2:
      return std::exp2(x[0]);
    case Op::Log2:
      return std::log2(x[0]);
    case Op::Sin:
      return std::sin(x[0]);
    case Op::Sqrt:
      return std::sqrt(x[0]);
    case Op::Pow:
      return std::pow(x[0], x[1]);
    case Op::Mulacc:
      return x[0] * x[1] + x[2];
    default:
      fail(Code::Unsupported, "oracle: ", op_name(op), " is not defined on floats");
  }
}

inline i128 int_op(Op op, const i128* x, DType dt) {
  switch (op) {
    case Op::Add:
      return wrap_int(dt, x[0] + x[1]);
    case Op::Sub:
      return wrap_int(dt, x[0] - x[1]);
    case Op::Mul:
      return wrap_mul(dt, x[0], x[1]);
    case Op::Max:
      return std::max(x[0], x[1]);
    case Op::Neg:
      return wrap_int(dt, -x[0]);
    case Op::Trunc:
      return x[0];
    case Op::Mulacc:
      return wrap_int(dt, wrap_mul(dt, x[0], x[1]) + x[2]);
    case Op::Not:
      return x[0] == 0;
    case Op::Xor:
      return wrap_int(dt, x[0] ^ x[1]);
    case Op::Or:
      return wrap_int(dt, x[0] | x[1]);
    case Op::And:
      return wrap_int(dt, x[0] & x[1]);
    case Op::Idiv:
    case Op::Mod:
    case Op::CDiv:
    case Op::CMod: {
      if (x[1] == 0) fail(Code::InvalidArg, "oracle: ", op_name(op), " by zero is undefined (", dt.name(), ")");
      i128 q = x[0] / x[1], r = x[0] % x[1];  // truncating
      if ((op == Op::Idiv || op == Op::Mod) && r != 0 && ((r < 0) != (x[1] < 0))) {
        q -= 1;  // floor: round toward -inf when the signs differ
        r += x[1];
      }
      return wrap_int(dt, op == Op::Idiv || op == Op::CDiv ? q : r);
    }
    case Op::Shl:
    case Op::Shr: {
      if (x[1] < 0) fail(Code::InvalidArg, "oracle: ", op_name(op), " by a negative amount ", int64_t(x[1]));
      if (x[1] >= dt.bits()) return op == Op::Shr && x[0] < 0 ? -1 : 0;
      int s = int(x[1]);
      return wrap_int(dt, op == Op::Shl ? i128(u128(x[0]) << s) : x[0] >> s);  // >> on i128: arithmetic
    }
    default:
      fail(Code::Unsupported, "oracle: ", op_name(op), " is not defined on ", dt.name());
  }
}

inline double int_to_float(DType to, i128 v) {
  if (to.scalar == Scalar::Float32) return double(static_cast<float>(v));  // one correct rounding
  if (to.scalar == Scalar::Float64) return static_cast<double>(v);
  // exact in double for |v| <= 2^53, which covers every integer these formats hold exactly
  return round_float(to, static_cast<double>(v));
}

}  // namespace sn::oracle::scalar
