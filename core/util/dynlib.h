// A driver library opened at run time (dlopen) and the functions taken from it, with the reason
// when either is missing: the GPU backends use it so that no build needs a driver or its headers.
#pragma once
#include <dlfcn.h>

#include <mutex>
#include <string>
#include <type_traits>

#include "core/util/error.h"

namespace sn {

class DynLib {
 public:
  // Opens `name` (kept loaded for the process); ok() says whether it was found, error() why not.
  explicit DynLib(const std::string& name) : name_(name) {
    handle_ = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) {
      const char* e = dlerror();
      error_ = cat(name, " not found: ", e ? e : "dlopen failed");
    }
  }
  bool ok() const { return handle_ != nullptr && error_.empty(); }
  const std::string& error() const { return error_; }

  // Sets `fn` to the function `symbol`, or to nullptr when an older library lacks it (the caller
  // then goes without the feature).
  template <class Fn>
  void optional_sym(Fn& fn, const char* symbol) {
    static_assert(std::is_pointer_v<Fn>);
    fn = handle_ ? reinterpret_cast<Fn>(dlsym(handle_, symbol)) : nullptr;
  }

  // Sets `fn` to the function `symbol`; a missing one makes ok() false and error() name it.
  template <class Fn>
  void sym(Fn& fn, const char* symbol) {
    optional_sym(fn, symbol);
    if (handle_ && !fn && error_.empty()) error_ = cat(name_, " has no ", symbol);
  }

 private:
  std::string name_, error_;
  void* handle_ = nullptr;
};

// A driver's table of functions, loaded once per process: `init(api)` fills it (from a DynLib it
// keeps loaded, then the driver's own initialization) and returns "" or why it cannot. Each call
// returns the table, or nullptr with that reason in *why. (Each caller's `init` is its own lambda
// type, so each driver gets its own table.)
template <class Api, class Init>
const Api* load_once(std::string* why, Init init) {
  static Api api;
  static std::string reason;
  static std::once_flag once;
  std::call_once(once, [&] { reason = init(api); });
  if (!reason.empty() && why) *why = reason;
  return reason.empty() ? &api : nullptr;
}

}  // namespace sn
