// Data types of the UOp dialect: scalars, vectors and pointers with an address space.
#pragma once
#include <cstdint>
#include <string>

namespace sn {

__extension__ typedef __int128 i128;  // exact integer interval arithmetic for every 64-bit dtype

// Scalar kinds. The order is internal; the C API maps its own append-only numbers onto these.
enum class Scalar : uint8_t {
  Void,
  Bool,
  Int8,
  Int16,
  Int32,
  Int64,
  UInt8,
  UInt16,
  UInt32,
  UInt64,
  Float16,
  BFloat16,
  Float32,
  Float64,
  Fp8E4M3,
  Fp8E5M2,
  Index,  // exact integer of index math; committed to int32/int64 late in codegen
  Count_
};

// Where a pointer points. None for values.
enum class AddrSpace : uint8_t { None, Global, Local, Reg };

// A dtype is a small value: scalar kind, vector lanes, and (for pointers) the address space.
// `ptr` pointers point to `lanes`-wide elements of `scalar`.
struct DType {
  Scalar scalar = Scalar::Void;
  uint16_t lanes = 1;
  bool ptr = false;
  AddrSpace addrspace = AddrSpace::None;

  constexpr DType() = default;
  constexpr DType(Scalar s) : scalar(s) {}  // NOLINT: implicit from a scalar kind is natural
  constexpr DType(Scalar s, uint16_t l, bool p, AddrSpace a) : scalar(s), lanes(l), ptr(p), addrspace(a) {}

  constexpr DType vec(uint16_t n) const { return DType(scalar, n, ptr, addrspace); }
  constexpr DType as_ptr(AddrSpace a) const { return DType(scalar, lanes, true, a); }
  constexpr DType base() const { return DType(scalar); }  // scalar element type
  constexpr DType elem() const { return DType(scalar, lanes, false, AddrSpace::None); }
  constexpr bool operator==(const DType&) const = default;

  bool is_void() const { return scalar == Scalar::Void && !ptr; }
  bool is_bool() const { return scalar == Scalar::Bool && !ptr; }
  bool is_float() const;     // f16 bf16 f32 f64 fp8 (value, any lanes)
  bool is_int() const;       // signed, unsigned or index (value, any lanes)
  bool is_unsigned() const;  // u8..u64
  bool is_signed_int() const;
  bool is_index() const { return scalar == Scalar::Index && !ptr; }
  int bits() const;          // bits of one scalar element (index: 64; void: 0)
  int itemsize() const;      // bytes of one element (lanes included; pointers: 8)
  std::string name() const;  // "float32", "int32x4", "float32*[global]"

  // Value range of the scalar type, as an exact integer interval (ints, bool) or a double
  // interval (floats). Index is treated as int64.
  i128 int_min() const;
  i128 int_max() const;
  double float_max() const;  // largest finite value
};

namespace dtypes {
inline constexpr DType void_{Scalar::Void}, bool_{Scalar::Bool}, int8{Scalar::Int8}, int16{Scalar::Int16},
    int32{Scalar::Int32}, int64{Scalar::Int64}, uint8{Scalar::UInt8}, uint16{Scalar::UInt16}, uint32{Scalar::UInt32},
    uint64{Scalar::UInt64}, float16{Scalar::Float16}, bfloat16{Scalar::BFloat16}, float32{Scalar::Float32},
    float64{Scalar::Float64}, fp8e4m3{Scalar::Fp8E4M3}, fp8e5m2{Scalar::Fp8E5M2}, index{Scalar::Index};
}  // namespace dtypes

const char* scalar_name(Scalar s);
bool scalar_from_name(const std::string& name, Scalar* out);  // "float32", "int8", "index", ...
const char* addrspace_name(AddrSpace a);

// Wrap an exact integer into the dtype's representation (two's complement truncation;
// bool: != 0). Index is exact and returned unchanged.
i128 wrap_int(DType dt, i128 v);
// Round a double to what the float dtype can hold (f16, bf16, fp8 round to nearest even).
double round_float(DType dt, double v);

}  // namespace sn
