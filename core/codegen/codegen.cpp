// lower_kernel: the codegen stages in order, plus kernel metadata (params, vars, name).
#include "core/codegen/codegen.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <unordered_map>

#include "core/codegen/kernel_util.h"

namespace sn {

namespace {

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

bool kernel_ir_op(Op op) {
  switch (op) {
    case Op::Sink:
    case Op::Store:
    case Op::Param:
    case Op::Index:
    case Op::Load:
    case Op::Range:
    case Op::Reduce:
    case Op::Const:
    case Op::DefineVar:
    case Op::Cast:
    case Op::Bitcast:
      return true;
    default:
      return is_elementwise(op);
  }
}

}  // namespace

// Checks the kernel IR contract of core/schedule/schedule.h.
void check_kernel_ast(const UOp* ast) {
  if (!ast || ast->op != Op::Sink) fail(Code::InvalidArg, "lower_kernel: the kernel AST root must be a Sink");
  for (const UOp* s : ast->src())
    if (s->op != Op::Store) fail(Code::InvalidArg, "lower_kernel: Sink sources must be Stores, got ", op_name(s->op));
  for (const UOp* u : toposort(ast)) {
    if (u->op == Op::Stack) continue;  // a Param's shape operand (checked below)
    if (!kernel_ir_op(u->op)) fail(Code::InvalidArg, "lower_kernel: ", op_name(u->op), " is not a kernel IR op");
    if (u->dtype.lanes != 1)
      fail(Code::InvalidArg, "lower_kernel: ", op_name(u->op), " has vector dtype ", u->dtype.name());
    if (u->op == Op::Param) {
      if (!u->dtype.ptr) fail(Code::InvalidArg, "lower_kernel: Param must have a pointer dtype, got ", u->dtype.name());
      continue;
    }
    for (const UOp* s : u->src())
      if (s->op == Op::Stack)
        fail(Code::InvalidArg, "lower_kernel: a Stack feeds ", op_name(u->op), " (only Param shapes)");
    if ((u->op == Op::Load || u->op == Op::Store) &&
        !(u->src(0)->op == Op::Index && u->src(0)->nsrc() == 2 && u->src(0)->src(0)->op == Op::Param))
      fail(Code::InvalidArg, "lower_kernel: ", op_name(u->op), " address must be Index(Param, idx)");
    if (u->op == Op::Index && (u->nsrc() != 2 || u->src(0)->op != Op::Param || !u->src(1)->dtype.is_int()))
      fail(Code::InvalidArg, "lower_kernel: Index must be Index(Param, integer index)");
    if (u->op == Op::Load && u->nsrc() == 3 && !u->src(2)->dtype.is_bool())
      fail(Code::InvalidArg, "lower_kernel: Load gate must be bool");
    if (u->op == Op::Store && u->nsrc() == 3 && !u->src(2)->dtype.is_bool())
      fail(Code::InvalidArg, "lower_kernel: Store gate must be bool");
    if (u->op == Op::Load && u->nsrc() == 2) fail(Code::InvalidArg, "lower_kernel: Load needs both alt and gate");
    if (u->op == Op::Load && u->nsrc() == 3 && u->src(1)->dtype != u->dtype)
      fail(Code::InvalidArg, "lower_kernel: Load alt is ", u->src(1)->dtype.name(), ", the load is ", u->dtype.name());
    if (u->op == Op::Store && u->src(1)->dtype != u->src(0)->dtype.base())
      fail(Code::InvalidArg, "lower_kernel: Store of ", u->src(1)->dtype.name(), " into ", u->src(0)->dtype.name());
    if (u->op == Op::Load && u->dtype != u->src(0)->dtype.base())
      fail(Code::InvalidArg, "lower_kernel: Load of ", u->dtype.name(), " from ", u->src(0)->dtype.name());
    if (u->shape() && !u->shape()->empty() && u->op != Op::Param)
      fail(Code::InvalidArg, "lower_kernel: ", op_name(u->op), " has shape ", shape_str(*u->shape()),
           "; kernel values are scalars");
  }
}

uint64_t kernel_key(const UOp* ast, const Target& target, const LowerOptions& opts) {
  uint64_t h = hash_combine(ast->content_hash(), fnv1a(target.key()));
  h = hash_combine(h, uint64_t(opts.optimize) | uint64_t(opts.allow_threads) << 1 | uint64_t(bool(opts.opts)) << 2 |
                          uint64_t(opts.simplify) << 3);
  if (opts.opts)
    for (const Opt& o : *opts.opts) h = hash_combine(h, fnv1a(opt_str(o)));
  for (int64_t slot : opts.finite_params) h = hash_combine(h, uint64_t(slot) + 0x9e37);
  return hash_combine(h, uint64_t(opts.min_ops_per_thread));
}

// Fills what a backend and the runtime need from k.linear: params (slots, sizes, read/written), vars, GPU features,
// the launch grid (from `dims`); checks the target's local memory.
void describe_lowered(LoweredKernel& k, const Target& target, const ParallelDims& dims) {
  std::map<int64_t, KernelParam> params;
  std::map<std::string, KernelVar> vars;
  for (const UOp* u : k.linear->src()) {
    if (u->op == Op::Param) {
      const ParamArg& pa = u->as<ParamArg>();
      KernelParam& p = params[pa.slot];
      p.slot = pa.slot;
      p.dtype = u->dtype.base();
      const Shape* sh = u->shape();
      p.size = sh && sh->size() == 1 && (*sh)[0].is_const() ? (*sh)[0].value : -1;
    } else if (u->op == Op::DefineVar) {
      const VarArg& v = u->as<VarArg>();
      auto [it, fresh] = vars.emplace(v.name, KernelVar{v.name, v.min, v.max});
      if (!fresh && (it->second.min != v.min || it->second.max != v.max))
        fail(Code::InvalidArg, "lower_kernel: variable ", v.name, " has two ranges [", it->second.min, ", ",
             it->second.max, "] and [", v.min, ", ", v.max, "]");
    } else if ((u->op == Op::Load || u->op == Op::Store) && u->src(0)->op == Op::Index &&
               u->src(0)->src(0)->op == Op::Param) {
      KernelParam& p = params[u->src(0)->src(0)->as<ParamArg>().slot];
      (u->op == Op::Load ? p.read : p.written) = true;
    } else if (u->op == Op::Special) {
      const std::string& n = u->as<std::string>();
      k.features.local_axes = k.features.local_axes || n.rfind("lidx", 0) == 0;
    } else if (u->op == Op::Buffer && u->as<BufferArg>().addrspace == AddrSpace::Local) {
      k.features.local_bytes += u->as<BufferArg>().size * u->dtype.itemsize();
      k.features.group_reduce = true;  // local memory holds group-reduce partials only
    } else if (u->op == Op::Barrier) {
      k.features.barriers++;
    } else if (u->op == Op::If) {
      k.features.gated_blocks++;
    }
  }
  for (auto& [slot, p] : params) {
    // With launch-time variables a buffer sized for the variables' largest values may be bound
    // with fewer elements (a symbolic shape at smaller values): its size is unknown here, and the
    // runtime checks each buffer against its shape at the values instead.
    if (!vars.empty()) p.size = -1;
    k.params.push_back(p);
  }
  for (auto& [name, v] : vars) k.vars.push_back(v);
  if (k.features.local_bytes > target.local_memory_bytes)
    fail(Code::InvalidArg, "lower_kernel: ", k.name, " needs ", k.features.local_bytes,
         " bytes of local memory, the target has ", target.local_memory_bytes);
  // The grid's sizes are the bounds of the kernel's gidx Specials, which the simplifier may have
  // rewritten since the launch stage made them (dims has those first bounds).
  std::array<const UOp*, 3> grid = dims.global;
  for (const UOp* u : k.linear->src())
    if (u->op == Op::Special)
      for (size_t d = 0; d < 3; d++)
        if (grid[d] && u->as<std::string>() == cat("gidx", d)) grid[d] = u->src(0);
  for (size_t d = 0; d < 3; d++) {
    k.dims.local[d] = dims.local[d];
    if (grid[d]) k.dims.global[d] = LaunchExpr::of(grid[d], k.vars);
  }
}

std::string linear_str(const UOp* linear) {
  std::ostringstream os;
  std::unordered_map<const UOp*, size_t> num;
  int depth = 0;
  for (const UOp* u : linear->src()) {
    num[u] = num.size();
    if (u->op == Op::End) depth = std::max(0, depth - 1);
    os << std::string(size_t(2 * depth), ' ') << "%" << num[u] << " = " << op_name(u->op);
    if (!u->dtype.is_void()) os << " " << u->dtype.name();
    std::string a = arg_str(u->arg);
    if (!a.empty()) os << " [" << a << "]";
    for (const UOp* s : u->src()) {
      auto it = num.find(s);
      if (it != num.end())
        os << " %" << it->second;
      else if (s->op == Op::Const)
        os << " " << arg_str(s->arg);
      else
        os << " (" << op_name(s->op) << ")";
    }
    os << "\n";
    if (u->op == Op::Range) depth++;
  }
  return os.str();
}

}  // namespace sn
