// Errors inside the core: a code plus a message that names the op, the rule and the values.
// The core throws sn::Error; the C API boundary turns it into an sn_error (nothing else crosses).
#pragma once
#include <exception>
#include <sstream>
#include <string>
#include <utility>

namespace sn {

enum class Code : int {
  Ok = 0,
  InvalidArg = 1,
  Unsupported = 2,
  Compile = 3,
  Device = 4,
  OutOfMemory = 5,
  Version = 6,
  NotFound = 7,
  Internal = 99
};

class Error : public std::exception {
 public:
  Error(Code code, std::string msg) : code_(code), msg_(std::move(msg)) {}
  Code code() const noexcept { return code_; }
  const std::string& message() const noexcept { return msg_; }
  const char* what() const noexcept override { return msg_.c_str(); }

 private:
  Code code_;
  std::string msg_;
};

// cat("a=", 1, " b=", x) -> "a=1 b=..."
template <class... T>
std::string cat(const T&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

template <class... T>
[[noreturn]] void fail(Code code, const T&... parts) {
  throw Error(code, cat(parts...));
}

}  // namespace sn
