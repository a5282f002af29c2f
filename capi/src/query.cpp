// Queries on uops (op, dtype, sources, arg, derived properties), printing and simplification.
#include <limits>

#include "capi/src/capi_internal.h"
#include "core/symbolic/symbolic.h"

using namespace sn::capi;
using sn::UOp;

sn_op sn_uop_op(const sn_uop* uop, sn_error** err) {
  return guard("sn_uop_op", err, SN_OP_INVALID, [&] { return from_op(live_uop(uop, "uop")->op); });
}

sn_dtype sn_uop_dtype(const sn_uop* uop, sn_error** err) {
  return guard("sn_uop_dtype", err, SN_DTYPE_INVALID, [&] { return from_scalar(live_uop(uop, "uop")->dtype.scalar); });
}

uint32_t sn_uop_lanes(const sn_uop* uop, sn_error** err) {
  return guard("sn_uop_lanes", err, uint32_t{0}, [&] { return uint32_t(live_uop(uop, "uop")->dtype.lanes); });
}

int sn_uop_is_pointer(const sn_uop* uop, sn_error** err) {
  return guard("sn_uop_is_pointer", err, -1, [&] { return live_uop(uop, "uop")->dtype.ptr ? 1 : 0; });
}

sn_addrspace sn_uop_pointer_addrspace(const sn_uop* uop, sn_error** err) {
  return guard("sn_uop_pointer_addrspace", err, SN_ADDRSPACE_NONE, [&] {
    const UOp* u = live_uop(uop, "uop");
    return u->dtype.ptr ? from_addrspace(u->dtype.addrspace) : SN_ADDRSPACE_NONE;
  });
}

size_t sn_uop_num_srcs(const sn_uop* uop, sn_error** err) {
  return guard("sn_uop_num_srcs", err, size_t{0}, [&] { return live_uop(uop, "uop")->nsrc(); });
}

sn_uop* sn_uop_src(const sn_uop* uop, size_t index, sn_error** err) {
  return guard("sn_uop_src", err, static_cast<sn_uop*>(nullptr), [&] {
    const UOp* u = live_uop(uop, "uop");
    if (index >= u->nsrc())
      invalid("source index ", index, " is out of range (", sn::op_name(u->op), " has ", u->nsrc(), " sources)");
    return hand_out(owner_of(u), u->src(index));
  });
}

sn_code sn_uop_arg(const sn_uop* uop, sn_arg* out, sn_error** err) {
  return guard("sn_uop_arg", err, SN_E_INVALID_ARG, [&] {
    const UOp* u = live_uop(uop, "uop");
    sn_arg a = read_arg(out, "out");
    uint32_t caller_size = a.struct_size;
    sn_graph* g = owner_of(u);
    std::memset(&a, 0, sizeof a);
    a.addrspace = SN_ADDRSPACE_NONE;
    // Fills the fields of one alternative of the core's arg.
    struct Fill {
      sn_arg& a;
      sn_graph* g;
      void operator()(const std::monostate&) { a.kind = SN_ARG_NONE; }
      void operator()(const int64_t& v) {
        a.kind = SN_ARG_INT;
        a.int_value = v;
      }
      void operator()(const double& v) {
        a.kind = SN_ARG_FLOAT;
        a.float_value = v;
      }
      void operator()(const std::vector<int64_t>& v) {
        a.kind = SN_ARG_INTS;
        a.ints = v.data();
        a.nints = v.size();
      }
      void operator()(const sn::DType& d) {
        a.kind = SN_ARG_DTYPE;
        a.dtype = from_scalar(d.scalar);
      }
      void operator()(const std::string& s) {
        a.kind = SN_ARG_STRING;
        a.str = s.c_str();
        a.str_len = s.size();
      }
      void operator()(const sn::ReduceArg& r) {
        a.kind = SN_ARG_REDUCE;
        a.reduce_op = from_op(r.op);
        a.ints = r.axes.data();
        a.nints = r.axes.size();
      }
      void operator()(const sn::RangeArg& r) {
        a.kind = SN_ARG_RANGE;
        a.id = r.id;
        a.axis_type = from_axis_type(r.type);
      }
      void operator()(const sn::BufferArg& b) {
        a.kind = SN_ARG_BUFFER;
        a.id = int64_t(b.id);
        a.size = b.size;
        a.device = graph_string(g, format_device(b.device));
        a.addrspace = from_addrspace(b.addrspace);
      }
      void operator()(const sn::ParamArg& p) {
        a.kind = SN_ARG_PARAM;
        a.id = p.slot;
        a.device = graph_string(g, format_device(p.device));
        a.addrspace = from_addrspace(p.addrspace);
      }
      void operator()(const sn::VarArg& v) {
        a.kind = SN_ARG_VAR;
        a.str = v.name.c_str();
        a.str_len = v.name.size();
        a.min = v.min;
        a.max = v.max;
      }
      void operator()(const sn::MemArg& m) {
        a.kind = SN_ARG_MEM;
        a.device = graph_string(g, format_device(m.device));
        a.addrspace = from_addrspace(m.addrspace);
      }
      void operator()(const sn::SliceArg& s) {
        a.kind = SN_ARG_SLICE;
        a.size = s.size;
        a.dtype = from_scalar(s.dtype.scalar);
      }
    };
    std::visit(Fill{a, g}, u->arg);
    a.struct_size = caller_size;
    // Write back only what the caller's struct holds of ours; fields of a newer header stay untouched.
    std::memcpy(static_cast<void*>(out), &a, std::min<size_t>(caller_size, sizeof a));
    return SN_OK;
  });
}

int64_t sn_uop_rank(const sn_uop* uop, sn_error** err) {
  return guard("sn_uop_rank", err, int64_t{-1}, [&] {
    const sn::Shape* s = live_uop(uop, "uop")->shape();
    return s == nullptr ? int64_t{-1} : int64_t(s->size());
  });
}

sn_code sn_uop_dim(const sn_uop* uop, size_t index, int64_t* value, sn_uop** sym, sn_error** err) {
  return guard("sn_uop_dim", err, SN_E_INVALID_ARG, [&] {
    const UOp* u = live_uop(uop, "uop");
    if (value == nullptr) invalid("value is NULL");
    const sn::Shape* s = u->shape();
    if (s == nullptr) invalid(sn::op_name(u->op), " of dtype ", u->dtype.name(), " has no shape");
    if (index >= s->size()) invalid("dimension index ", index, " is out of range (rank ", s->size(), ")");
    const sn::Dim& d = (*s)[index];
    if (d.is_const()) {
      *value = d.value;
      if (sym != nullptr) *sym = nullptr;
    } else {
      sn_uop* h = hand_out(owner_of(u), d.sym);
      *value = -1;
      if (sym != nullptr) *sym = h;
    }
    return SN_OK;
  });
}

char* sn_uop_device(const sn_uop* uop, sn_error** err) {
  return guard("sn_uop_device", err, static_cast<char*>(nullptr),
               [&] { return dup_string(format_device(live_uop(uop, "uop")->device())); });
}

int64_t sn_uop_axis(const sn_uop* uop, sn_error** err) {
  return guard("sn_uop_axis", err, int64_t{-1}, [&] { return int64_t(live_uop(uop, "uop")->axis()); });
}

namespace {

int64_t clamp_i64(sn::i128 v, int* clamped) {
  constexpr int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  if (v < lo || v > hi) {
    *clamped = 1;
    return v < lo ? lo : hi;
  }
  return int64_t(v);
}

}  // namespace

sn_code sn_uop_min_max_int(const sn_uop* uop, int64_t* min, int64_t* max, int* clamped, sn_error** err) {
  return guard("sn_uop_min_max_int", err, SN_E_INVALID_ARG, [&] {
    const UOp* u = live_uop(uop, "uop");
    if (min == nullptr) invalid("min is NULL");
    if (max == nullptr) invalid("max is NULL");
    const sn::MinMax& m = u->minmax();
    if (m.is_float) invalid(sn::op_name(u->op), " has float dtype ", u->dtype.name(), ": use sn_uop_min_max_float");
    int c = 0;
    *min = clamp_i64(m.lo, &c);
    *max = clamp_i64(m.hi, &c);
    if (clamped != nullptr) *clamped = c;
    return SN_OK;
  });
}

sn_code sn_uop_min_max_float(const sn_uop* uop, double* min, double* max, sn_error** err) {
  return guard("sn_uop_min_max_float", err, SN_E_INVALID_ARG, [&] {
    const UOp* u = live_uop(uop, "uop");
    if (min == nullptr) invalid("min is NULL");
    if (max == nullptr) invalid("max is NULL");
    const sn::MinMax& m = u->minmax();
    *min = m.is_float ? m.flo : double(m.lo);
    *max = m.is_float ? m.fhi : double(m.hi);
    return SN_OK;
  });
}

char* sn_uop_to_string(const sn_uop* uop, sn_error** err) {
  return guard("sn_uop_to_string", err, static_cast<char*>(nullptr),
               [&] { return dup_string(sn::to_sexpr(live_uop(uop, "uop"))); });
}

char* sn_uop_to_tree(const sn_uop* uop, sn_error** err) {
  return guard("sn_uop_to_tree", err, static_cast<char*>(nullptr),
               [&] { return dup_string(sn::to_tree(live_uop(uop, "uop"))); });
}

char* sn_uop_to_dot(const sn_uop* uop, sn_error** err) {
  return guard("sn_uop_to_dot", err, static_cast<char*>(nullptr),
               [&] { return dup_string(sn::to_dot(live_uop(uop, "uop"))); });
}

sn_uop* sn_graph_simplify(sn_graph* graph, sn_uop* root, sn_error** err) {
  return guard("sn_graph_simplify", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    const UOp* r = uop_of(g, root, "root");
    return hand_out(g, sn::simplify(g->graph, r));
  });
}

sn_uop* sn_graph_simplify_given(sn_graph* graph, sn_uop* valid, sn_uop* expr, sn_error** err) {
  return guard("sn_graph_simplify_given", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    const UOp* v = uop_of(g, valid, "valid");
    const UOp* e = uop_of(g, expr, "expr");
    if (!v->dtype.is_bool()) invalid("valid: the validity condition must be bool, got ", v->dtype.name());
    return hand_out(g, sn::simplify_given_valid(g->graph, v, e));
  });
}
