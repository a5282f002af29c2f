#include "core/ir/dtype.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace sn {

namespace {
struct ScalarInfo {
  const char* name;
  int bits;
  bool is_float, is_int, is_unsigned;
};
constexpr ScalarInfo kScalars[] = {
    {"void", 0, false, false, false},    {"bool", 8, false, false, false},    {"int8", 8, false, true, false},
    {"int16", 16, false, true, false},   {"int32", 32, false, true, false},   {"int64", 64, false, true, false},
    {"uint8", 8, false, true, true},     {"uint16", 16, false, true, true},   {"uint32", 32, false, true, true},
    {"uint64", 64, false, true, true},   {"float16", 16, true, false, false}, {"bfloat16", 16, true, false, false},
    {"float32", 32, true, false, false}, {"float64", 64, true, false, false}, {"fp8e4m3", 8, true, false, false},
    {"fp8e5m2", 8, true, false, false},  {"index", 64, false, true, false},
};
static_assert(sizeof(kScalars) / sizeof(kScalars[0]) == size_t(Scalar::Count_));
const ScalarInfo& info(Scalar s) { return kScalars[size_t(s)]; }

// Round a finite double to a binary float format with `mant` explicit mantissa bits and the
// given exponent range, to nearest even. Overflow goes to inf (or to max for formats without inf).
double round_to_format(double v, int mant, int min_exp, int max_exp, double max_finite, bool has_inf) {
  if (std::isnan(v) || std::isinf(v)) return has_inf || std::isnan(v) ? v : std::numeric_limits<double>::quiet_NaN();
  if (v == 0) return v;
  int e;
  std::frexp(v, &e);                 // v = m * 2^e, 0.5 <= |m| < 1
  int exp = e - 1;                   // exponent of the leading bit
  if (exp < min_exp) exp = min_exp;  // subnormal: fixed quantum
  double quantum = std::ldexp(1.0, exp - mant);
  double r = std::nearbyint(v / quantum) * quantum;  // default rounding mode: nearest even
  (void)max_exp;
  if (std::fabs(r) > max_finite) {
    if (!has_inf) return std::numeric_limits<double>::quiet_NaN();
    // IEEE: values at or beyond max + half an ulp round to inf
    return std::copysign(std::numeric_limits<double>::infinity(), v);
  }
  return r;
}
}  // namespace

bool DType::is_float() const { return !ptr && info(scalar).is_float; }
bool DType::is_int() const { return !ptr && info(scalar).is_int; }
bool DType::is_unsigned() const { return !ptr && info(scalar).is_unsigned; }
bool DType::is_signed_int() const { return is_int() && !info(scalar).is_unsigned; }
int DType::bits() const { return info(scalar).bits; }
int DType::itemsize() const { return ptr ? 8 : (bits() / 8) * lanes; }

std::string DType::name() const {
  std::string s = info(scalar).name;
  if (lanes != 1) s += "x" + std::to_string(lanes);
  if (ptr) s += std::string("*[") + addrspace_name(addrspace) + "]";
  return s;
}

i128 DType::int_min() const {
  if (scalar == Scalar::Bool) return 0;
  if (scalar == Scalar::Index) return i128(std::numeric_limits<int64_t>::min());
  if (!info(scalar).is_int) return 0;
  if (info(scalar).is_unsigned) return 0;
  return -(i128(1) << (bits() - 1));
}
i128 DType::int_max() const {
  if (scalar == Scalar::Bool) return 1;
  if (scalar == Scalar::Index) return i128(std::numeric_limits<int64_t>::max());
  if (!info(scalar).is_int) return 0;
  if (info(scalar).is_unsigned) return (i128(1) << bits()) - 1;
  return (i128(1) << (bits() - 1)) - 1;
}
double DType::float_max() const {
  switch (scalar) {
    case Scalar::Float16:
      return 65504.0;
    case Scalar::BFloat16:
      return 3.3895313892515355e38;
    case Scalar::Float32:
      return double(std::numeric_limits<float>::max());
    case Scalar::Float64:
      return std::numeric_limits<double>::max();
    case Scalar::Fp8E4M3:
      return 448.0;
    case Scalar::Fp8E5M2:
      return 57344.0;
    default:
      return 0;
  }
}

const char* scalar_name(Scalar s) { return info(s).name; }
bool scalar_from_name(const std::string& name, Scalar* out) {
  for (size_t i = 0; i < size_t(Scalar::Count_); i++)
    if (name == kScalars[i].name) {
      *out = Scalar(i);
      return true;
    }
  return false;
}
const char* addrspace_name(AddrSpace a) {
  switch (a) {
    case AddrSpace::None:
      return "none";
    case AddrSpace::Global:
      return "global";
    case AddrSpace::Local:
      return "local";
    case AddrSpace::Reg:
      return "reg";
  }
  return "?";
}

i128 wrap_int(DType dt, i128 v) {
  if (dt.scalar == Scalar::Index) return v;
  if (dt.scalar == Scalar::Bool) return v != 0;
  int b = dt.bits();
  if (b <= 0 || b >= 128) return v;
  unsigned __int128 m = (static_cast<unsigned __int128>(1) << b) - 1;
  unsigned __int128 u = static_cast<unsigned __int128>(v) & m;
  if (!dt.is_unsigned() && (u >> (b - 1)) & 1) return i128(u) - (i128(1) << b);
  return i128(u);
}

double round_float(DType dt, double v) {
  switch (dt.scalar) {
    case Scalar::Float32:
      return double(float(v));
    case Scalar::Float64:
      return v;
    case Scalar::Float16:
      return round_to_format(v, 10, -14, 15, 65504.0, true);
    case Scalar::BFloat16:
      return round_to_format(v, 7, -126, 127, 3.3895313892515355e38, true);
    case Scalar::Fp8E4M3:
      return round_to_format(v, 3, -6, 8, 448.0, false);
    case Scalar::Fp8E5M2:
      return round_to_format(v, 2, -14, 15, 57344.0, true);
    default:
      return v;
  }
}

}  // namespace sn
