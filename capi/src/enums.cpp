// The public enums' fixed numbers, mapped onto the core's enums by tables (the core's order is
// internal and may change; the public numbers never do).
#include <array>
#include <utility>

#include "capi/src/capi_internal.h"

namespace sn::capi {
namespace {

constexpr std::pair<sn_dtype, Scalar> kDTypes[] = {
    {SN_DTYPE_BOOL, Scalar::Bool},       {SN_DTYPE_INT8, Scalar::Int8},         {SN_DTYPE_INT16, Scalar::Int16},
    {SN_DTYPE_INT32, Scalar::Int32},     {SN_DTYPE_INT64, Scalar::Int64},       {SN_DTYPE_UINT8, Scalar::UInt8},
    {SN_DTYPE_UINT16, Scalar::UInt16},   {SN_DTYPE_UINT32, Scalar::UInt32},     {SN_DTYPE_UINT64, Scalar::UInt64},
    {SN_DTYPE_FLOAT16, Scalar::Float16}, {SN_DTYPE_BFLOAT16, Scalar::BFloat16}, {SN_DTYPE_FLOAT32, Scalar::Float32},
    {SN_DTYPE_FLOAT64, Scalar::Float64}, {SN_DTYPE_FP8E4M3, Scalar::Fp8E4M3},   {SN_DTYPE_FP8E5M2, Scalar::Fp8E5M2},
    {SN_DTYPE_INDEX, Scalar::Index},     {SN_DTYPE_VOID, Scalar::Void},
};

constexpr std::pair<sn_op, Op> kOps[] = {
    {SN_OP_PARAM, Op::Param},
    {SN_OP_BUFFER, Op::Buffer},
    {SN_OP_CONST, Op::Const},
    {SN_OP_BINARY, Op::Binary},
    {SN_OP_DEFINE_VAR, Op::DefineVar},
    {SN_OP_PERMUTE, Op::Permute},
    {SN_OP_FLIP, Op::Flip},
    {SN_OP_RESHAPE, Op::Reshape},
    {SN_OP_EXPAND, Op::Expand},
    {SN_OP_PAD, Op::Pad},
    {SN_OP_SHRINK, Op::Shrink},
    {SN_OP_INDEX, Op::Index},
    {SN_OP_STACK, Op::Stack},
    {SN_OP_REPLICATED, Op::Replicated},
    {SN_OP_SLICE, Op::Slice},
    {SN_OP_BITCAST, Op::Bitcast},
    {SN_OP_REDUCE, Op::Reduce},
    {SN_OP_FUNCTION, Op::Function},
    {SN_OP_CALL, Op::Call},
    {SN_OP_TUPLE, Op::Tuple},
    {SN_OP_GET_TUPLE, Op::GetTuple},
    {SN_OP_LOAD, Op::Load},
    {SN_OP_COPY, Op::Copy},
    {SN_OP_STORE, Op::Store},
    {SN_OP_RANGE, Op::Range},
    {SN_OP_END, Op::End},
    {SN_OP_AFTER, Op::After},
    {SN_OP_GROUP, Op::Group},
    {SN_OP_SINK, Op::Sink},
    {SN_OP_LINEAR, Op::Linear},
    {SN_OP_RECIP, Op::Recip},
    {SN_OP_TRUNC, Op::Trunc},
    {SN_OP_CAST, Op::Cast},
    {SN_OP_ADD, Op::Add},
    {SN_OP_MUL, Op::Mul},
    {SN_OP_MAX, Op::Max},
    {SN_OP_MOD, Op::Mod},
    {SN_OP_IDIV, Op::Idiv},
    {SN_OP_CMPLT, Op::CmpLt},
    {SN_OP_CMPNE, Op::CmpNe},
    {SN_OP_XOR, Op::Xor},
    {SN_OP_OR, Op::Or},
    {SN_OP_AND, Op::And},
    {SN_OP_SHR, Op::Shr},
    {SN_OP_SHL, Op::Shl},
    {SN_OP_WHERE, Op::Where},
    {SN_OP_NEG, Op::Neg},
    {SN_OP_SUB, Op::Sub},
    {SN_OP_DIV, Op::Div},
    {SN_OP_CMPGT, Op::CmpGt},
    {SN_OP_CMPGE, Op::CmpGe},
    {SN_OP_CMPLE, Op::CmpLe},
    {SN_OP_CMPEQ, Op::CmpEq},
    {SN_OP_NOT, Op::Not},
    {SN_OP_EXP2, Op::Exp2},
    {SN_OP_LOG2, Op::Log2},
    {SN_OP_SIN, Op::Sin},
    {SN_OP_SQRT, Op::Sqrt},
    {SN_OP_POW, Op::Pow},
    {SN_OP_MULACC, Op::Mulacc},
    {SN_OP_THREEFRY, Op::Threefry},
    {SN_OP_CDIV, Op::CDiv},
    {SN_OP_CMOD, Op::CMod},
    {SN_OP_CONTIGUOUS, Op::Contiguous},
    {SN_OP_CONTIGUOUS_BACKWARD, Op::ContiguousBackward},
    {SN_OP_DETACH, Op::Detach},
    {SN_OP_STAGE, Op::Stage},
    {SN_OP_VECTORIZE, Op::Vectorize},
    {SN_OP_GEP, Op::Gep},
    {SN_OP_NOOP, Op::Noop},
    {SN_OP_BARRIER, Op::Barrier},
    {SN_OP_INS, Op::Ins},
    {SN_OP_SPECIAL, Op::Special},
    {SN_OP_IF, Op::If},
    {SN_OP_ENDIF, Op::Endif},
    {SN_OP_WMMA, Op::Wmma},
    {SN_OP_CUSTOM, Op::Custom},
    {SN_OP_ATOMIC_ADD, Op::AtomicAdd},
    {SN_OP_CUSTOM_FUNCTION, Op::CustomFunction},
    {SN_OP_PROGRAM, Op::Program},
    {SN_OP_SOURCE, Op::Source},
};

constexpr std::pair<sn_axis_type, AxisType> kAxisTypes[] = {
    {SN_AXIS_GLOBAL, AxisType::Global},
    {SN_AXIS_LOCAL, AxisType::Local},
    {SN_AXIS_WARP, AxisType::Warp},
    {SN_AXIS_THREAD, AxisType::Thread},
    {SN_AXIS_LOOP, AxisType::Loop},
    {SN_AXIS_REDUCE, AxisType::Reduce},
    {SN_AXIS_GROUP_REDUCE, AxisType::GroupReduce},
    {SN_AXIS_UPCAST, AxisType::Upcast},
    {SN_AXIS_UNROLL, AxisType::Unroll},
};

constexpr std::pair<sn_addrspace, AddrSpace> kAddrSpaces[] = {
    {SN_ADDRSPACE_NONE, AddrSpace::None},
    {SN_ADDRSPACE_GLOBAL, AddrSpace::Global},
    {SN_ADDRSPACE_LOCAL, AddrSpace::Local},
    {SN_ADDRSPACE_REG, AddrSpace::Reg},
};

// A table is a bijection when it names every internal value exactly once and no public number
// twice. Checked at compile time, so adding an op/dtype to the core without a public number (or
// giving two ops one number) breaks the build instead of silently mis-mapping.
template <class C, class I, size_t N>
constexpr bool is_bijection(const std::pair<C, I> (&table)[N], size_t internal_count) {
  if (N != internal_count) return false;
  for (size_t i = 0; i < N; ++i) {
    if (static_cast<size_t>(table[i].second) >= internal_count) return false;
    for (size_t j = i + 1; j < N; ++j)
      if (table[i].first == table[j].first || table[i].second == table[j].second) return false;
  }
  return true;
}
static_assert(is_bijection(kDTypes, size_t(Scalar::Count_)), "every sn::Scalar needs exactly one sn_dtype");
static_assert(is_bijection(kOps, size_t(Op::Count_)), "every sn::Op needs exactly one sn_op");
static_assert(is_bijection(kAxisTypes, size_t(AxisType::Unroll) + 1), "every AxisType needs one sn_axis_type");
static_assert(is_bijection(kAddrSpaces, size_t(AddrSpace::Reg) + 1), "every AddrSpace needs one sn_addrspace");

// Lookup both ways: public number -> internal (-1 = unknown), internal -> public.
template <class C, class I, size_t N, size_t MaxC, size_t NI>
struct Maps {
  std::array<int, MaxC + 1> to_internal{};
  std::array<C, NI> to_public{};
  constexpr explicit Maps(const std::pair<C, I> (&table)[N]) {
    for (auto& v : to_internal) v = -1;
    for (const auto& [c, i] : table) {
      to_internal[size_t(c)] = int(i);
      to_public[size_t(i)] = c;
    }
  }
};

constexpr Maps<sn_dtype, Scalar, std::size(kDTypes), SN_DTYPE_VOID, size_t(Scalar::Count_)> kDTypeMaps(kDTypes);
constexpr Maps<sn_op, Op, std::size(kOps), SN_OP_SOURCE, size_t(Op::Count_)> kOpMaps(kOps);
constexpr Maps<sn_axis_type, AxisType, std::size(kAxisTypes), SN_AXIS_UNROLL, std::size(kAxisTypes)> kAxisMaps(
    kAxisTypes);
constexpr Maps<sn_addrspace, AddrSpace, std::size(kAddrSpaces), SN_ADDRSPACE_REG, std::size(kAddrSpaces)> kAddrMaps(
    kAddrSpaces);

template <class M>
int lookup(const M& maps, int64_t v) {
  if (v < 0 || v >= int64_t(maps.to_internal.size())) return -1;
  return maps.to_internal[size_t(v)];
}

}  // namespace

DType to_dtype(int64_t v, const char* param) {
  int i = lookup(kDTypeMaps, v);
  if (i < 0) invalid(param, ": unknown sn_dtype value ", v);
  return DType(static_cast<Scalar>(i));
}
sn_dtype from_scalar(Scalar s) { return kDTypeMaps.to_public[size_t(s)]; }

Op to_op(int64_t v, const char* param) {
  int i = lookup(kOpMaps, v);
  if (i < 0) invalid(param, ": unknown sn_op value ", v);
  return static_cast<Op>(i);
}
sn_op from_op(Op op) { return kOpMaps.to_public[size_t(op)]; }

AxisType to_axis_type(int64_t v, const char* param) {
  int i = lookup(kAxisMaps, v);
  if (i < 0) invalid(param, ": unknown sn_axis_type value ", v);
  return static_cast<AxisType>(i);
}
sn_axis_type from_axis_type(AxisType t) { return kAxisMaps.to_public[size_t(t)]; }

AddrSpace to_addrspace(int64_t v, const char* param) {
  int i = lookup(kAddrMaps, v);
  if (i < 0) invalid(param, ": unknown sn_addrspace value ", v);
  auto a = static_cast<AddrSpace>(i);
  return a == AddrSpace::None ? AddrSpace::Global : a;
}
sn_addrspace from_addrspace(AddrSpace a) { return kAddrMaps.to_public[size_t(a)]; }

}  // namespace sn::capi

using namespace sn::capi;

const char* sn_dtype_name(sn_dtype dtype) {
  int i = lookup(kDTypeMaps, raw(dtype));
  return i < 0 ? nullptr : sn::scalar_name(static_cast<sn::Scalar>(i));
}

const char* sn_op_name(sn_op op) {
  int i = lookup(kOpMaps, raw(op));
  if (i < 0) return nullptr;
  // The core's names are string_views; keep NUL-terminated copies, made once. (Making them can
  // only fail for lack of memory; then there is no name to give, and the next call tries again.)
  try {
    static const std::array<std::string, size_t(sn::Op::Count_)> names = [] {
      std::array<std::string, size_t(sn::Op::Count_)> v;
      for (size_t k = 0; k < v.size(); ++k) v[k] = std::string(sn::op_name(static_cast<sn::Op>(k)));
      return v;
    }();
    return names[size_t(i)].c_str();
  } catch (...) {
    return nullptr;
  }
}

const char* sn_axis_type_name(sn_axis_type type) {
  int i = lookup(kAxisMaps, raw(type));
  return i < 0 ? nullptr : sn::axis_type_name(static_cast<sn::AxisType>(i));
}

const char* sn_addrspace_name(sn_addrspace space) {
  int i = lookup(kAddrMaps, raw(space));
  return i < 0 ? nullptr : sn::addrspace_name(static_cast<sn::AddrSpace>(i));
}
