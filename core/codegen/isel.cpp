// Instruction selection: rewrite the kernel into the ops the renderers emit.
//  - floor Idiv/Mod -> C-truncating CDiv/CMod; when min/max cannot prove both operands
//    non-negative, the truncated quotient is corrected toward -inf.
//  - float16 / bfloat16 / fp8 math runs in float32 and is rounded back after every op (exactly the
//    rounding of native half arithmetic: float32 holds every half sum/product exactly enough).
//    The renderer converts fp8 (stored as bytes) to and from float32 with integer ops.
//  - bool Add/Mul/Max -> Or/And/Or; Trunc of an integer and same-type Casts disappear.
//  - Threefry -> its add-rotate-xor rounds (the tensor library's composition, on scalars).
//  - Exp2/Log2/Sin/Sqrt/Pow that the target does not list as native -> decompose_transcendentals.
//  - Wmma of emulated tensor cores -> local-memory tiles and Mulaccs (core/codegen/tensor_cores.cpp), first.
//  - targets without vector types (vector_bits = 0) get every vector split into lanes first (a
//    Wmma's fragments stay vectors).
//  - a comparison of index vectors whose values fit in int32 compares int32 lanes (narrow_compare).
#include <unordered_set>

#include "core/codegen/codegen.h"
#include "core/rewrite/pattern.h"
#include "core/tensor/compose.h"

namespace sn {

namespace {

// A float narrower than float32 whose math runs in float32: f16, bf16, fp8.
bool is_half(DType dt) {
  switch (dt.ptr ? Scalar::Void : dt.scalar) {
    case Scalar::Float16:
    case Scalar::BFloat16:
    case Scalar::Fp8E4M3:
    case Scalar::Fp8E5M2:
      return true;
    default:
      return false;
  }
}

// An integer constant of dt (a Vectorize of it for vector dtypes).
const UOp* int_like(Graph& g, int64_t v, DType dt) {
  if (dt.lanes == 1) return g.cint(v, dt);
  std::vector<const UOp*> lanes(dt.lanes, g.cint(v, dt.base()));
  return g.make(Op::Vectorize, dt, lanes);
}

const UOp* floor_divmod(const Match& m) {
  Graph& g = m.g;
  const UOp* u = m.root;
  const UOp *a = u->src(0), *b = u->src(1);
  bool div = u->op == Op::Idiv;
  Op cop = div ? Op::CDiv : Op::CMod;
  const MinMax &ma = a->minmax(), &mb = b->minmax();
  // Floor and truncation agree when both operands are non-negative (and for unsigned types).
  if (u->dtype.is_unsigned() || (ma.lo >= 0 && mb.lo >= 0)) return g.make(cop, u->dtype, {a, b});
  // Same sign of a and b (both <= 0): also truncation.
  if (ma.hi <= 0 && mb.hi < 0) return g.make(cop, u->dtype, {a, b});
  const UOp* q = g.make(Op::CDiv, u->dtype, {a, b});
  const UOp* r = g.make(Op::CMod, u->dtype, {a, b});
  const UOp* zero = int_like(g, 0, u->dtype);
  // The remainder is nonzero and its sign differs from the divisor's: step toward -inf.
  const UOp* fix;
  if (mb.lo > 0) {
    fix = g.alu(Op::CmpLt, r, zero);
  } else if (mb.hi < 0) {
    fix = g.alu(Op::CmpLt, zero, r);
  } else {
    fix = g.alu(Op::And, g.alu(Op::CmpNe, r, zero),
                g.alu(Op::CmpNe, g.alu(Op::CmpLt, r, zero), g.alu(Op::CmpLt, b, zero)));
  }
  if (div) return g.alu(Op::Where, fix, g.alu(Op::Sub, q, int_like(g, 1, u->dtype)), q);
  return g.alu(Op::Where, fix, g.alu(Op::Add, r, b), r);
}

// An elementwise op on float16/bfloat16/fp8 values: compute in float32, round the result back.
const UOp* half_in_float(const Match& m) {
  Graph& g = m.g;
  const UOp* u = m.root;
  if (u->op == Op::Cast || u->op == Op::Bitcast || u->op == Op::Where) return nullptr;
  bool any = is_half(u->dtype);
  for (const UOp* s : u->src()) any = any || is_half(s->dtype);
  if (!any) return nullptr;
  std::vector<const UOp*> srcs;
  for (const UOp* s : u->src()) srcs.push_back(is_half(s->dtype) ? g.cast(s, dtypes::float32.vec(s->dtype.lanes)) : s);
  DType out = is_half(u->dtype) ? dtypes::float32.vec(u->dtype.lanes) : u->dtype;
  const UOp* f = g.make(u->op, out, srcs, u->arg);
  return is_half(u->dtype) ? g.cast(f, u->dtype) : f;
}

// Index vectors (a padded convolution's column masks: lane + tap against the row's bounds) compare
// in int32 lanes when every value fits: x86 holds 8 int32 lanes in a 256-bit register against 4
// int64, so a 16-lane mask is two compares instead of four and needs no packing to the 32-bit mask
// of a masked load; LLVM's instruction selection, the larger part of a convolution's compile time,
// has that much less to legalize. Truncation commutes with Add, Sub, Mul and Neg (int32 wraps as
// the low half of int64 does), so the casts sink through them to the scalars each lane is built
// from.
bool fits_int32(const UOp* u) {
  const MinMax& m = u->minmax();
  return m.lo >= INT32_MIN && m.hi <= INT32_MAX;
}
bool index_vector(DType d) { return d.scalar == Scalar::Index && d.lanes > 1 && !d.ptr; }
bool int32_vector(DType d) { return d.scalar == Scalar::Int32 && d.lanes > 1 && !d.ptr; }

const UOp* narrow_compare(const Match& m) {
  const UOp *a = m["a"], *b = m["b"];
  if (!index_vector(a->dtype) || !fits_int32(a) || !fits_int32(b)) return nullptr;
  DType i32 = dtypes::int32.vec(a->dtype.lanes);
  return m.g.make(m.root->op, m.root->dtype, {m.g.cast(a, i32), m.g.cast(b, i32)}, m.root->arg);
}

// Cast(int32 lanes) of index lanes: into the math and the Vectorize that builds them. A constant
// lane becomes its low 32 bits here (the wrap the math relies on), not through symbolic's cast
// folding, which leaves out-of-range conversions to the device.
const UOp* sink_narrowing(const Match& m) {
  Graph& g = m.g;
  const UOp* x = m["x"];
  DType to = m.root->dtype;
  if (!int32_vector(to) || !index_vector(x->dtype)) return nullptr;
  if (x->op == Op::Vectorize) {
    std::vector<const UOp*> lanes;
    for (const UOp* s : x->src())
      lanes.push_back(s->op == Op::Const ? g.cint(int32_t(s->as<int64_t>()), dtypes::int32) : g.cast(s, dtypes::int32));
    return g.make(Op::Vectorize, to, lanes);
  }
  std::vector<const UOp*> srcs;
  for (const UOp* s : x->src()) srcs.push_back(g.cast(s, to));
  return g.make(x->op, to, srcs, x->arg);
}

const PatternMatcher& isel_rules() {
  static const PatternMatcher pm({
      {Pat::ops({Op::Idiv, Op::Mod}), floor_divmod, "floor_to_c"},
      {Pat::op(Op::Threefry),
       [](const Match& m) -> const UOp* {
         const UOp* r = threefry(m.g, m.root->src(0), m.root->src(1));
         // Everything the composition added must be scalar elementwise math.
         std::unordered_set<const UOp*> own;
         for (const UOp* u : toposort(m.root->src())) own.insert(u);
         for (const UOp* u : toposort(r))
           if (!own.count(u) && !is_elementwise(u->op) && u->op != Op::Const)
             fail(Code::Internal, "isel: Threefry expanded to ", op_name(u->op));
         return r;
       },
       "threefry"},
      {Pat::ops({Op::Add, Op::Max}).dtype_if([](DType d) { return d.scalar == Scalar::Bool; }),
       [](const Match& m) { return m.g.alu(Op::Or, m.root->src(0), m.root->src(1)); }, "bool_add"},
      {Pat::op(Op::Mul).dtype_if([](DType d) { return d.scalar == Scalar::Bool; }),
       [](const Match& m) { return m.g.alu(Op::And, m.root->src(0), m.root->src(1)); }, "bool_mul"},
      {Pat::op(Op::Trunc, {Pat::var("x")}).dtype_if([](DType d) { return d.is_int(); }),
       [](const Match& m) { return m["x"]; }, "int_trunc"},
      {Pat::op(Op::Cast, {Pat::var("x")}),
       [](const Match& m) -> const UOp* { return m["x"]->dtype == m.root->dtype ? m["x"] : nullptr; }, "noop_cast"},
      {Pat::ops({Op::CmpLt, Op::CmpNe, Op::CmpEq}, {Pat::var("a"), Pat::var("b")}), narrow_compare, "narrow_compare"},
      {Pat::op(Op::Cast, {Pat::ops({Op::Add, Op::Sub, Op::Mul, Op::Neg, Op::Vectorize}, {}, "x")}), sink_narrowing,
       "sink_narrowing"},
      {Pat::any().dtype_if([](DType) { return true; }),
       [](const Match& m) -> const UOp* { return is_elementwise(m.root->op) ? half_in_float(m) : nullptr; },
       "half_in_float"},
  });
  return pm;
}

}  // namespace

const UOp* select_instructions(Graph& g, const UOp* sink, const Target& target) {
  sink = emulate_tensor_cores(g, sink, target);
  if (target.vector_bits == 0) sink = devectorize(g, sink);
  std::vector<Op> decompose;
  for (Op op : kTranscendentals)
    if (!target.has_native(op)) decompose.push_back(op);
  if (decompose.empty()) return graph_rewrite(g, sink, isel_rules());
  // One rewrite selects and decomposes (a second walk of the kernel cost as much as the first):
  // half math becomes float32 before its transcendentals decompose, as the rules come in order,
  // and what a decomposition builds is selected too.
  static const PatternMatcher with_decompose = isel_rules() + transcendental_rules();
  std::span<const Op> wanted(decompose);
  return graph_rewrite(g, sink, with_decompose, &wanted);
}

}  // namespace sn
