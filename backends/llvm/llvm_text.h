// The text pieces of LLVM IR that every dialect of the renderer shares (backends/llvm/llvm_ir.cpp):
// string building, the IR type of a dtype in registers and in memory, intrinsic overload suffixes,
// and literals (IEEE half, bfloat16 and fp8 bits computed here, bit-exact with the oracle).
#pragma once
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "core/ir/uop.h"

namespace sn::llvmir {

// String building without iostreams (rendering is on the compile path of every kernel).
inline void app(std::string& o, std::string_view v) { o.append(v.data(), v.size()); }
inline void app(std::string& o, char c) { o += c; }
template <class T>
requires std::is_integral_v<T>
inline void app(std::string& o, T v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  o.append(buf, r.ptr);
}
template <class... T>
std::string str(const T&... parts) {
  std::string o;
  (app(o, parts), ...);
  return o;
}

bool is_bf16(DType d);
bool is_fp8(DType d);
bool signed_int(DType d);

// Register type of a scalar kind ("float", "i16" for bfloat16 bits, "i8" for fp8 bits).
const char* scalar_type(Scalar s);
// Register type of a value: "float", "<16 x float>".
std::string reg_type(DType d);
// Element type in memory behind a pointer dtype: bools are bytes in buffers, i1 in registers.
std::string mem_scalar(DType ptr);
std::string mem_type(DType ptr);
int int_bits(DType d);
// Intrinsic overload suffix: f32, v16f32, i64, v8i64.
std::string ovl(DType d);
// The literal `lit` (of d's scalar type) for every lane of d.
std::string splat(DType d, const std::string& lit);

// The layout of an fp8 format: e4m3 (OCP e4m3fn: no inf, NaN is S.1111.111, max 448) or e5m2
// (IEEE-like: inf, NaN, max 57344).
struct Fp8Format {
  int mbits, bias;
  bool ieee;
  uint32_t max_code, nan_code;  // largest finite magnitude code; the NaN the conversions produce
};
Fp8Format fp8_format(Scalar s);

// A literal of dtype d's scalar type: fv when is_float_value, else iv.
std::string literal(DType d, double fv, i128 iv, bool is_float_value);
// The literal of a Const.
std::string const_literal(const UOp* c);

}  // namespace sn::llvmir
