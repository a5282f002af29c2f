// lower_kernel: the codegen stages in order, plus kernel metadata (params, vars, name).
#include "core/codegen/codegen.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <sstream>
#include <unordered_map>

#include "core/codegen/kernel_util.h"
#include "core/opt/opt.h"

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

std::string kernel_name(const UOp* sink) {
  if (sink->holds<std::string>() && !sink->as<std::string>().empty()) return sink->as<std::string>();
  std::vector<const UOp*> loops, reduces;
  classify_ranges(sink, &loops, &reduces);
  std::vector<std::pair<int, int64_t>> dims;  // (type rank, bound) in order
  auto rank = [](AxisType t) {
    switch (t) {
      case AxisType::Thread:
      case AxisType::Global:
        return 0;
      case AxisType::Local:
        return 1;
      case AxisType::Loop:
        return 2;
      case AxisType::GroupReduce:
        return 3;
      case AxisType::Reduce:
        return 5;
      case AxisType::Upcast:
        return 4;
      case AxisType::Unroll:
        return 6;
      default:
        return 7;
    }
  };
  std::vector<const UOp*> all = loops;
  all.insert(all.end(), reduces.begin(), reduces.end());
  std::stable_sort(all.begin(), all.end(), [&](const UOp* a, const UOp* b) {
    int ra = rank(a->as<RangeArg>().type), rb = rank(b->as<RangeArg>().type);
    if (ra != rb) return ra < rb;
    return a->as<RangeArg>().id < b->as<RangeArg>().id;
  });
  std::string name = reduces.empty() ? "E" : "r";
  for (const UOp* r : all) {
    int64_t n = const_bound(r);
    name += n >= 0 ? cat("_", n) : "_n";
  }
  return name;
}

}  // namespace

uint64_t kernel_key(const UOp* ast, const Target& target, const LowerOptions& opts) {
  uint64_t h = hash_combine(ast->content_hash(), fnv1a(target.key()));
  h = hash_combine(h, uint64_t(opts.optimize) | uint64_t(opts.allow_threads) << 1 | uint64_t(bool(opts.opts)) << 2 |
                          uint64_t(opts.simplify) << 3);
  if (opts.opts)
    for (const Opt& o : *opts.opts) h = hash_combine(h, fnv1a(opt_str(o)));
  return hash_combine(h, uint64_t(opts.min_ops_per_thread));
}

LoweredKernel lower_kernel(Graph& g, const UOp* ast, const Target& target, const LowerOptions& opts) {
  check_kernel_ast(ast);
  LoweredKernel k;
  k.ast = ast;
  k.target = target;
  k.key = kernel_key(ast, target, opts);
  // Each stage's time runs from the end of the one before (the hook's own time excluded).
  auto t0 = std::chrono::steady_clock::now();
  auto stage = [&](const char* name, const UOp* root) {
    auto t1 = std::chrono::steady_clock::now();
    if (std::string_view(name) != "ast")
      k.stage_ms.emplace_back(name, std::chrono::duration<double, std::milli>(t1 - t0).count());
    k.stages.emplace_back(name, root);
    if (opts.on_stage) opts.on_stage(name, root);
    t0 = std::chrono::steady_clock::now();
  };
  stage("ast", ast);
  OptResult o = optimize_kernel(g, ast, target, opts);
  stage("optimized", o.sink);
  k.opts = o.applied;
  k.name = kernel_name(o.sink);
  const UOp* s = expand_kernel(g, o.sink);
  stage("expanded", s);
  if (opts.simplify) {
    s = simplify_indices(g, s);
    stage("simplified", s);
  }
  s = lower_reduces(g, s);
  stage("reduce", s);
  ParallelDims dims;
  s = index_parallel_axes(g, s, target, &dims);
  stage("parallel", s);
  k.threads = dims.threads;
  s = select_instructions(g, s, target);
  stage("isel", s);
  k.linear = linearize(g, s);
  stage("linear", k.linear);

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
  for (auto& [slot, p] : params) k.params.push_back(p);
  for (auto& [name, v] : vars) k.vars.push_back(v);
  if (k.features.local_bytes > target.local_memory_bytes)
    fail(Code::InvalidArg, "lower_kernel: ", k.name, " needs ", k.features.local_bytes,
         " bytes of local memory, the target has ", target.local_memory_bytes);
  for (size_t d = 0; d < 3; d++) {
    k.dims.local[d] = dims.local[d];
    if (dims.global[d]) k.dims.global[d] = LaunchExpr::of(dims.global[d], k.vars);
  }
  return k;
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
