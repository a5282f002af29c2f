#include "core/tensor/function.h"

#include "core/rewrite/pattern.h"
#include "core/tensor/tensor.h"

namespace sn {

namespace {

// GetTuple(Function(Tuple(body...), args...), i) -> body[i] with Param k replaced by args[k]. A
// precompiled function reads materialized arguments and its result is materialized, so the
// kernels of its body are the same at every call (the kernel cache compiles them once).
const UOp* resolve_call(Graph& g, const UOp* get) {
  const UOp* fn = get->src(0);
  if (fn->op != Op::Function) return nullptr;
  const UOp* body = fn->src(0);
  bool precompiled = std::holds_alternative<int64_t>(fn->arg) && fn->as<int64_t>() != 0;
  std::vector<std::pair<const UOp*, const UOp*>> map;
  for (const UOp* u : toposort({&body, 1})) {
    if (u->op != Op::Param) continue;
    int64_t slot = u->as<ParamArg>().slot;
    if (slot + 1 >= int64_t(fn->nsrc()))
      fail(Code::InvalidArg, "function: the body reads Param ", slot, " of a call with ", fn->nsrc() - 1, " arguments");
    const UOp* arg = fn->src(size_t(slot + 1));
    if (precompiled && arg->op != Op::Buffer && !(arg->op == Op::Reshape && arg->src(0)->op == Op::Buffer))
      arg = g.make(Op::Contiguous, arg->dtype, {arg});
    map.push_back({u, arg});
  }
  const UOp* out = substitute(g, body->src(size_t(get->as<int64_t>())), map);
  if (precompiled && out->op != Op::Contiguous) out = g.make(Op::Contiguous, out->dtype, {out});
  return out;
}

}  // namespace

const UOp* function_param(Graph& g, int64_t slot, DType dtype, const std::vector<int64_t>& shape) {
  if (slot < 0) fail(Code::InvalidArg, "function: parameter slot ", slot, " is negative");
  if (dtype.ptr || dtype.lanes != 1 || dtype.is_void() || dtype.is_index())
    fail(Code::InvalidArg, "function: parameter ", slot, " needs a scalar bool, integer or float dtype, got ",
         dtype.name());
  for (int64_t d : shape)
    if (d < 0) fail(Code::InvalidArg, "function: parameter ", slot, " has a negative dim in ", dims_str(shape));
  numel(shape);  // throws when the element count overflows
  return g.make(Op::Param, dtype, {g.shape_uop(shape)}, ParamArg{slot, Device{}, AddrSpace::Global});
}

std::vector<const UOp*> call_function(Graph& g, std::span<const UOp* const> outputs, std::span<const UOp* const> params,
                                      std::span<const UOp* const> args, bool precompiled) {
  if (outputs.empty()) fail(Code::InvalidArg, "function: the body has no outputs");
  if (args.size() != params.size())
    fail(Code::InvalidArg, "function: takes ", params.size(), " arguments, got ", args.size());
  for (size_t k = 0; k < params.size(); k++) {
    std::vector<int64_t> ps = static_shape(params[k], "function parameter");
    std::vector<int64_t> as = static_shape(args[k], "function argument");
    if (as != ps || args[k]->dtype != params[k]->dtype)
      fail(Code::InvalidArg, "function: argument ", k, " is ", args[k]->dtype.name(), " ", dims_str(as), ", parameter ",
           k, " is ", params[k]->dtype.name(), " ", dims_str(ps));
  }
  for (size_t i = 0; i < outputs.size(); i++) static_shape(outputs[i], "function output");
  const UOp* body = g.make(Op::Tuple, dtypes::void_, outputs);
  std::vector<const UOp*> src{body};
  src.insert(src.end(), args.begin(), args.end());
  const UOp* fn = g.make(Op::Function, dtypes::void_, src, int64_t(precompiled ? 1 : 0));
  std::vector<const UOp*> results;
  for (size_t i = 0; i < outputs.size(); i++)
    results.push_back(g.make(Op::GetTuple, outputs[i]->dtype, {fn}, int64_t(i)));
  return results;
}

std::vector<const UOp*> resolve_functions(Graph& g, std::span<const UOp* const> roots) {
  bool any = false;
  for (const UOp* u : toposort(roots)) any = any || u->op == Op::Function || u->op == Op::Param;
  if (!any) return {roots.begin(), roots.end()};
  static const PatternMatcher pm(
      {{Pat::op(Op::GetTuple), [](const Match& m) { return resolve_call(m.g, m.root); }, "resolve_call"}});
  const UOp* sink = graph_rewrite(g, g.make(Op::Sink, dtypes::void_, roots), pm);
  for (const UOp* u : toposort({&sink, 1}))
    if (u->op == Op::Param)
      fail(Code::InvalidArg, "function: Param ", u->as<ParamArg>().slot,
           " is read outside a function body (a body's output read without calling the function?)");
  return {sink->src().begin(), sink->src().end()};
}

}  // namespace sn
