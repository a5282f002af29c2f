// Errors, the per-thread last error, returned strings and versions.
#include <cstdlib>
#include <memory>

#include "capi/src/capi_internal.h"

namespace sn::capi {
namespace {

// Reporting an out-of-memory failure must not allocate: this one error object is made at load time
// (its short message fits the string's inline buffer) and handed out to everyone. sn_error_free
// knows it by its address and never frees it.
sn_error g_oom_error{SN_E_OUT_OF_MEMORY, "out of memory"};
constexpr const char* kOomMessage = "out of memory";

struct LastError {
  sn_code code = SN_OK;
  std::string message;
  const char* fixed = nullptr;  // set instead of `message` when copying it failed
};
thread_local LastError t_last;

void set_last(sn_code code, std::string_view fn, std::string_view message) noexcept {
  t_last.code = code;
  try {
    t_last.message.assign(fn);
    t_last.message.append(": ");
    t_last.message.append(message);
    t_last.fixed = nullptr;
  } catch (...) {
    t_last.code = SN_E_OUT_OF_MEMORY;
    t_last.fixed = kOomMessage;
  }
}

}  // namespace

void report(sn_error** err, sn_code code, std::string_view fn, std::string_view message) noexcept {
  set_last(code, fn, message);
  // The first error wins: a chain of calls sharing one `err` reports its root cause, and the error
  // already there is not leaked by being overwritten.
  if (err == nullptr || *err != nullptr) return;
  try {
    auto e = std::make_unique<sn_error>();
    e->code = code;
    e->message.assign(fn);
    e->message.append(": ");
    e->message.append(message);
    auto& r = registry();
    std::lock_guard lock(r.owned_mu);
    r.errors.insert(e.get());
    *err = e.release();
  } catch (...) {
    *err = &g_oom_error;
  }
}

void report_oom(sn_error** err) noexcept {
  t_last.code = SN_E_OUT_OF_MEMORY;
  t_last.fixed = kOomMessage;
  if (err != nullptr && *err == nullptr) *err = &g_oom_error;
}

sn_code to_code(Code code) noexcept {
  switch (code) {
    case Code::Ok:
      return SN_OK;
    case Code::InvalidArg:
      return SN_E_INVALID_ARG;
    case Code::Unsupported:
      return SN_E_UNSUPPORTED;
    case Code::Compile:
      return SN_E_COMPILE;
    case Code::Device:
      return SN_E_DEVICE;
    case Code::OutOfMemory:
      return SN_E_OUT_OF_MEMORY;
    case Code::Version:
      return SN_E_VERSION;
    case Code::NotFound:
      return SN_E_NOT_FOUND;
    case Code::Internal:
      return SN_E_INTERNAL;
  }
  return SN_E_INTERNAL;
}

// The public codes are the core's codes; a drift between the two enums breaks the build here.
static_assert(int(Code::Ok) == SN_OK && int(Code::InvalidArg) == SN_E_INVALID_ARG &&
              int(Code::Unsupported) == SN_E_UNSUPPORTED && int(Code::Compile) == SN_E_COMPILE &&
              int(Code::Device) == SN_E_DEVICE && int(Code::OutOfMemory) == SN_E_OUT_OF_MEMORY &&
              int(Code::Version) == SN_E_VERSION && int(Code::NotFound) == SN_E_NOT_FOUND &&
              int(Code::Internal) == SN_E_INTERNAL);

char* dup_string(const std::string& s) {
  auto* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (p == nullptr) throw std::bad_alloc();
  std::memcpy(p, s.data(), s.size());
  p[s.size()] = '\0';
  try {
    auto& r = registry();
    std::lock_guard lock(r.owned_mu);
    r.strings.insert(p);
  } catch (...) {
    std::free(p);
    throw;
  }
  return p;
}

}  // namespace sn::capi

using namespace sn::capi;

namespace {

constexpr const char* kNotLiveError = "error is not a live sn_error (already freed, or not made by this library)";

// Whether `e` is an error handed out and not freed yet (the static out-of-memory one included). Only
// then may it be read: a freed or foreign pointer is never dereferenced.
bool live_error(const sn_error* e) {
  if (e == &g_oom_error) return true;
  auto& r = registry();
  std::lock_guard lock(r.owned_mu);
  return r.errors.count(e) != 0;
}

}  // namespace

sn_code sn_error_code(const sn_error* error) {
  if (error == nullptr) return SN_OK;
  return guard("sn_error_code", nullptr, SN_E_INVALID_ARG, [&] {
    if (!live_error(error)) invalid(kNotLiveError);
    return error->code;
  });
}

const char* sn_error_message(const sn_error* error) {
  if (error == nullptr) return "";
  // Static, so the caller printing the message of a stale error reads why instead of freed memory.
  static const char* const kStale =
      "sn_error_message: error is not a live sn_error (already freed, or not made by this library)";
  return guard("sn_error_message", nullptr, kStale, [&] {
    if (!live_error(error)) invalid(kNotLiveError);
    return error->message.c_str();
  });
}

void sn_error_free(sn_error* error) {
  if (error == nullptr || error == &g_oom_error) return;  // the static out-of-memory error is never freed
  guard("sn_error_free", nullptr, 0, [&] {
    {
      auto& r = registry();
      std::lock_guard lock(r.owned_mu);
      if (r.errors.erase(error) == 0) invalid(kNotLiveError);
    }
    delete error;
    return 0;
  });
}

sn_code sn_last_error_code(void) { return t_last.code; }

const char* sn_last_error_message(void) {
  if (t_last.code == SN_OK) return "";
  return t_last.fixed != nullptr ? t_last.fixed : t_last.message.c_str();
}

void sn_clear_last_error(void) {
  t_last.code = SN_OK;
  t_last.fixed = nullptr;
  t_last.message.clear();
}

void sn_string_free(char* s) {
  if (s == nullptr) return;
  guard("sn_string_free", nullptr, 0, [&] {
    {
      auto& r = registry();
      std::lock_guard lock(r.owned_mu);
      if (r.strings.erase(s) == 0)
        invalid("s is not a live string returned by this library (already freed, or not made by it)");
    }
    std::free(s);
    return 0;
  });
}

#define SN_STR2(x) #x
#define SN_STR(x) SN_STR2(x)
const char* sn_version_string(void) {
  return SN_STR(SN_VERSION_MAJOR) "." SN_STR(SN_VERSION_MINOR) "." SN_STR(SN_VERSION_PATCH);
}

uint32_t sn_version_number(void) { return SN_VERSION_NUMBER; }
