// Building nodes: the generic builder (op, dtype, srcs, arg) and the typed builders on top of it.
// Every builder validates its handles and inputs here, then lets Graph::make verify the node against
// the spec; the core's verification message reaches the caller unchanged (prefixed by the function).
#include <cmath>

#include "capi/src/capi_internal.h"
#include "core/tensor/tensor.h"

namespace sn::capi {
namespace {

// Arg kinds as bits, to say which kinds an op takes.
constexpr uint32_t bit(sn_arg_kind k) { return 1u << unsigned(k); }

constexpr uint32_t allowed_arg_kinds(Op op) {
  switch (op) {
    case Op::Param:
      return bit(SN_ARG_PARAM);
    case Op::Buffer:
      return bit(SN_ARG_BUFFER);
    case Op::Const:
      return bit(SN_ARG_INT) | bit(SN_ARG_FLOAT);
    case Op::DefineVar:
      return bit(SN_ARG_VAR);
    case Op::Permute:
    case Op::Flip:
    case Op::Replicated:
      return bit(SN_ARG_INTS);
    case Op::Slice:
      return bit(SN_ARG_SLICE);
    case Op::Cast:
    case Op::Bitcast:
      return bit(SN_ARG_DTYPE);
    case Op::Reduce:
      return bit(SN_ARG_REDUCE);
    case Op::GetTuple:
      return bit(SN_ARG_INT);
    case Op::Gep:
      return bit(SN_ARG_INT) | bit(SN_ARG_INTS);
    case Op::Load:
    case Op::Copy:
    case Op::Stage:
      return bit(SN_ARG_NONE) | bit(SN_ARG_MEM);
    case Op::Range:
      return bit(SN_ARG_RANGE);
    case Op::Binary:
    case Op::Source:
    case Op::Special:
    case Op::Custom:
    case Op::CustomFunction:
    case Op::Ins:
      return bit(SN_ARG_STRING);
    case Op::Wmma:
      return bit(SN_ARG_NONE) | bit(SN_ARG_STRING) | bit(SN_ARG_INTS);
    default:
      return bit(SN_ARG_NONE);
  }
}

const char* arg_kind_name(int64_t k) {
  static constexpr const char* kNames[] = {
      "SN_ARG_NONE",  "SN_ARG_INT",    "SN_ARG_FLOAT", "SN_ARG_INTS", "SN_ARG_DTYPE", "SN_ARG_STRING", "SN_ARG_REDUCE",
      "SN_ARG_RANGE", "SN_ARG_BUFFER", "SN_ARG_PARAM", "SN_ARG_VAR",  "SN_ARG_MEM",   "SN_ARG_SLICE"};
  return k >= 0 && k < int64_t(std::size(kNames)) ? kNames[k] : nullptr;
}

std::string allowed_kinds_str(uint32_t mask) {
  std::string s;
  for (int64_t k = 0; k <= SN_ARG_SLICE; ++k) {
    if (!(mask & (1u << k))) continue;
    if (!s.empty()) s += " or ";
    s += arg_kind_name(k);
  }
  return s;
}

std::vector<int64_t> ints_of(const int64_t* p, size_t n, const char* param) {
  if (n > 0 && p == nullptr) invalid(param, " is NULL but its count is ", n);
  return n == 0 ? std::vector<int64_t>{} : std::vector<int64_t>(p, p + n);
}

std::string bytes_of(const char* p, size_t n, const char* param) {
  if (n > 0 && p == nullptr) invalid(param, " is NULL but its length is ", n);
  return n == 0 ? std::string{} : std::string(p, n);
}

// The sources of a node, each checked to be a uop of `g`.
std::vector<const UOp*> srcs_of(const sn_graph* g, sn_uop* const* srcs, size_t n) {
  if (n > 0 && srcs == nullptr) invalid("srcs is NULL but nsrcs is ", n);
  std::vector<const UOp*> out(n);
  for (size_t i = 0; i < n; ++i) {
    std::string name = cat("srcs[", i, "]");
    out[i] = uop_of(g, srcs[i], name.c_str());
  }
  return out;
}

void check_arity(Op op, size_t n) {
  const OpInfo& info = op_info(op);
  if (int64_t(n) < info.min_src || (info.max_src >= 0 && int64_t(n) > info.max_src)) {
    if (info.min_src == info.max_src) invalid(info.name, " takes ", int(info.min_src), " sources, got ", n);
    if (info.max_src < 0) invalid(info.name, " takes at least ", int(info.min_src), " sources, got ", n);
    invalid(info.name, " takes ", int(info.min_src), " to ", int(info.max_src), " sources, got ", n);
  }
}

// A value dtype for a builder's `dtype` parameter.
DType value_dtype(int64_t dt, const char* param) {
  DType d = to_dtype(dt, param);
  if (d.is_void()) invalid(param, ": void is not a value dtype");
  return d;
}

sn_uop* build(sn_graph* g, Op op, DType dt, std::span<const UOp* const> src, Arg arg = {}) {
  return hand_out(g, g->graph.make(op, dt, src, std::move(arg)));
}

}  // namespace

sn_arg read_arg(const sn_arg* a, const char* param) {
  if (a == nullptr) invalid(param, " is NULL");
  uint32_t size;
  std::memcpy(&size, a, sizeof size);
  if (size < kArgSizeV1)
    invalid(param, "->struct_size is ", size, ", smaller than sizeof(sn_arg) of API version 1 (", kArgSizeV1,
            "); call sn_arg_init(&arg, sizeof arg, &err)");
  sn_arg local;
  std::memset(&local, 0, sizeof local);
  std::memcpy(&local, a, std::min<size_t>(size, sizeof local));
  return local;
}

Arg to_core_arg(Graph& g, Op op, DType dt, const sn_arg& a) {
  int64_t kind = raw(a.kind);
  if (arg_kind_name(kind) == nullptr) invalid("arg->kind: unknown sn_arg_kind value ", kind);
  uint32_t allowed = allowed_arg_kinds(op);
  if (!(allowed & (1u << kind)))
    invalid(op_name(op), " takes an arg of kind ", allowed_kinds_str(allowed), ", got ", arg_kind_name(kind));
  switch (static_cast<sn_arg_kind>(kind)) {
    case SN_ARG_NONE:
      return std::monostate{};
    case SN_ARG_INT:
      // Consts are normalized the way the typed builders (Graph::cint/cfloat) do it, so the generic
      // and the typed builder intern the same constant as the same node.
      if (op == Op::Const && dt.is_float()) return round_float(dt, double(a.int_value));
      if (op == Op::Const && dt.is_bool()) return int64_t(a.int_value != 0);
      return a.int_value;
    case SN_ARG_FLOAT:
      if (op == Op::Const && !dt.is_float()) {
        double v = a.float_value;
        // An integral value is exact in any int dtype's Const; anything else would be silently changed.
        if (!(std::trunc(v) == v && v >= -9223372036854775808.0 && v < 9223372036854775808.0))
          invalid("Const of ", dt.name(), " needs an integer value, got ", v);
        return dt.is_bool() ? int64_t(v != 0) : int64_t(v);
      }
      if (op == Op::Const) return round_float(dt, a.float_value);
      return a.float_value;
    case SN_ARG_INTS:
      return ints_of(a.ints, a.nints, "arg->ints");
    case SN_ARG_DTYPE:
      return to_dtype(raw(a.dtype), "arg->dtype");
    case SN_ARG_STRING:
      return bytes_of(a.str, a.str_len, "arg->str");
    case SN_ARG_REDUCE: {
      Op rop = to_op(raw(a.reduce_op), "arg->reduce_op");
      if (rop != Op::Add && rop != Op::Max && rop != Op::Mul)
        invalid("arg->reduce_op: Reduce op must be Add, Max or Mul, got ", op_name(rop));
      return ReduceArg{rop, ints_of(a.ints, a.nints, "arg->ints")};
    }
    case SN_ARG_RANGE:
      return RangeArg{a.id, to_axis_type(raw(a.axis_type), "arg->axis_type")};
    case SN_ARG_BUFFER: {
      uint64_t id = a.id == 0 ? g.next_buffer_id() : uint64_t(a.id);
      return BufferArg{id, a.size, parse_device(a.device, "arg->device"),
                       to_addrspace(raw(a.addrspace), "arg->addrspace")};
    }
    case SN_ARG_PARAM:
      return ParamArg{a.id, parse_device(a.device, "arg->device"), to_addrspace(raw(a.addrspace), "arg->addrspace")};
    case SN_ARG_VAR: {
      if (a.str == nullptr) invalid("arg->str (the variable name) is NULL");
      return VarArg{bytes_of(a.str, a.str_len, "arg->str"), a.min, a.max};
    }
    case SN_ARG_MEM:
      return MemArg{parse_device(a.device, "arg->device"), to_addrspace(raw(a.addrspace), "arg->addrspace")};
    case SN_ARG_SLICE:
      return SliceArg{a.size, to_dtype(raw(a.dtype), "arg->dtype")};
  }
  invalid("arg->kind: unknown sn_arg_kind value ", kind);
}

}  // namespace sn::capi

using namespace sn::capi;
using sn::DType;
using sn::Op;
using sn::UOp;

sn_code sn_arg_init(sn_arg* arg, size_t struct_size, sn_error** err) {
  return guard("sn_arg_init", err, SN_E_INVALID_ARG, [&] {
    if (arg == nullptr) invalid("arg is NULL");
    if (struct_size < kArgSizeV1)
      invalid("struct_size ", struct_size, " is smaller than sizeof(sn_arg) of API version 1 (", kArgSizeV1, ")");
    if (struct_size > UINT32_MAX) invalid("struct_size ", struct_size, " does not fit sn_arg.struct_size");
    // The caller's struct may be larger than ours (a newer header): zero all of it.
    std::memset(static_cast<void*>(arg), 0, struct_size);
    arg->struct_size = uint32_t(struct_size);
    arg->kind = SN_ARG_NONE;
    arg->addrspace = SN_ADDRSPACE_GLOBAL;
    return SN_OK;
  });
}

sn_uop* sn_uop_new(sn_graph* graph, sn_op op, sn_dtype dtype, sn_uop* const* srcs, size_t nsrcs, const sn_arg* arg,
                   sn_error** err) {
  return guard("sn_uop_new", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    Op o = to_op(raw(op), "op");
    DType dt = to_dtype(raw(dtype), "dtype");
    check_arity(o, nsrcs);
    std::vector<const UOp*> src = srcs_of(g, srcs, nsrcs);
    sn_arg a;
    if (arg != nullptr) {
      a = read_arg(arg, "arg");
    } else {
      std::memset(&a, 0, sizeof a);  // no arg: kind NONE
    }
    return build(g, o, dt, src, to_core_arg(g->graph, o, dt, a));
  });
}

sn_uop* sn_uop_const_int(sn_graph* graph, sn_dtype dtype, int64_t value, sn_error** err) {
  return guard("sn_uop_const_int", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    DType dt = value_dtype(raw(dtype), "dtype");
    const UOp* u = dt.is_float() ? g->graph.cfloat(double(value), dt) : g->graph.cint(value, dt);
    return hand_out(g, u);
  });
}

sn_uop* sn_uop_const_float(sn_graph* graph, sn_dtype dtype, double value, sn_error** err) {
  return guard("sn_uop_const_float", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    DType dt = value_dtype(raw(dtype), "dtype");
    if (!dt.is_float()) invalid("dtype: ", dt.name(), " is not a float dtype (use sn_uop_const_int)");
    return hand_out(g, g->graph.cfloat(value, dt));
  });
}

sn_uop* sn_uop_var(sn_graph* graph, const char* name, int64_t min, int64_t max, sn_error** err) {
  return guard("sn_uop_var", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    if (name == nullptr) invalid("name is NULL");
    if (*name == '\0') invalid("name is empty");
    if (min > max) invalid("variable ", name, " has min ", min, " > max ", max);
    return hand_out(g, g->graph.var(name, min, max));
  });
}

sn_uop* sn_uop_buffer(sn_graph* graph, sn_dtype dtype, int64_t size, const char* device, sn_error** err) {
  return guard("sn_uop_buffer", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    DType dt = value_dtype(raw(dtype), "dtype");
    if (size < 0) invalid("size ", size, " is negative");
    sn::BufferArg arg{g->graph.next_buffer_id(), size, parse_device(device, "device"), sn::AddrSpace::Global};
    return build(g, Op::Buffer, dt, {}, std::move(arg));
  });
}

sn_uop* sn_uop_param(sn_graph* graph, int64_t slot, sn_dtype dtype, const int64_t* shape, size_t ndim,
                     const char* device, sn_error** err) {
  return guard("sn_uop_param", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    DType dt = value_dtype(raw(dtype), "dtype");
    if (slot < 0) invalid("slot ", slot, " is negative");
    std::vector<int64_t> dims = ints_of(shape, ndim, "shape");
    const UOp* s = g->graph.shape_uop(dims);
    const UOp* src[] = {s};
    return build(g, Op::Param, dt, src, sn::ParamArg{slot, parse_device(device, "device"), sn::AddrSpace::Global});
  });
}

namespace {

sn_uop* alu(const char* fn, sn_graph* graph, int64_t op, sn_uop* const* srcs, size_t nsrcs, sn_error** err) {
  return guard(fn, err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    Op o = to_op(op, "op");
    if (!sn::is_elementwise(o)) invalid("op: ", sn::op_name(o), " is not an elementwise op");
    if (o == Op::Cast) invalid("op: Cast needs a target dtype: use sn_uop_cast");
    check_arity(o, nsrcs);
    std::vector<const UOp*> src = srcs_of(g, srcs, nsrcs);
    return hand_out(g, g->graph.alu(o, src));
  });
}

// Movement op whose extra sources are shape operands (Stacks of index constants).
sn_uop* movement(const char* fn, sn_graph* graph, sn_uop* x, Op op, std::initializer_list<const int64_t*> arrays,
                 std::initializer_list<const char*> names, size_t ndim, sn_error** err) {
  return guard(fn, err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    const UOp* xu = uop_of(g, x, "x");
    if ((op == Op::Pad || op == Op::Shrink) && xu->shape() != nullptr && sn::is_symbolic(*xu->shape())) {
      // the tensor builder keeps each symbolic axis whole (offset 0, size -1) and moves the constant ones
      std::vector<int64_t> off = ints_of(*arrays.begin(), ndim, "offsets");
      std::vector<int64_t> size = ints_of(*(arrays.begin() + 1), ndim, "sizes");
      return hand_out(g, op == Op::Pad ? sn::pad(g->graph, xu, off, size) : sn::shrink(g->graph, xu, off, size));
    }
    std::vector<const UOp*> src{xu};
    auto name = names.begin();
    for (const int64_t* arr : arrays) src.push_back(g->graph.shape_uop(ints_of(arr, ndim, *name++)));
    return build(g, op, xu->dtype, src);
  });
}

// Movement op whose arg is an int list (Permute order, Flip flags).
sn_uop* int_arg_op(const char* fn, sn_graph* graph, sn_uop* x, Op op, const int64_t* values, const char* name, size_t n,
                   sn_error** err) {
  return guard(fn, err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    const UOp* xu = uop_of(g, x, "x");
    const UOp* src[] = {xu};
    return build(g, op, xu->dtype, src, ints_of(values, n, name));
  });
}

}  // namespace

sn_uop* sn_uop_alu(sn_graph* graph, sn_op op, sn_uop* const* srcs, size_t nsrcs, sn_error** err) {
  return alu("sn_uop_alu", graph, raw(op), srcs, nsrcs, err);
}

sn_uop* sn_uop_unary(sn_graph* graph, sn_op op, sn_uop* a, sn_error** err) {
  sn_uop* src[] = {a};
  return alu("sn_uop_unary", graph, raw(op), src, 1, err);
}

sn_uop* sn_uop_binary(sn_graph* graph, sn_op op, sn_uop* a, sn_uop* b, sn_error** err) {
  sn_uop* src[] = {a, b};
  return alu("sn_uop_binary", graph, raw(op), src, 2, err);
}

sn_uop* sn_uop_ternary(sn_graph* graph, sn_op op, sn_uop* a, sn_uop* b, sn_uop* c, sn_error** err) {
  sn_uop* src[] = {a, b, c};
  return alu("sn_uop_ternary", graph, raw(op), src, 3, err);
}

sn_uop* sn_uop_cast(sn_graph* graph, sn_uop* x, sn_dtype dtype, sn_error** err) {
  return guard("sn_uop_cast", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    const UOp* xu = uop_of(g, x, "x");
    DType dt = value_dtype(raw(dtype), "dtype");
    return hand_out(g, g->graph.cast(xu, dt));
  });
}

sn_uop* sn_uop_bitcast(sn_graph* graph, sn_uop* x, sn_dtype dtype, sn_error** err) {
  return guard("sn_uop_bitcast", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    const UOp* xu = uop_of(g, x, "x");
    DType dt = value_dtype(raw(dtype), "dtype");
    const UOp* src[] = {xu};
    return build(g, Op::Bitcast, dt, src, dt);
  });
}

sn_uop* sn_uop_reshape(sn_graph* graph, sn_uop* x, const int64_t* shape, size_t ndim, sn_error** err) {
  return movement("sn_uop_reshape", graph, x, Op::Reshape, {shape}, {"shape"}, ndim, err);
}

sn_uop* sn_uop_expand(sn_graph* graph, sn_uop* x, const int64_t* shape, size_t ndim, sn_error** err) {
  return movement("sn_uop_expand", graph, x, Op::Expand, {shape}, {"shape"}, ndim, err);
}

sn_uop* sn_uop_pad(sn_graph* graph, sn_uop* x, const int64_t* offsets, const int64_t* sizes, size_t ndim,
                   sn_error** err) {
  return movement("sn_uop_pad", graph, x, Op::Pad, {offsets, sizes}, {"offsets", "sizes"}, ndim, err);
}

sn_uop* sn_uop_shrink(sn_graph* graph, sn_uop* x, const int64_t* offsets, const int64_t* sizes, size_t ndim,
                      sn_error** err) {
  return movement("sn_uop_shrink", graph, x, Op::Shrink, {offsets, sizes}, {"offsets", "sizes"}, ndim, err);
}

sn_uop* sn_uop_permute(sn_graph* graph, sn_uop* x, const int64_t* order, size_t ndim, sn_error** err) {
  return int_arg_op("sn_uop_permute", graph, x, Op::Permute, order, "order", ndim, err);
}

sn_uop* sn_uop_flip(sn_graph* graph, sn_uop* x, const int64_t* flags, size_t ndim, sn_error** err) {
  return int_arg_op("sn_uop_flip", graph, x, Op::Flip, flags, "flags", ndim, err);
}

sn_uop* sn_uop_reduce(sn_graph* graph, sn_uop* x, sn_op op, const int64_t* axes, size_t naxes, sn_error** err) {
  return guard("sn_uop_reduce", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    const UOp* xu = uop_of(g, x, "x");
    Op rop = to_op(raw(op), "op");
    if (rop != Op::Add && rop != Op::Max && rop != Op::Mul)
      invalid("op: Reduce op must be Add, Max or Mul, got ", sn::op_name(rop));
    const UOp* src[] = {xu};
    return build(g, Op::Reduce, xu->dtype, src, sn::ReduceArg{rop, ints_of(axes, naxes, "axes")});
  });
}

sn_uop* sn_uop_contiguous(sn_graph* graph, sn_uop* x, sn_error** err) {
  return guard("sn_uop_contiguous", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    const UOp* xu = uop_of(g, x, "x");
    const UOp* src[] = {xu};
    return build(g, Op::Contiguous, xu->dtype, src);
  });
}

sn_uop* sn_uop_sink(sn_graph* graph, sn_uop* const* srcs, size_t nsrcs, sn_error** err) {
  return guard("sn_uop_sink", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    std::vector<const UOp*> src = srcs_of(g, srcs, nsrcs);
    return hand_out(g, g->graph.sink(src));
  });
}
