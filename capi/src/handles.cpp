// Contexts and graphs: refcounted handles checked against a registry of live handles, and the
// bookkeeping of the uops each graph has handed out.
#include "capi/src/capi_internal.h"

namespace sn::capi {

Registry& registry() {
  // Never destroyed: a handle released or an error freed from another static destructor at exit
  // must still find the registry.
  static auto* r = new Registry;
  return *r;
}

sn_context* live_context(const sn_context* ctx, const char* param) {
  if (ctx == nullptr) invalid(param, " is NULL");
  auto& r = registry();
  std::lock_guard lock(r.mu);
  if (r.contexts.count(ctx) == 0 || ctx->magic != kContextMagic)
    invalid(param, ": context handle is not a live sn_context (released or not made by sn_context_create)");
  return const_cast<sn_context*>(ctx);
}

sn_graph* live_graph(const sn_graph* graph, const char* param) {
  if (graph == nullptr) invalid(param, " is NULL");
  auto& r = registry();
  std::lock_guard lock(r.mu);
  if (r.graphs.count(graph) == 0 || graph->magic != kGraphMagic)
    invalid(param, ": graph handle is not a live sn_graph (released or not made by sn_graph_create)");
  return const_cast<sn_graph*>(graph);
}

const UOp* uop_of(const sn_graph* g, const sn_uop* u, const char* param) {
  if (u == nullptr) invalid(param, " is NULL");
  auto& r = registry();
  std::lock_guard lock(r.mu);
  auto it = r.uops.find(from_handle(u));
  if (it == r.uops.end() || it->second != g)
    invalid(param, ": uop does not belong to this graph", it == r.uops.end() ? " (not a live sn_uop)" : "");
  return from_handle(u);
}

const UOp* live_uop(const sn_uop* u, const char* param) {
  if (u == nullptr) invalid(param, " is NULL");
  auto& r = registry();
  std::lock_guard lock(r.mu);
  if (r.uops.count(from_handle(u)) == 0)
    invalid(param, ": uop is not a live sn_uop (its graph was released, or it is not a uop)");
  return from_handle(u);
}

sn_graph* owner_of(const UOp* u) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  auto it = r.uops.find(u);
  if (it == r.uops.end()) invalid("uop is not a live sn_uop");
  return it->second;
}

sn_uop* hand_out(sn_graph* g, const UOp* u) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  // Reserve first so a failed push_back cannot leave a registered uop the graph does not know.
  g->handed.reserve(g->handed.size() + 1);
  if (r.uops.emplace(u, g).second) g->handed.push_back(u);
  return to_handle(u);
}

void retain_context_ref(sn_context* ctx) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  ++ctx->refs.internal;
}

void release_context_ref(sn_context* ctx) {
  auto& r = registry();
  {
    std::lock_guard lock(r.mu);
    if (--ctx->refs.internal > 0 || !ctx->refs.dead()) return;
    r.contexts.erase(ctx);
  }
  delete ctx;
}

const char* graph_string(sn_graph* g, const std::string& s) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  return g->strings.insert(s).first->c_str();
}

Device parse_device(const char* s, const char* param) {
  Device d;
  if (s == nullptr || *s == '\0') return d;
  std::string_view text(s);
  bool bare_tuple = text.front() != '(' && text.find(',') != std::string_view::npos;  // "A,B" (version 8)
  if (text.front() != '(' && !bare_tuple) {
    if (text.find_first_of("()") != std::string_view::npos)
      invalid(param, ": device \"", text, "\" is not a name or a tuple \"A,B,...\" or \"(A,B,...)\"");
    d.names.emplace_back(text);
    return d;
  }
  if (!bare_tuple && text.back() != ')') invalid(param, ": device tuple \"", text, "\" lacks its closing ')'");
  d.tuple = true;
  std::string_view body = bare_tuple ? text : text.substr(1, text.size() - 2);
  while (true) {
    size_t comma = body.find(',');
    std::string_view name = body.substr(0, comma);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    if (name.empty() || name.find_first_of("()") != std::string_view::npos)
      invalid(param, ": device tuple \"", text, "\" has an empty or malformed name");
    d.names.emplace_back(name);
    if (comma == std::string_view::npos) break;
    body.remove_prefix(comma + 1);
  }
  return d;
}

std::string format_device(const Device& d) {
  if (d.null()) return "";
  if (!d.tuple) return d.names[0];
  std::string s = "(";
  for (size_t i = 0; i < d.names.size(); ++i) {
    if (i) s += ',';
    s += d.names[i];
  }
  return s + ")";
}

}  // namespace sn::capi

using namespace sn::capi;

sn_context* sn_context_create(sn_error** err) {
  return guard("sn_context_create", err, static_cast<sn_context*>(nullptr), [&] {
    auto* ctx = new sn_context;
    auto& r = registry();
    try {
      std::lock_guard lock(r.mu);
      r.contexts.insert(ctx);
    } catch (...) {
      delete ctx;
      throw;
    }
    return ctx;
  });
}

sn_context* sn_context_retain(sn_context* ctx) {
  return guard("sn_context_retain", nullptr, static_cast<sn_context*>(nullptr), [&] {
    auto& r = registry();
    std::lock_guard lock(r.mu);
    if (ctx == nullptr || r.contexts.count(ctx) == 0 || ctx->magic != kContextMagic)
      invalid("ctx: context handle is not a live sn_context (released or not made by sn_context_create)");
    ++ctx->refs.user;
    return ctx;
  });
}

void sn_context_release(sn_context* ctx) {
  if (ctx == nullptr) return;
  guard("sn_context_release", nullptr, 0, [&] {
    auto& r = registry();
    {
      std::lock_guard lock(r.mu);
      if (r.contexts.count(ctx) == 0 || ctx->magic != kContextMagic)
        invalid("ctx: context handle is not a live sn_context (released or not made by sn_context_create)");
      // Alive only through its graphs or devices: the caller has no reference left to drop.
      if (ctx->refs.user == 0)
        invalid(
            "ctx: the caller holds no reference to this sn_context (released more often than created or "
            "retained)");
      if (--ctx->refs.user > 0 || !ctx->refs.dead()) return 0;
      r.contexts.erase(ctx);
    }
    delete ctx;
    return 0;
  });
}

sn_graph* sn_graph_create(sn_context* ctx, sn_error** err) {
  return guard("sn_graph_create", err, static_cast<sn_graph*>(nullptr), [&] {
    live_context(ctx, "ctx");
    auto* g = new sn_graph;
    g->ctx = ctx;
    auto& r = registry();
    try {
      std::lock_guard lock(r.mu);
      // The context may have been released since the check above; only a live one is kept alive.
      if (r.contexts.count(ctx) == 0) invalid("ctx: context handle is not a live sn_context");
      r.graphs.insert(g);
      ++ctx->refs.internal;
    } catch (...) {
      delete g;
      throw;
    }
    return g;
  });
}

sn_graph* sn_graph_retain(sn_graph* graph) {
  return guard("sn_graph_retain", nullptr, static_cast<sn_graph*>(nullptr), [&] {
    auto& r = registry();
    std::lock_guard lock(r.mu);
    if (graph == nullptr || r.graphs.count(graph) == 0 || graph->magic != kGraphMagic)
      invalid("graph: graph handle is not a live sn_graph (released or not made by sn_graph_create)");
    ++graph->refs;
    return graph;
  });
}

void sn_graph_release(sn_graph* graph) {
  if (graph == nullptr) return;
  guard("sn_graph_release", nullptr, 0, [&] {
    auto& r = registry();
    {
      std::lock_guard lock(r.mu);
      if (r.graphs.count(graph) == 0 || graph->magic != kGraphMagic)
        invalid("graph: graph handle is not a live sn_graph (released or not made by sn_graph_create)");
      if (--graph->refs > 0) return 0;
      r.graphs.erase(graph);
      for (const sn::UOp* u : graph->handed) r.uops.erase(u);
      for (const auto& f : graph->functions) r.functions.erase(f.get());
    }
    sn_context* ctx = graph->ctx;
    delete graph;
    release_context_ref(ctx);
    return 0;
  });
}

size_t sn_graph_node_count(const sn_graph* graph, sn_error** err) {
  return guard("sn_graph_node_count", err, size_t{0}, [&] { return live_graph(graph, "graph")->graph.size(); });
}
