// Types and literals of LLVM IR text (see llvm_text.h).
#include "backends/llvm/llvm_text.h"

#include <bit>
#include <cmath>
#include <cstdio>

#include "core/util/error.h"

namespace sn::llvmir {

bool is_bf16(DType d) { return d.scalar == Scalar::BFloat16; }
bool is_fp8(DType d) { return d.scalar == Scalar::Fp8E4M3 || d.scalar == Scalar::Fp8E5M2; }
bool signed_int(DType d) { return d.is_signed_int() || d.is_index(); }

const char* scalar_type(Scalar s) {
  switch (s) {
    case Scalar::Bool:
      return "i1";
    case Scalar::Int8:
    case Scalar::UInt8:
    case Scalar::Fp8E4M3:
    case Scalar::Fp8E5M2:
      return "i8";  // fp8 lives as bits (its bytes in buffers); math goes through float32
    case Scalar::Int16:
    case Scalar::UInt16:
    case Scalar::BFloat16:
      return "i16";  // bfloat16 lives as bits; math goes through float32
    case Scalar::Int32:
    case Scalar::UInt32:
      return "i32";
    case Scalar::Int64:
    case Scalar::UInt64:
    case Scalar::Index:
      return "i64";
    case Scalar::Float16:
      return "half";
    case Scalar::Float32:
      return "float";
    case Scalar::Float64:
      return "double";
    default:
      fail(Code::Unsupported, "llvm: dtype ", scalar_name(s), " has no LLVM type");
  }
}

// Register type of a value: "float", "<16 x float>".
std::string reg_type(DType d) {
  if (d.lanes == 1) return scalar_type(d.scalar);
  return str("<", d.lanes, " x ", scalar_type(d.scalar), ">");
}

// Element type in memory behind a pointer dtype: bools are bytes in buffers, i1 in registers.
std::string mem_scalar(DType ptr) {
  if (ptr.scalar == Scalar::Bool && ptr.addrspace != AddrSpace::Reg) return "i8";
  return scalar_type(ptr.scalar);
}
std::string mem_type(DType ptr) {
  if (ptr.lanes == 1) return mem_scalar(ptr);
  return str("<", ptr.lanes, " x ", mem_scalar(ptr), ">");
}

int int_bits(DType d) { return d.is_bool() ? 1 : d.bits(); }

// Intrinsic overload suffix: f32, v16f32, i64, v8i64.
std::string ovl(DType d) {
  std::string base = d.is_float() ? str("f", d.bits()) : str("i", int_bits(d));
  if (is_bf16(d)) base = "i16";
  if (is_fp8(d)) base = "i8";
  return d.lanes == 1 ? base : str("v", d.lanes, base);
}

// The literal `lit` (of d's scalar type) for every lane of d: LLVM's splat constant, which it
// parses as one literal (a list of 16 took 16 lexings and float conversions).
std::string splat(DType d, const std::string& lit) {
  if (d.lanes == 1) return lit;
  return str("splat (", scalar_type(d.scalar), " ", lit, ")");
}

namespace {

// IEEE half bits of a double (round to nearest even).
uint16_t half_bits(double v) {
  float f = float(round_float(dtypes::float16, v));
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint16_t sign = uint16_t((x >> 16) & 0x8000);
  if (std::isnan(f)) return uint16_t(sign | 0x7e00);
  if (std::isinf(f)) return uint16_t(sign | 0x7c00);
  double a = std::fabs(double(f));
  if (a == 0) return sign;
  int e;
  double m = std::frexp(a, &e);                                       // a = m * 2^e, m in [0.5, 1)
  int exp = e - 1 + 15;                                               // biased exponent of 1.xxx * 2^(e-1)
  if (exp <= 0) return uint16_t(sign | uint16_t(std::ldexp(a, 24)));  // subnormal: a / 2^-24 (exact)
  uint16_t mant = uint16_t(std::ldexp(m * 2 - 1, 10));
  return uint16_t(sign | (exp << 10) | mant);
}

uint16_t bf16_bits(double v) {
  float f = float(v);
  uint32_t x = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return uint16_t((x >> 16) | 0x40);
  x += 0x7fff + ((x >> 16) & 1);
  return uint16_t(x >> 16);
}

}  // namespace

Fp8Format fp8_format(Scalar s) {
  if (s == Scalar::Fp8E4M3) return {3, 7, false, 0x7e, 0x7f};
  return {2, 15, true, 0x7b, 0x7e};
}

namespace {

// fp8 bits of a double: rounded to nearest even (round_float: e4m3 overflow is NaN, e5m2
// overflow is inf); NaN is the format's canonical NaN (no sign), as the oracle encodes it.
uint8_t fp8_bits(Scalar s, double v) {
  Fp8Format f = fp8_format(s);
  double r = round_float(DType{s}, v);
  if (std::isnan(r)) return uint8_t(f.nan_code);
  uint32_t sign = std::signbit(r) ? 0x80 : 0;
  if (std::isinf(r)) return uint8_t(sign | (f.max_code + 1));  // e5m2 only: e4m3 rounds to NaN
  double a = std::fabs(r);
  if (a == 0) return uint8_t(sign);
  int e;
  std::frexp(a, &e);
  int exp = e - 1, emin = 1 - f.bias;
  if (exp < emin) return uint8_t(sign | uint32_t(std::ldexp(a, f.mbits - emin)));  // subnormal
  uint32_t mant = uint32_t(std::ldexp(a, f.mbits - exp)) - (1u << f.mbits);
  return uint8_t(sign | (uint32_t(exp + f.bias) << f.mbits) | mant);
}

std::string hex64(uint64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%016llX", static_cast<unsigned long long>(b));
  return buf;
}

}  // namespace

std::string literal(DType d, double fv, i128 iv, bool is_float_value) {
  if (d.is_float()) {
    double v = is_float_value ? fv : double(iv);
    switch (d.scalar) {
      case Scalar::Float32:
        return hex64(std::bit_cast<uint64_t>(double(float(v))));
      case Scalar::Float64:
        return hex64(std::bit_cast<uint64_t>(v));
      case Scalar::Float16: {
        char buf[16];
        std::snprintf(buf, sizeof buf, "0xH%04X", half_bits(v));
        return buf;
      }
      case Scalar::BFloat16:
        return std::to_string(int16_t(bf16_bits(v)));
      case Scalar::Fp8E4M3:
      case Scalar::Fp8E5M2:
        return std::to_string(int8_t(fp8_bits(d.scalar, v)));
      default:
        fail(Code::Unsupported, "llvm: constant of ", d.name());
    }
  }
  if (d.is_bool()) return iv ? "true" : "false";
  i128 w = wrap_int(d.base(), is_float_value ? i128(fv) : iv);
  int bits = d.bits();
  if (bits < 64 && w >= (i128(1) << (bits - 1))) w -= i128(1) << bits;  // unsigned values as signed bits
  if (bits == 64 && w > i128(INT64_MAX)) w -= (i128(1) << 64);
  return std::to_string(int64_t(w));
}

std::string const_literal(const UOp* c) {
  if (c->holds<double>()) return literal(c->dtype, c->as<double>(), 0, true);
  return literal(c->dtype, 0, c->as<int64_t>(), false);
}

}  // namespace sn::llvmir
