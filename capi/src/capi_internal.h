// Internals of the C API: the handle structs behind the opaque pointers, the registry that
// validates them, the exception-catching boundary, and conversions between the public enums and
// the core's. Never installed; the C ABI sees only sinter.h.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/ir/graph.h"
#include "core/runtime/runtime.h"
#include "core/util/error.h"
#include "sinter/sinter.h"

// Magic numbers at the start of every owned handle: a handle of the wrong kind (a graph passed as a
// context) is caught even before the registry lookup says it is not live.
inline constexpr uint32_t kContextMagic = 0x534e4358u;  // "SNCX"
inline constexpr uint32_t kGraphMagic = 0x534e4752u;    // "SNGR"

namespace sn::capi {

// The references to a handle that has children, guarded by its registry's mutex. The caller's
// references (create/retain/release) and those of child handles (a graph's or a device's on its
// context, a buffer's or a program's on its device) are counted apart. With one shared count a
// caller that released more often than it created or retained would drop the children's
// references and free the parent under them; now such a release finds `user` at 0 and is rejected.
// The handle stays live (in the registry, usable) until both counts are 0, then it is freed.
struct HandleRefs {
  int64_t user = 1;
  int64_t internal = 0;
  bool dead() const { return user == 0 && internal == 0; }
};

}  // namespace sn::capi

struct sn_context {
  uint32_t magic = kContextMagic;
  sn::capi::HandleRefs refs;  // guarded by the registry mutex; children: graphs and devices
  // Devices, the debug level and the program cache of everything compiled in this context
  // (capi/src/runtime_api.cpp). Thread-safe on its own.
  sn::Runtime runtime;
};

struct sn_graph {
  uint32_t magic = kGraphMagic;
  // Only the caller's references: no handle keeps a graph alive (uops are borrowed, and programs do
  // not need their graph). Guarded by the registry mutex.
  int64_t refs = 1;
  sn_context* ctx = nullptr;
  sn::Graph graph;
  // Every uop pointer handed out to the caller, so they can be dropped from the registry when the
  // graph dies. Guarded by the registry mutex.
  std::vector<const sn::UOp*> handed;
  // Strings a query returns as borrowed `const char*` (device names of args) live here until the
  // graph dies. Node-based, so pointers stay valid as it grows. Guarded by the registry mutex.
  std::unordered_set<std::string> strings;
  // Tensors made by sn_tensor_input, in creation order: the default input order of sn_compile.
  // Guarded by the registry mutex.
  std::vector<const sn::UOp*> inputs;
  // Functions begun in this graph (capi/src/function_api.cpp); they live as long as the graph.
  // Guarded by the registry mutex.
  std::vector<std::unique_ptr<sn_function>> functions;
};

// A function being defined (sn_function_begin .. sn_function_end) or defined.
struct sn_function {
  sn_graph* graph = nullptr;
  std::vector<const sn::UOp*> params;   // Param k has slot k
  std::vector<const sn::UOp*> outputs;  // set by sn_function_end
  bool ended = false;
  uint32_t flags = 0;  // SN_FUNCTION_*
};

struct sn_error {
  sn_code code = SN_OK;
  std::string message;
};

namespace sn::capi {

// Process-wide set of live handles. A pointer not in it (released, foreign, random) is rejected
// before it is dereferenced. Uops map to the graph that handed them out.
struct Registry {
  std::mutex mu;
  std::unordered_set<const sn_context*> contexts;
  std::unordered_set<const sn_graph*> graphs;
  std::unordered_map<const UOp*, sn_graph*> uops;
  std::unordered_set<const sn_function*> functions;
  // The errors and strings handed to the caller and not freed yet, so that freeing one twice (or a
  // pointer this library never returned) is detected instead of being a double free. Their own
  // mutex: errors are reported while unwinding out of code that may hold `mu`.
  std::mutex owned_mu;
  std::unordered_set<const sn_error*> errors;
  std::unordered_set<const char*> strings;
};
Registry& registry();

// ---- boundary -----------------------------------------------------------------------------

// Records a failure: the thread's last error always, and a new owned sn_error in *err when err is
// not NULL and *err is still NULL (the first error wins). Never throws (an allocation failure
// degrades to the static out-of-memory error).
void report(sn_error** err, sn_code code, std::string_view fn, std::string_view message) noexcept;
void report_oom(sn_error** err) noexcept;
sn_code to_code(Code code) noexcept;

// Throws an sn::Error(InvalidArg) whose message the boundary prefixes with the function name.
template <class... T>
[[noreturn]] void invalid(const T&... parts) {
  fail(Code::InvalidArg, parts...);
}

// Runs `body` and turns every exception into a reported error plus `fail_value`. Every exported
// function that can fail is one call to this. A function returning sn_code returns the code of the
// error it reported (the same as the error object's), not `fail_value`.
template <class R, class F>
R guard(const char* fn, sn_error** err, R fail_value, F&& body) noexcept {
  sn_code code = SN_E_INTERNAL;
  try {
    return body();
  } catch (const Error& e) {
    code = to_code(e.code());
    report(err, code, fn, e.message());
  } catch (const std::bad_alloc&) {
    code = SN_E_OUT_OF_MEMORY;
    report_oom(err);
  } catch (const std::exception& e) {
    report(err, SN_E_INTERNAL, fn, std::string("internal error: ") + e.what());
  } catch (...) {
    report(err, SN_E_INTERNAL, fn, "internal error: unknown exception");
  }
  if constexpr (std::is_same_v<R, sn_code>) return code;
  return fail_value;
}

// Reads an enum the C caller passed without an enum-typed load: a C caller may pass any int, and
// in C++ an out-of-range value of an enum without a fixed type must not be loaded as that type.
template <class E>
int64_t raw(const E& e) {
  static_assert(sizeof(E) == sizeof(int));
  int v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

// ---- handles ------------------------------------------------------------------------------

sn_context* live_context(const sn_context* ctx, const char* param);
sn_graph* live_graph(const sn_graph* graph, const char* param);
// `u` must be a uop handed out by `g`.
const UOp* uop_of(const sn_graph* g, const sn_uop* u, const char* param);
// `u` must be a uop of some live graph (queries).
const UOp* live_uop(const sn_uop* u, const char* param);
// Registers `u` as handed out by `g` and returns its handle.
sn_uop* hand_out(sn_graph* g, const UOp* u);
// Adds and drops a child handle's reference to a context (HandleRefs::internal). `ctx` must exist:
// validated by the caller, or kept alive by the child that is being made from it.
void retain_context_ref(sn_context* ctx);
void release_context_ref(sn_context* ctx);
// Keeps a copy of `s` alive as long as `g` and returns it.
const char* graph_string(sn_graph* g, const std::string& s);
// The graph that handed out `u` (u must be live).
sn_graph* owner_of(const UOp* u);

inline sn_uop* to_handle(const UOp* u) { return reinterpret_cast<sn_uop*>(const_cast<UOp*>(u)); }
inline const UOp* from_handle(const sn_uop* u) { return reinterpret_cast<const UOp*>(u); }

// ---- enums --------------------------------------------------------------------------------

DType to_dtype(int64_t v, const char* param);  // throws on an unknown value
sn_dtype from_scalar(Scalar s);
Op to_op(int64_t v, const char* param);
sn_op from_op(Op op);
AxisType to_axis_type(int64_t v, const char* param);
sn_axis_type from_axis_type(AxisType t);
AddrSpace to_addrspace(int64_t v, const char* param);  // NONE -> GLOBAL (the default)
sn_addrspace from_addrspace(AddrSpace a);

// ---- devices and args ---------------------------------------------------------------------

// "CPU" -> {CPU}; "(A,B)" -> tuple {A,B}; NULL or "" -> none.
Device parse_device(const char* s, const char* param);
// Inverse of parse_device ("" for none).
std::string format_device(const Device& d);

// The first released layout of sn_arg; a smaller struct_size is rejected.
inline constexpr size_t kArgSizeV1 = offsetof(sn_arg, max) + sizeof(int64_t);
// Copies the caller's sn_arg (whatever its struct_size) into a full, zero-extended local one.
sn_arg read_arg(const sn_arg* a, const char* param);
// Converts a C arg to the core's typed arg for `op` of dtype `dt`; throws when the kind does not
// fit the op or a value is bad.
Arg to_core_arg(Graph& g, Op op, DType dt, const sn_arg& a);

// Newly malloc'ed copy of `s`, registered as a live string (freed by sn_string_free); throws
// bad_alloc.
char* dup_string(const std::string& s);

}  // namespace sn::capi
