// Errors inside the core: a code plus a message that names the op, the rule and the values.
// The core throws sn::Error; the C API boundary turns it into an sn_error (nothing else crosses).
#pragma once
#include <charconv>
#include <exception>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
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

namespace detail {
// One part of cat(), written as `std::ostream << part` writes it. Text and integers are appended
// directly: a stream per call cost a lowering 45k instructions for one target key (cat is also on
// the path of kernel names); anything else (floats, enums, types with their own <<) goes through a
// stream of its own, which formats it as the shared stream did.
template <class T>
void cat_part(std::string& out, const T& v) {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, char> || std::is_same_v<U, signed char> || std::is_same_v<U, unsigned char>) {
    out += char(v);  // (a stream writes every char type as a character)
  } else if constexpr (std::is_same_v<U, bool>) {
    out += v ? '1' : '0';
  } else if constexpr (std::is_integral_v<U>) {
    char buf[24];
    out.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
  } else if constexpr (std::is_same_v<U, const char*> || std::is_same_v<U, char*>) {
    if (v != nullptr) out += v;  // (a stream writes nothing for a null C string)
  } else if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    out += std::string_view(v);
  } else {
    std::ostringstream os;
    os << v;
    out += os.str();
  }
}
}  // namespace detail

// cat("a=", 1, " b=", x) -> "a=1 b=..."
template <class... T>
std::string cat(const T&... parts) {
  std::string out;
  (detail::cat_part(out, parts), ...);
  return out;
}

template <class... T>
[[noreturn]] void fail(Code code, const T&... parts) {
  throw Error(code, cat(parts...));
}

}  // namespace sn
