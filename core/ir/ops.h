// The op set of the UOp dialect: every op of the spec's tables plus the internal ops the
// lowering stages need. One X-macro lists them so names and categories stay in one place.
#pragma once
#include <cstdint>
#include <string_view>

namespace sn {

// X(Name, Category, min_src, max_src)   max_src = -1: variadic
// The table is laid out by hand (clang-format does not reach a fixed point on it).
// clang-format off
#define SN_OPS(X)                                                                      \
  /* source */                                                                         \
  X(Param, Source, 1, 1) X(Buffer, Source, 0, 0) X(Const, Source, 0, 0)                \
  X(Binary, Source, 0, 0) X(DefineVar, Source, 0, 0)                                   \
  /* movement */                                                                       \
  X(Permute, Movement, 1, 1) X(Flip, Movement, 1, 1) X(Reshape, Movement, 2, 2)        \
  X(Expand, Movement, 2, 2) X(Pad, Movement, 3, 3) X(Shrink, Movement, 3, 3)           \
  X(Index, Movement, 1, -1) X(Stack, Movement, 0, -1) X(Replicated, Movement, 1, 1)    \
  X(Slice, Movement, 2, 2) X(Bitcast, Movement, 1, 1)                                  \
  /* reduce */                                                                         \
  X(Reduce, Reduce, 1, -1)                                                             \
  /* call */                                                                           \
  X(Function, Call, 1, -1) X(Call, Call, 1, -1) X(Tuple, Call, 0, -1)                  \
  X(GetTuple, Call, 1, 1)                                                              \
  /* load / store / copy */                                                            \
  X(Load, Load, 1, 3) X(Copy, Load, 1, 1) X(Store, Store, 2, 3)                        \
  /* ordering */                                                                       \
  X(Range, Ordering, 1, -1) X(End, Ordering, 2, -1) X(After, Ordering, 1, -1)          \
  X(Group, Ordering, 0, -1) X(Sink, Ordering, 0, -1) X(Linear, Ordering, 0, -1)        \
  /* elementwise primitives */                                                         \
  X(Recip, Unary, 1, 1) X(Trunc, Unary, 1, 1) X(Cast, Unary, 1, 1)                     \
  X(Add, Binary, 2, 2) X(Mul, Binary, 2, 2) X(Max, Binary, 2, 2) X(Mod, Binary, 2, 2)  \
  X(Idiv, Binary, 2, 2) X(CmpLt, Binary, 2, 2) X(CmpNe, Binary, 2, 2)                  \
  X(Xor, Binary, 2, 2) X(Or, Binary, 2, 2) X(And, Binary, 2, 2) X(Shr, Binary, 2, 2)   \
  X(Shl, Binary, 2, 2) X(Where, Ternary, 3, 3)                                         \
  /* decomposed elementwise */                                                         \
  X(Neg, Unary, 1, 1) X(Sub, Binary, 2, 2) X(Div, Binary, 2, 2) X(CmpGt, Binary, 2, 2) \
  X(CmpGe, Binary, 2, 2) X(CmpLe, Binary, 2, 2) X(CmpEq, Binary, 2, 2)                 \
  X(Not, Unary, 1, 1) X(Exp2, Unary, 1, 1) X(Log2, Unary, 1, 1) X(Sin, Unary, 1, 1)    \
  X(Sqrt, Unary, 1, 1) X(Pow, Binary, 2, 2) X(Mulacc, Ternary, 3, 3)                   \
  X(Threefry, Binary, 2, 2)                                                            \
  /* internal elementwise: C-truncating division pair (what hardware does) */          \
  X(CDiv, Binary, 2, 2) X(CMod, Binary, 2, 2)                                          \
  /* markers */                                                                        \
  X(Contiguous, Marker, 1, -1) X(ContiguousBackward, Marker, 1, 1)                     \
  X(Detach, Marker, 1, 1)                                                              \
  /* internal: materialization point (tinygrad STAGE / Morok BUFFERIZE) */             \
  X(Stage, Internal, 1, -1)                                                            \
  /* internal: vector construction / lane extraction, no-op */                         \
  X(Vectorize, Internal, 1, -1) X(Gep, Internal, 1, 1) X(Noop, Internal, 0, -1)        \
  /* codegen */                                                                        \
  X(Barrier, Codegen, 0, -1) X(Ins, Codegen, 0, -1) X(Special, Codegen, 1, 1)          \
  X(If, Codegen, 1, -1) X(Endif, Codegen, 1, 1) X(Wmma, Codegen, 3, 3)                 \
  X(Custom, Codegen, 0, -1) X(AtomicAdd, Codegen, 2, 2)                                \
  X(CustomFunction, Codegen, 0, -1) X(Program, Codegen, 1, -1) X(Source, Codegen, 0, 0)
// clang-format on

enum class Op : uint8_t {
#define SN_X(name, cat, lo, hi) name,
  SN_OPS(SN_X)
#undef SN_X
      Count_
};

enum class OpCategory : uint8_t {
  Source,
  Movement,
  Reduce,
  Call,
  Load,
  Store,
  Ordering,
  Unary,
  Binary,
  Ternary,
  Marker,
  Internal,
  Codegen
};

struct OpInfo {
  std::string_view name;
  OpCategory category;
  int8_t min_src, max_src;  // max_src -1: any number
};

const OpInfo& op_info(Op op);
inline std::string_view op_name(Op op) { return op_info(op).name; }
bool op_from_name(std::string_view name, Op* out);  // case-insensitive

inline bool is_elementwise(Op op) {
  auto c = op_info(op).category;
  return c == OpCategory::Unary || c == OpCategory::Binary || c == OpCategory::Ternary;
}
inline bool is_movement(Op op) { return op_info(op).category == OpCategory::Movement; }
inline bool is_comparison(Op op) {
  return op == Op::CmpLt || op == Op::CmpNe || op == Op::CmpGt || op == Op::CmpGe || op == Op::CmpLe || op == Op::CmpEq;
}
// a op b == b op a
inline bool is_commutative(Op op) {
  return op == Op::Add || op == Op::Mul || op == Op::Max || op == Op::CmpNe || op == Op::CmpEq || op == Op::Xor ||
         op == Op::Or || op == Op::And;
}

// Loop kinds of a Range (the spec's AxisType table).
enum class AxisType : uint8_t { Global, Local, Warp, Thread, Loop, Reduce, GroupReduce, Upcast, Unroll };
const char* axis_type_name(AxisType t);
char axis_type_letter(AxisType t);

}  // namespace sn
