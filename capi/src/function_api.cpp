// Functions of the C API: sn_function handles owned by their graph, over core/tensor/function.h.
#include "capi/src/capi_internal.h"
#include "core/tensor/function.h"
#include "core/tensor/tensor.h"

namespace sn::capi {
namespace {

sn_function* live_function(const sn_function* fn, const char* param) {
  if (fn == nullptr) invalid(param, " is NULL");
  auto& r = registry();
  std::lock_guard lock(r.mu);
  if (r.functions.count(fn) == 0)
    invalid(param, ": not a live sn_function (its graph was released, or not a function)");
  return const_cast<sn_function*>(fn);
}

}  // namespace
}  // namespace sn::capi

using namespace sn::capi;

sn_function* sn_function_begin(sn_graph* graph, size_t nparams, const sn_dtype* dtypes, const int64_t* const* shapes,
                               const size_t* ranks, sn_error** err) {
  return guard("sn_function_begin", err, static_cast<sn_function*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    if (nparams > 0 && (dtypes == nullptr || ranks == nullptr))
      invalid(dtypes == nullptr ? "dtypes" : "ranks", " is NULL but nparams is ", nparams);
    auto fn = std::make_unique<sn_function>();
    fn->graph = g;
    for (size_t k = 0; k < nparams; k++) {
      if (ranks[k] > 0 && (shapes == nullptr || shapes[k] == nullptr))
        invalid("shapes[", k, "] is NULL but ranks[", k, "] is ", ranks[k]);
      std::vector<int64_t> shape =
          ranks[k] == 0 ? std::vector<int64_t>{} : std::vector<int64_t>(shapes[k], shapes[k] + ranks[k]);
      sn::DType dt = to_dtype(raw(dtypes[k]), sn::cat("dtypes[", k, "]").c_str());
      fn->params.push_back(sn::function_param(g->graph, int64_t(k), dt, shape));
    }
    auto& r = registry();
    std::lock_guard lock(r.mu);
    g->functions.reserve(g->functions.size() + 1);
    r.functions.insert(fn.get());
    g->functions.push_back(std::move(fn));
    return g->functions.back().get();
  });
}

sn_uop* sn_function_param(sn_function* fn, size_t i, sn_error** err) {
  return guard("sn_function_param", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_function* f = live_function(fn, "fn");
    if (i >= f->params.size()) invalid("parameter ", i, " is out of range (the function has ", f->params.size(), ")");
    return hand_out(f->graph, f->params[i]);
  });
}

sn_code sn_function_end(sn_function* fn, sn_uop* const* outputs, size_t n, sn_error** err) {
  return guard("sn_function_end", err, SN_E_INVALID_ARG, [&] {
    sn_function* f = live_function(fn, "fn");
    if (f->ended) invalid("the function was ended already");
    if (n == 0) invalid("a function needs at least one output");
    if (outputs == nullptr) invalid("outputs is NULL but n is ", n);
    std::vector<const sn::UOp*> outs;
    for (size_t i = 0; i < n; i++) {
      const sn::UOp* u = uop_of(f->graph, outputs[i], sn::cat("outputs[", i, "]").c_str());
      sn::static_shape(u, sn::cat("outputs[", i, "]").c_str());
      outs.push_back(u);
    }
    f->outputs = std::move(outs);
    f->ended = true;
    return SN_OK;
  });
}

sn_code sn_function_set_flags(sn_function* fn, uint32_t flags, sn_error** err) {
  return guard("sn_function_set_flags", err, SN_E_INVALID_ARG, [&] {
    sn_function* f = live_function(fn, "fn");
    if ((flags & ~uint32_t(SN_FUNCTION_PRECOMPILE)) != 0) invalid("unknown flags ", flags);
    f->flags = flags;
    return SN_OK;
  });
}

sn_code sn_function_call(sn_graph* graph, sn_function* fn, sn_uop* const* args, size_t nargs, sn_uop** results,
                         sn_error** err) {
  return guard("sn_function_call", err, SN_E_INVALID_ARG, [&] {
    sn_graph* g = live_graph(graph, "graph");
    sn_function* f = live_function(fn, "fn");
    if (f->graph != g) invalid("fn belongs to another graph");
    if (!f->ended) invalid("the function has no body yet (call sn_function_end first)");
    if (nargs > 0 && args == nullptr) invalid("args is NULL but nargs is ", nargs);
    if (results == nullptr) invalid("results is NULL");
    std::vector<const sn::UOp*> a;
    for (size_t i = 0; i < nargs; i++) a.push_back(uop_of(g, args[i], sn::cat("args[", i, "]").c_str()));
    std::vector<const sn::UOp*> r =
        sn::call_function(g->graph, f->outputs, f->params, a, (f->flags & SN_FUNCTION_PRECOMPILE) != 0);
    std::vector<sn_uop*> handles;
    for (const sn::UOp* u : r) handles.push_back(hand_out(g, u));
    std::copy(handles.begin(), handles.end(), results);
    return SN_OK;
  });
}
